// tests/test_robust.cpp — hostile inputs that used to crash, hang or give wrong numbers (issue 9,
// section 1), each now an exact result or a tinytorch::Error:
//   - the IDX (MNIST) reader: gzip bombs (a small .gz that inflates to far more than its header
//     says), /dev/zero, a FIFO, trailing garbage after a gzip stream, truncated files. The reader
//     reads the header first and never inflates more than it promises (data/mnist.hpp).
//   - int64 beyond 2^53 (where a double loses integers) and int64 overflow: Scalar keeps integers
//     exact (core/scalar.hpp), int64 arithmetic wraps modulo 2^64 as PyTorch's does, printing is
//     exact. Reference values: tests/reference/robust_ref.hpp (gen_robust.py, PyTorch).
// tests/ubsan/int64_wrap.cpp runs the wrapping cases under UndefinedBehaviorSanitizer, and
// tests/test_robust_threads.cpp the generator under ThreadSanitizer.
// Tag: [robust].
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include <tinytorch/tinytorch.hpp>

#include "idx_files.hpp"
#include "reference/robust_ref.hpp"

using namespace tinytorch;
using namespace tinytorch::data;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
namespace ref = robust_reference;

namespace {

using namespace tt_test;  // Bytes, idx_images, idx_labels, TempDir, write_plain, write_gz (tests/idx_files.hpp)

Bytes image_header(uint32_t n, uint32_t rows, uint32_t cols) { return idx_images(n, rows, cols, {}); }
Bytes label_header(uint32_t n) { return idx_labels({}, n); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int64_t item64(const Tensor& t) {
  REQUIRE(t.dtype() == kInt64);
  return t.item<int64_t>();
}
Tensor i64(int64_t v) { return full({1}, v, kInt64); }

}  // namespace

// ---- the IDX reader ---------------------------------------------------------------------------

TEST_CASE("read_idx_*: a gzip bomb behind a small header stops after the header's data", "[robust][data]") {
  TempDir dir;
  // 2 images of 2x2 (8 bytes of pixels), then 64 MiB of zeros: the old reader inflated all of it
  // first (gigabytes for a bigger bomb: std::bad_alloc with no file name).
  write_gz(dir / "bomb.gz", image_header(2, 2, 2), uint64_t(64) << 20);
  REQUIRE(fs::file_size(dir / "bomb.gz") < (1u << 20));
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(read_idx_images(dir / "bomb.gz"),
                    Contains("read_idx_images: " + (dir / "bomb.gz")) &&
                        Contains("expected 8 bytes of pixel data (2 images of 2x2), but the file has more than "
                                 "1048576 extra bytes after them"));
  CHECK(seconds_since(t0) < 5.0);  // ~1 MiB inflated, not 64
  write_gz(dir / "lbomb.gz", label_header(3), uint64_t(64) << 20);
  CHECK_THROWS_WITH(read_idx_labels(dir / "lbomb.gz"),
                    Contains(dir / "lbomb.gz") && Contains("expected 3 bytes of label data (3 labels), but the file "
                                                           "has more than 1048576 extra bytes"));
  // A few extra bytes are still counted exactly.
  Bytes img = image_header(1, 1, 2);
  img.insert(img.end(), {1, 2, 3, 4, 5});
  write_gz(dir / "extra.gz", img);
  CHECK_THROWS_WITH(read_idx_images(dir / "extra.gz"), Contains("expected 2 bytes of pixel data") &&
                                                           Contains("has 3 extra bytes after them"));
}

TEST_CASE("read_idx_*: a header claiming huge dims reads only the bytes that exist", "[robust][data]") {
  TempDir dir;
  // 2^20 images of 1024x1024 = 2^40 bytes promised (the most a header may claim), 16 MiB present:
  // nothing of the claimed size is allocated; the error names the file and both sizes.
  write_gz(dir / "huge.gz", image_header(1u << 20, 1024, 1024), uint64_t(16) << 20);
  CHECK_THROWS_WITH(read_idx_images(dir / "huge.gz"),
                    Contains(dir / "huge.gz") &&
                        Contains("expected 1099511627776 bytes of pixel data (1048576 images of 1024x1024), "
                                 "file ends after 16777216"));
  write_gz(dir / "lhuge.gz", label_header(0xFFFFFFFFu), 1000);
  CHECK_THROWS_WITH(read_idx_labels(dir / "lhuge.gz"),
                    Contains("expected 4294967295 bytes of label data (4294967295 labels), file ends after 1000"));
  // The same claim in a plain file is refused from its size on disk, before reading any data.
  Bytes plain = image_header(1u << 20, 1024, 1024);
  plain.resize(plain.size() + 100, 7);
  write_plain(dir / "huge", plain);
  CHECK_THROWS_WITH(read_idx_images(dir / "huge"), Contains("expected 1099511627776 bytes of pixel data") &&
                                                       Contains("file ends after 100"));
}

TEST_CASE("read_idx_*: /dev/zero, a FIFO and other non-regular files are refused at once", "[robust][data]") {
  if (fs::exists("/dev/zero")) {
    CHECK_THROWS_WITH(read_idx_images("/dev/zero"),
                      Contains("read_idx_images: cannot read '/dev/zero': it is a character device, not a regular file"));
    CHECK_THROWS_WITH(read_idx_labels("/dev/null"), Contains("'/dev/null': it is a character device"));
  }
  TempDir dir;
  const std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The old reader blocked in open() until a writer came. Run the read asynchronously; if it has
  // not returned after 10 s, open the FIFO for writing (which releases the reader) and fail.
  auto result = std::async(std::launch::async, [&]() -> std::string {
    try {
      read_idx_images(fifo);
      return "no error";
    } catch (const Error& e) {
      return e.what();
    }
  });
  const bool finished = result.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!finished) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  const std::string message = result.get();
  CHECK(finished);
  CHECK_THAT(message, Contains("read_idx_images: cannot read '" + fifo + "': it is a FIFO (named pipe), not a "
                               "regular file"));
  CHECK_THROWS_WITH(read_idx_labels(dir.path.string()), Contains("it is a directory"));
}

TEST_CASE("read_idx_*: truncated and trailing-garbage gzip files name the file and what was expected",
          "[robust][data]") {
  TempDir dir;
  Bytes img = image_header(20, 28, 28);
  for (int k = 0; k < 20 * 784; ++k) img.push_back(static_cast<unsigned char>((7 * k + 3) % 256));
  write_gz(dir / "full.gz", img);
  CHECK(read_idx_images(dir / "full.gz").sizes() == Shape{20, 784});
  const Bytes gz = read_raw(dir / "full.gz");

  // Cut in the middle of the compressed data: the stream stops before its end.
  write_plain(dir / "cut.gz", Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2)));
  CHECK_THROWS_WITH(read_idx_images(dir / "cut.gz"),
                    Contains("read_idx_images: " + (dir / "cut.gz")) &&
                        Contains("gzip data is truncated or corrupt (the compressed stream stops before its end)"));
  // Cut in the 8-byte gzip trailer (CRC and size): every pixel is there, the stream is not whole.
  write_plain(dir / "notrailer.gz", Bytes(gz.begin(), gz.end() - 4));
  CHECK_THROWS_WITH(read_idx_images(dir / "notrailer.gz"), Contains("gzip data is truncated or corrupt"));
  // Garbage after a complete gzip stream (zlib's gzread ignores it silently).
  Bytes garbage = gz;
  for (unsigned char c : std::string("garbage")) garbage.push_back(c);
  write_plain(dir / "garbage.gz", garbage);
  CHECK_THROWS_WITH(read_idx_images(dir / "garbage.gz"),
                    Contains(dir / "garbage.gz") && Contains("the gzip stream is followed by bytes that are not gzip "
                                                             "data") && Contains("(trailing garbage)"));
  // Two gzip members one after the other are one stream, as gunzip reads them.
  Bytes part1(img.begin(), img.begin() + 100), part2(img.begin() + 100, img.end());
  write_gz(dir / "m1.gz", part1);
  write_gz(dir / "m2.gz", part2);
  Bytes two = read_raw(dir / "m1.gz");
  const Bytes second = read_raw(dir / "m2.gz");
  two.insert(two.end(), second.begin(), second.end());
  write_plain(dir / "two.gz", two);
  CHECK(read_idx_images(dir / "two.gz").equal(read_idx_images(dir / "full.gz")));
  // A gzip file that ends inside the IDX header.
  write_gz(dir / "header.gz", Bytes(img.begin(), img.begin() + 10));
  CHECK_THROWS_WITH(read_idx_images(dir / "header.gz"),
                    Contains(dir / "header.gz") && Contains("file ends after 10 bytes, expected a 16-byte IDX header"));
  // Plain files: short data, and one byte too many.
  write_plain(dir / "short", Bytes(img.begin(), img.end() - 1));
  CHECK_THROWS_WITH(read_idx_images(dir / "short"),
                    Contains("expected 15680 bytes of pixel data (20 images of 28x28), file ends after 15679"));
  Bytes labels = label_header(2);
  labels.insert(labels.end(), {1, 2, 3});
  write_plain(dir / "long", labels);
  CHECK_THROWS_WITH(read_idx_labels(dir / "long"), Contains("expected 2 bytes of label data (2 labels), but the file "
                                                            "has 1 extra bytes after them"));
}

// ---- int64 beyond 2^53 ------------------------------------------------------------------------

TEST_CASE("int64 arithmetic with integer scalars is exact beyond 2^53", "[robust][tensor]") {
  const int64_t p53 = int64_t(1) << 53;
  Tensor a = i64(p53);
  a.add_(1);  // was a no-op: 2^53 + 1.0 == 2^53 in double
  CHECK(item64(a) == ref::p53_add_1);
  Tensor b = i64(p53);
  b.add_(i64(1), 3);
  CHECK(item64(b) == ref::p53_add_tensor_alpha_3);
  const Tensor c = i64(p53 + 1);
  CHECK(item64(c * 3) == ref::p53p1_mul_3);
  CHECK(item64(c - 2) == ref::p53p1_sub_2);
  CHECK(item64(5 - c) == ref::five_rsub_p53p1);
  CHECK(item64(c + 0) == p53 + 1);
  CHECK(item64(c.pow(1)) == ref::p53p1_pow_1);
  CHECK(item64(c.pow(2)) == ref::p53p1_pow_2);
  CHECK(item64(full({2}, p53, kInt64).add_(tensor({0, 1}, kInt64)).sum()) == ref::p53_sum_1 + p53);
  CHECK(item64(cat({i64(p53), i64(1)}).sum()) == ref::p53_sum_1);
  Tensor f = i64(p53);
  f.fill_(p53 + 1);
  CHECK(item64(f) == ref::fill_p53p1);
  CHECK(item64(full({1}, p53 + 1, kInt64)) == ref::full_p53p1);
  CHECK(item64(scalar_tensor(p53 + 1, kInt64)) == p53 + 1);
  CHECK_FALSE(i64(p53 + 1).equal(i64(p53)));
  CHECK(i64(p53 + 1).equal(c));
  CHECK(item64(i64(p53 + 1).eq(i64(p53)).sum()) == 0);
}

TEST_CASE("int64 printing is exact", "[robust][print]") {
  const int64_t p53 = int64_t(1) << 53;
  CHECK(i64(p53 + 1).str() == ref::repr_p53p1);
  Tensor x = cat({i64(p53 + 1), i64(INT64_MIN), i64(INT64_MAX)});
  CHECK(x.str() == ref::repr_extremes);
  Tensor m = cat({i64(p53 + 1), i64(-1), i64(7), i64(INT64_MAX)}).view({2, 2});
  CHECK(m.str() == ref::repr_p53p1_2d);
}

TEST_CASE("int64 with a floating scalar: float32 out of place, PyTorch's error in place", "[robust][tensor]") {
  const int64_t p53 = int64_t(1) << 53;
  Tensor a = i64(p53);
  CHECK_THROWS_WITH(a.add_(1.0), Contains("add_: ") && Contains(ref::error_iadd_float));
  CHECK_THROWS_WITH(a.sub_(1.0), Contains("sub_: ") && Contains(ref::error_isub_float));
  CHECK_THROWS_WITH(a.mul_(2.0), Contains("mul_: ") && Contains(ref::error_imul_float));
  CHECK_THROWS_WITH(a.add_(tensor({0.5})), Contains(ref::error_iadd_float));
  CHECK_THROWS_WITH(a.mul_(tensor({2.0}, kFloat64)), Contains("result type Double can't be cast to the desired output type Long"));
  CHECK_THROWS_WITH(a += 1.0, Contains(ref::error_iadd_float));
  CHECK_THROWS_WITH(a.add_(i64(1), 1.5), Contains(ref::error_alpha_float));
  CHECK_THROWS_WITH(add(a, i64(1), 1.5), Contains(ref::error_alpha_float));
  CHECK(item64(a) == p53);  // untouched
  a.sub_(1);
  a.mul_(1);
  CHECK(item64(a) == p53 - 1);
  // Out of place a floating scalar promotes to float32, as torch.result_type.
  CHECK((a + 1.0).dtype() == kFloat32);
  CHECK((a * 2.0).dtype() == kFloat32);
  CHECK((a - 0.5).dtype() == kFloat32);
  CHECK((1.0 - a).dtype() == kFloat32);
  CHECK((a + 1).dtype() == kInt64);
  CHECK((tensor({5}, kInt64) / 2).dtype() == kFloat32);  // true division
  CHECK(tensor({5}, kInt64).pow(2.0).dtype() == kFloat32);
  CHECK_THROWS_WITH(tensor({2}, kInt64).pow(-1), Contains(ref::error_pow_negative));
  CHECK(tensor({2}, kInt64).pow(-1.0).item() == Approx(0.5));
  // fill_: floating values are truncated toward zero, out-of-range ones refused (UB in C++).
  Tensor g = i64(0);
  CHECK(item64(g.fill_(1.5)) == 1);
  CHECK(item64(g.fill_(-1.5)) == -1);
  CHECK_THROWS_WITH(g.fill_(1e30), Contains(ref::error_fill_overflow));
  CHECK_THROWS_WITH(g.fill_(std::nan("")), Contains(ref::error_fill_overflow));
  CHECK_THROWS_WITH(full({1}, 1e30, kInt64), Contains("full: value cannot be converted to type int64_t without overflow (got 1e+30)"));
  CHECK_THROWS_WITH(tensor({1e30}, kInt64), Contains("tensor: value cannot be converted to type int64_t without overflow (got 1e+30)"));
  // float32: a finite number beyond 3.4028e38 is PyTorch's error too, not a silent inf
  CHECK_THROWS_WITH(full({1}, 1e39), "full: value cannot be converted to type float without overflow (got 1e+39)");
  CHECK_THROWS_WITH(zeros({2}).fill_(-1e39), "fill_: value cannot be converted to type float without overflow (got -1e+39)");
  CHECK(std::isinf(full({1}, std::numeric_limits<double>::infinity()).item<float>()));
  CHECK(full({1}, 3.4028234663852886e38).item<float>() == std::numeric_limits<float>::max());
  // item<int64_t>() of a float that int64 cannot hold: PyTorch's checked_convert error, not UB
  CHECK_THROWS_WITH(tensor({std::nan("")}).item<int64_t>(), "item: value cannot be converted to type int64_t without overflow (got nan)");
  CHECK_THROWS_WITH(tensor({0x1p63}, kFloat64).item<int64_t>(), Contains("item: value cannot be converted to type int64_t without overflow"));
  CHECK(tensor({-0x1p63}, kFloat64).item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(tensor({-2.9}).item<int64_t>() == -2);
  // float tensors are unchanged by all this
  Tensor h = tensor({1.5});
  h.add_(1);
  h.mul_(2.0);
  h.sub_(1);
  CHECK(h.item() == 4.0);
  CHECK((h + 1).dtype() == kFloat32);
}

// ---- int64 overflow wraps modulo 2^64 (no undefined behaviour; tests/ubsan/int64_wrap.cpp) ----

TEST_CASE("int64 overflow wraps as PyTorch's", "[robust][tensor]") {
  CHECK(item64(i64(INT64_MAX) + 1) == ref::max_add_1);
  CHECK(item64(i64(INT64_MAX) + 1) == INT64_MIN);
  CHECK(item64(i64(INT64_MIN) - 1) == ref::min_sub_1);
  CHECK(item64(i64(INT64_MAX) * 2) == ref::max_mul_2);
  CHECK(item64(i64(INT64_MIN) * -1) == ref::min_mul_m1);
  CHECK(item64(-i64(INT64_MIN)) == ref::neg_min);
  CHECK(item64(i64(INT64_MIN).abs()) == ref::abs_min);
  CHECK(item64(cat({i64(INT64_MAX), i64(1)}).sum()) == ref::sum_max_1);
  CHECK(item64(full({2}, int64_t(1) << 62, kInt64).sum()) == ref::sum_2p62_2p62);
  CHECK(item64(full({2, 2}, int64_t(1) << 62, kInt64).sum(0)[0]) == ref::sum_dim0_col0);
  CHECK(item64(i64(3).pow(41)) == ref::pow_3_41);
  CHECK(item64(i64(3486784401).pow(4)) == ref::pow_3p20_4);
  CHECK(item64(i64(2).pow(63)) == ref::pow_2_63);
  CHECK(item64(i64(2).pow(64)) == ref::pow_2_64);
  CHECK(item64(i64(-2).pow(63)) == ref::pow_m2_63);
  CHECK(item64(i64(0).pow(0)) == ref::pow_0_0);
  CHECK(item64(i64(INT64_MAX) + i64(1)) == ref::max_add_tensor_1);
  CHECK(item64(i64(INT64_MIN) - i64(1)) == ref::min_sub_tensor_1);
  CHECK(item64(i64(INT64_MAX) * i64(INT64_MAX)) == ref::max_mul_tensor_max);
  Tensor a = i64(INT64_MAX);
  a.add_(1);
  CHECK(item64(a) == ref::max_iadd_1);
  Tensor b = i64(INT64_MAX);
  b.mul_(3);
  CHECK(item64(b) == ref::max_imul_3);
  Tensor c = i64(INT64_MIN);
  c.sub_(1);
  CHECK(item64(c) == ref::min_isub_1);
  // matmul: the int64 gemm sums modulo 2^64 (plain and transposed operand)
  CHECK(item64(mm(cat({i64(int64_t(1) << 62), i64(3)}).view({1, 2}), cat({i64(4), i64(5)}).view({2, 1}))) ==
        ref::mm_wrap);
  Tensor w = cat({i64(INT64_MAX), i64(2), i64(7), i64(1)}).view({2, 2});
  CHECK(item64(mm(w.t(), cat({i64(3), i64(INT64_MIN)}).view({2, 1}))[1]) == ref::mm_wrap_t);
}

TEST_CASE("randint accepts any int64 bounds and stores values exactly", "[robust][tensor]") {
  Generator g(7);
  Tensor top = randint(INT64_MAX - 1, INT64_MAX, {64}, kInt64, &g);  // was 2^63 through a double: UB
  for (int64_t v : top.tolist<int64_t>()) REQUIRE(v == INT64_MAX - 1);
  Tensor bottom = randint(INT64_MIN, INT64_MIN + 1, {64}, kInt64, &g);
  for (int64_t v : bottom.tolist<int64_t>()) REQUIRE(v == INT64_MIN);
  // The whole range (high - low overflowed int64 before): values spread over both signs.
  Tensor all = randint(INT64_MIN, INT64_MAX, {1000}, kInt64, &g);
  int negative = 0;
  for (int64_t v : all.tolist<int64_t>()) {
    REQUIRE(v < INT64_MAX);
    negative += v < 0;
  }
  CHECK(negative > 400);
  CHECK(negative < 600);
  // Values above 2^53 keep their low bits (a double would round them to multiples of 2).
  Tensor odd = randint((int64_t(1) << 60) + 1, (int64_t(1) << 60) + 2, {4}, kInt64, &g);
  for (int64_t v : odd.tolist<int64_t>()) REQUIRE(v == (int64_t(1) << 60) + 1);
  CHECK_THROWS_WITH(randint(5, 5, {1}), Contains("randint: expected low < high, got low=5, high=5"));
}

TEST_CASE("int64 division: an Error, never SIGFPE", "[robust][tensor]") {
  Tensor a = tensor({4, 5}, kInt64);
  CHECK_THROWS_WITH(a.div_(tensor({0, 1}, kInt64)), Contains("div_: result type Float can't be cast to the desired "
                                                             "output type Long"));
  CHECK_THROWS_WITH(a.div_(2), Contains("div_: result type Float can't be cast"));
  Tensor q = i64(INT64_MIN) / i64(-1);  // true division in floating point
  CHECK(q.dtype() == kFloat32);
  CHECK(q.item() == Approx(9.223372036854775807e18));
  CHECK(std::isinf((tensor({4}, kInt64) / tensor({0}, kInt64)).item()));
}
