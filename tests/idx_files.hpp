// tests/idx_files.hpp — writing IDX (MNIST-format) test files, shared by tests/test_mnist.cpp and
// tests/test_robust.cpp: the big-endian header, plain and gzip files, and a temporary directory.
// IDX: magic (0x803 images, 0x801 labels), then the dims as big-endian uint32, then the bytes
// (data/mnist.hpp reads them). Test code only: it uses Catch2's REQUIRE.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <catch2/catch.hpp>

namespace tt_test {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

inline void put_be32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<unsigned char>(v >> shift));
}

// An IDX image file: magic 2051, N, rows, cols, then `pixels` (which may be shorter or longer than
// N*rows*cols, to make broken files; empty: the header alone).
inline Bytes idx_images(uint32_t n, uint32_t rows, uint32_t cols, const Bytes& pixels, uint32_t magic = 0x803) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, n);
  put_be32(b, rows);
  put_be32(b, cols);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}
// An IDX label file: magic 2049, N, then `labels` (empty: the header alone).
inline Bytes idx_labels(const Bytes& labels, uint32_t n, uint32_t magic = 0x801) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, n);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}
inline Bytes idx_labels(const Bytes& labels) { return idx_labels(labels, static_cast<uint32_t>(labels.size())); }

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& prefix = "tinytorch_test_") {
    static int counter = 0;
    path = fs::temp_directory_path() / (prefix + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline void write_plain(const fs::path& p, const Bytes& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(f.good());
}
inline Bytes read_raw(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}
// A gzip file holding `head`, then `zeros` zero bytes (zlib compresses zeros about 1000:1: a
// "gzip bomb" of 64 MiB is a file of about 64 KiB).
inline void write_gz(const fs::path& p, const Bytes& head, uint64_t zeros = 0) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!head.empty()) REQUIRE(gzwrite(f, head.data(), static_cast<unsigned>(head.size())) == static_cast<int>(head.size()));
  const Bytes block(1 << 20, 0);
  while (zeros > 0) {
    const unsigned k = static_cast<unsigned>(std::min<uint64_t>(zeros, block.size()));
    REQUIRE(gzwrite(f, block.data(), k) == static_cast<int>(k));
    zeros -= k;
  }
  REQUIRE(gzclose(f) == Z_OK);
}

}  // namespace tt_test
