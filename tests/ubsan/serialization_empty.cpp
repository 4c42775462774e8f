// tests/ubsan/serialization_empty.cpp — save / load of zero-element tensors under UndefinedBehavior-
// Sanitizer (built with -fsanitize=undefined -fno-sanitize-recover=undefined, so any report makes
// the test fail). load() used to memcpy into the null data pointer of an empty tensor
// ("null pointer passed as argument 1, which is declared to never be null").
#include <cstdio>
#include <string>
#include <tinytorch/tinytorch.hpp>
#include <unistd.h>

int main() {
  const std::string path = "/tmp/tt_ubsan_empty_" + std::to_string(::getpid()) + ".tt";
  tinytorch::save({{"e", tinytorch::zeros({0})}, {"f", tinytorch::zeros({2, 0}, tinytorch::kFloat64)}}, path);
  const auto sd = tinytorch::load(path);
  std::remove(path.c_str());
  const bool ok = sd.size() == 2 && sd[0].second.numel() == 0 && sd[1].second.sizes() == tinytorch::Shape{2, 0};
  std::printf("%s\n", ok ? "serialization_empty: ok" : "serialization_empty: wrong contents");
  return ok ? 0 : 1;
}
