// tests/fuzz/replay_main.cpp — runs a fuzz target once over saved inputs, without libFuzzer.
//
//   build/bin/fuzz_idx_replay tests/fuzz/corpus/idx tests/fuzz/regressions/idx
//
// Linked with fuzz_<x>.cpp (its LLVMFuzzerTestOneInput) into fuzz_<x>_replay, which every build
// compiles with its usual compiler (g++ too) and ctest runs over the seed corpus and the
// regressions (tests/fuzz/CMakeLists.txt); in build-asan that happens under AddressSanitizer +
// UBSan. Each argument is a file or a directory (its regular files, in name order; a directory
// that does not exist is skipped with a note: regressions/<x> appears with the first crash).
// Prints each file before running it, so a crash names its input. Exit status: 0, or 1 when no
// input was found at all (a wrong path must not pass silently); a finding aborts the program.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::printf("replay: %s does not exist; skipped\n", arg.c_str());
    }
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu input(s), no finding\n", inputs.size());
  return inputs.empty() ? 1 : 0;
}
