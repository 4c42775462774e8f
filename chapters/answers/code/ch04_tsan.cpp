// ch04 ex4: a Dataset whose get_batch counts calls without a mutex, under 4 loader threads.
#include <tinytorch/tinytorch.hpp>
#include <cstdio>
using namespace tinytorch;
class CountingDataset : public data::Dataset {
 public:
  CountingDataset() : rows_(arange(0.0, 256.0, 1.0).view({64, 4}), arange(0.0, 64.0, 1.0, kInt64)) {}
  size_t size() const override { return rows_.size(); }
  data::Example get(int64_t i) override { return rows_.get(i); }
  data::Example get_batch(const std::vector<int64_t>& idx) override {
    ++calls;  // the data race: 4 worker threads, no mutex
    return rows_.get_batch(idx);
  }
  int64_t calls = 0;
 private:
  data::TensorDataset rows_;
};
int main() {
  auto ds = std::make_shared<CountingDataset>();
  data::DataLoaderOptions opts;
  opts.batch_size = 4;
  opts.num_workers = 4;
  data::DataLoader loader(ds, opts);
  int batches = 0;
  for (auto& b : loader) { (void)b; ++batches; }
  std::printf("batches=%d get_batch calls counted=%lld\n", batches, (long long)ds->calls);
}
