// tests/fuzz/fuzz_checkpoint.cpp — fuzz target for the checkpoint loader, tinytorch::load
// (include/tinytorch/serialization.hpp). It reads two formats: safetensors (u64 header length,
// JSON header, data buffer: the format save() writes) and tinytorch's older "TTSD" format
// ("TTSD", u32 version, u64 count, entries, and for version 2 a trailing CRC-32 of every byte
// before it).
//
// Each input is loaded twice from a scratch file (fuzz_common.hpp):
//   1. as it is;
//   2. when it looks like a version 2 TTSD file ("TTSD", version 2, at least 20 bytes) whose last 4
//      bytes are not the CRC-32 of the rest: with those 4 bytes replaced by the right CRC-32.
//      Without this almost every mutation would stop at the checksum, and the entry parser
//      behind it would never be fuzzed.
// load must either throw tinytorch::Error or return a state dict sd for which
//   - save(sd) succeeds (unless the input was TTSD and holds what safetensors cannot: duplicate
//     names, names that are not UTF-8 or are "__metadata__": then an Error is fine),
//   - load(save(sd)) is sd (sorted by name: load returns safetensors entries by name), bit for bit,
//   - save(load(save(sd))) writes the same bytes as save(sd) (the writer is canonical),
//   - for a safetensors input, its "__metadata__" (load_metadata) survives save / load.
// Anything else is a finding: a sanitizer report (built with -fsanitize=fuzzer,address,undefined
// under clang, see tests/fuzz/CMakeLists.txt), another exception type (uncaught: abort), a
// mismatch (abort), a hang, or running out of memory (load must refuse sizes the file cannot hold
// before allocating).
// Seed corpus: tests/fuzz/corpus/checkpoint (tests/fuzz/gen_corpus.py). Regressions:
// tests/fuzz/regressions/checkpoint. Chapter: chapters/06-distributed-data-parallel.md ("Checkpoints").
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <tinytorch/functional.hpp>  // Tensor's methods (contiguous(), ...): tensor.hpp only declares them
#include <tinytorch/serialization.hpp>

#include "fuzz_common.hpp"

namespace {

using StateDict = std::vector<std::pair<std::string, tinytorch::Tensor>>;

const std::string& in_path() {
  static const std::string p = tt_fuzz::scratch_path("checkpoint");
  return p;
}
const std::string& out_path() {
  static const std::string p = tt_fuzz::scratch_path("checkpoint_saved");
  return p;
}

/// True if the two state dicts hold the same names, dtypes, shapes and bytes, in this order.
bool same_state_dict(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const tinytorch::Tensor& x = a[i].second;
    const tinytorch::Tensor& y = b[i].second;
    if (a[i].first != b[i].first || x.dtype() != y.dtype() || x.sizes() != y.sizes()) return false;
    const size_t n = static_cast<size_t>(x.numel()) * tinytorch::element_size(x.dtype());
    if (n > 0 && std::memcmp(x.raw_data(), y.raw_data(), n) != 0) return false;
  }
  return true;
}

/// Loads `bytes`; if load accepts them, checks save() and load() against each other.
void load_and_check(const std::string& bytes) {
  tt_fuzz::write_file(in_path(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  StateDict sd;
  try {
    sd = tinytorch::load(in_path());
  } catch (const tinytorch::Error&) {
    return;
  }
  const bool ttsd = bytes.compare(0, 4, "TTSD") == 0;
  try {
    tinytorch::save(sd, out_path());
  } catch (const tinytorch::Error&) {
    // A TTSD file may hold what safetensors cannot: two entries with one name, a name that is not
    // UTF-8 or is "__metadata__". Whatever a safetensors file held, save must write.
    if (ttsd) return;
    tt_fuzz::fail("save(load(file)) threw for a safetensors file load accepted");
  }
  const std::string saved = tt_fuzz::read_file(out_path());
  StateDict again;
  try {
    again = tinytorch::load(out_path());
  } catch (const tinytorch::Error& e) {
    tt_fuzz::fail(std::string("load(save(load(file))) threw: ") + e.what());
  }
  StateDict by_name = sd;  // load returns safetensors entries by name, TTSD entries in file order
  std::stable_sort(by_name.begin(), by_name.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  if (!same_state_dict(by_name, again))
    tt_fuzz::fail("load(save(sd)) differs from sd (" + std::to_string(sd.size()) + " entries, input format " +
                  (ttsd ? "TTSD" : "safetensors") + ")");
  tinytorch::save(again, out_path());
  if (tt_fuzz::read_file(out_path()) != saved)
    tt_fuzz::fail("save(load(save(sd))) wrote other bytes than save(sd): the writer is not canonical");
  if (!ttsd) {
    // The metadata survives too.
    const auto meta = tinytorch::load_metadata(in_path());
    tinytorch::save(sd, out_path(), meta);
    if (tinytorch::load_metadata(out_path()) != meta) tt_fuzz::fail("the metadata did not survive save / load");
  }
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
