// labs/04-data-pipeline/test_pipeline.cpp — the checks of lab 04, one Catch2 tag per task.
//
// References: reference.hpp, written by gen_reference.py with PyTorch's DistributedSampler
// (shuffle=False; every L 0-13, W 1-4, rank, drop_last) and BatchSampler (n 0-11, batch 1-5,
// drop_last); for collation, the library's Dataset::get_batch; for the shuffled sampler, the
// library's DistributedSampler (whose unshuffled orders are tested against PyTorch in
// tests/test_data.cpp), the permutation being tinytorch's own Generator's.
#include <catch2/catch.hpp>

#include "lab.hpp"
#include "reference.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tt = tinytorch;

namespace {

std::string str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "}";
  return os.str();
}

std::string str(const std::vector<std::vector<int64_t>>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + str(v[i]);
  return s + "}";
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

}  // namespace

TEST_CASE("collate stacks samples as Dataset::get_batch does", "[task:collate]") {
  // 7 "images" (1, 2, 3) with int64 labels.
  tt::Tensor images = tt::arange(7 * 6).to(tt::kFloat32).reshape({7, 1, 2, 3});
  tt::Tensor labels = tt::tensor({3, 1, 4, 1, 5, 9, 2}, tt::kInt64);
  tt::data::TensorDataset ds(images, labels);
  for (const std::vector<int64_t>& idx : std::vector<std::vector<int64_t>>{{0}, {4, 2, 6}, {1, 1, 0, 5}}) {
    std::vector<tt::data::Example> samples;
    for (int64_t i : idx) samples.push_back(ds.get(i));
    const tt::data::Example got = lab04::collate(samples);
    const tt::data::Example want = ds.get_batch(idx);
    INFO("collate of samples " << str(idx));
    REQUIRE(got.data.sizes() == want.data.sizes());
    REQUIRE(got.target.sizes() == want.target.sizes());
    CHECK(got.data.tolist<double>() == want.data.tolist<double>());
    CHECK(got.target.tolist<int64_t>() == want.target.tolist<int64_t>());
    CHECK(got.target.dtype() == tt::kInt64);
  }
  INFO("collate must throw tinytorch::Error for an empty list and for samples of different shapes");
  CHECK_THROWS_AS(lab04::collate({}), tt::Error);
  CHECK_THROWS_AS(lab04::collate({ds.get(0), {tt::zeros({1, 3, 2}), tt::tensor({1}, tt::kInt64)}}), tt::Error);
  CHECK_THROWS_WITH(lab04::collate({ds.get(0), {tt::zeros({1, 2, 3}), tt::zeros({2}, tt::kInt64)}}),
                    Catch::Contains("collate"));
}

TEST_CASE("batch_indices cuts an order into batches as torch's BatchSampler", "[task:batches]") {
  for (const lab04_ref::Batches& c : lab04_ref::batches) {
    // a shuffled-looking order, so that a solution that ignores `order` fails
    std::vector<int64_t> order = iota(c.n);
    std::reverse(order.begin(), order.end());
    std::vector<std::vector<int64_t>> want = c.batches;
    for (auto& b : want)
      for (int64_t& i : b) i = c.n - 1 - i;
    const auto got = lab04::batch_indices(order, c.batch_size, c.drop_last);
    INFO("batch_indices(order of " << c.n << ", batch_size " << c.batch_size << ", drop_last "
                                   << (c.drop_last ? "true" : "false") << ")");
    CHECK(str(got) == str(want));
  }
}

TEST_CASE("shard_indices gives DistributedSampler's share of every rank", "[task:shard]") {
  for (const lab04_ref::Shard& c : lab04_ref::shards) {
    const std::vector<int64_t> got = lab04::shard_indices(iota(c.length), c.world, c.rank, c.drop_last);
    INFO("dataset of " << c.length << ", " << c.world << " replicas, rank " << c.rank << ", drop_last "
                       << (c.drop_last ? "true" : "false") << " (PyTorch's DistributedSampler, shuffle=False)");
    CHECK(str(got) == str(c.indices));
  }
}

TEST_CASE("LabDistributedSampler shuffles per epoch, the same way on every rank", "[task:sampler]") {
  for (bool drop_last : {false, true})
    for (int64_t world : {1, 3, 4}) {
      std::set<int64_t> seen_epoch0;
      for (int64_t rank = 0; rank < world; ++rank) {
        lab04::LabDistributedSampler mine(10, world, rank, /*shuffle=*/true, /*seed=*/7, drop_last);
        tt::data::DistributedSampler lib(10, world, rank, /*shuffle=*/true, /*seed=*/7, drop_last);
        INFO("10 samples, " << world << " replicas, rank " << rank << ", seed 7, drop_last " << drop_last);
        CHECK(mine.size() == lib.size());
        std::vector<int64_t> first;
        for (int64_t epoch = 0; epoch < 3; ++epoch) {
          mine.set_epoch(epoch);
          lib.set_epoch(epoch);
          const std::vector<int64_t> got = mine.indices(), want = lib.indices();
          INFO("epoch " << epoch << " (order = randperm(10) from Generator(seed + epoch))");
          CHECK(str(got) == str(want));
          if (epoch == 0) {
            first = got;
            seen_epoch0.insert(got.begin(), got.end());
          }
        }
        mine.set_epoch(0);
        INFO("set_epoch(0) again must give epoch 0's order again");
        CHECK(str(mine.indices()) == str(first));
      }
      if (!drop_last) CHECK(seen_epoch0.size() == 10u);  // the ranks together cover the dataset
    }
  lab04::LabDistributedSampler unshuffled(10, 4, 2, /*shuffle=*/false);
  CHECK(str(unshuffled.indices()) == "{2, 6, 0}");
}
