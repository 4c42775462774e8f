// tinytorch/serialization.ipp — the bodies of serialization.hpp: the safetensors writer and
// parser, the digests, the atomic file writer and the reader of the older "TTSD" format.
//
// Not a header to include: serialization.hpp includes it at its end in a header-only build, and
// <tinytorch/src.hpp> compiles it once with -DTINYTORCH_SEPARATE_COMPILATION (TT_DECL,
// core/config.hpp). The format, the checks and the documentation are in serialization.hpp.
// Chapter: chapters/06-distributed-data-parallel.md.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
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
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "tinytorch/core/check.hpp"
#include "tinytorch/core/dtype.hpp"
#include "tinytorch/ops/creation.hpp"
#include "tinytorch/tensor.hpp"
#include "tinytorch/serialization.hpp"
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END, TT_DECL

TT_NAMESPACE_BEGIN


namespace detail {


// crc32_of: documented in serialization.hpp
TT_DECL uint32_t crc32_of(const char* p, size_t n, uint32_t crc0) {
  uLong crc = crc0;
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

// temp_file_prefix: documented in serialization.hpp
TT_DECL std::string temp_file_prefix(const std::string& base) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
  std::string h(host);  // at most 64 bytes (HOST_NAME_MAX); never a '/'
  for (char& c : h)
    if (c == '/') c = '_';
  const size_t room = 255 - (1 + 8 + h.size() + 1 + 20 + 1 + 20);  // ".", ".tt_tmp.", host, ".", pid, ".", n
  return "." + base.substr(0, std::min(base.size(), room)) + ".tt_tmp." + h + ".";
}

/// Removes the temporary files that an earlier save of the same target left behind when its
/// process died (kill -9, a crash, a power cut after the rename was not reached): in `dir`, the
/// files named `prefix` + "<pid>.<n>" whose pid is not a running process (kill(pid, 0) fails
/// with ESRCH) and which nobody holds locked: a writer holds flock(LOCK_EX) on its temporary file
/// until the rename, and the kernel drops the lock when the process dies. Files of this process
/// (another thread may be saving now), of a running process (EPERM: it exists) and of other
/// hosts (their pid means nothing here: a directory shared over NFS) are kept; the lock also
/// keeps the file of a live writer in another PID namespace with the same host name (a
/// container sharing the directory) whose pid happens to be free here. Errors are ignored: the
/// save itself does not depend on it. A pid reused by an unrelated process keeps its file until
/// that process ends.
inline void remove_stale_temp_files(const std::string& dir, const std::string& prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const long self = static_cast<long>(::getpid());
  std::vector<std::string> stale;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>.<n>"
    const size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || dot + 1 == rest.size() || dot > 10 ||
        rest.find_first_not_of("0123456789.") != std::string::npos || rest.find('.', dot + 1) != std::string::npos)
      continue;
    const long long pid = std::strtoll(rest.substr(0, dot).c_str(), nullptr, 10);
    if (pid <= 0 || pid > 2147483647LL || pid == self) continue;  // pid_t is 32-bit
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : stale) {
    const std::string path = dir + "/" + name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st {};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (regular && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());  // nobody writes it
    ::close(fd);  // (drops our lock)
  }
}

// write_file_atomically: documented in serialization.hpp
TT_DECL void write_file_atomically(const std::string& path_in, const std::string& data, const char* op) {
  TT_CHECK(!path_in.empty(), op, ": the path is empty");
  TT_CHECK(path_in.find('\0') == std::string::npos, op, ": the path '", path_in.c_str(), "...' contains a NUL byte");
  std::string path = path_in;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char* target = ::realpath(path.c_str(), nullptr);
    TT_CHECK(target != nullptr, op, ": '", path_in, "' is a symbolic link that does not resolve to a file (",
             std::strerror(errno), "); save replaces the file a link points to, so the target must exist");
    path = target;
    std::free(target);
  }
  const bool exists = ::stat(path.c_str(), &st) == 0;
  TT_CHECK(!exists || S_ISREG(st.st_mode), op, ": '", path_in, "' exists and is not a regular file");
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string prefix = temp_file_prefix(slash == std::string::npos ? path : path.substr(slash + 1));
  remove_stale_temp_files(dir, prefix);
  static std::atomic<unsigned long> counter{0};
  const std::string tmp = (slash == std::string::npos ? std::string() : dir) + prefix +
                          std::to_string(static_cast<long>(::getpid())) + "." + std::to_string(++counter);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // umask applies
  TT_CHECK(fd >= 0, op, ": cannot create a temporary file in '", dir, "' to write '", path_in,
           "': ", std::strerror(errno));
  // Held until the rename (the kernel drops it if this process dies): remove_stale_temp_files of
  // another process never removes a file that is being written. (Best effort: a file system
  // without locks still works.)
  (void)::flock(fd, LOCK_EX | LOCK_NB);
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

/// Reads tinytorch's own checkpoint format ("TTSD", version 1 or 2; top of this file) from the
/// bytes `buf` of the file `path`.
inline std::vector<std::pair<std::string, Tensor>> load_ttsd(const std::string& path, std::string buf) {
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
    TT_CHECK(dt <= static_cast<uint8_t>(DType::BFloat16), "load: '", path, "': entry '", name, "' has bad dtype ",
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

// ---- safetensors: the JSON header ----------------------------------------------------------

/// A safetensors dtype name for a tinytorch dtype ("F32", "F64", "I64", "F16", "BF16").
inline const char* safetensors_dtype(DType d) {
  switch (d) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
    case DType::Float16: return "F16";
    case DType::BFloat16: return "BF16";
  }
  return "?";
}

/// True if `name` is "F32", "F64", "I64", "F16" or "BF16"; then *d (if not null) is the tinytorch dtype.
inline bool safetensors_dtype_of(const std::string& name, DType* d) {
  for (const DType x : {DType::Float32, DType::Float64, DType::Int64, DType::Float16, DType::BFloat16})
    if (name == safetensors_dtype(x)) {
      if (d) *d = x;
      return true;
    }
  return false;
}

/// The rank of a dtype in the Rust crate's `Dtype` enum order (F16 < BF16 < F32 < F64 < I64); its
/// writer puts higher ranks first.
inline int safetensors_dtype_rank(DType d) {
  switch (d) {
    case DType::Float16: return 0;
    case DType::BFloat16: return 1;
    case DType::Float32: return 2;
    case DType::Float64: return 3;
    default: return 4;  // Int64
  }
}

/// True if `s` is valid UTF-8 (as Rust's str::from_utf8: no overlong forms, no surrogates, nothing
/// above U+10FFFF). On failure `*bad` is the offset of the first invalid byte.
inline bool valid_utf8(const std::string& s, size_t* bad = nullptr) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = p[i + k] >= (k == 1 ? lo : 0x80) && p[i + k] <= (k == 1 ? hi : 0xBF);
    if (!ok) {
      if (bad) *bad = i;
      return false;
    }
    i += len;
  }
  return true;
}

/// `s` as a JSON string literal, escaped as serde_json escapes it (so that save() writes the same
/// bytes as the Rust crate): \" \\ \b \f \n \r \t, other bytes below 0x20 as \u00xx, the rest
/// (including non-ASCII UTF-8 and '/') as is.
inline std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

/// One tensor's entry in a safetensors header.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as written in the file ("F32", ...)
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// A parsed and validated safetensors header.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;       // in header order
  std::map<std::string, std::string> metadata;  // "__metadata__"
  size_t data_start = 0;                        // 8 + N: where the data buffer begins in the file
};

/// A recursive-descent parser for the JSON of one safetensors header (RFC 8259), which reads the
/// header's structure directly instead of building a JSON tree. Every error throws
/// tinytorch::Error: "<prefix>invalid JSON in its header at byte <k>: <why>" (k counts from the
/// header's first byte, after the 8-byte length).
class SafetensorsHeaderParser {
 public:
  SafetensorsHeaderParser(const std::string& json, std::string prefix) : s_(json), prefix_(std::move(prefix)) {}

  SafetensorsHeader parse() {
    SafetensorsHeader h;
    expect('{');
    std::vector<std::string> keys;
    skip_ws();
    if (peek() != '}') {
      while (true) {
        skip_ws();
        std::string key = parse_string();
        keys.push_back(key);
        skip_ws();
        expect(':');
        skip_ws();
        if (key == "__metadata__") parse_metadata(h.metadata);
        else h.entries.push_back(parse_tensor(std::move(key)));
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        break;
      }
    }
    expect('}');
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "' after the header's object");
    std::sort(keys.begin(), keys.end());
    const auto dup = std::adjacent_find(keys.begin(), keys.end());
    TT_CHECK(dup == keys.end(), prefix_, "the key ", json_quote(*dup), " appears twice in its header");
    return h;
  }

 private:
  const std::string& s_;
  std::string prefix_;
  size_t pos_ = 0;
  static constexpr int kMaxDepth = 128;  // serde_json's recursion limit

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(str_cat(prefix_, "invalid JSON in its header at byte ", pos_, ": ", why));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= s_.size(); }
  void skip_ws() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    if (at_end()) fail(std::string("expected '") + c + "', found the end of the header");
    if (s_[pos_] != c) fail(std::string("expected '") + c + "', found '" + s_[pos_] + "'");
    ++pos_;
  }

  unsigned hex4() {
    unsigned v = 0;
    for (int k = 0; k < 4; ++k, ++pos_) {
      const char c = peek();
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail("invalid \\u escape");
      v = v * 16 + static_cast<unsigned>(d);
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  /// A JSON string (the header is already known to be valid UTF-8); escapes decoded. A lone
  /// surrogate (\ud800 without its pair) is an error, as serde_json makes it for a String.
  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string (it must be escaped)");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone trailing surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (peek() != '\\' || pos_ + 1 >= s_.size() || s_[pos_ + 1] != 'u') fail("lone leading surrogate in a \\u escape");
            pos_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("lone leading surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: --pos_; fail("invalid escape in a string");
      }
    }
  }

  /// A JSON number; returns true (and the value in *u) if it is a non-negative integer that fits in
  /// 64 bits, false for any other valid number (negative, fraction, exponent, too large).
  bool parse_number(uint64_t* u) {
    const size_t start = pos_;
    bool integer = true;
    if (peek() == '-') ++pos_, integer = false;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("invalid number");
    }
    if (peek() == '.') {
      ++pos_, integer = false;
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_, integer = false;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("invalid number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (!integer) return false;
    uint64_t v = 0;
    for (size_t i = start; i < pos_; ++i) {
      const uint64_t d = static_cast<uint64_t>(s_[i] - '0');
      if (v > (UINT64_MAX - d) / 10) return false;
      v = v * 10 + d;
    }
    *u = v;
    return true;
  }

  /// Any JSON value (an unknown field of a tensor entry, as the crate ignores those).
  void skip_value(int depth) {
    if (depth > kMaxDepth) fail("nested more than 128 levels deep");
    const char c = peek();
    if (c == '"') {
      parse_string();
    } else if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      skip_ws();
      if (peek() == close) {
        ++pos_;
        return;
      }
      while (true) {
        skip_ws();
        if (c == '{') {
          parse_string();
          skip_ws();
          expect(':');
          skip_ws();
        }
        skip_value(depth + 1);
        skip_ws();
        if (peek() != ',') break;
        ++pos_;
      }
      expect(close);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      uint64_t ignored = 0;
      parse_number(&ignored);
    } else {
      for (const char* lit : {"true", "false", "null"})
        if (s_.compare(pos_, std::strlen(lit), lit) == 0) {
          pos_ += std::strlen(lit);
          return;
        }
      if (at_end()) fail("expected a value, found the end of the header");
      fail("expected a value, found '" + std::string(1, c) + "'");
    }
  }

  /// An array of non-negative integers (at most max_len of them); `what` names it in errors.
  std::vector<uint64_t> parse_uint_array(const std::string& what, size_t max_len) {
    if (peek() != '[') {
      skip_value(1);
      throw Error(str_cat(prefix_, what, " must be an array of non-negative integers"));
    }
    ++pos_;
    std::vector<uint64_t> out;
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return out;
    }
    while (true) {
      skip_ws();
      const char c = peek();
      uint64_t v = 0;
      if (!(c == '-' || (c >= '0' && c <= '9'))) {
        skip_value(2);
        throw Error(str_cat(prefix_, what, " must be an array of non-negative integers"));
      }
      if (!parse_number(&v)) throw Error(str_cat(prefix_, what, " must be an array of non-negative integers"));
      TT_CHECK(out.size() < max_len, prefix_, what, " has more than ", max_len, " elements");
      out.push_back(v);
      skip_ws();
      if (peek() != ',') break;
      ++pos_;
    }
    expect(']');
    return out;
  }

  void parse_metadata(std::map<std::string, std::string>& out) {
    if (s_.compare(pos_, 4, "null") == 0) {  // Option<HashMap> in the crate: null is "no metadata"
      pos_ += 4;
      return;
    }
    TT_CHECK(peek() == '{', prefix_, "\"__metadata__\" must be an object whose values are strings");
    ++pos_;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    while (true) {
      skip_ws();
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      TT_CHECK(peek() == '"', prefix_, "\"__metadata__\" must be an object whose values are strings (",
               json_quote(key), " is not)");
      std::string value = parse_string();
      TT_CHECK(out.count(key) == 0, prefix_, "the key ", json_quote(key), " appears twice in \"__metadata__\"");
      out.emplace(std::move(key), std::move(value));
      skip_ws();
      if (peek() != ',') break;
      ++pos_;
    }
    expect('}');
  }

  SafetensorsEntry parse_tensor(std::string name) {
    SafetensorsEntry e;
    e.name = std::move(name);
    const std::string t = "tensor " + json_quote(e.name);
    TT_CHECK(peek() == '{', prefix_, t, " must be an object with \"dtype\", \"shape\" and \"data_offsets\"");
    ++pos_;
    bool have_dtype = false, have_shape = false, have_offsets = false;
    skip_ws();
    if (peek() != '}') {
      while (true) {
        skip_ws();
        const std::string field = parse_string();
        skip_ws();
        expect(':');
        skip_ws();
        bool* seen = field == "dtype" ? &have_dtype : field == "shape" ? &have_shape
                     : field == "data_offsets" ? &have_offsets : nullptr;
        if (seen) {
          TT_CHECK(!*seen, prefix_, t, " has the field \"", field, "\" twice");
          *seen = true;
        }
        if (field == "dtype") {
          TT_CHECK(peek() == '"', prefix_, t, ": \"dtype\" must be a string");
          e.dtype = parse_string();
        } else if (field == "shape") {
          e.shape = parse_uint_array(t + ": \"shape\"", 64);
        } else if (field == "data_offsets") {
          const auto o = parse_uint_array(t + ": \"data_offsets\"", 2);
          TT_CHECK(o.size() == 2, prefix_, t, ": \"data_offsets\" must be two integers [begin, end]");
          e.begin = o[0];
          e.end = o[1];
        } else {
          skip_value(2);
        }
        skip_ws();
        if (peek() != ',') break;
        ++pos_;
      }
    }
    expect('}');
    TT_CHECK(have_dtype, prefix_, t, " has no \"dtype\"");
    TT_CHECK(have_shape, prefix_, t, " has no \"shape\"");
    TT_CHECK(have_offsets, prefix_, t, " has no \"data_offsets\"");
    return e;
  }
};

/// The parsed header of the safetensors file `path` whose bytes are `buf`, after every check listed
/// at the top of this file. Allocates nothing from the file's numbers.
inline SafetensorsHeader parse_safetensors(const std::string& path, const std::string& buf) {
  const std::string prefix = str_cat("load: '", path, "' is not a valid safetensors file: ");
  TT_CHECK(buf.size() >= 8, prefix, "it has ", buf.size(), " bytes, fewer than the 8 of its header length");
  uint64_t n = 0;
  std::memcpy(&n, buf.data(), 8);
  TT_CHECK(n <= 100000000, prefix, "its header length ", n, " is over the limit of 100000000 bytes");
  TT_CHECK(8 + n <= buf.size(), prefix, "its header length ", n, " runs past the end of the file (", buf.size(),
           " bytes)");
  const std::string json = buf.substr(8, static_cast<size_t>(n));
  size_t bad = 0;
  TT_CHECK(valid_utf8(json, &bad), prefix, "its header is not valid UTF-8 (at byte ", bad, ")");
  TT_CHECK(!json.empty() && json[0] == '{', prefix, "its header does not start with '{'");
  SafetensorsHeader h = SafetensorsHeaderParser(json, prefix).parse();
  h.data_start = static_cast<size_t>(8 + n);

  // The crate's Metadata::validate: sorted by data_offsets, each tensor begins where the previous
  // one ended, and its byte count matches its shape and dtype.
  std::vector<size_t> order(h.entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = h.entries[a];
    const auto& y = h.entries[b];
    return std::make_pair(x.begin, x.end) < std::make_pair(y.begin, y.end);
  });
  for (const SafetensorsEntry& e : h.entries)  // first, as the crate's JSON parser knows its dtypes
    TT_CHECK(safetensors_dtype_of(e.dtype, nullptr), "load: '", path, "': tensor ", json_quote(e.name),
             " has dtype ", json_quote(e.dtype), ", which tinytorch cannot load (it has F32, F64, I64, F16 and BF16 only)");
  uint64_t covered = 0;
  for (const size_t i : order) {
    const SafetensorsEntry& e = h.entries[i];
    const std::string t = "tensor " + json_quote(e.name);
    DType dt = DType::Float32;
    safetensors_dtype_of(e.dtype, &dt);
    TT_CHECK(e.end >= e.begin, prefix, t, " has data_offsets [", e.begin, ", ", e.end, "] that end before they begin");
    TT_CHECK(e.begin == covered, prefix, t, " has data_offsets [", e.begin, ", ", e.end, "] but the tensor before it ",
             "(by offset) ends at ", covered, ": the tensors must cover the data buffer exactly, without gaps or overlaps");
    covered = e.end;
    // The crate's order: the product of the sizes from the first, then times the element size,
    // each step checked (ValidationOverflow), so [2^40, 2^40, 0] overflows where [0, 2^40, 2^40] is 0.
    uint64_t numel = 1, bytes = 0;
    bool overflow = false;
    for (const uint64_t d : e.shape) {
      TT_CHECK(d <= static_cast<uint64_t>(INT64_MAX), prefix, t, " has a size of ", d, ", more than int64 holds");
      overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
    }
    overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(element_size(dt)), &bytes);
    TT_CHECK(!overflow, prefix, t, " has a shape whose size in bytes overflows 64 bits");
    TT_CHECK(bytes == e.end - e.begin, prefix, t, " has dtype ", e.dtype, " and ", e.shape.size(),
             "-d shape of ", bytes, " bytes, but data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin,
             " bytes");
  }
  const uint64_t data_bytes = buf.size() - h.data_start;
  TT_CHECK(covered == data_bytes, prefix, "its tensors cover ", covered, " bytes of data, but the file has ",
           data_bytes, " bytes after its header");
  return h;
}

/// The "__metadata__" key under which save() writes the integrity digest of tensor `name`.
inline std::string digest_key(const std::string& name) { return "tinytorch.crc32:" + name; }
inline bool is_digest_key(const std::string& key) { return key.rfind("tinytorch.crc32:", 0) == 0; }

// tensor_digest: documented in serialization.hpp
TT_DECL std::string tensor_digest(const std::string& dtype, const std::vector<uint64_t>& shape, const char* data,
                                 size_t bytes) {
  std::string text = dtype + "[";
  for (size_t d = 0; d < shape.size(); ++d) text += (d ? "," : "") + std::to_string(shape[d]);
  text += "]";
  const uint32_t crc = crc32_of(data, bytes, crc32_of(text.data(), text.size()));
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  return hex;
}

/// Checks every tensor of a parsed safetensors file against its digest in "__metadata__" (see
/// tensor_digest). A file without any digest key (Python's save_file writes none) passes. Once
/// one tensor has a digest, every tensor must have one and every digest must name a tensor: a
/// flipped bit in a name then shows as a tensor without digest and a digest without tensor.
/// Throws tinytorch::Error naming the file and the tensor.
inline void verify_digests(const std::string& path, const SafetensorsHeader& h, const std::string& buf) {
  std::map<std::string, std::string> digests;  // tensor name -> stored digest
  for (const auto& [key, value] : h.metadata)
    if (is_digest_key(key)) digests.emplace(key.substr(16), value);
  if (digests.empty()) return;
  const std::string skip = " (LoadOptions{.verify = false} loads it unchecked)";
  std::map<std::string, const SafetensorsEntry*> by_name;
  for (const SafetensorsEntry& e : h.entries) by_name.emplace(e.name, &e);
  for (const auto& [name, stored] : digests)
    TT_CHECK(by_name.count(name) == 1, "load: '", path, "' is corrupt: its header has a CRC-32 digest for tensor ",
             json_quote(name), " but no such tensor", skip);
  for (const SafetensorsEntry& e : h.entries) {
    const auto it = digests.find(e.name);
    TT_CHECK(it != digests.end(), "load: '", path, "' is corrupt: tensor ", json_quote(e.name),
             " has no CRC-32 digest in the header, though other tensors have one", skip);
    const std::string& stored = it->second;
    TT_CHECK(stored.size() == 8 && stored.find_first_not_of("0123456789abcdef") == std::string::npos, "load: '", path,
             "' is corrupt: the CRC-32 digest of tensor ", json_quote(e.name), " is ", json_quote(stored),
             ", not 8 lowercase hex digits", skip);
    const std::string actual = tensor_digest(e.dtype, e.shape, buf.data() + h.data_start + e.begin,
                                             static_cast<size_t>(e.end - e.begin));
    TT_CHECK(stored == actual, "load: '", path, "' is corrupt: tensor ", json_quote(e.name),
             " does not match its CRC-32 digest (stored ", stored, ", computed ", actual,
             "): its bytes, shape or dtype changed since tinytorch::save wrote it (a damaged file, or one that "
             "another tool rewrote keeping the old metadata)", skip);
  }
}

/// "__metadata__" without the digest keys (what load_metadata returns).
inline std::map<std::string, std::string> user_metadata(std::map<std::string, std::string> m) {
  for (auto it = m.begin(); it != m.end();) it = is_digest_key(it->first) ? m.erase(it) : std::next(it);
  return m;
}

/// The bytes of a safetensors file holding `state_dict` (and `metadata` if it is not empty),
/// exactly as the Rust crate's serialize() writes them.
inline std::string safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& state_dict,
                                     const std::map<std::string, std::string>& user_meta, bool digests) {
  std::vector<std::pair<std::string, Tensor>> sd;
  sd.reserve(state_dict.size());
  for (const auto& [name, t0] : state_dict) {
    TT_CHECK(t0.defined(), "save: entry '", name, "' is an undefined tensor");
    size_t bad = 0;
    TT_CHECK(valid_utf8(name, &bad), "save: entry name ", json_quote(name), " is not valid UTF-8 (at byte ", bad,
             "); safetensors headers are JSON");
    TT_CHECK(name != "__metadata__", "save: an entry may not be named \"__metadata__\" (safetensors reserves it)");
    const Tensor c = t0.is_contiguous() ? t0 : t0.contiguous();
    sd.emplace_back(name, c.device().is_cpu() ? c : c.cpu());  // a GPU tensor is saved from a host copy, as torch.save
  }
  for (const auto& [k, v] : user_meta) {
    TT_CHECK(valid_utf8(k) && valid_utf8(v), "save: metadata ", json_quote(k), " is not valid UTF-8");
    TT_CHECK(!is_digest_key(k), "save: the metadata key ", json_quote(k),
             " is reserved: keys starting with \"tinytorch.crc32:\" hold the tensors' digests");
  }
  std::stable_sort(sd.begin(), sd.end(), [](const auto& a, const auto& b) {
    const int ra = safetensors_dtype_rank(a.second.dtype()), rb = safetensors_dtype_rank(b.second.dtype());
    return ra != rb ? ra > rb : a.first < b.first;
  });
  std::vector<std::string> names;
  for (const auto& e : sd) names.push_back(e.first);
  std::sort(names.begin(), names.end());
  const auto dup = std::adjacent_find(names.begin(), names.end());
  TT_CHECK(dup == names.end(), "save: two entries are named ", json_quote(*dup), " (a safetensors file maps names to tensors)");
  std::map<std::string, std::string> metadata = user_meta;
  if (digests) {
    for (const auto& [name, t] : sd) {
      std::vector<uint64_t> shape(t.sizes().begin(), t.sizes().end());
      const size_t bytes = static_cast<size_t>(t.numel()) * element_size(t.dtype());
      metadata[digest_key(name)] =
          tensor_digest(safetensors_dtype(t.dtype()), shape, bytes ? static_cast<const char*>(t.raw_data()) : "", bytes);
    }
  }
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      json += (first ? "" : ",") + json_quote(k) + ":" + json_quote(v);
      first = false;
    }
    json += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : sd) {
    if (json.size() > 1) json += ",";
    json += json_quote(name) + ":{\"dtype\":\"" + safetensors_dtype(t.dtype()) + "\",\"shape\":[";
    for (int64_t d = 0; d < t.dim(); ++d) json += (d ? "," : "") + std::to_string(t.sizes()[static_cast<size_t>(d)]);
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * element_size(t.dtype());
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  TT_CHECK(json.size() <= 100000000, "save: the safetensors header would be ", json.size(),
           " bytes, over the format's limit of 100000000 (the reference reader's MAX_HEADER_SIZE), so no reader "
           "could load the file: ", sd.size(), " tensors", digests ? " with their CRC-32 digests" : "",
           ", names and metadata are too long (SaveOptions{false} leaves out the digests, about 40 bytes and the "
           "name again per tensor)");
  const uint64_t n = json.size();
  std::string buf(reinterpret_cast<const char*>(&n), 8);
  buf.reserve(8 + json.size() + static_cast<size_t>(offset));
  buf += json;
  for (const auto& [name, t] : sd) {
    const size_t bytes = static_cast<size_t>(t.numel()) * element_size(t.dtype());
    if (bytes > 0) buf.append(static_cast<const char*>(t.raw_data()), bytes);  // an empty tensor may have no storage
  }
  return buf;
}

}  // namespace detail

TT_DECL void save(const std::vector<std::pair<std::string, Tensor>>& state_dict, const std::string& path,
                 SaveOptions options) {
  detail::write_file_atomically(path, detail::safetensors_bytes(state_dict, {}, options.digests), "save");
}

TT_DECL void save(const std::vector<std::pair<std::string, Tensor>>& state_dict, const std::string& path,
                 const std::map<std::string, std::string>& metadata, SaveOptions options) {
  detail::write_file_atomically(path, detail::safetensors_bytes(state_dict, metadata, options.digests), "save");
}

TT_DECL std::vector<std::pair<std::string, Tensor>> load(const std::string& path, LoadOptions options) {
  TT_CHECK(path.find('\0') == std::string::npos, "load: the path '", path.c_str(), "...' contains a NUL byte");
  std::string buf = detail::read_whole_file(path);
  if (buf.size() >= 4 && std::memcmp(buf.data(), "TTSD", 4) == 0) return detail::load_ttsd(path, std::move(buf));
  const detail::SafetensorsHeader h = detail::parse_safetensors(path, buf);
  if (options.verify) detail::verify_digests(path, h, buf);
  std::vector<size_t> order(h.entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return h.entries[a].name < h.entries[b].name; });
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(order.size());
  for (const size_t i : order) {
    const detail::SafetensorsEntry& e = h.entries[i];
    DType dt = DType::Float32;
    detail::safetensors_dtype_of(e.dtype, &dt);
    Shape shape;
    for (const uint64_t d : e.shape) shape.push_back(static_cast<int64_t>(d));
    Tensor t = empty(shape, TensorOptions(dt));
    const size_t bytes = static_cast<size_t>(e.end - e.begin);
    if (bytes > 0) std::memcpy(t.raw_data(), buf.data() + h.data_start + e.begin, bytes);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

TT_DECL std::map<std::string, std::string> load_metadata(const std::string& path, LoadOptions options) {
  TT_CHECK(path.find('\0') == std::string::npos, "load: the path '", path.c_str(), "...' contains a NUL byte");
  const std::string buf = detail::read_whole_file(path);
  if (buf.size() >= 4 && std::memcmp(buf.data(), "TTSD", 4) == 0) {
    detail::load_ttsd(path, buf);
    return {};
  }
  detail::SafetensorsHeader h = detail::parse_safetensors(path, buf);
  if (options.verify) detail::verify_digests(path, h, buf);
  return detail::user_metadata(std::move(h.metadata));
}

TT_NAMESPACE_END  // namespace tinytorch
