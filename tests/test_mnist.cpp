// tests/test_mnist.cpp — the IDX reader and the MNIST dataset.
//
// Small IDX files (plain, and gzip through zlib's gzopen "wb") are written to a fresh temporary
// directory and read back; broken files (truncated, wrong magic, bad dims, trailing bytes,
// corrupt gzip, missing) are checked by their error messages. The last test reads the real
// Fashion-MNIST files (Debian's dataset-fashion-mnist, or $TINYTORCH_DATA) when they are
// installed; otherwise it WARNs "skipped: dataset not installed" and passes (Catch2 2.13 has no SKIP).
// Tags: [ch01][data].
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <tinytorch/data/dataloader.hpp>
#include <tinytorch/data/mnist.hpp>

#include "idx_files.hpp"

using namespace tinytorch;
using namespace tinytorch::data;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using namespace tt_test;  // Bytes, idx_images, idx_labels (tests/idx_files.hpp)

// Deterministic pixels: pixel k of the file is (7*k + 3) % 256.
Bytes pattern(size_t count) {
  Bytes b(count);
  for (size_t k = 0; k < count; ++k) b[k] = static_cast<unsigned char>((7 * k + 3) % 256);
  return b;
}



// Restores an environment variable at scope exit.
struct EnvGuard {
  std::string name;
  std::optional<std::string> old;
  explicit EnvGuard(std::string n) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
  }
  ~EnvGuard() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

void check_images(const Tensor& x, int64_t n, int64_t pixels) {
  REQUIRE(x.sizes() == Shape{n, pixels});
  REQUIRE(x.dtype() == kFloat32);
  const Bytes expected = pattern(static_cast<size_t>(n * pixels));
  const float* p = x.data_ptr<float>();
  for (size_t k = 0; k < expected.size(); ++k) REQUIRE(p[k] == static_cast<float>(expected[k]) / 255.0f);
}

}  // namespace

TEST_CASE("read_idx_images / read_idx_labels: plain and gzip round trip", "[ch01][data]") {
  TempDir dir;
  const Bytes images = idx_images(3, 2, 3, pattern(18));  // 3 images of 2x3
  const Bytes labels = idx_labels({3, 0, 9});
  write_plain(dir / "img", images);
  write_plain(dir / "lbl", labels);
  write_gz(dir / "img.gz", images);
  write_gz(dir / "lbl.gz", labels);
  for (const char* suffix : {"", ".gz"}) {
    INFO("suffix '" << suffix << "'");
    Tensor x = read_idx_images(dir / (std::string("img") + suffix));
    check_images(x, 3, 6);
    Tensor y = read_idx_labels(dir / (std::string("lbl") + suffix));
    CHECK(y.sizes() == Shape{3});
    CHECK(y.dtype() == kInt64);
    CHECK(y.tolist<int64_t>() == std::vector<int64_t>{3, 0, 9});
  }
  // 0 and 255 map to exactly 0 and 1; every value is pixel / 255 in float32.
  write_plain(dir / "ends", idx_images(1, 1, 3, {0, 255, 51}));
  CHECK(read_idx_images(dir / "ends").tolist<float>() == std::vector<float>{0.0f, 1.0f, 0.2f});
  // An empty set (N = 0) is a valid file.
  write_plain(dir / "none", idx_images(0, 28, 28, {}));
  CHECK(read_idx_images(dir / "none").sizes() == Shape{0, 784});
}

TEST_CASE("read_idx_*: truncated files and trailing bytes", "[ch01][data]") {
  TempDir dir;
  write_plain(dir / "short", idx_images(5, 28, 28, pattern(1000)));
  CHECK_THROWS_AS(read_idx_images(dir / "short"), Error);
  CHECK_THROWS_WITH(read_idx_images(dir / "short"),
                    Contains(dir / "short") &&
                        Contains("expected 3920 bytes of pixel data (5 images of 28x28), file ends after 1000"));
  write_gz(dir / "short.gz", idx_images(5, 28, 28, pattern(1000)));
  CHECK_THROWS_WITH(read_idx_images(dir / "short.gz"), Contains("file ends after 1000"));

  write_plain(dir / "long", idx_images(1, 2, 2, pattern(6)));
  CHECK_THROWS_WITH(read_idx_images(dir / "long"), Contains("expected 4 bytes of pixel data") &&
                                                      Contains("2 extra bytes"));

  write_plain(dir / "lshort", idx_labels({1, 2, 3, 4}, 10));
  CHECK_THROWS_WITH(read_idx_labels(dir / "lshort"),
                    Contains(dir / "lshort") && Contains("expected 10 bytes of label data (10 labels), file ends after 4"));

  // Header cut short.
  write_plain(dir / "tiny", {0, 0, 8});
  CHECK_THROWS_WITH(read_idx_images(dir / "tiny"), Contains("file ends after 3 bytes, expected a 16-byte IDX header"));
  write_plain(dir / "half", Bytes{0, 0, 8, 3, 0, 0, 0, 1, 0, 0});
  CHECK_THROWS_WITH(read_idx_images(dir / "half"), Contains("file ends after 10 bytes, expected a 16-byte IDX header"));
  write_plain(dir / "empty", {});
  CHECK_THROWS_WITH(read_idx_labels(dir / "empty"), Contains("file ends after 0 bytes, expected a 8-byte IDX header"));

  // A gzip file cut in the middle of its compressed stream.
  const Bytes big = idx_images(20, 28, 28, pattern(20 * 784));
  write_gz(dir / "full.gz", big);
  Bytes gz = read_raw(dir / "full.gz");
  REQUIRE(gz.size() > 100);
  gz.resize(gz.size() / 2);
  write_plain(dir / "cut.gz", gz);
  CHECK_THROWS_WITH(read_idx_images(dir / "cut.gz"),
                    Contains(dir / "cut.gz") && Contains("gzip data is truncated or corrupt"));
  // Corrupt compressed bytes (header intact): zlib reports a data error or the CRC check fails.
  gz = read_raw(dir / "full.gz");
  for (size_t k = 20; k < 60; ++k) gz[k] ^= 0x5A;
  write_plain(dir / "bad.gz", gz);
  CHECK_THROWS_AS(read_idx_images(dir / "bad.gz"), Error);
}

TEST_CASE("read_idx_*: wrong magic numbers and dims", "[ch01][data]") {
  TempDir dir;
  write_plain(dir / "labels", idx_labels({1, 2}));
  CHECK_THROWS_WITH(read_idx_images(dir / "labels"),
                    Contains(dir / "labels") &&
                        Contains("wrong magic number 2049 (0x00000801), expected 2051 (0x00000803) for IDX images") &&
                        Contains("this is an IDX label file"));
  write_plain(dir / "images", idx_images(1, 1, 1, {7}));
  CHECK_THROWS_WITH(read_idx_labels(dir / "images"),
                    Contains("wrong magic number 2051 (0x00000803), expected 2049 (0x00000801) for IDX labels"));
  write_plain(dir / "text", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!', '!', '!', '!'});
  CHECK_THROWS_WITH(read_idx_images(dir / "text"), Contains("wrong magic number") && Contains("not an IDX file"));
  // float IDX (type 0x0D) is not supported.
  write_plain(dir / "floats", idx_images(1, 1, 1, {0, 0, 0, 0}, 0x0D03));
  CHECK_THROWS_WITH(read_idx_images(dir / "floats"), Contains("wrong magic number 3331 (0x00000d03)"));

  write_plain(dir / "zero_rows", idx_images(2, 0, 28, {}));
  CHECK_THROWS_WITH(read_idx_images(dir / "zero_rows"), Contains("invalid image size 0x28"));
  write_plain(dir / "huge", idx_images(0xFFFFFFFFu, 0xFFFFu, 0xFFFFu, pattern(10)));
  CHECK_THROWS_WITH(read_idx_images(dir / "huge"), Contains("corrupt header"));
}

TEST_CASE("read_idx_* and MNIST: missing files", "[ch01][data]") {
  TempDir dir;
  CHECK_THROWS_WITH(read_idx_images(dir / "nope"),
                    Contains("read_idx_images: cannot open '" + (dir / "nope") + "': No such file or directory"));
  CHECK_THROWS_WITH(read_idx_labels(dir.path.string()), Contains("is a directory"));
  CHECK_THROWS_AS(MNIST(dir.path.string()), Error);
  CHECK_THROWS_WITH(MNIST(dir.path.string()),
                    Contains(dir / "train-images-idx3-ubyte") && Contains(dir / "train-images-idx3-ubyte.gz") &&
                        Contains("apt-get install dataset-fashion-mnist") && Contains("--data-dir"));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2, 28, 28, pattern(2 * 784)));
  CHECK_THROWS_WITH(MNIST(dir.path.string(), false), Contains(dir / "t10k-labels-idx1-ubyte"));
}

TEST_CASE("MNIST: a small dataset in a directory (plain and gzip files)", "[ch01][data]") {
  TempDir dir;
  // train: plain files, 5 images; test: gzip files, 3 images.
  write_plain(dir / "train-images-idx3-ubyte", idx_images(5, 28, 28, pattern(5 * 784)));
  write_plain(dir / "train-labels-idx1-ubyte", idx_labels({5, 0, 4, 1, 9}));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(3, 28, 28, pattern(3 * 784)));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx_labels({7, 2, 1}));

  MNIST train(dir.path.string());
  CHECK(train.size() == 5);
  CHECK(train.train());
  check_images(train.data(), 5, 784);
  CHECK(train.targets().tolist<int64_t>() == std::vector<int64_t>{5, 0, 4, 1, 9});
  MNIST test(dir.path.string(), /*train=*/false);
  CHECK(test.size() == 3);
  check_images(test.data(), 3, 784);
  CHECK(test.targets().tolist<int64_t>() == std::vector<int64_t>{7, 2, 1});
  Example e = test.get(1);
  CHECK(e.data.sizes() == Shape{784});
  CHECK(e.target.item<int64_t>() == 2);

  // Through a DataLoader: batches of (B, 784) float32 and (B) int64.
  DataLoaderOptions opts;
  opts.batch_size = 2;
  DataLoader loader(train, opts);
  CHECK(loader.size() == 3);
  std::vector<int64_t> labels;
  for (auto& batch : loader) {
    CHECK(batch.data.size(1) == 784);
    CHECK(batch.data.dtype() == kFloat32);
    CHECK(batch.target.dtype() == kInt64);
    for (int64_t l : batch.target.tolist<int64_t>()) labels.push_back(l);
  }
  CHECK(labels == std::vector<int64_t>{5, 0, 4, 1, 9});

  // A plain file wins over a .gz of the same name.
  CHECK(MNIST::find_file(dir.path.string(), "train-images-idx3-ubyte") == dir / "train-images-idx3-ubyte");
  CHECK(MNIST::find_file(dir.path.string(), "t10k-images-idx3-ubyte") == dir / "t10k-images-idx3-ubyte.gz");
}

TEST_CASE("MNIST: wrong image dims and mismatched counts", "[ch01][data]") {
  TempDir dir;
  write_plain(dir / "train-images-idx3-ubyte", idx_images(5, 4, 4, pattern(5 * 16)));
  write_plain(dir / "train-labels-idx1-ubyte", idx_labels({1, 2, 3, 4, 5}));
  CHECK_THROWS_WITH(MNIST(dir.path.string()),
                    Contains(dir / "train-images-idx3-ubyte") && Contains("expected 28x28 images, got 4x4"));
  write_plain(dir / "train-images-idx3-ubyte", idx_images(5, 28, 28, pattern(5 * 784)));
  write_plain(dir / "train-labels-idx1-ubyte", idx_labels({1, 2, 3, 4}));
  CHECK_THROWS_WITH(MNIST(dir.path.string()), Contains("holds 5 images but") && Contains("holds 4 labels"));
}

TEST_CASE("default_data_dir: --data-dir, then $TINYTORCH_DATA, then Debian's path", "[ch01][data]") {
  EnvGuard guard("TINYTORCH_DATA");
  ::setenv("TINYTORCH_DATA", "/from/env", 1);
  CHECK(default_data_dir(std::string("/from/cli")) == "/from/cli");
  CHECK(default_data_dir() == "/from/env");
  CHECK(default_data_dir(std::string()) == "/from/env");  // an empty --data-dir counts as absent
  ::setenv("TINYTORCH_DATA", "", 1);
  CHECK(default_data_dir() == "/usr/share/datasets/fashion-mnist");
  ::unsetenv("TINYTORCH_DATA");
  CHECK(default_data_dir(std::nullopt) == "/usr/share/datasets/fashion-mnist");
  CHECK(std::string(kDefaultDataDir) == "/usr/share/datasets/fashion-mnist");
}

TEST_CASE("MNIST: the real Fashion-MNIST files, when installed", "[ch01][data]") {
  const std::string root = default_data_dir();
  bool present = true;
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"}) {
    const fs::path p = fs::path(root) / name;
    if (!fs::exists(p) && !fs::exists(p.string() + ".gz")) present = false;
  }
  if (!present) {
    WARN("skipped: dataset not installed in " << root
                                              << " (apt-get install dataset-fashion-mnist, or set TINYTORCH_DATA)");
    SUCCEED();
    return;
  }
  MNIST train(root, true);
  CHECK(train.size() == 60000);
  CHECK(train.data().sizes() == Shape{60000, 784});
  CHECK(train.targets().sizes() == Shape{60000});
  MNIST test(root, false);
  CHECK(test.data().sizes() == Shape{10000, 784});
  CHECK(test.targets().sizes() == Shape{10000});
  if (root == kDefaultDataDir) {  // Fashion-MNIST (torchvision.datasets.FashionMNIST gives the same)
    CHECK(train.targets().narrow(0, 0, 10).tolist<int64_t>() == std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
    CHECK(test.targets().narrow(0, 0, 10).tolist<int64_t>() == std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7});
    // Sum of the first training image's bytes is 76247 (gzip -dc | od), i.e. 76247/255 after scaling.
    CHECK(train.data().select(0, 0).sum().item<double>() == Approx(76247.0 / 255.0).epsilon(1e-5));
  }
  // Pixels in [0, 1], labels in 0..9.
  for (const MNIST* ds : {&train, &test}) {
    const float* x = ds->data().data_ptr<float>();
    float lo = 1.0f, hi = 0.0f;
    for (int64_t k = 0; k < ds->data().numel(); ++k) lo = std::min(lo, x[k]), hi = std::max(hi, x[k]);
    CHECK(lo == 0.0f);
    CHECK(hi == 1.0f);
    const int64_t* y = ds->targets().data_ptr<int64_t>();
    int64_t ymin = 9, ymax = 0;
    for (int64_t k = 0; k < ds->targets().numel(); ++k) ymin = std::min(ymin, y[k]), ymax = std::max(ymax, y[k]);
    CHECK(ymin == 0);
    CHECK(ymax == 9);
  }
}
