// tinytorch/serialization.hpp — checkpoints: tinytorch::save / tinytorch::load for state dicts
// (PyTorch: torch.save(model.state_dict(), path) / model.load_state_dict(torch.load(path))).
//
//   tinytorch::save(model->state_dict(), "ckpt.tt");       // atomically: tmp file, fsync, rename
//   model->load_state_dict(tinytorch::load("ckpt.tt"));
//
// With DDP every rank holds the same weights, so rank 0 alone writes and the others wait at a
// barrier before anyone reads the file (chapters/06-distributed-data-parallel.md, "Checkpoints"):
//   if (dist::get_rank() == 0) tinytorch::save(ddp->module()->state_dict(), "ckpt.tt");
//   dist::barrier();
//
// File format (native byte order; not PyTorch's zip/pickle format):
//   "TTSD", u32 version = 2, u64 count, then per entry:
//   u64 name length, name bytes, u8 dtype (0 float32, 1 float64, 2 int64), u64 ndim,
//   ndim x i64 sizes, numel * element_size bytes of contiguous data;
//   then u32 CRC-32 (zlib's crc32) of every byte before it.
// Version 1 files (the same without the CRC-32) still load, unchecked.
// Tensors are saved contiguous (a view saves only its own elements, as torch.save of a
// state dict clones nothing but writes each storage; here there is no storage sharing).
//
// Writes are atomic: the bytes go to a uniquely named temporary file in the same directory, which
// is flushed to disk (fsync) and then renamed over <path>, so a crash or a full disk leaves
// either the old file or the new one, never half of one. A symbolic link is followed; a path that
// names a directory or a device is an error (torch.save would write through a device; here
// that could not be atomic). Every malformed file (wrong magic or version, a CRC-32 that does not
// match, truncated, a size that does not fit the file, trailing bytes) throws tinytorch::Error
// naming the file and the problem before anything is allocated from the file's numbers.
// load() opens the path once and reads that open file, so a save renaming a new file over the
// path meanwhile is read either wholly old or wholly new.
// Chapter: chapters/06-distributed-data-parallel.md ("Checkpoints").
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "core/dtype.hpp"
#include "ops/creation.hpp"
#include "tensor.hpp"

namespace tinytorch {

namespace detail {

/// zlib's CRC-32 of `n` bytes at `p` (fed in chunks: zlib's length argument is 32-bit).
inline uint32_t crc32_of(const char* p, size_t n) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, size_t{1} << 30));
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(p), chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

/// The whole regular file at `path`, read through one descriptor (open, fstat, read), so that a
/// file renamed over `path` meanwhile is never mixed with the old one. O_NONBLOCK: opening a FIFO
/// must not wait for a writer. Throws tinytorch::Error naming the file ("load" in messages).
inline std::string read_whole_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  TT_CHECK(fd >= 0, "load: cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    TT_CHECK(false, "load: '", path, "' is not a regular file");
  }
  std::string buf(static_cast<size_t>(st.st_size), '\0');  // no more than the file's size (not /dev/zero)
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::read(fd, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw Error(str_cat("load: error while reading '", path, "': ", why));
    }
    if (n == 0) break;  // shorter than fstat said (truncated in place): reported by the parser
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  buf.resize(done);
  return buf;
}

/// Writes `data` to `path` atomically: a uniquely named temporary file in the same directory
/// (created with O_EXCL, so two writers never share one), fsync, rename(2) over `path` (atomic on
/// POSIX file systems). A symbolic link is followed (its target is replaced, as torch.save writes
/// through a link); an existing file keeps its permissions. `op` names the caller in messages.
/// Throws tinytorch::Error (and removes the temporary file) if any step fails, if the path
/// contains a NUL byte, or if it names something other than a regular file (a directory, a
/// device: replacing those by a file would be wrong, writing through them is not atomic).
inline void write_file_atomically(const std::string& path_in, const std::string& data, const char* op) {
  TT_CHECK(!path_in.empty(), op, ": the path is empty");
  TT_CHECK(path_in.find('\0') == std::string::npos, op, ": the path '", path_in.c_str(), "...' contains a NUL byte");
  std::string path = path_in;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char* target = ::realpath(path.c_str(), nullptr);
    TT_CHECK(target != nullptr, op, ": '", path_in, "' is a symbolic link to a file that does not exist");
    path = target;
    std::free(target);
  }
  const bool exists = ::stat(path.c_str(), &st) == 0;
  TT_CHECK(!exists || S_ISREG(st.st_mode), op, ": '", path_in, "' exists and is not a regular file");
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  static std::atomic<unsigned long> counter{0};
  const std::string tmp = (slash == std::string::npos ? std::string() : dir) + ".tt_tmp." +
                          std::to_string(static_cast<long>(::getpid())) + "." + std::to_string(++counter);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // umask applies
  TT_CHECK(fd >= 0, op, ": cannot create a temporary file in '", dir, "' to write '", path_in,
           "': ", std::strerror(errno));
  auto fail = [&](const char* what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    std::remove(tmp.c_str());
    throw Error(str_cat(op, ": ", what, " '", path_in, "': ", why));
  };
  if (exists && ::fchmod(fd, st.st_mode & 07777) != 0) fail("cannot keep the permissions of");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("error while writing");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot flush to disk");
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error(str_cat(op, ": cannot rename the temporary file over '", path_in, "': ", why));
  }
}

}  // namespace detail

/// Writes a state dict (name, tensor pairs, e.g. Module::state_dict()) to `path` atomically.
/// Throws tinytorch::Error naming the file if it cannot be written.
inline void save(const std::vector<std::pair<std::string, Tensor>>& state_dict, const std::string& path) {
  std::string buf = "TTSD";
  auto put = [&buf](const void* p, size_t n) { buf.append(static_cast<const char*>(p), n); };
  const uint32_t version = 2;
  const uint64_t count = state_dict.size();
  put(&version, 4);
  put(&count, 8);
  for (const auto& [name, t0] : state_dict) {
    TT_CHECK(t0.defined(), "save: entry '", name, "' is an undefined tensor");
    const Tensor t = t0.is_contiguous() ? t0 : t0.contiguous();
    const uint64_t len = name.size(), ndim = static_cast<uint64_t>(t.dim());
    const uint8_t dt = static_cast<uint8_t>(t.dtype());
    put(&len, 8);
    put(name.data(), name.size());
    put(&dt, 1);
    put(&ndim, 8);
    for (int64_t d : t.sizes()) put(&d, 8);
    const size_t bytes = static_cast<size_t>(t.numel()) * element_size(t.dtype());
    if (bytes > 0) put(t.raw_data(), bytes);  // a zero-element tensor may have no storage
  }
  const uint32_t crc = detail::crc32_of(buf.data(), buf.size());
  put(&crc, 4);
  detail::write_file_atomically(path, buf, "save");
}

/// Reads a file written by save() (format version 2, or version 1 without a checksum). Throws
/// tinytorch::Error naming the file if it cannot be read, its CRC-32 does not match (bit flips,
/// a partial copy), or it is not a well-formed tinytorch state dict.
inline std::vector<std::pair<std::string, Tensor>> load(const std::string& path) {
  TT_CHECK(path.find('\0') == std::string::npos, "load: the path '", path.c_str(), "...' contains a NUL byte");
  std::string buf = detail::read_whole_file(path);
  size_t pos = 0;
  auto left = [&] { return static_cast<uint64_t>(buf.size() - pos); };
  auto get = [&](void* p, uint64_t n) {
    TT_CHECK(n <= left(), "load: '", path, "' is truncated (", n, " more bytes expected at offset ", pos,
             ", file size ", buf.size(), ")");
    if (n > 0) std::memcpy(p, buf.data() + pos, static_cast<size_t>(n));  // p may be null when n == 0
    pos += static_cast<size_t>(n);
  };
  char magic[4];
  get(magic, 4);
  TT_CHECK(std::memcmp(magic, "TTSD", 4) == 0, "load: '", path, "' is not a tinytorch state dict");
  uint32_t version = 0;
  uint64_t count = 0;
  get(&version, 4);
  TT_CHECK(version == 1 || version == 2, "load: '", path, "' has format version ", version, ", expected 1 or 2");
  if (version == 2) {  // the last 4 bytes: CRC-32 of all bytes before them
    TT_CHECK(buf.size() >= 20, "load: '", path, "' is truncated (no room for its checksum, file size ", buf.size(),
             ")");
    uint32_t stored = 0;
    std::memcpy(&stored, buf.data() + buf.size() - 4, 4);
    buf.resize(buf.size() - 4);
    const uint32_t actual = detail::crc32_of(buf.data(), buf.size());
    TT_CHECK(stored == actual, "load: '", path, "' is corrupt: its CRC-32 checksum does not match (stored ", stored,
             ", computed ", actual, ")");
  }
  get(&count, 8);
  TT_CHECK(count <= left() / 17, "load: '", path, "' claims ", count, " entries, more than its ", buf.size(),
           " bytes can hold");  // an entry takes at least 17 bytes
  std::vector<std::pair<std::string, Tensor>> out;
  for (uint64_t e = 0; e < count; ++e) {
    uint64_t len = 0, ndim = 0;
    uint8_t dt = 0;
    get(&len, 8);
    TT_CHECK(len <= left(), "load: '", path, "' is truncated (a name of ", len, " bytes at offset ", pos, ")");
    std::string name(buf.data() + pos, static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    get(&dt, 1);
    TT_CHECK(dt <= static_cast<uint8_t>(DType::Int64), "load: '", path, "': entry '", name, "' has bad dtype ",
             int(dt));
    get(&ndim, 8);
    TT_CHECK(ndim <= 64 && ndim * 8 <= left(), "load: '", path, "': entry '", name, "' has bad ndim ", ndim);
    Shape shape(static_cast<size_t>(ndim));
    const uint64_t esize = element_size(static_cast<DType>(dt));
    uint64_t numel = 1;
    for (auto& d : shape) {
      get(&d, 8);
      TT_CHECK(d >= 0, "load: '", path, "': entry '", name, "' has a negative size ", d);
      const uint64_t u = static_cast<uint64_t>(d);
      TT_CHECK(u == 0 || numel <= (UINT64_MAX / 16) / u, "load: '", path, "': entry '", name,
               "' is larger than any file");  // numel * esize would overflow
      numel *= u;
    }
    TT_CHECK(numel * esize <= left(), "load: '", path, "' is truncated (entry '", name, "' needs ", numel * esize,
             " bytes, ", left(), " left)");
    Tensor t = empty(shape, TensorOptions(static_cast<DType>(dt)));
    get(t.raw_data(), numel * esize);
    out.emplace_back(std::move(name), std::move(t));
  }
  TT_CHECK(left() == 0, "load: '", path, "' has ", left(), " unexpected bytes after its last entry");
  return out;
}

}  // namespace tinytorch
