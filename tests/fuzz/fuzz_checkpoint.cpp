// tests/fuzz/fuzz_checkpoint.cpp — fuzz target for the checkpoint loader, tinytorch::load
// (include/tinytorch/serialization.hpp; format: "TTSD", u32 version, u64 count, entries, and for
// version 2 a trailing CRC-32 of every byte before it).
//
// Each input is loaded twice from a scratch file (fuzz_common.hpp):
//   1. as it is;
//   2. when it looks like a version 2 file ("TTSD", version 2, at least 20 bytes) whose last 4
//      bytes are not the CRC-32 of the rest: with those 4 bytes replaced by the right CRC-32.
//      Without this almost every mutation would stop at the checksum, and the entry parser
//      behind it would never be fuzzed.
// load must either throw tinytorch::Error or return a state dict for which save() writes exactly
// the bytes it was read from (for a version 1 input: the same bytes with version 2 and the CRC-32
// appended), i.e. load and save are inverse on every file load accepts. Anything else is a
// finding: a sanitizer report (built with -fsanitize=fuzzer,address,undefined under clang, see
// tests/fuzz/CMakeLists.txt), another exception type (uncaught: abort), a save/load mismatch
// (abort), a hang, or running out of memory (load must refuse sizes the file cannot hold before
// allocating).
// Seed corpus: tests/fuzz/corpus/checkpoint (tests/fuzz/gen_corpus.py). Regressions:
// tests/fuzz/regressions/checkpoint. Chapter: chapters/06-distributed-data-parallel.md ("Checkpoints").
#include <cstdint>
#include <cstring>
#include <string>

#include <tinytorch/functional.hpp>  // Tensor's methods (contiguous(), ...): tensor.hpp only declares them
#include <tinytorch/serialization.hpp>

#include "fuzz_common.hpp"

namespace {

const std::string& in_path() {
  static const std::string p = tt_fuzz::scratch_path("checkpoint");
  return p;
}
const std::string& out_path() {
  static const std::string p = tt_fuzz::scratch_path("checkpoint_saved");
  return p;
}

/// Loads `bytes`; if load accepts them, checks that save() reproduces them.
void load_and_check(const std::string& bytes) {
  tt_fuzz::write_file(in_path(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  std::vector<std::pair<std::string, tinytorch::Tensor>> sd;
  try {
    sd = tinytorch::load(in_path());
  } catch (const tinytorch::Error&) {
    return;
  }
  tinytorch::save(sd, out_path());
  const std::string saved = tt_fuzz::read_file(out_path());
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 4, 4);  // load accepted it: at least magic + version
  std::string expected = bytes;
  if (version == 1) {
    const uint32_t v2 = 2;
    std::memcpy(&expected[4], &v2, 4);
    const uint32_t crc = tinytorch::detail::crc32_of(expected.data(), expected.size());
    expected.append(reinterpret_cast<const char*>(&crc), 4);
  }
  if (saved != expected)
    tt_fuzz::fail("save(load(file)) wrote " + std::to_string(saved.size()) + " bytes that differ from the " +
                  std::to_string(expected.size()) + " bytes expected (format version " + std::to_string(version) +
                  ", " + std::to_string(sd.size()) + " entries)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tt_fuzz::RemoveAtExit cleanup{{in_path(), out_path()}};
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  load_and_check(bytes);
  uint32_t version = 0;
  if (size >= 20 && std::memcmp(data, "TTSD", 4) == 0 && (std::memcpy(&version, data + 4, 4), version == 2)) {
    std::string fixed = bytes;
    const uint32_t crc = tinytorch::detail::crc32_of(fixed.data(), fixed.size() - 4);
    if (std::memcmp(&fixed[fixed.size() - 4], &crc, 4) != 0) {
      std::memcpy(&fixed[fixed.size() - 4], &crc, 4);
      load_and_check(fixed);
    }
  }
  return 0;
}
