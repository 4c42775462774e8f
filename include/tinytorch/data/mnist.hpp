// tinytorch/data/mnist.hpp — the IDX file format and the MNIST / Fashion-MNIST datasets.
//
// IDX (LeCun's MNIST format) is a big-endian header followed by raw bytes:
//   magic  u32  0x00000803 (2051) for images: 0x08 = unsigned byte, 0x03 = three dims
//              0x00000801 (2049) for labels:  0x08 = unsigned byte, 0x01 = one dim
//   dims   u32 each: images N, rows, cols (header 16 bytes); labels N (header 8 bytes)
//   data   N*rows*cols pixels (0 = background, 255 = ink), row-major; or N labels (0..9)
// Files may be gzip-compressed (*.gz, as distributed) or plain: zlib's gzopen/gzread reads both
// transparently. Programs that include this header link with -lz.
//
//   read_idx_images(path) -> float32 (N, rows*cols) = pixel / 255 in [0, 1]   (N, 784) for MNIST,
//                            the same numbers as torchvision's ToTensor() (then flattened)
//   read_idx_labels(path) -> int64 (N)
//   MNIST(root, train)    -> a TensorDataset over those two tensors, from
//                            root/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
// Normalisation ((x - mean) / std) is left to the caller.
//
// Where the data is: default_data_dir(cli) = the --data-dir value if given, else $TINYTORCH_DATA,
// else /usr/share/datasets/fashion-mnist, which Debian's package dataset-fashion-mnist installs
// (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
// t10k-labels-idx1-ubyte.gz: 60000 training and 10000 test images of 28x28, 10 classes).
// The original MNIST digits use the same file names and format.
//
// Every problem is a tinytorch::Error naming the file and what is wrong with it: missing file
// (with how to get the data), wrong magic number, bad dims, truncated data ("expected 47040000
// bytes of pixel data (60000 images of 28x28), file ends after 1000"), trailing bytes, corrupt gzip.
//
// Chapter: chapters/01-training-loop.md. Reference: yann.lecun.com/exdb/mnist ("FILE FORMATS"),
// github.com/zalandoresearch/fashion-mnist, torchvision.datasets.MNIST (read_image_file).
#pragma once

#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset.hpp"

namespace tinytorch::data {

/// Where Debian's dataset-fashion-mnist package puts the four IDX files (gzip-compressed).
inline constexpr const char* kDefaultDataDir = "/usr/share/datasets/fashion-mnist";

/// The data directory: `cli` (a --data-dir value) when given and non-empty, else the environment
/// variable TINYTORCH_DATA when set and non-empty, else kDefaultDataDir.
inline std::string default_data_dir(const std::optional<std::string>& cli = std::nullopt) {
  if (cli && !cli->empty()) return *cli;
  if (const char* env = std::getenv("TINYTORCH_DATA"); env && *env) return env;
  return kDefaultDataDir;
}

namespace detail {

/// The whole (decompressed) content of a plain or gzip file. Throws naming `op` and `path` when
/// the file cannot be opened or its gzip stream is corrupt or truncated.
inline std::vector<unsigned char> read_file_maybe_gz(const std::string& path, const char* op) {
  std::error_code ec;
  TT_CHECK(!std::filesystem::is_directory(path, ec), op, ": cannot read '", path, "': it is a directory");
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  TT_CHECK(f != nullptr, op, ": cannot open '", path, "': ",
           errno ? std::strerror(errno) : "out of memory");
  gzbuffer(f, 1 << 17);
  std::vector<unsigned char> bytes;
  if (auto size = std::filesystem::file_size(path, ec); !ec) bytes.reserve(static_cast<size_t>(size));
  constexpr unsigned kChunk = 1u << 20;
  for (;;) {
    const size_t old = bytes.size();
    bytes.resize(old + kChunk);
    const int got = gzread(f, bytes.data() + old, kChunk);
    if (got < 0) {
      int errnum = 0;
      std::string msg = gzerror(f, &errnum);
      gzclose(f);
      if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);
      throw Error(tinytorch::detail::str_cat(op, ": ", path, ": read error after ", old,
                                             " (decompressed) bytes: ", msg));
    }
    bytes.resize(old + static_cast<size_t>(got));
    if (got == 0) break;
  }
  int errnum = Z_OK;
  std::string msg = gzerror(f, &errnum);
  gzclose(f);
  if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);  // zlib prefixes the path
  // A gzip stream cut short ends the reads early and leaves Z_BUF_ERROR ("unexpected end of file").
  TT_CHECK(errnum == Z_OK || errnum == Z_STREAM_END, op, ": ", path, ": gzip data is truncated or corrupt (zlib: ",
           msg, ") after ", bytes.size(), " decompressed bytes");
  return bytes;
}

inline uint32_t read_be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

inline std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xF];
  return s;
}

/// Reads and validates an IDX file of unsigned bytes with `ndims` dims. Returns the dims and the
/// offset of the data in `bytes`.
inline std::vector<uint64_t> parse_idx_header(const std::vector<unsigned char>& bytes, const std::string& path,
                                              const char* op, uint32_t ndims, const char* what) {
  const uint32_t expected_magic = 0x00000800u | ndims;
  const size_t header = 4 * (1 + static_cast<size_t>(ndims));
  TT_CHECK(bytes.size() >= 4, op, ": ", path, ": file ends after ", bytes.size(),
           " bytes, expected a ", header, "-byte IDX header");
  const uint32_t magic = read_be32(bytes.data());
  if (magic != expected_magic) {
    std::string hint;
    if (magic == 0x00000803u) hint = " (this is an IDX image file)";
    else if (magic == 0x00000801u) hint = " (this is an IDX label file)";
    else if (bytes[0] == 0x1f && bytes[1] == 0x8b) hint = " (gzip data that zlib could not decompress)";
    else hint = " (not an IDX file of unsigned bytes)";
    throw Error(tinytorch::detail::str_cat(op, ": ", path, ": wrong magic number ", magic, " (", hex32(magic),
                                           "), expected ", expected_magic, " (", hex32(expected_magic),
                                           ") for IDX ", what, hint));
  }
  TT_CHECK(bytes.size() >= header, op, ": ", path, ": file ends after ", bytes.size(),
           " bytes, expected a ", header, "-byte IDX header");
  std::vector<uint64_t> dims(ndims);
  for (uint32_t i = 0; i < ndims; ++i) dims[i] = read_be32(bytes.data() + 4 * (1 + i));
  return dims;
}

/// Checks that exactly `expected` data bytes follow the header.
inline void check_data_size(const std::vector<unsigned char>& bytes, size_t header, uint64_t expected,
                            const std::string& path, const char* op, const std::string& what) {
  const uint64_t have = bytes.size() - header;
  TT_CHECK(have >= expected, op, ": ", path, ": expected ", expected, " bytes of ", what, ", file ends after ", have);
  TT_CHECK(have == expected, op, ": ", path, ": expected ", expected, " bytes of ", what, ", but the file has ",
           have - expected, " extra bytes after them (corrupt file or wrong header)");
}

}  // namespace detail

namespace detail {
inline Tensor read_idx_images(const std::string& path, uint64_t& rows, uint64_t& cols) {
  constexpr const char* op = "read_idx_images";
  const std::vector<unsigned char> bytes = detail::read_file_maybe_gz(path, op);
  const std::vector<uint64_t> dims = detail::parse_idx_header(bytes, path, op, 3, "images");
  const uint64_t n = dims[0];
  rows = dims[1];
  cols = dims[2];
  TT_CHECK(rows > 0 && cols > 0, op, ": ", path, ": invalid image size ", rows, "x", cols, " in the IDX header");
  const uint64_t pixels = rows * cols;  // < 2^64: both < 2^32
  TT_CHECK(n <= (uint64_t(1) << 40) / pixels, op, ": ", path, ": IDX header claims ", n, " images of ", rows, "x",
           cols, ", more than any file can hold (corrupt header)");
  detail::check_data_size(bytes, 16, n * pixels, path, op,
                          tinytorch::detail::str_cat("pixel data (", n, " images of ", rows, "x", cols, ")"));
  Tensor out = empty({static_cast<int64_t>(n), static_cast<int64_t>(pixels)}, kFloat32);  // (N, rows*cols)
  float* dst = out.data_ptr<float>();
  const unsigned char* src = bytes.data() + 16;
  float lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<float>(v) / 255.0f;  // exactly float(v)/255, as ToTensor
  const uint64_t total = n * pixels;
  for (uint64_t i = 0; i < total; ++i) dst[i] = lut[src[i]];
  return out;
}
}  // namespace detail

/// Reads an IDX image file (magic 2051), plain or gzip.
/// Returns float32 (N, rows*cols) with values pixel/255 in [0, 1] — (N, 784) for MNIST.
/// Throws tinytorch::Error naming the file: cannot open, wrong magic number, zero rows or cols,
/// data shorter or longer than N*rows*cols bytes, corrupt gzip stream.
inline Tensor read_idx_images(const std::string& path) {
  uint64_t rows = 0, cols = 0;
  return detail::read_idx_images(path, rows, cols);
}

/// Reads an IDX label file (magic 2049), plain or gzip. Returns int64 (N).
/// Throws tinytorch::Error naming the file: cannot open, wrong magic number, data shorter or longer
/// than N bytes, corrupt gzip stream.
inline Tensor read_idx_labels(const std::string& path) {
  constexpr const char* op = "read_idx_labels";
  const std::vector<unsigned char> bytes = detail::read_file_maybe_gz(path, op);
  const uint64_t n = detail::parse_idx_header(bytes, path, op, 1, "labels")[0];
  detail::check_data_size(bytes, 8, n, path, op, tinytorch::detail::str_cat("label data (", n, " labels)"));
  Tensor out = empty({static_cast<int64_t>(n)}, kInt64);  // (N)
  int64_t* dst = out.data_ptr<int64_t>();
  for (uint64_t i = 0; i < n; ++i) dst[i] = bytes[8 + i];
  return out;
}

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
  static std::string find_file(const std::string& root, const std::string& name) {
    namespace fs = std::filesystem;
    const fs::path plain = fs::path(root) / name;
    const fs::path gz = fs::path(root) / (name + ".gz");
    std::error_code ec;
    if (fs::is_regular_file(plain, ec)) return plain.string();
    if (fs::is_regular_file(gz, ec)) return gz.string();
    throw Error(tinytorch::detail::str_cat(
        "MNIST: cannot find ", plain.string(), " or ", gz.string(),
        ". Install Fashion-MNIST with `apt-get install dataset-fashion-mnist` (it puts the files in ",
        kDefaultDataDir, "), or pass --data-dir DIR (or set TINYTORCH_DATA=DIR) for a directory holding ",
        "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte ",
        "(plain or .gz)"));
  }

 private:
  MNIST(std::pair<Tensor, Tensor> xy, const std::string& root, bool train)
      : TensorDataset(std::move(xy.first), std::move(xy.second)), root_(root), train_(train) {}

  static std::pair<Tensor, Tensor> load(const std::string& root, bool train) {
    const std::string prefix = train ? "train" : "t10k";
    const std::string images_path = find_file(root, prefix + "-images-idx3-ubyte");
    const std::string labels_path = find_file(root, prefix + "-labels-idx1-ubyte");
    uint64_t rows = 0, cols = 0;
    Tensor images = detail::read_idx_images(images_path, rows, cols);  // (N, rows*cols)
    TT_CHECK(rows == uint64_t(kImageSize) && cols == uint64_t(kImageSize), "MNIST: ", images_path,
             ": expected 28x28 images, got ", rows, "x", cols);
    Tensor labels = read_idx_labels(labels_path);  // (N)
    TT_CHECK(images.size(0) == labels.size(0), "MNIST: ", images_path, " holds ", images.size(0),
             " images but ", labels_path, " holds ", labels.size(0), " labels");
    return {images, labels};
  }

  std::string root_;
  bool train_;
};

}  // namespace tinytorch::data
