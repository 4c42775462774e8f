// tests/fuzz/fuzz_common.hpp — what the fuzz targets share: a scratch file per process.
//
// The readers under test take a path (read_idx_images, read_idx_labels, tinytorch::load), so each
// input is written to a file first: $TMPDIR/tt_fuzz_<name>.<pid> (TMPDIR: scratch space that
// tests/fuzz/run_fuzz.sh creates, on /dev/shm when it can, and removes afterwards; else /tmp),
// overwritten by every input and removed at a normal exit (a crash leaves it behind). A failed
// write aborts (the harness is broken, not the reader).
// Used by fuzz_idx.cpp and fuzz_checkpoint.cpp, under libFuzzer or tests/fuzz/replay_main.cpp.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tt_fuzz {

/// $TMPDIR/tt_fuzz_<name>.<pid>; removed when the process exits normally.
inline std::string scratch_path(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/tt_fuzz_" + name + "." + std::to_string(::getpid());
}

/// Replaces the file at `path` with the `size` bytes at `data`; aborts if that fails.
inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(("tt_fuzz: cannot write " + path).c_str());
    std::abort();
  }
}

/// The whole file at `path` (aborts if it cannot be read).
inline std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    std::perror(("tt_fuzz: cannot read " + path).c_str());
    std::abort();
  }
  std::string out;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

/// A broken invariant: print what and abort (libFuzzer saves the input as a crash).
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "tt_fuzz: %s\n", what.c_str());
  std::abort();
}

/// Removes the listed files at normal exit (libFuzzer's -max_total_time ends with exit()).
struct RemoveAtExit {
  std::string paths[3];
  ~RemoveAtExit() {
    for (const auto& p : paths)
      if (!p.empty()) std::remove(p.c_str());
  }
};

}  // namespace tt_fuzz
