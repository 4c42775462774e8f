// tests/test_small_vector.cpp — SmallVector<T, N> (core/small_vector.hpp), the inline-capacity
// vector behind Shape and Strides: the std::vector operations the library uses, across the move
// from inline storage to the heap, and conversion to and from std::vector.
#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#include <tinytorch/core/small_vector.hpp>

using V = tinytorch::SmallVector<int64_t, 3>;
using Std = std::vector<int64_t>;

TEST_CASE("SmallVector: construction and comparison", "[ch01][small_vector]") {
  CHECK(V().empty());
  CHECK(V(2) == Std{0, 0});
  CHECK(V(4, 7) == Std{7, 7, 7, 7});
  CHECK(V{1, 2, 3, 4, 5}.size() == 5);
  Std s{4, 5, 6, 7};
  V from_std = s;
  CHECK(from_std == s);
  CHECK(s == from_std);
  CHECK(V(s.begin() + 1, s.end()) == V{5, 6, 7});
  Std back = V{1, 2};
  CHECK(back == Std{1, 2});
  CHECK(V{1, 2} != V{1, 2, 3});
  CHECK(V{1, 2} != Std{2, 1});
  CHECK(V{1, 2} < V{1, 3});
  CHECK(V{1, 2} < V{1, 2, 0});
}

TEST_CASE("SmallVector: inline up to N, then the heap", "[ch01][small_vector]") {
  V v;
  CHECK(v.capacity() == 3);
  for (int64_t i = 0; i < 3; ++i) v.push_back(i);
  CHECK(v.capacity() == 3);  // still inline
  v.push_back(3);
  CHECK(v.capacity() >= 4);
  for (int64_t i = 4; i < 100; ++i) v.push_back(i);
  REQUIRE(v.size() == 100);
  for (int64_t i = 0; i < 100; ++i) CHECK(v[i] == i);
  CHECK(v.front() == 0);
  CHECK(v.back() == 99);
  v.push_back(v[0]);  // an element of the vector itself, while it may grow
  CHECK(v.back() == 0);
}

TEST_CASE("SmallVector: copies and moves, inline and on the heap", "[ch01][small_vector]") {
  for (size_t n : {size_t{2}, size_t{10}}) {
    V a(n, 5);
    V b = a;
    CHECK(b == a);
    b[0] = 1;
    CHECK(a[0] == 5);  // a deep copy
    V c = std::move(b);
    CHECK(c.size() == n);
    CHECK(c[0] == 1);
    CHECK(b.empty());  // NOLINT: moved-from is empty and usable
    b.push_back(9);
    CHECK(b == V{9});
    V d{1};
    d = c;
    CHECK(d == c);
    d = std::move(a);
    CHECK(d == V(n, 5));
    const V& same = d;  // through a reference: clang warns on a literal `d = d`
    d = same;           // self-assignment keeps the contents
    CHECK(d == V(n, 5));
  }
}

TEST_CASE("SmallVector: insert, erase, resize, assign", "[ch01][small_vector]") {
  V v{1, 2, 3};
  v.insert(v.begin() + 1, 9);  // grows onto the heap
  CHECK(v == Std{1, 9, 2, 3});
  v.insert(v.end(), 2, 4);
  CHECK(v == Std{1, 9, 2, 3, 4, 4});
  Std more{7, 8};
  v.insert(v.begin(), more.begin(), more.end());
  CHECK(v == Std{7, 8, 1, 9, 2, 3, 4, 4});
  v.insert(v.begin() + 2, v.begin(), v.begin() + 2);  // a range from the vector itself
  CHECK(v == Std{7, 8, 7, 8, 1, 9, 2, 3, 4, 4});
  CHECK(*v.erase(v.begin()) == 8);
  CHECK(v == Std{8, 7, 8, 1, 9, 2, 3, 4, 4});
  v.erase(v.begin() + 1, v.begin() + 4);
  CHECK(v == Std{8, 9, 2, 3, 4, 4});
  v.pop_back();
  v.resize(7, -1);
  CHECK(v == Std{8, 9, 2, 3, 4, -1, -1});
  v.resize(2);
  CHECK(v == Std{8, 9});
  v.assign(3, 6);
  CHECK(v == Std{6, 6, 6});
  v.clear();
  CHECK(v.empty());
  Std r(v.rbegin(), v.rend());
  CHECK(r.empty());
  V w{1, 2, 3};
  CHECK(Std(w.rbegin(), w.rend()) == Std{3, 2, 1});
}
