// tinytorch/data/mnist.ipp — the bodies of mnist.hpp: the IDX reader (plain or gzip, read
// front to back through zlib's inflate), its header and size checks, and MNIST's file lookup.
//
// Not a header to include: mnist.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The format and the documentation are in mnist.hpp.
// Chapter: chapters/01-training-loop.md.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/data/mnist.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN namespace data {

namespace detail {

/// One IDX file, plain or gzip, read as a stream of (decompressed) bytes, front to back, never
/// more than the caller asks for: a small .gz that would inflate to gigabytes costs only what the
/// IDX header says the file holds (plus at most kMaxExtraCount trailing bytes, counted for the
/// error message). Every problem throws tinytorch::Error naming `op` and the file.
///   - Only regular files are read. The file is opened with O_NONBLOCK and checked with fstat
///     before anything is read, so a FIFO (which would block until a writer comes), /dev/zero
///     (endless) or a directory is refused at once.
///   - gzip is recognised by its magic bytes 1f 8b (not by the name) and inflated with zlib's
///     inflate() in 64 KiB steps; several gzip members one after the other are one stream (as
///     gunzip reads them); anything else after the last member is an error (gzread would ignore
///     it silently); a stream that stops before its end is an error.
class IdxFile {
 public:
  static constexpr uint64_t kMaxExtraCount = uint64_t(1) << 20;  ///< trailing bytes counted at most

  IdxFile(const std::string& path, const char* op) : path_(path), op_(op) {
    errno = 0;
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    TT_CHECK(fd_ >= 0, op, ": cannot open '", path, "': ", std::strerror(errno));
    try {
      struct stat st {};
      TT_CHECK(::fstat(fd_, &st) == 0, op, ": cannot stat '", path, "': ", std::strerror(errno));
      TT_CHECK(!S_ISDIR(st.st_mode), op, ": cannot read '", path, "': it is a directory");
      const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO (named pipe)"
                         : S_ISCHR(st.st_mode)  ? "a character device"
                         : S_ISBLK(st.st_mode)  ? "a block device"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "a special file";
      TT_CHECK(S_ISREG(st.st_mode), op, ": cannot read '", path, "': it is ", kind,
               ", not a regular file (IDX files are read from regular files only)");
      file_size_ = static_cast<uint64_t>(st.st_size);
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);  // a regular file: reads never block anyway
      in_.resize(1 << 16);
      fill_input();
      gzip_ = have_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
      if (gzip_) {
        TT_CHECK(inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK, op, ": ", path, ": zlib: inflateInit2 failed");
        zs_ready_ = true;
      }
    } catch (...) {  // the destructor does not run for a constructor that throws
      ::close(fd_);
      throw;
    }
  }
  ~IdxFile() {
    if (zs_ready_) inflateEnd(&zs_);
    if (fd_ >= 0) ::close(fd_);
  }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  bool gzip() const { return gzip_; }
  uint64_t file_size() const { return file_size_; }  ///< on disk (compressed for gzip)
  uint64_t position() const { return position_; }    ///< (decompressed) bytes read so far

  /// Reads up to n bytes into buf; fewer only at the end of the data.
  size_t read(unsigned char* buf, size_t n) {
    size_t got = gzip_ ? inflate_some(buf, n) : read_plain(buf, n);
    position_ += got;
    return got;
  }

  /// Throws "<op>: <path>: <message>".
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(tinytorch::detail::str_cat(op_, ": ", path_, ": ", message));
  }

 private:
  // Reads more raw bytes into in_ (have_ of them, from start_ = 0). False at the end of the file.
  bool fill_input() {
    start_ = 0;
    for (;;) {
      const ssize_t r = ::read(fd_, in_.data(), in_.size());
      if (r >= 0) {
        have_ = static_cast<size_t>(r);
        return r > 0;
      }
      if (errno != EINTR) fail(tinytorch::detail::str_cat("read error: ", std::strerror(errno)));
    }
  }

  size_t read_plain(unsigned char* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
      if (start_ == have_ && !fill_input()) break;
      const size_t k = std::min(n - got, have_ - start_);
      std::memcpy(buf + got, in_.data() + start_, k);
      start_ += k;
      got += k;
    }
    return got;
  }

  size_t inflate_some(unsigned char* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
      if (start_ == have_ && !fill_input()) {  // no more compressed bytes
        if (member_ended_) break;  // a clean end
        fail(tinytorch::detail::str_cat("gzip data is truncated or corrupt (the compressed stream stops before its "
                                        "end) after ", position_ + got, " decompressed bytes"));
      }
      if (member_ended_) {  // more bytes after a complete gzip member: another member, or garbage
        if (in_[start_] != 0x1f || (have_ - start_ >= 2 && in_[start_ + 1] != 0x8b))
          fail(tinytorch::detail::str_cat("gzip data is truncated or corrupt: the gzip stream is followed by bytes "
                                          "that are not gzip data, after ", position_ + got,
                                          " decompressed bytes (trailing garbage)"));
        inflateReset(&zs_);
        member_ended_ = false;
      }
      zs_.next_in = in_.data() + start_;
      zs_.avail_in = static_cast<uInt>(have_ - start_);
      zs_.next_out = buf + got;
      zs_.avail_out = static_cast<uInt>(std::min<size_t>(n - got, size_t(1) << 30));
      const uInt out_before = zs_.avail_out;
      const int ret = inflate(&zs_, Z_NO_FLUSH);
      got += out_before - zs_.avail_out;
      start_ = have_ - zs_.avail_in;
      if (ret == Z_STREAM_END) member_ended_ = true;
      else if (ret != Z_OK && ret != Z_BUF_ERROR)
        fail(tinytorch::detail::str_cat("gzip data is truncated or corrupt (zlib: ", zs_.msg ? zs_.msg : zError(ret),
                                        ") after ", position_ + got, " decompressed bytes"));
    }
    return got;
  }

  std::string path_;
  const char* op_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  bool gzip_ = false;
  z_stream zs_{};
  bool zs_ready_ = false;
  bool member_ended_ = false;
  std::vector<unsigned char> in_;  // raw (compressed) input buffer
  size_t start_ = 0, have_ = 0;    // unread raw bytes: in_[start_, have_)
  uint64_t position_ = 0;
};

inline uint32_t read_be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

inline std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xF];
  return s;
}

/// Reads and validates the header of an IDX file of unsigned bytes with `ndims` dims (and nothing
/// more). Returns the dims.
inline std::vector<uint64_t> read_idx_header(IdxFile& f, uint32_t ndims, const char* what) {
  const uint32_t expected_magic = 0x00000800u | ndims;
  const size_t header = 4 * (1 + static_cast<size_t>(ndims));
  unsigned char h[16];
  size_t got = f.read(h, 4);
  if (got < 4)
    f.fail(tinytorch::detail::str_cat("file ends after ", got, " bytes, expected a ", header, "-byte IDX header"));
  const uint32_t magic = read_be32(h);
  if (magic != expected_magic) {
    std::string hint;
    if (magic == 0x00000803u) hint = " (this is an IDX image file)";
    else if (magic == 0x00000801u) hint = " (this is an IDX label file)";
    else hint = " (not an IDX file of unsigned bytes)";
    f.fail(tinytorch::detail::str_cat("wrong magic number ", magic, " (", hex32(magic), "), expected ", expected_magic,
                                      " (", hex32(expected_magic), ") for IDX ", what, hint));
  }
  got += f.read(h + 4, header - 4);
  if (got < header)
    f.fail(tinytorch::detail::str_cat("file ends after ", got, " bytes, expected a ", header, "-byte IDX header"));
  std::vector<uint64_t> dims(ndims);
  for (uint32_t i = 0; i < ndims; ++i) dims[i] = read_be32(h + 4 * (1 + i));
  return dims;
}

/// Reads exactly `expected` data bytes after the header, then checks that the file ends there.
/// Memory grows with what is actually read, never with what the header claims, and never past it.
inline std::vector<unsigned char> read_idx_data(IdxFile& f, uint64_t expected, const std::string& what) {
  const uint64_t header = f.position();
  if (!f.gzip()) {  // the size on disk says it all, before anything is read
    const uint64_t have = f.file_size() - header;
    if (have < expected)
      f.fail(tinytorch::detail::str_cat("expected ", expected, " bytes of ", what, ", file ends after ", have));
    if (have > expected)
      f.fail(tinytorch::detail::str_cat("expected ", expected, " bytes of ", what, ", but the file has ",
                                        have - expected, " extra bytes after them (corrupt file or wrong header)"));
  }
  std::vector<unsigned char> data;
  try {
    constexpr uint64_t kStep = uint64_t(1) << 24;  // 16 MiB
    data.reserve(static_cast<size_t>(std::min(expected, kStep)));
    while (data.size() < expected) {
      const size_t old = data.size();
      const size_t want = static_cast<size_t>(std::min<uint64_t>(expected - old, kStep));
      if (data.capacity() < old + want)  // grow geometrically, but never past what the header says
        data.reserve(static_cast<size_t>(std::min<uint64_t>(expected, std::max<uint64_t>(2 * data.capacity(), old + want))));
      data.resize(old + want);
      const size_t got = f.read(data.data() + old, want);
      data.resize(old + got);
      if (got < want)
        f.fail(tinytorch::detail::str_cat("expected ", expected, " bytes of ", what, ", file ends after ", data.size()));
    }
  } catch (const std::bad_alloc&) {
    f.fail(tinytorch::detail::str_cat("out of memory after reading ", data.size(), " of the ", expected, " bytes of ",
                                      what));
  }
  // Trailing bytes: count them, up to kMaxExtraCount (a gzip bomb is not inflated further).
  unsigned char scratch[1 << 14];
  uint64_t extra = 0;
  while (extra <= IdxFile::kMaxExtraCount) {
    const size_t got = f.read(scratch, sizeof scratch);
    if (got == 0) break;
    extra += got;
  }
  if (extra > IdxFile::kMaxExtraCount)
    f.fail(tinytorch::detail::str_cat("expected ", expected, " bytes of ", what, ", but the file has more than ",
                                      IdxFile::kMaxExtraCount, " extra bytes after them (corrupt file or wrong header)"));
  if (extra > 0)
    f.fail(tinytorch::detail::str_cat("expected ", expected, " bytes of ", what, ", but the file has ", extra,
                                      " extra bytes after them (corrupt file or wrong header)"));
  return data;
}

}  // namespace detail

namespace detail {
inline Tensor read_idx_images(const std::string& path, uint64_t& rows, uint64_t& cols) {
  IdxFile f(path, "read_idx_images");
  const std::vector<uint64_t> dims = read_idx_header(f, 3, "images");
  const uint64_t n = dims[0];
  rows = dims[1];
  cols = dims[2];
  if (rows == 0 || cols == 0)
    f.fail(tinytorch::detail::str_cat("invalid image size ", rows, "x", cols, " in the IDX header"));
  const uint64_t pixels = rows * cols;  // < 2^64: both < 2^32
  if (n > (uint64_t(1) << 40) / pixels)
    f.fail(tinytorch::detail::str_cat("IDX header claims ", n, " images of ", rows, "x", cols,
                                      ", more than any file can hold (corrupt header)"));
  const std::vector<unsigned char> bytes =
      read_idx_data(f, n * pixels, tinytorch::detail::str_cat("pixel data (", n, " images of ", rows, "x", cols, ")"));
  Tensor out = empty({static_cast<int64_t>(n), static_cast<int64_t>(pixels)}, kFloat32);  // (N, rows*cols)
  float* dst = out.data_ptr<float>();
  float lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<float>(v) / 255.0f;  // exactly float(v)/255, as ToTensor
  for (size_t i = 0; i < bytes.size(); ++i) dst[i] = lut[bytes[i]];
  return out;
}
}  // namespace detail

TT_DECL Tensor read_idx_images(const std::string& path) {
  uint64_t rows = 0, cols = 0;
  return detail::read_idx_images(path, rows, cols);
}

TT_DECL Tensor read_idx_labels(const std::string& path) {
  detail::IdxFile f(path, "read_idx_labels");
  const uint64_t n = detail::read_idx_header(f, 1, "labels")[0];
  const std::vector<unsigned char> bytes =
      detail::read_idx_data(f, n, tinytorch::detail::str_cat("label data (", n, " labels)"));
  Tensor out = empty({static_cast<int64_t>(n)}, kInt64);  // (N)
  int64_t* dst = out.data_ptr<int64_t>();
  for (uint64_t i = 0; i < n; ++i) dst[i] = bytes[i];
  return out;
}

TT_DECL std::string MNIST::find_file(const std::string& root, const std::string& name) {
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

TT_DECL std::pair<Tensor, Tensor> MNIST::load(const std::string& root, bool train) {
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

}  TT_NAMESPACE_END  // namespace tinytorch::data
