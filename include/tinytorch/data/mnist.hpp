// tinytorch/data/mnist.hpp — the IDX file format and the MNIST / Fashion-MNIST datasets.
// IDX (LeCun's MNIST format) is a big-endian header followed by raw bytes:
//   magic  u32  0x00000803 (2051) for images: 0x08 = unsigned byte, 0x03 = three dims
//              0x00000801 (2049) for labels:  0x08 = unsigned byte, 0x01 = one dim
//   dims   u32 each: images N, rows, cols (header 16 bytes); labels N (header 8 bytes)
//   data   N*rows*cols pixels (0 = background, 255 = ink), row-major; or N labels (0..9)
// Files may be gzip-compressed (*.gz, as distributed) or plain, recognised by their first bytes;
// gzip is inflated with zlib (inflate), in steps. Programs that include this header link with -lz.
// The header is read first and the data is read in steps, never more than the header promises: a
// small .gz that inflates to gigabytes (a "gzip bomb"), /dev/zero or a FIFO is an Error naming the
// file, not std::bad_alloc or a hang (only regular files are opened; detail::IdxFile).
//   read_idx_images(path) -> float32 (N, rows*cols) = pixel / 255 in [0, 1]   (N, 784) for MNIST,
//                            the same numbers as torchvision's ToTensor() (then flattened)
//   read_idx_labels(path) -> int64 (N)
//   MNIST(root, train)    -> a TensorDataset over those two tensors, from
//                            root/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
// Normalisation ((x - mean) / std) is left to the caller.
// Where the data is: default_data_dir(cli) = the --data-dir value if given, else $TINYTORCH_DATA,
// else /usr/share/datasets/fashion-mnist, which Debian's package dataset-fashion-mnist installs
// (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
// t10k-labels-idx1-ubyte.gz: 60000 training and 10000 test images of 28x28, 10 classes).
// The original MNIST digits use the same file names and format.
// Every problem is a tinytorch::Error naming the file and what is wrong with it: missing file
// (with how to get the data), not a regular file, wrong magic number, bad dims, truncated data
// ("expected 47040000 bytes of pixel data (60000 images of 28x28), file ends after 1000"),
// trailing bytes, corrupt or truncated gzip.
// Chapter: chapters/01-training-loop.md. Reference: yann.lecun.com/exdb/mnist ("FILE FORMATS"),
// github.com/zalandoresearch/fashion-mnist, torchvision.datasets.MNIST (read_image_file).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "tinytorch/data/dataset.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace data {

/// Where Debian's dataset-fashion-mnist package puts the four IDX files (gzip-compressed).
inline constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

/// The data directory: `cli` (a --data-dir value) when given and non-empty, else the environment
/// variable TINYTORCH_DATA when set and non-empty, else kDefaultDataDir.
inline std::string default_data_dir(const std::optional<std::string>& cli = std::nullopt) {
  if (cli && !cli->empty()) return *cli;
  if (const char* env = std::getenv("TINYTORCH_DATA"); env && *env) return env;
  return kDefaultDataDir;
}


/// Reads an IDX image file (magic 2051), plain or gzip.
/// Returns float32 (N, rows*cols) with values pixel/255 in [0, 1] — (N, 784) for MNIST.
/// Throws tinytorch::Error naming the file: cannot open, not a regular file (a FIFO, a device such
/// as /dev/zero, a directory), wrong magic number, zero rows or cols, data shorter or longer than
/// N*rows*cols bytes, corrupt or truncated gzip stream, bytes after it.
TT_DECL Tensor read_idx_images(const std::string& path);

/// Reads an IDX label file (magic 2049), plain or gzip. Returns int64 (N).
/// Throws tinytorch::Error naming the file, as read_idx_images (data shorter or longer than N bytes).
TT_DECL Tensor read_idx_labels(const std::string& path);

/// MNIST or Fashion-MNIST (same files, same format) as a TensorDataset:
///   data float32 (N, 784) in [0, 1], targets int64 (N) in 0..9;
///   N = 60000 (train = true: train-*) or 10000 (train = false: t10k-*).
/// Looks for root/<name> and root/<name>.gz with <name> = {train,t10k}-images-idx3-ubyte and
/// {train,t10k}-labels-idx1-ubyte (torchvision's raw file names; Debian's dataset-fashion-mnist
/// installs the .gz ones in /usr/share/datasets/fashion-mnist = default_data_dir()).
/// Throws tinytorch::Error: a missing file (naming the paths tried and how to get the data), any
/// read_idx_* error, images that are not 28x28, or image and label counts that differ.
class MNIST : public TensorDataset {
 public:
  explicit MNIST(const std::string& root, bool train = true) : MNIST(load(root, train), root, train) {}

  const std::string& root() const { return root_; }
  bool train() const { return train_; }
  static constexpr int64_t kImageSize = 28;  ///< rows = cols
  static constexpr int64_t kNumClasses = 10;

  /// root/<name>, or root/<name>.gz if only that exists. Throws when neither exists.
  static std::string find_file(const std::string& root, const std::string& name);

 private:
  MNIST(std::pair<Tensor, Tensor> xy, const std::string& root, bool train)
      : TensorDataset(std::move(xy.first), std::move(xy.second)), root_(root), train_(train) {}

  static std::pair<Tensor, Tensor> load(const std::string& root, bool train);

  std::string root_;
  bool train_;
};

}  TT_NAMESPACE_END  // namespace tinytorch::data

#if TT_HEADER_ONLY
#include "tinytorch/data/mnist.ipp"
#endif
