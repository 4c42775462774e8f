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
//   "TTSD", u32 version = 1, u64 count, then per entry:
//   u64 name length, name bytes, u8 dtype (0 float32, 1 float64, 2 int64), u64 ndim,
//   ndim x i64 sizes, numel * element_size bytes of contiguous data.
// Tensors are saved contiguous (a view saves only its own elements, as torch.save of a
// state dict clones nothing but writes each storage; here there is no storage sharing).
//
// Writes are atomic: the bytes go to a uniquely named temporary file in the same directory, which
// is flushed to disk (fsync) and then renamed over <path>, so a crash or a full disk leaves
// either the old file or the new one, never half of one. A symbolic link is followed; a path that
// names a directory or a device is an error (torch.save would write through a device; here
// that could not be atomic). Every malformed file (wrong magic or version, truncated, a size that does
// not fit the file, trailing bytes) throws tinytorch::Error naming the file and the problem
// before anything is allocated from the file's numbers.
// Chapter: chapters/06-distributed-data-parallel.md ("Checkpoints").
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "core/dtype.hpp"
#include "ops/creation.hpp"
#include "tensor.hpp"

namespace tinytorch {

namespace detail {

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
  const uint32_t version = 1;
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
    put(t.raw_data(), static_cast<size_t>(t.numel()) * element_size(t.dtype()));
  }
  detail::write_file_atomically(path, buf, "save");
}

/// Reads a file written by save(). Throws tinytorch::Error naming the file if it cannot be
/// read or is not a well-formed tinytorch state dict.
inline std::vector<std::pair<std::string, Tensor>> load(const std::string& path) {
  TT_CHECK(path.find('\0') == std::string::npos, "load: the path '", path.c_str(), "...' contains a NUL byte");
  struct stat st {};
  TT_CHECK(::stat(path.c_str(), &st) == 0, "load: cannot open '", path, "': ", std::strerror(errno));
  TT_CHECK(S_ISREG(st.st_mode), "load: '", path, "' is not a regular file");
  std::string buf(static_cast<size_t>(st.st_size), '\0');  // no more than the file's size (not /dev/zero)
  std::ifstream f(path, std::ios::binary);
  TT_CHECK(static_cast<bool>(f), "load: cannot open '", path, "'");
  f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<size_t>(f.gcount()));
  size_t pos = 0;
  auto left = [&] { return static_cast<uint64_t>(buf.size() - pos); };
  auto get = [&](void* p, uint64_t n) {
    TT_CHECK(n <= left(), "load: '", path, "' is truncated (", n, " more bytes expected at offset ", pos,
             ", file size ", buf.size(), ")");
    std::memcpy(p, buf.data() + pos, static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
  };
  char magic[4];
  get(magic, 4);
  TT_CHECK(std::memcmp(magic, "TTSD", 4) == 0, "load: '", path, "' is not a tinytorch state dict");
  uint32_t version = 0;
  uint64_t count = 0;
  get(&version, 4);
  TT_CHECK(version == 1, "load: '", path, "' has format version ", version, ", expected 1");
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
