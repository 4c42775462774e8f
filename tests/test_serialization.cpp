// tests/test_serialization.cpp — tinytorch::save / tinytorch::load (serialization.hpp): round
// trips of every dtype and shape, a model through its state dict, atomic writes, and malformed
// files, each of which must be a tinytorch::Error naming the file. Checkpoints are safetensors
// files ("[safetensors]"): one written by Python's safetensors (tests/data/*.safetensors, from
// tests/reference/gen_safetensors.py) loads with its exact values and save() rewrites it byte for
// byte; "[safetensors-export]" writes the file that ctest safetensors_python reads in Python
// (tests/interop/). Files in tinytorch's older "TTSD" format (v1, v2) still load.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <tinytorch/tinytorch.hpp>
#include <vector>
#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using tinytorch::Tensor;

namespace {

/// A fresh empty directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tt_serialization_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& p, const std::string& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

/// Writes `bytes` to `p` and loads it: the tinytorch::Error's message, or "no error".
std::string load_error_of(const std::string& p, const std::string& bytes) {
  write_bytes(p, bytes);
  try {
    tinytorch::load(p);
  } catch (const tinytorch::Error& e) {
    return e.what();
  }
  return "no error";
}

template <typename T>
void put(std::string& b, T v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

/// The header of a file with `count` entries.
std::string header(uint64_t count, uint32_t version = 1) {
  std::string b = "TTSD";
  put<uint32_t>(b, version);
  put<uint64_t>(b, count);
  return b;
}

/// One entry's bytes up to (not including) its data.
std::string entry_head(const std::string& name, uint8_t dtype, const std::vector<int64_t>& sizes) {
  std::string b;
  put<uint64_t>(b, name.size());
  b += name;
  put<uint8_t>(b, dtype);
  put<uint64_t>(b, sizes.size());
  for (int64_t d : sizes) put<int64_t>(b, d);
  return b;
}

std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// A version 2 "TTSD" file: header, entries, CRC-32 of it all.
std::string ttsd_v2(uint64_t count, const std::string& entries) {
  std::string b = header(count, 2) + entries;
  put<uint32_t>(b, tinytorch::detail::crc32_of(b.data(), b.size()));
  return b;
}

/// A safetensors file: u64 header length, the JSON (padded with spaces to a multiple of 8 unless
/// `pad` is false), the data buffer.
std::string st_file(std::string json, const std::string& data = "", bool pad = true) {
  if (pad) json.append((8 - json.size() % 8) % 8, ' ');
  std::string b;
  put<uint64_t>(b, json.size());
  return b + json + data;
}

/// A tensor of dtype T (float, double, int64_t) with these values (bit for bit) and shape.
template <typename T>
Tensor make(const std::vector<T>& values, const tinytorch::Shape& shape) {
  Tensor t = tinytorch::empty(shape, tinytorch::TensorOptions(tinytorch::dtype_of<T>()));
  REQUIRE(static_cast<size_t>(t.numel()) == values.size());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}

/// True if a and b have the same dtype, shape and bytes (so -0.0 != 0.0 and NaN == NaN).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  const size_t n = static_cast<size_t>(x.numel()) * tinytorch::element_size(x.dtype());
  return n == 0 || std::memcmp(x.raw_data(), y.raw_data(), n) == 0;
}

/// The directory of the committed test data (tests/data).
std::string test_data_dir() {
  const char* src = std::getenv("TINYTORCH_SOURCE_DIR");  // set by ctest
  if (src && *src) return std::string(src) + "/tests/data";
  return (fs::path(__FILE__).parent_path() / "data").string();
}

}  // namespace

TEST_CASE("save then load returns the same names, dtypes, shapes and values", "[ch06][serialization]") {
  TempDir dir;
  tinytorch::Generator g(3);
  Tensor a = tinytorch::randn({2, 3}, {}, &g);
  Tensor b = tinytorch::full({}, 2.5, tinytorch::TensorOptions(tinytorch::kFloat64));  // 0-dim
  Tensor c = tinytorch::arange(5, tinytorch::kInt64);
  Tensor d = tinytorch::zeros({0, 4});
  Tensor e = tinytorch::randn({3, 2}, {}, &g).t();  // a non-contiguous view: saved as its values
  const std::string p = dir.file("sd.tt");
  tinytorch::save({{"a", a}, {"b", b}, {"c", c}, {"d", d}, {"e", e}}, p);
  const auto sd = tinytorch::load(p);
  REQUIRE(sd.size() == 5);
  const std::vector<Tensor> want{a, b, c, d, e};
  for (size_t i = 0; i < sd.size(); ++i) {
    INFO("entry " << i);
    CHECK(sd[i].first == std::string(1, static_cast<char>('a' + i)));
    CHECK(sd[i].second.dtype() == want[i].dtype());
    CHECK(sd[i].second.sizes() == want[i].sizes());
    CHECK(sd[i].second.equal(want[i]));
  }
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(dir.path)) {
    CHECK(f.path().filename() == "sd.tt");  // no temporary file is left behind
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("a model survives save / load_state_dict", "[ch06][serialization]") {
  TempDir dir;
  namespace nn = tinytorch::nn;
  tinytorch::manual_seed(1);
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(),
                                            std::make_shared<nn::Linear>(3, 2));
  tinytorch::save(m->state_dict(), dir.file("m.tt"));
  tinytorch::manual_seed(2);
  auto fresh = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(3, 2));
  Tensor x = tinytorch::ones({5, 4});
  CHECK_FALSE(fresh->forward(x).equal(m->forward(x)));
  fresh->load_state_dict(tinytorch::load(dir.file("m.tt")));
  CHECK(fresh->forward(x).equal(m->forward(x)));

  // Saving again replaces the file whole.
  tinytorch::save({{"only", tinytorch::ones({1})}}, dir.file("m.tt"));
  CHECK(tinytorch::load(dir.file("m.tt")).size() == 1);
}

TEST_CASE("save writes through a symbolic link, keeps permissions, and concurrent saves stay whole",
          "[ch06][serialization]") {
  TempDir dir;
  const std::string target = dir.file("target.tt"), link = dir.file("link.tt");
  tinytorch::save({{"x", tinytorch::zeros({2})}}, target);
  fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink(target, link);
  tinytorch::save({{"x", tinytorch::ones({3})}}, link);
  CHECK(fs::is_symlink(link));
  CHECK(tinytorch::load(target)[0].second.sizes() == tinytorch::Shape{3});
  CHECK((fs::status(target).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));

  // Two threads saving to one path: every save succeeds and the file is always one of the two.
  const std::string p = dir.file("shared.tt");
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 50; ++i) tinytorch::save({{"w", tinytorch::full({16 + k}, k)}}, p);
    });
  for (auto& t : threads) t.join();
  const auto sd = tinytorch::load(p);
  CHECK(sd.size() == 1);
  CHECK((sd[0].second.numel() == 16 || sd[0].second.numel() == 17));
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(dir.path)) files += f.path().filename() == "shared.tt" ? 1 : 0;
  CHECK(files == 1);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 3);  // no temporaries
}

TEST_CASE("save: unwritable paths and undefined tensors are errors", "[ch06][serialization]") {
  TempDir dir;
  const std::string p = dir.file("no_such_dir/x.tt");
  CHECK_THROWS_WITH(tinytorch::save({{"a", tinytorch::ones({1})}}, p),
                    "save: cannot create a temporary file in '" + dir.file("no_such_dir/") + "' to write '" + p +
                        "': No such file or directory");
  CHECK_THROWS_WITH(tinytorch::save({{"a", tinytorch::ones({1})}}, dir.path.string()),
                    "save: '" + dir.path.string() + "' exists and is not a regular file");
  CHECK_THROWS_WITH(tinytorch::save({{"a", tinytorch::ones({1})}}, "/dev/null"),
                    "save: '/dev/null' exists and is not a regular file");
  CHECK_THROWS_WITH(tinytorch::save({{"a", tinytorch::ones({1})}}, std::string("a\0b", 3)),
                    "save: the path 'a...' contains a NUL byte");
  CHECK_THROWS_WITH(tinytorch::save({{"a", tinytorch::ones({1})}}, ""), "save: the path is empty");
  CHECK_THROWS_WITH(tinytorch::save({{"w", Tensor()}}, dir.file("u.tt")),
                    "save: entry 'w' is an undefined tensor");
  CHECK_FALSE(fs::exists(dir.file("u.tt")));
}

TEST_CASE("load: every malformed TTSD file is an error naming the file", "[ch06][serialization]") {
  TempDir dir;
  const std::string p = dir.file("bad.tt");
  auto load_error = [&](const std::string& bytes) { return load_error_of(p, bytes); };
  const std::string q = "'" + p + "'";

  CHECK_THROWS_WITH(tinytorch::load(dir.file("missing.tt")),
                    "load: cannot open '" + dir.file("missing.tt") + "': No such file or directory");
  CHECK_THROWS_WITH(tinytorch::load(dir.path.string()), "load: '" + dir.path.string() + "' is not a regular file");
  CHECK_THROWS_WITH(tinytorch::load("/dev/zero"), "load: '/dev/zero' is not a regular file");
  // Not "TTSD": read as safetensors, whose first 8 bytes are the header length.
  CHECK(load_error("") ==
        "load: " + q + " is not a valid safetensors file: it has 0 bytes, fewer than the 8 of its header length");
  CHECK(load_error("hello world, not a checkpoint") ==
        "load: " + q + " is not a valid safetensors file: its header length 8031924123371070824 is over the limit of "
                       "100000000 bytes");
  CHECK(load_error("TTS") ==
        "load: " + q + " is not a valid safetensors file: it has 3 bytes, fewer than the 8 of its header length");
  CHECK(load_error("TTSD") == "load: " + q + " is truncated (4 more bytes expected at offset 4, file size 4)");
  CHECK(load_error(header(0, 3)) == "load: " + q + " has format version 3, expected 1 or 2");
  CHECK(load_error(header(1) + "xy") == "load: " + q + " claims 1 entries, more than its 18 bytes can hold");
  CHECK(load_error(header(uint64_t{1} << 62)) ==
        "load: " + q + " claims 4611686018427387904 entries, more than its 16 bytes can hold");

  std::string good = header(1) + entry_head("w", 0, {2});
  put<float>(good, 1.0f);
  put<float>(good, 2.0f);
  write_bytes(p, good);
  CHECK(tinytorch::load(p)[0].second.sum().item<float>() == 3.0f);

  CHECK(load_error(good.substr(0, good.size() - 1)) ==
        "load: " + q + " is truncated (entry 'w' needs 8 bytes, 7 left)");
  CHECK(load_error(good + "!") == "load: " + q + " has 1 unexpected bytes after its last entry");
  {
    std::string b = header(1);
    put<uint64_t>(b, uint64_t{1} << 40);  // a name longer than the file
    b += std::string(16, 'x');
    CHECK(load_error(b) == "load: " + q + " is truncated (a name of 1099511627776 bytes at offset 24)");
  }
  CHECK(load_error(header(1) + entry_head("w", 7, {2}) + std::string(8, '\0')) ==
        "load: " + q + ": entry 'w' has bad dtype 7");
  {
    std::string b = header(1) + entry_head("w", 0, {});
    b.resize(b.size() - 8);
    put<uint64_t>(b, uint64_t{1} << 40);  // ndim
    b += std::string(64, '\0');
    CHECK(load_error(b) == "load: " + q + ": entry 'w' has bad ndim 1099511627776");
  }
  CHECK(load_error(header(1) + entry_head("w", 0, {-3}) + std::string(12, '\0')) ==
        "load: " + q + ": entry 'w' has a negative size -3");
  CHECK(load_error(header(1) + entry_head("w", 0, {int64_t{1} << 40, int64_t{1} << 40}) + std::string(64, '\0')) ==
        "load: " + q + ": entry 'w' is larger than any file");
  CHECK(load_error(header(1) + entry_head("w", 1, {1000})) ==
        "load: " + q + " is truncated (entry 'w' needs 8000 bytes, 0 left)");
}

TEST_CASE("load: a flipped byte anywhere in a TTSD version 2 file is a checksum error naming the file",
          "[ch06][serialization]") {
  // (safetensors has no checksum: save() no longer writes this format, load() still reads it.)
  TempDir dir;
  const std::string p = dir.file("flip.tt");
  std::string entries = entry_head("weight", 0, {3, 4});
  for (int i = 0; i < 12; ++i) put<float>(entries, 0.25f * static_cast<float>(i) - 1.0f);
  entries += entry_head("bias", 1, {4});
  for (int i = 0; i < 4; ++i) put<double>(entries, -0.5 * i);
  const std::string bytes = ttsd_v2(2, entries);
  write_bytes(p, bytes);
  const auto sd = tinytorch::load(p);
  REQUIRE(sd.size() == 2);  // TTSD entries come back in file order
  CHECK(sd[0].first == "weight");
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i) - 1.0f;
  CHECK(sd[0].second.equal(make<float>(w, {3, 4})));
  CHECK(sd[1].first == "bias");
  CHECK(sd[1].second.equal(make<double>({0.0, -0.5, -1.0, -1.5}, {4})));
  REQUIRE(bytes.size() > 16);
  // Every byte after the magic and the version (which have their own errors), one at a time.
  for (size_t i = 8; i < bytes.size(); ++i) {
    INFO("flipped byte " << i << " of " << bytes.size());
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x10);
    write_bytes(p, b);
    CHECK_THROWS_WITH(tinytorch::load(p), Catch::Matchers::Contains("load: '" + p + "'") &&
                                              Catch::Matchers::Contains("checksum"));
  }
  write_bytes(p, bytes);
  CHECK(tinytorch::load(p).size() == 2);  // the unflipped bytes still load
  write_bytes(p, bytes.substr(0, 19));     // shorter than a header and a checksum
  CHECK_THROWS_WITH(tinytorch::load(p), "load: '" + p + "' is truncated (no room for its checksum, file size 19)");
}

TEST_CASE("load: a version 1 file (no checksum) still loads", "[ch06][serialization]") {
  TempDir dir;
  const std::string p = dir.file("v1.tt");
  // "TTSD", version 1, two entries: w (2,) float32 {1.5, -2}, n (0, 3) int64 (no data).
  std::string b = header(2, 1) + entry_head("w", 0, {2});
  put<float>(b, 1.5f);
  put<float>(b, -2.0f);
  b += entry_head("n", 2, {0, 3});
  write_bytes(p, b);
  const auto sd = tinytorch::load(p);
  REQUIRE(sd.size() == 2);
  CHECK(sd[0].first == "w");
  CHECK(sd[0].second.sizes() == tinytorch::Shape{2});
  CHECK(sd[0].second.equal(tinytorch::tensor({1.5f, -2.0f})));
  CHECK(sd[1].first == "n");
  CHECK(sd[1].second.dtype() == tinytorch::kInt64);
  CHECK(sd[1].second.sizes() == tinytorch::Shape{0, 3});
}

TEST_CASE("load: zero-element tensors round trip (no memcpy from or to a null pointer)", "[ch06][serialization]") {
  // Under -fsanitize=undefined (TINYTORCH_SANITIZER=undefined) this test reported
  // "null pointer passed as argument 1" in load() before the copy skipped empty ranges.
  TempDir dir;
  const std::string p = dir.file("empty.tt");
  tinytorch::save({{"e", tinytorch::zeros({0})}, {"f", tinytorch::zeros({2, 0}, tinytorch::kFloat64)}}, p);
  const auto sd = tinytorch::load(p);
  REQUIRE(sd.size() == 2);
  CHECK(sd[0].second.numel() == 0);
  CHECK(sd[1].second.sizes() == tinytorch::Shape{2, 0});
  CHECK(sd[1].second.dtype() == tinytorch::kFloat64);
}

TEST_CASE("load: a zero-element entry whose other sizes overflow int64 loads (found by fuzz_checkpoint)",
          "[ch06][serialization]") {
  // Shape [0, 2^38, 2^31]: zero elements, but the row-major strides overflow int64. load() used to
  // reach signed overflow (undefined behaviour) in contiguous_strides; the strides now wrap as
  // PyTorch's do (torch.empty(0, 2**38, 2**31).stride() == (0, 2**31, 1)). The fuzzer's input is
  // tests/fuzz/regressions/checkpoint/zero_dim_strides_overflow (replayed by fuzz_checkpoint_replay).
  TempDir dir;
  const std::string p = dir.file("zero_dim_overflow.tt");
  write_bytes(p, header(1) + entry_head("w", 0, {0, int64_t{1} << 38, int64_t{1} << 31}));
  const auto sd = tinytorch::load(p);
  REQUIRE(sd.size() == 1);
  CHECK(sd[0].second.numel() == 0);
  CHECK(sd[0].second.sizes() == tinytorch::Shape{0, int64_t{1} << 38, int64_t{1} << 31});
  CHECK(sd[0].second.strides() == tinytorch::Strides{0, int64_t{1} << 31, 1});
}

TEST_CASE("load: a file replaced by a concurrent save is read whole, never as truncated",
          "[ch06][serialization][threads]") {
  // load() used to stat the path, then open it again: a save renaming a larger file over it in
  // between made load read the old size of the new file and report it truncated.
  TempDir dir;
  const std::string p = dir.file("race.tt");
  tinytorch::save({{"w", tinytorch::zeros({1})}}, p);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) tinytorch::save({{"w", tinytorch::zeros({(i % 2) ? 1 : 4096})}}, p);
  });
  std::string error;
  for (int i = 0; i < 3000 && error.empty(); ++i) {
    try {
      const auto sd = tinytorch::load(p);
      if (sd.size() != 1 || (sd[0].second.numel() != 1 && sd[0].second.numel() != 4096)) error = "wrong contents";
    } catch (const tinytorch::Error& e) {
      error = e.what();
    }
  }
  stop = true;
  writer.join();
  CHECK(error == "");
}

// ---- safetensors ------------------------------------------------------------------------------

TEST_CASE("save writes safetensors: the header, its order and padding, the data, as the reference writer",
          "[ch06][serialization][safetensors]") {
  TempDir dir;
  const std::string p = dir.file("sd.safetensors");
  // The Rust crate's own test_serialization: {"attn.0": F32 [1, 2, 3] = 0..5}, byte for byte
  // (SaveOptions{false}: no digests, which the crate does not write).
  const tinytorch::SaveOptions no_digests{false};
  tinytorch::save({{"attn.0", make<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3})}}, p, no_digests);
  std::string data6;
  for (float v : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) put<float>(data6, v);
  const std::string want = st_file(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})", data6);
  CHECK(read_bytes(p) == want);
  CHECK(want.substr(0, 8) == std::string("\x40\0\0\0\0\0\0\0", 8));  // 64: already a multiple of 8
  // By default the digest is one more metadata entry: what the crate writes for
  // save_file(t, p, metadata={"tinytorch.crc32:attn.0": "bb96fd5d"}). The value is Python's
  //   '%08x' % zlib.crc32(b"F32[1,2,3]" + struct.pack("<6f", 0, 1, 2, 3, 4, 5))
  tinytorch::save({{"attn.0", make<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3})}}, p);
  CHECK(read_bytes(p) == st_file(R"({"__metadata__":{"tinytorch.crc32:attn.0":"bb96fd5d"},)"
                                 R"("attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})",
                                 data6));
  CHECK(tinytorch::load_metadata(p).empty());  // the digests are not the user's metadata

  // No tensors: "{}" and six spaces (the crate's test_empty); with metadata, "__metadata__" first.
  tinytorch::save({}, p);
  CHECK(read_bytes(p) == std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  tinytorch::save({}, p, {{"framework", "pt"}});
  CHECK(read_bytes(p) == st_file(R"({"__metadata__":{"framework":"pt"}})"));
  CHECK(tinytorch::load_metadata(p) == std::map<std::string, std::string>{{"framework", "pt"}});

  // Order: I64, then F64, then F32 (descending in the crate's dtype order), each by name; load
  // returns them by name. Names are escaped as serde_json escapes them.
  tinytorch::save({{"b", tinytorch::ones({2})},
                   {"a", tinytorch::zeros({1}, tinytorch::kFloat64)},
                   {"z", tinytorch::full({}, 1.5)},
                   {"c", make<int64_t>({7}, {1})},
                   {"q\"\\\x01\n/\xc3\xa9", tinytorch::zeros({0, 2})}},
                  p, no_digests);
  std::string data;
  put<int64_t>(data, 7);
  put<double>(data, 0.0);
  put<float>(data, 1.f);
  put<float>(data, 1.f);
  put<float>(data, 1.5f);
  CHECK(read_bytes(p) == st_file(R"({"c":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
                                 R"("a":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},)"
                                 R"("q\"\\\u0001\n/)" "\xc3\xa9" R"(":{"dtype":"F32","shape":[0,2],"data_offsets":[24,24]},)"
                                 R"("z":{"dtype":"F32","shape":[],"data_offsets":[24,28]}})",
                                 data));
  const auto sd = tinytorch::load(p);
  std::vector<std::string> names;
  for (const auto& e : sd) names.push_back(e.first);
  CHECK(names == std::vector<std::string>{"a", "b", "c", "q\"\\\x01\n/\xc3\xa9", "z"});
  CHECK(same_bits(sd[3].second, tinytorch::zeros({0, 2})));
  CHECK(same_bits(sd[4].second, tinytorch::full({}, 1.5)));
  CHECK(tinytorch::load_metadata(p).empty());
}

TEST_CASE("a file written by Python's safetensors loads with its exact values, and save rewrites it byte for byte",
          "[ch06][serialization][safetensors]") {
  // tests/data/python_written.safetensors: safetensors.torch.save_file(TENSORS, path,
  // metadata={"format": "pt"}) in tests/reference/gen_safetensors.py, which lists these values.
  const std::string p = test_data_dir() + "/python_written.safetensors";
  const std::string bytes = read_bytes(p);
  REQUIRE(bytes.size() == 544);
  const auto sd = tinytorch::load(p);
  const std::string odd = "na\xc3\xafve \"name\"\n\xe2\x82\xac";  // 'naïve "name"\n€'
  const std::vector<std::pair<std::string, Tensor>> want{
      {"empty", tinytorch::zeros({0, 4})},
      {"fc.bias", make<float>({0.1f, -0.2f}, {2})},
      {"fc.weight", make<float>({0.5f, -1.25f, 3.0f, 1e-3f, -0.0f, 65504.0f}, {2, 3})},
      {"ids", make<int64_t>({0, -1, int64_t{1} << 62, INT64_MIN}, {4})},
      {odd, make<double>({0, 0.125, 0.25, 0.375, 0.5, 0.625}, {3, 2})},
      {"step", make<double>({1.0 / 3.0}, {})},
  };
  REQUIRE(sd.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(want[i].first);
    CHECK(sd[i].first == want[i].first);  // sorted by name
    CHECK(same_bits(sd[i].second, want[i].second));
  }
  CHECK(tinytorch::load_metadata(p) == std::map<std::string, std::string>{{"format", "pt"}});

  TempDir dir;
  const tinytorch::SaveOptions no_digests{false};  // Python's save_file writes none
  tinytorch::save(sd, dir.file("again.safetensors"), {{"format", "pt"}}, no_digests);
  CHECK(read_bytes(dir.file("again.safetensors")) == bytes);
  tinytorch::save(want, dir.file("want.safetensors"), {{"format", "pt"}}, no_digests);
  CHECK(read_bytes(dir.file("want.safetensors")) == bytes);

  // python_bf16.safetensors: torch.tensor([1.5, -2.0], dtype=torch.bfloat16), saved by Python: the
  // bits 0x3FC0, 0xC000 (chapter 11; tinytorch writes them back byte for byte)
  const std::string bf16 = test_data_dir() + "/python_bf16.safetensors";
  const auto b = tinytorch::load(bf16);
  REQUIRE(b.size() == 1);
  CHECK(b[0].second.dtype() == tinytorch::kBFloat16);
  CHECK(b[0].second.tolist<double>() == std::vector<double>{1.5, -2.0});
  uint16_t bits[2];
  std::memcpy(bits, b[0].second.raw_data(), 4);
  CHECK((bits[0] == 0x3FC0 && bits[1] == 0xC000));
  tinytorch::save(b, dir.file("bf16.safetensors"), {}, no_digests);
  CHECK(read_bytes(dir.file("bf16.safetensors")) == read_bytes(bf16));
}

TEST_CASE("load accepts what the safetensors reader accepts: any header order, unknown fields, whitespace, escapes",
          "[ch06][serialization][safetensors]") {
  TempDir dir;
  const std::string p = dir.file("ok.safetensors");
  std::string data;
  put<float>(data, 1.f);
  put<float>(data, 2.f);
  put<int64_t>(data, -5);
  // Header order unlike the data order, an unknown field (any JSON value), JSON whitespace,
  // "\u00e9" and "\/" escapes, a surrogate pair, "__metadata__": null, padding with tabs and newlines.
  write_bytes(p, st_file("{ \"z\\u00e9\\/\\ud83d\\ude00\" : {\"data_offsets\":[8,16], \"extra\": [1, -2.5e3, {\"k\": "
                         "[true, false, null]}], \"shape\":[1],\"dtype\":\"I64\"},\n\t\"__metadata__\":null,"
                         "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}\n\t\r ",
                         data, false));
  auto sd = tinytorch::load(p);
  REQUIRE(sd.size() == 2);
  CHECK(sd[0].first == "a");
  CHECK(same_bits(sd[0].second, make<float>({1.f, 2.f}, {2})));
  CHECK(sd[1].first == "z\xc3\xa9/\xf0\x9f\x98\x80");
  CHECK(same_bits(sd[1].second, make<int64_t>({-5}, {1})));
  CHECK(tinytorch::load_metadata(p).empty());

  // Empty tensors may share an offset, anywhere in the order; an empty file of tensors is fine.
  write_bytes(p, st_file(R"({"e1":{"dtype":"F64","shape":[0],"data_offsets":[4,4]},)"
                         R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("e0":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]}})",
                         data.substr(0, 4)));
  sd = tinytorch::load(p);
  REQUIRE(sd.size() == 3);
  CHECK(sd[0].second.sizes() == tinytorch::Shape{3, 0});
  CHECK(sd[1].second.dtype() == tinytorch::kFloat64);
  CHECK(sd[2].second.item<float>() == 1.f);
  write_bytes(p, st_file("{}"));
  CHECK(tinytorch::load(p).empty());
  // A zero-element tensor whose other sizes overflow int64 strides (as the TTSD regression above).
  write_bytes(p, st_file(R"({"w":{"dtype":"F32","shape":[0,274877906944,2147483648],"data_offsets":[0,0]}})"));
  CHECK(tinytorch::load(p)[0].second.strides() == tinytorch::Strides{0, int64_t{1} << 31, 1});
}

TEST_CASE("load: every malformed safetensors file is an error naming the file and the problem",
          "[ch06][serialization][safetensors]") {
  TempDir dir;
  const std::string p = dir.file("bad.safetensors");
  auto load_error = [&](const std::string& bytes) { return load_error_of(p, bytes); };
  const std::string bad = "load: '" + p + "' is not a valid safetensors file: ";
  const std::string f4 = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::string four(4, '\0');
  auto len = [](uint64_t v) {
    std::string b;
    put<uint64_t>(b, v);
    return b;
  };

  // The 8-byte length and the header's bytes.
  CHECK(load_error(std::string(7, '\0')) == bad + "it has 7 bytes, fewer than the 8 of its header length");
  CHECK(load_error(len(100000001) + std::string(16, ' ')) ==
        bad + "its header length 100000001 is over the limit of 100000000 bytes");
  CHECK(load_error(len(16) + "{}") == bad + "its header length 16 runs past the end of the file (10 bytes)");
  CHECK(load_error(st_file("{\"\xff\":1}")) == bad + "its header is not valid UTF-8 (at byte 2)");
  CHECK(load_error(st_file("{\"\xed\xa0\x80\":1}")) == bad + "its header is not valid UTF-8 (at byte 2)");  // surrogate
  CHECK(load_error(st_file(" {}")) == bad + "its header does not start with '{'");
  CHECK(load_error(len(0)) == bad + "its header does not start with '{'");
  CHECK(load_error(st_file("[]")) == bad + "its header does not start with '{'");

  // JSON syntax.
  const std::string json = bad + "invalid JSON in its header at byte ";
  CHECK(load_error(st_file("{", "", false)) == json + "1: expected '\"', found the end of the header");
  CHECK(load_error(st_file(R"({"a" 1})")) == json + "5: expected ':', found '1'");
  CHECK(load_error(st_file(R"({}x)")) == json + "2: unexpected 'x' after the header's object");
  CHECK(load_error(st_file("{},", "", false)) == json + "2: unexpected ',' after the header's object");
  CHECK(load_error(st_file(R"({"w":)" + f4 + ",}")) == json + "54: expected '\"', found '}'");
  CHECK(load_error(st_file("{\"a\nb\":1}")) == json + "3: control character in a string (it must be escaped)");
  CHECK(load_error(st_file(R"({"a\x":1})")) == json + "4: invalid escape in a string");
  CHECK(load_error(st_file(R"({"\ud800":1})")) == json + "8: lone leading surrogate in a \\u escape");
  CHECK(load_error(st_file(R"({"\udc00":1})")) == json + "8: lone trailing surrogate in a \\u escape");
  CHECK(load_error(st_file(R"({"\u12g4":1})")) == json + "6: invalid \\u escape");
  CHECK(load_error(st_file(R"({"abc)", "", false)) == json + "5: unterminated string");
  CHECK(load_error(st_file(R"({"w":{"x":01,)" + f4.substr(1))) == json + "11: expected '}', found '1'");
  CHECK(load_error(st_file(R"({"w":{"x":tru}})")) == json + "10: expected a value, found 't'");
  CHECK(load_error(st_file(R"({"w":{"x":1.}})")) == json + "12: invalid number");
  CHECK(load_error(st_file(R"({"w":{"x":[1 2]}})")) == json + "13: expected ']', found '2'");
  CHECK(load_error(st_file(R"({"w":{"x":)" + std::string(200, '[') + std::string(200, ']') + "}}")) ==
        json + "137: nested more than 128 levels deep");

  // Keys, "__metadata__", tensor entries.
  CHECK(load_error(st_file(R"({"w":)" + f4 + R"(,"w":)" + f4 + "}", four)) ==
        bad + "the key \"w\" appears twice in its header");
  CHECK(load_error(st_file(R"({"__metadata__":{},"__metadata__":{}})")) ==
        bad + "the key \"__metadata__\" appears twice in its header");
  CHECK(load_error(st_file(R"({"__metadata__":[]})")) == bad + "\"__metadata__\" must be an object whose values are strings");
  CHECK(load_error(st_file(R"({"__metadata__":{"a":1}})")) ==
        bad + "\"__metadata__\" must be an object whose values are strings (\"a\" is not)");
  CHECK(load_error(st_file(R"({"__metadata__":{"a":"1","a":"2"}})")) ==
        bad + "the key \"a\" appears twice in \"__metadata__\"");
  CHECK(load_error(st_file(R"({"w":[]})")) ==
        bad + "tensor \"w\" must be an object with \"dtype\", \"shape\" and \"data_offsets\"");
  CHECK(load_error(st_file(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", four)) == bad + "tensor \"w\" has no \"dtype\"");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", four)) == bad + "tensor \"w\" has no \"shape\"");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[1]}})", four)) == bad + "tensor \"w\" has no \"data_offsets\"");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four)) ==
        bad + "tensor \"w\" has the field \"dtype\" twice");
  CHECK(load_error(st_file(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", four)) ==
        bad + "tensor \"w\": \"dtype\" must be a string");
  for (const char* shape : {"[-1]", "[1.0]", "[1e2]", "1", "[\"1\"]", "[18446744073709551616]"}) {
    INFO(shape);
    CHECK(load_error(st_file(std::string(R"({"w":{"dtype":"F32","shape":)") + shape + R"(,"data_offsets":[0,4]}})",
                             four)) == bad + "tensor \"w\": \"shape\" must be an array of non-negative integers");
  }
  {
    std::string dims = "1";
    for (int i = 0; i < 64; ++i) dims += ",1";  // 65 sizes
    CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[)" + dims + R"(],"data_offsets":[0,4]}})", four)) ==
          bad + "tensor \"w\": \"shape\" has more than 64 elements");
  }
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", four)) ==
        bad + "tensor \"w\": \"data_offsets\" has more than 2 elements");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}})", four)) ==
        bad + "tensor \"w\": \"data_offsets\" must be two integers [begin, end]");

  // Dtypes, sizes, offsets (the crate's Metadata::validate), the data buffer.
  for (const char* dt : {"I32", "U8", "BOOL", "f32", "complex"}) {
    INFO(dt);
    CHECK(load_error(st_file(std::string(R"({"w":{"dtype":")") + dt + R"(","shape":[1],"data_offsets":[0,4]}})",
                             four)) == "load: '" + p + "': tensor \"w\" has dtype \"" + dt +
                                           "\", which tinytorch cannot load (it has F32, F64, I64, F16 and BF16 only)");
  }
  CHECK(load_error(st_file(R"({"w":{"dtype":"BF16","shape":[1],"data_offsets":[0,4]}})", four)) ==
        bad + "tensor \"w\" has dtype BF16 and 1-d shape of 2 bytes, but data_offsets [0, 4] span 4 bytes");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", four)) ==
        bad + "tensor \"w\" has data_offsets [4, 0] that end before they begin");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", four + four)) ==
        bad + "tensor \"w\" has data_offsets [4, 8] but the tensor before it (by offset) ends at 0: the tensors must "
              "cover the data buffer exactly, without gaps or overlaps");  // a gap at the start
  CHECK(load_error(st_file(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           std::string(12, '\0'))) ==
        bad + "tensor \"b\" has data_offsets [4, 12] but the tensor before it (by offset) ends at 8: the tensors must "
              "cover the data buffer exactly, without gaps or overlaps");  // an overlap
  CHECK(load_error(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                           std::string(12, '\0'))) ==
        bad + "tensor \"b\" has data_offsets [8, 12] but the tensor before it (by offset) ends at 4: the tensors must "
              "cover the data buffer exactly, without gaps or overlaps");  // a gap between
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", std::string(12, '\0'))) ==
        bad + "tensor \"w\" has dtype F32 and 1-d shape of 8 bytes, but data_offsets [0, 12] span 12 bytes");
  CHECK(load_error(st_file(R"({"w":{"dtype":"I64","shape":[],"data_offsets":[0,4]}})", four)) ==
        bad + "tensor \"w\" has dtype I64 and 0-d shape of 8 bytes, but data_offsets [0, 4] span 4 bytes");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0]}})")) ==
        bad + "tensor \"w\" has a shape whose size in bytes overflows 64 bits");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})")) ==
        bad + "tensor \"w\" has a shape whose size in bytes overflows 64 bits");
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[0,9223372036854775808],"data_offsets":[0,0]}})")) ==
        bad + "tensor \"w\" has a size of 9223372036854775808, more than int64 holds");
  CHECK(load_error(st_file(R"({"w":)" + f4 + "}", "")) == bad + "its tensors cover 4 bytes of data, but the file has 0 "
                                                              "bytes after its header");  // truncated
  CHECK(load_error(st_file(R"({"w":)" + f4 + "}", four + "x")) ==
        bad + "its tensors cover 4 bytes of data, but the file has 5 bytes after its header");  // trailing bytes
  CHECK(load_error(st_file(R"({"w":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,4398046511104]}})",
                           four)) ==
        bad + "its tensors cover 4398046511104 bytes of data, but the file has 4 bytes after its header");
}

TEST_CASE("save: names a safetensors file cannot hold are errors, and nothing is written",
          "[ch06][serialization][safetensors]") {
  TempDir dir;
  const std::string p = dir.file("x.safetensors");
  CHECK_THROWS_WITH(tinytorch::save({{"w", tinytorch::ones({1})}, {"w", tinytorch::zeros({1}, tinytorch::kInt64)}}, p),
                    "save: two entries are named \"w\" (a safetensors file maps names to tensors)");
  CHECK_THROWS_WITH(tinytorch::save({{"__metadata__", tinytorch::ones({1})}}, p),
                    "save: an entry may not be named \"__metadata__\" (safetensors reserves it)");
  CHECK_THROWS_WITH(tinytorch::save({{"a\xff", tinytorch::ones({1})}}, p),
                    "save: entry name \"a\xff\" is not valid UTF-8 (at byte 1); safetensors headers are JSON");
  CHECK_THROWS_WITH(tinytorch::save({}, p, {{"k", "\xc0\x80"}}), "save: metadata \"k\" is not valid UTF-8");
  CHECK_FALSE(fs::exists(p));
}

TEST_CASE("[safetensors-export] the checkpoint ctest safetensors_python reads with Python's safetensors",
          "[ch06][serialization][safetensors][safetensors-export]") {
  // tests/interop/check_safetensors.py lists the same values; safetensors_test.sh sets
  // TT_SAFETENSORS_EXPORT to where the file goes. Without it the file goes to a temporary dir and
  // is checked here only by loading it back.
  TempDir dir;
  const char* env = std::getenv("TT_SAFETENSORS_EXPORT");
  const std::string p = env && *env ? std::string(env) : dir.file("export.safetensors");
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.25f - 1.5f;
  const Tensor weight = make<float>(w, {3, 4});
  const std::vector<std::pair<std::string, Tensor>> sd{
      {"linear.weight", weight},
      {"linear.weight_t", weight.t()},  // a non-contiguous view: saved as its values
      {"linear.bias", make<float>({0.1f, -0.2f, 0.3f}, {3})},
      {"state.0.step", make<double>({7.0}, {})},
      {"state.0.exp_avg", make<double>({1.0 / 3.0, -2.5e-300}, {2})},
      {"counts", make<int64_t>({-1, int64_t{1} << 40, 3, -(int64_t{1} << 62)}, {2, 2})},
      {"empty", tinytorch::zeros({0, 3})},
      {"\xc3\xbcn\xc3\xaf \"q\"\\\n\t", make<int64_t>({42}, {1})},
  };
  tinytorch::save(sd, p, {{"format", "pt"}, {"producer", "tinytorch"}});
  const auto back = tinytorch::load(p);
  REQUIRE(back.size() == sd.size());
  for (const auto& entry : sd) {  // (no structured binding: clang 14 cannot capture one in a lambda)
    INFO(entry.first);
    const auto it = std::find_if(back.begin(), back.end(), [&](const auto& e) { return e.first == entry.first; });
    REQUIRE(it != back.end());
    CHECK(same_bits(it->second, entry.second));
  }
  CHECK(tinytorch::load_metadata(p) == std::map<std::string, std::string>{{"format", "pt"}, {"producer", "tinytorch"}});
}

// ---- integrity digests and killed saves (issue: "checkpoints that never load wrong values") ----

namespace {

/// The entries of a state dict, by name: equal names, dtypes, shapes and bits.
bool same_state_dict(const std::vector<std::pair<std::string, Tensor>>& a,
                     const std::vector<std::pair<std::string, Tensor>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !same_bits(a[i].second, b[i].second)) return false;
  return true;
}

/// The names in `dir` that start with ".", i.e. save()'s temporary files.
std::vector<std::string> hidden_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string()[0] == '.') out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// A pid that is not a running process: a child that has exited and been reaped.
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return static_cast<long>(child);
}

}  // namespace

TEST_CASE("every flipped bit of a checkpoint's tensor data is an error naming the tensor",
          "[ch06][serialization][safetensors]") {
  TempDir dir;
  const std::string p = dir.file("ckpt.safetensors");
  const std::vector<std::pair<std::string, Tensor>> sd{
      {"fc.bias", make<float>({0.1f, -0.2f}, {2})},
      {"fc.weight", make<float>({0.5f, -1.25f, 3.0f, 1e-3f, -0.0f, 65504.0f}, {2, 3})},
      {"step", make<int64_t>({12345}, {})},
  };
  tinytorch::save(sd, p);
  const std::string good = read_bytes(p);
  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  const size_t data_start = static_cast<size_t>(8 + n);
  REQUIRE(good.size() - data_start == 8 + 24 + 8);
  CHECK(data_start == 320);  // chapter 06 quotes the counts: 320 data bits, 2,560 header bits
  REQUIRE(same_state_dict(tinytorch::load(p), sd));
  // Each bit of the data buffer in turn: an error that names the file and the tensor it hit.
  const std::string q = dir.file("flipped.safetensors");
  int errors = 0;
  for (size_t byte = data_start; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      const size_t off = byte - data_start;  // I64 "step" [0, 8), F32 "fc.bias" [8, 16), "fc.weight" [16, 40)
      const std::string hit = off < 8 ? "step" : off < 16 ? "fc.bias" : "fc.weight";
      const std::string e = load_error_of(q, bad);
      INFO("byte " << byte << " bit " << bit << ": " << e);
      CHECK(e.rfind("load: '" + q + "' is corrupt: tensor \"" + hit + "\" does not match its CRC-32 digest (stored ", 0) == 0);
      errors += e != "no error";
    }
  }
  CHECK(errors == 8 * 40);
  // Each bit of the length and the header: an error, or (a flip the format cannot see, such as
  // one in the metadata's "format" value) the same tensors. Never a changed tensor or name.
  int header_errors = 0, header_same = 0;
  for (size_t byte = 0; byte < data_start; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      write_bytes(q, bad);
      try {
        const auto back = tinytorch::load(q);
        INFO("byte " << byte << " bit " << bit << " loaded");
        CHECK(same_state_dict(back, sd));
        ++header_same;
      } catch (const tinytorch::Error& e) {
        CHECK(std::string(e.what()).rfind("load: '" + q + "'", 0) == 0);
        ++header_errors;
      }
    }
  }
  CHECK(header_errors + header_same == static_cast<int>(8 * data_start));
  CHECK(header_same == 0);  // here every header flip is caught too (this file has no user metadata)

  // The error names the way out; verify=false loads what is there.
  std::string bad = good;
  bad[data_start + 16] = static_cast<char>(bad[data_start + 16] ^ 1);
  write_bytes(q, bad);
  CHECK_THROWS_WITH(tinytorch::load(q), Catch::EndsWith("(LoadOptions{.verify = false} loads it unchecked)"));
  CHECK_THROWS_WITH(tinytorch::load_metadata(q), Catch::Contains("tensor \"fc.weight\" does not match its CRC-32"));
  const auto rescued = tinytorch::load(q, tinytorch::LoadOptions{false});
  REQUIRE(rescued.size() == 3);
  CHECK(same_bits(rescued[0].second, sd[0].second));  // fc.bias: untouched
  CHECK_FALSE(same_bits(rescued[1].second, sd[1].second));
  CHECK(tinytorch::load_metadata(q, tinytorch::LoadOptions{false}).empty());
}

TEST_CASE("digests: Python's zlib computes the same ones, files without them load, the metadata key is reserved",
          "[ch06][serialization][safetensors]") {
  // tests/data/python_digested.safetensors: Python's save_file with the digests computed by
  // gen_safetensors.py (zlib.crc32), i.e. the documented definition, written independently.
  const std::string p = test_data_dir() + "/python_digested.safetensors";
  const auto sd = tinytorch::load(p);
  const auto plain = tinytorch::load(test_data_dir() + "/python_written.safetensors");  // no digests
  CHECK(same_state_dict(sd, plain));
  CHECK(tinytorch::load_metadata(p) == std::map<std::string, std::string>{{"format", "pt"}});
  TempDir dir;
  tinytorch::save(sd, dir.file("ours.safetensors"), {{"format", "pt"}});
  std::map<std::string, std::string> ours, theirs;  // the same digests, whoever computed them
  const auto digests_of = [](const std::string& bytes) {
    std::map<std::string, std::string> m;
    for (size_t at = bytes.find("\"tinytorch.crc32:"); at != std::string::npos;
         at = bytes.find("\"tinytorch.crc32:", at + 1)) {
      const size_t colon = bytes.find("\":\"", at);
      m[bytes.substr(at, colon - at)] = bytes.substr(colon + 3, 8);
    }
    return m;
  };
  ours = digests_of(read_bytes(dir.file("ours.safetensors")));
  theirs = digests_of(read_bytes(p));
  CHECK(ours.size() == 6);
  CHECK(ours == theirs);

  // A digest for a tensor that is not there, a tensor without one, a malformed one.
  const std::string f4 = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  std::string four;
  put<float>(four, 1.0f);
  const std::string q = dir.file("q.safetensors");
  const std::string pre = "load: '" + q + "' is corrupt: ";
  const std::string tail = " (LoadOptions{.verify = false} loads it unchecked)";
  CHECK(load_error_of(q, st_file(R"({"__metadata__":{"tinytorch.crc32:v":"00000000"},"w":)" + f4 + "}", four)) ==
        pre + "its header has a CRC-32 digest for tensor \"v\" but no such tensor" + tail);
  const std::string f4b = R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
  const std::string w_digest = tinytorch::detail::tensor_digest("F32", {1}, four.data(), 4);
  CHECK(load_error_of(q, st_file(R"({"__metadata__":{"tinytorch.crc32:w":")" + w_digest + R"("},"w":)" + f4 +
                                     R"(,"x":)" + f4b + "}",
                                 four + four)) ==
        pre + "tensor \"x\" has no CRC-32 digest in the header, though other tensors have one" + tail);
  std::string upper = w_digest;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) { return static_cast<char>(std::toupper(c)); });
  if (upper != w_digest)
    CHECK(load_error_of(q, st_file(R"({"__metadata__":{"tinytorch.crc32:w":")" + upper + R"("},"w":)" + f4 + "}",
                                   four)) ==
          pre + "the CRC-32 digest of tensor \"w\" is \"" + upper + "\", not 8 lowercase hex digits" + tail);
  CHECK(load_error_of(q, st_file(R"({"__metadata__":{"tinytorch.crc32:w":")" + w_digest + R"("},"w":)" + f4 + "}",
                                 four)) == "no error");

  // A header the reference reader would refuse (over 100000000 bytes) is refused by save, before
  // anything is written, instead of writing a file load could not read.
  CHECK_THROWS_WITH(tinytorch::save({{"w", tinytorch::ones({1})}}, dir.file("big.safetensors"),
                                    {{"k", std::string(99999950, 'a')}}),
                    Catch::StartsWith("save: the safetensors header would be ") &&
                        Catch::Contains(" bytes, over the format's limit of 100000000"));
  CHECK_FALSE(fs::exists(dir.file("big.safetensors")));
  CHECK_THROWS_WITH(tinytorch::save({{"w", tinytorch::ones({1})}}, q, {{"tinytorch.crc32:w", "0"}}),
                    "save: the metadata key \"tinytorch.crc32:w\" is reserved: keys starting with "
                    "\"tinytorch.crc32:\" hold the tensors' digests");
}

TEST_CASE("save after a killed save removes the temporary file it left", "[ch06][serialization]") {
  TempDir dir;
  const std::string p = dir.file("ckpt.safetensors");
  tinytorch::save({{"w", tinytorch::full({4}, 2.0)}}, p);
  const std::string old_bytes = read_bytes(p);
  const std::string other = dir.file("other.bin");
  tinytorch::detail::write_file_atomically(other, "old", "save");
  // A child saves a large file over and over (64 MiB: each write takes a while) and is killed
  // with SIGKILL while its temporary file exists, as `kill -9` during torch.save would be. (If
  // the kill lands between a rename and the next temporary file, nothing is left: try again.)
  const std::string big(64u << 20, 'x');
  const std::string child_tmp = ".other.bin.tt_tmp.";
  std::vector<std::string> left;
  for (int attempt = 0; attempt < 5 && left.empty(); ++attempt) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        for (;;) tinytorch::detail::write_file_atomically(other, big, "save");
      } catch (...) {
      }
      ::_exit(1);
    }
    bool seen = false;  // wait (at most ~20 s) until a temporary file of the child's is there
    for (int i = 0; i < 20000 && !seen; ++i) {
      for (const auto& name : hidden_files(dir.path)) seen = seen || name.rfind(child_tmp, 0) == 0;
      if (!seen) ::usleep(1000);
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(seen);
    REQUIRE(WIFSIGNALED(status));
    left = hidden_files(dir.path);
  }
  REQUIRE(left.size() == 1);
  CHECK(left[0].rfind(child_tmp, 0) == 0);
  const std::string now = read_bytes(other);  // the old file, or one complete earlier write
  CHECK((now == "old" || now == big));
  // The old "ckpt" is intact, and saving "other.bin" again removes the dead writer's file.
  CHECK(read_bytes(p) == old_bytes);
  tinytorch::save({{"w", tinytorch::full({4}, 3.0)}}, p);  // another file's save leaves it
  CHECK(hidden_files(dir.path) == left);
  tinytorch::detail::write_file_atomically(other, "new", "save");
  CHECK(hidden_files(dir.path).empty());
  CHECK(read_bytes(other) == "new");
}

TEST_CASE("stale temporary files: those of dead writers of the same file on this host go, others stay",
          "[ch06][serialization]") {
  TempDir dir;
  const std::string p = dir.file("m.safetensors");
  const std::string prefix = tinytorch::detail::temp_file_prefix("m.safetensors");
  REQUIRE(prefix.rfind(".m.safetensors.tt_tmp.", 0) == 0);
  const std::string dead = prefix + std::to_string(dead_pid()) + ".1";
  const std::string alive = prefix + "1.7";  // pid 1 runs as long as the machine does
  const std::string self = prefix + std::to_string(static_cast<long>(::getpid())) + ".99";  // this process
  const std::string other_file = tinytorch::detail::temp_file_prefix("n.safetensors") + std::to_string(dead_pid()) + ".1";
  const std::string other_host = ".m.safetensors.tt_tmp.another-host." + std::to_string(dead_pid()) + ".1";
  const std::string not_ours = prefix + "12x.1";
  const std::string huge_pid = prefix + "4294967200.1";  // no pid_t: not a name save() makes
  // A dead pid whose file is still locked: a live writer in another PID namespace (a container
  // with the same host name) whose pid is free here. The lock keeps it.
  const std::string locked = prefix + std::to_string(dead_pid()) + ".2";
  for (const auto& name : {dead, alive, self, other_file, other_host, not_ours, huge_pid, locked})
    write_bytes(dir.file(name), "tmp");
  const int lock_fd = ::open(dir.file(locked).c_str(), O_RDONLY);
  REQUIRE(lock_fd >= 0);
  REQUIRE(::flock(lock_fd, LOCK_EX) == 0);
  tinytorch::save({{"w", tinytorch::ones({1})}}, p);
  ::close(lock_fd);
  CHECK_FALSE(fs::exists(dir.file(dead)));
  for (const auto& name : {alive, self, other_file, other_host, not_ours, huge_pid, locked}) {
    INFO(name);
    CHECK(fs::exists(dir.file(name)));
  }
  tinytorch::save({{"w", tinytorch::ones({1})}}, p);  // unlocked now: that one goes too
  CHECK_FALSE(fs::exists(dir.file(locked)));
  // A file name near NAME_MAX still gets a temporary file (its name is cut to fit).
  const std::string long_name(250, 'a');
  tinytorch::save({{"w", tinytorch::ones({1})}}, dir.file(long_name));
  CHECK(tinytorch::load(dir.file(long_name)).size() == 1);
}
