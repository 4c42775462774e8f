// tests/test_allocator.cpp — the CPU caching allocator (core/allocator.hpp): size classes,
// reuse of freed blocks, alignment, statistics, empty_cache.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <tinytorch/tinytorch.hpp>

using tinytorch::detail::CpuCachingAllocator;

TEST_CASE("size classes: four per power of two, under 25% waste", "[ch01][allocator]") {
  CHECK(CpuCachingAllocator::round_size(4096) == 4096);
  CHECK(CpuCachingAllocator::round_size(4097) == 5120);
  CHECK(CpuCachingAllocator::round_size(6000) == 6144);
  CHECK(CpuCachingAllocator::round_size(8192) == 8192);
  CHECK(CpuCachingAllocator::round_size(784 * 256 * 4) == 917504);  // 0.77 MiB -> 7 x 2^17
  for (size_t n = 4096; n < (size_t{1} << 30); n = n * 5 / 3 + 1) {
    const size_t c = CpuCachingAllocator::round_size(n);
    INFO("n = " << n);
    CHECK(c >= n);
    CHECK(static_cast<double>(c) < 1.25 * static_cast<double>(n));
  }
}

TEST_CASE("a freed tensor's block is reused by the next tensor of its size class", "[ch01][allocator]") {
  if (std::getenv("TINYTORCH_NO_MEMORY_CACHING")) {
    WARN("TINYTORCH_NO_MEMORY_CACHING is set: nothing is cached");
    return;
  }
  tinytorch::empty_cache();
  const auto before = tinytorch::cpu_memory_stats();
  const void* first = nullptr;
  {
    tinytorch::Tensor a = tinytorch::zeros({256, 784});
    first = a.raw_data();
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    CHECK(tinytorch::cpu_memory_stats().allocated_bytes == before.allocated_bytes + 917504);
  }
  const auto freed = tinytorch::cpu_memory_stats();
  CHECK(freed.allocated_bytes == before.allocated_bytes);
  CHECK(freed.cached_bytes == 917504);
  tinytorch::Tensor b = tinytorch::ones({251, 784});  // 787136 bytes: the same class (786432, 917504]
  CHECK(b.raw_data() == first);
  CHECK(tinytorch::cpu_memory_stats().hits == freed.hits + 1);
  CHECK(tinytorch::cpu_memory_stats().cached_bytes == 0);
  CHECK(b.sum().item<float>() == 251.0f * 784.0f);  // a reused block is filled like a new one

  // Small tensors bypass the cache (malloc), and empty_cache() returns what is cached.
  { tinytorch::Tensor s = tinytorch::zeros({10}); }
  CHECK(tinytorch::cpu_memory_stats().cached_bytes == 0);
  { tinytorch::Tensor c = tinytorch::zeros({1 << 20}); }
  CHECK(tinytorch::cpu_memory_stats().cached_bytes == (size_t{4} << 20));
  tinytorch::empty_cache();
  CHECK(tinytorch::cpu_memory_stats().cached_bytes == 0);
}

TEST_CASE("a training step reuses its memory: no new system allocations after the first", "[ch01][allocator]") {
  if (std::getenv("TINYTORCH_NO_MEMORY_CACHING")) {
    WARN("TINYTORCH_NO_MEMORY_CACHING is set: nothing is cached");
    return;
  }
  namespace nn = tinytorch::nn;
  tinytorch::manual_seed(0);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(256, 10));
  tinytorch::optim::SGD opt(model->parameters(), 0.01, 0.9);
  nn::CrossEntropyLoss loss_fn;
  tinytorch::Tensor x = tinytorch::randn({64, 784});
  tinytorch::Tensor y = tinytorch::zeros({64}, tinytorch::kInt64);
  auto step = [&] {
    opt.zero_grad();
    loss_fn(model->forward(x), y).backward();
    opt.step();
  };
  step();
  step();  // the momentum buffers are created in the first step
  const auto warm = tinytorch::cpu_memory_stats();
  for (int i = 0; i < 5; ++i) step();
  const auto after = tinytorch::cpu_memory_stats();
  CHECK(after.misses == warm.misses);
  CHECK(after.hits > warm.hits);
  CHECK(after.allocated_bytes == warm.allocated_bytes);
}

TEST_CASE("impossible sizes are errors, not tiny buffers", "[ch01][allocator]") {
  // numel * element_size must fit in int64: checked before multiplying (a wrapped product would
  // have allocated a few bytes for an enormous shape).
  CHECK_THROWS_WITH(tinytorch::empty({int64_t{1} << 62}),
                    "empty: shape [4611686018427387904] of torch.float32 needs more than 2^63 bytes");
  CHECK_THROWS_WITH(tinytorch::zeros({int64_t{1} << 31, int64_t{1} << 31, 4}),
                    Catch::StartsWith("empty: shape [2147483648, 2147483648, 4]"));
  CHECK_THROWS_WITH(tinytorch::empty({(int64_t{1} << 61) - 2}, tinytorch::TensorOptions(tinytorch::kFloat64)),
                    Catch::EndsWith("needs more than 2^63 bytes"));
  CHECK(tinytorch::empty({0, int64_t{1} << 62}).numel() == 0);  // zero elements: nothing to allocate
  // PyTorch multiplies the sizes left to right: an overflow before a 0 is still an error
  // ("Storage size calculation overflowed with sizes=[274877906944, 2147483648, 0]").
  CHECK_THROWS_WITH(tinytorch::empty({int64_t{1} << 38, int64_t{1} << 31, 0}),
                    Catch::StartsWith("empty: shape [274877906944, 2147483648, 0]"));
  CHECK(tinytorch::empty({0, int64_t{1} << 38, int64_t{1} << 31}).numel() == 0);
  // 2^62 bytes fit in int64 but in no address space: PyTorch's out-of-memory message, and the
  // allocator's statistics are unchanged.
  const auto before = tinytorch::cpu_memory_stats();
  CHECK_THROWS_WITH(tinytorch::empty({int64_t{1} << 60}),
                    "DefaultCPUAllocator: not enough memory: you tried to allocate 4611686018427387904 bytes.");
  CHECK(tinytorch::cpu_memory_stats().allocated_bytes == before.allocated_bytes);
  CHECK(tinytorch::cpu_memory_stats().misses == before.misses);
}

TEST_CASE("zero-element shapes whose strides overflow int64 get PyTorch's wrapped strides", "[ch01][allocator]") {
  // contiguous_strides multiplied in int64 and overflowed (undefined behaviour, found by
  // tests/fuzz/fuzz_checkpoint under UBSan); now modulo 2^64 like PyTorch:
  // torch.empty(0, 2**38, 2**31).stride() == (0, 2147483648, 1).
  const tinytorch::Tensor t = tinytorch::empty({0, int64_t{1} << 38, int64_t{1} << 31});
  CHECK(t.numel() == 0);
  CHECK(t.strides() == tinytorch::Strides{0, int64_t{1} << 31, 1});
}

TEST_CASE("buffers up to Storage::kInlineBytes live in the Storage itself", "[ch01][allocator]") {
  using tinytorch::Storage;
  const auto before = tinytorch::cpu_memory_stats();
  tinytorch::Tensor small = tinytorch::zeros({Storage::kInlineBytes / 4});  // float32: exactly inline
  tinytorch::Tensor larger = tinytorch::zeros({Storage::kInlineBytes / 4 + 1});
  tinytorch::Tensor none = tinytorch::empty({0});
  const auto* s = small.impl()->storage.get();
  const auto* p = static_cast<const char*>(s->data());
  const bool inside = p >= reinterpret_cast<const char*>(s) && p < reinterpret_cast<const char*>(s + 1);
  CHECK(inside == !std::getenv("TINYTORCH_NO_MEMORY_CACHING"));  // that mode takes all from the system
  CHECK(reinterpret_cast<uintptr_t>(p) % 16 == 0);  // as malloc's
  const auto* l = larger.impl()->storage.get();
  const auto* q = static_cast<const char*>(l->data());
  CHECK_FALSE((q >= reinterpret_cast<const char*>(l) && q < reinterpret_cast<const char*>(l + 1)));
  CHECK(none.impl()->storage->data() == nullptr);
  CHECK(small.sum().item<float>() == 0.0f);
  CHECK(larger.sum().item<float>() == 0.0f);
  CHECK(tinytorch::cpu_memory_stats().allocated_bytes == before.allocated_bytes);  // small: not cached
}

TEST_CASE("a per-process memory limit: the tensor past it throws, nothing is counted", "[ch13][allocator]") {
  namespace tt = tinytorch;
  struct Reset {  // the limit is process-wide: leave none behind, whatever happens
    ~Reset() { tt::set_per_process_memory_limit(0); }
  } reset;
  const size_t before = tt::memory_allocated();
  tt::set_per_process_memory_limit(before + 3 * 1048576);  // 3 MiB above what is live now
  CHECK(tt::per_process_memory_limit() == before + 3 * 1048576);
  tt::Tensor a = tt::zeros({512, 1024});  // 2 MiB: fits
  CHECK(tt::memory_allocated() == before + 2 * 1048576);
  const size_t peak = tt::max_memory_allocated();
  CHECK_THROWS_WITH(tt::zeros({512, 1024}),
                    Catch::StartsWith("CPU out of memory. Tried to allocate 2.00 MiB. The process has a limit of ") &&
                        Catch::Contains(" of which 1024.00 KiB is free. Of the allocated memory ") &&
                        Catch::EndsWith(" is allocated by tinytorch."));
  CHECK(tt::memory_allocated() == before + 2 * 1048576);  // the refused tensor counted nothing
  CHECK(tt::max_memory_allocated() == peak);
  tt::Tensor b = tt::zeros({256, 1024});  // exactly up to the limit: 1 MiB more
  CHECK(tt::memory_allocated() == before + 3 * 1048576);
  CHECK_THROWS_WITH(tt::zeros({1}), Catch::StartsWith("CPU out of memory. Tried to allocate 4 bytes."));
  tt::set_per_process_memory_limit(0);  // no limit
  tt::Tensor c = tt::zeros({512, 1024});
  CHECK(tt::memory_allocated() == before + 5 * 1048576);
}

TEST_CASE("Storage::resize_ frees memory under live views and fills the same storage again", "[ch13][allocator]") {
  // PyTorch's UntypedStorage.resize_: what FullyShardedDataParallel (FULL_SHARD) does to a unit's
  // gathered parameters after forward (resize_(0)) and before backward (resize_ to the full size).
  tinytorch::Tensor t = tinytorch::arange(4096, tinytorch::kFloat32);
  tinytorch::Tensor view = t.narrow(0, 100, 3);
  const size_t before = tinytorch::memory_allocated();
  const uint32_t version = t._version();
  tinytorch::Storage& s = *t.impl()->storage;
  s.resize_(16384 + 4);  // larger: the old bytes kept
  CHECK(tinytorch::memory_allocated() == before + 4);
  CHECK(view.tolist<float>() == std::vector<float>{100, 101, 102});
  s.resize_(0);  // freed: the views live on, with no memory under them
  CHECK(tinytorch::memory_allocated() == before - 16384);
  CHECK(s.data() == nullptr);
  CHECK_THROWS_WITH(view.sum(), "data_ptr: the tensor of shape [3] views a storage of 0 bytes: its memory was freed "
                                "(Storage::resize_(0)). FullyShardedDataParallel with FULL_SHARD frees a wrapped "
                                "unit's parameters outside its forward and backward: read them after "
                                "fsdp.summon_full_params(), and call a wrapped submodule only through the model's forward");
  CHECK(t.narrow(0, 0, 0).numel() == 0);  // no elements: no memory needed, no error
  s.resize_(16384);  // filled again: the same storage, new memory
  CHECK(t.impl()->storage.get() == &s);
  std::memset(s.data(), 0, 16384);
  t.narrow(0, 101, 1).fill_(5.0);
  CHECK(view.tolist<float>() == std::vector<float>{0, 5, 0});
  CHECK(t._version() == version + 1);  // the fill_; resize_ itself writes no value
  s.resize_(8);  // a few bytes (inline in the Storage when caching), the first two floats still there
  CHECK(tinytorch::memory_allocated() == before - 16384 + 8);
  CHECK(t.narrow(0, 0, 2).tolist<float>() == std::vector<float>{0, 0});
  // Past the process limit: the error, and the storage as it was.
  tinytorch::set_per_process_memory_limit(tinytorch::memory_allocated() + 1000);
  CHECK_THROWS_WITH(s.resize_(1 << 20), Catch::StartsWith("CPU out of memory. Tried to allocate 1024.00 KiB."));
  tinytorch::set_per_process_memory_limit(0);
  CHECK(s.nbytes() == 8);
}
