// tinytorch/core/small_vector.hpp — SmallVector<T, N>: a vector that keeps up to N elements inline.
//
// Shapes and strides (core/shape.hpp) are short lists of int64: almost every tensor has at most
// a handful of dims. As std::vector each one costs a heap allocation, two per tensor, and on a
// small model (Linear(2, 1), batch 4) those allocations were half of all the malloc calls of a
// training step. SmallVector stores the first N elements inside the object and moves to the heap
// only beyond N, so a tensor's shape and strides cost nothing extra to create, copy or free.
// The interface is the subset of std::vector the library uses (size, [], begin/end, push_back,
// insert, erase, resize, ==, ...), and it converts to and from std::vector<T>, so code written
// against std::vector<int64_t> keeps working. Only trivially copyable T (int64 here): elements
// are copied with memcpy and never constructed or destroyed one by one.
// Reference: PyTorch's c10::SmallVector (llvm::SmallVector), which c10::TensorImpl uses for sizes
// and strides (c10/core/impl/SizesAndStrides.h keeps 5 inline). Chapter: chapters/01-training-loop.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <vector>
#include "tinytorch/core/config.hpp"  // TT_NAMESPACE_BEGIN / TT_NAMESPACE_END

TT_NAMESPACE_BEGIN

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable<T>::value, "SmallVector holds trivially copyable types only");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() = default;
  explicit SmallVector(size_t n, const T& value = T()) { assign(n, value); }
  SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) { assign(first, last); }
  SmallVector(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit on purpose
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  ~SmallVector() { free_heap(); }

  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      free_heap();
      take(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  /// A copy as std::vector, for code that wants one.
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT: implicit

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  void reserve(size_t n) {
    if (n <= cap_) return;
    T* p = new T[n];
    if (size_) std::memcpy(p, data_, size_ * sizeof(T));
    free_heap();
    data_ = p;
    cap_ = n;
  }
  void clear() { size_ = 0; }
  void resize(size_t n, const T& value = T()) {
    grow_for(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void assign(size_t n, const T& value) {
    size_ = 0;
    resize(n, value);
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    size_t n = static_cast<size_t>(std::distance(first, last));
    grow_for(n);
    std::copy(first, last, data_);
    size_ = n;
  }
  void push_back(const T& value) {
    T v = value;  // `value` may live in this vector, which grow_for may move
    grow_for(size_ + 1);
    data_[size_++] = v;
  }
  template <typename... Args> T& emplace_back(Args&&... args) {
    push_back(T(std::forward<Args>(args)...));
    return back();
  }
  void pop_back() { --size_; }
  iterator insert(const_iterator pos, const T& value) { return insert(pos, size_t(1), value); }
  iterator insert(const_iterator pos, size_t n, const T& value) {
    size_t i = static_cast<size_t>(pos - data_);
    T v = value;
    grow_for(size_ + n);
    std::memmove(data_ + i + n, data_ + i, (size_ - i) * sizeof(T));
    for (size_t k = 0; k < n; ++k) data_[i + k] = v;
    size_ += n;
    return data_ + i;
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    size_t i = static_cast<size_t>(pos - data_);
    SmallVector tmp(first, last);  // the range may point into this vector
    grow_for(size_ + tmp.size());
    std::memmove(data_ + i + tmp.size(), data_ + i, (size_ - i) * sizeof(T));
    std::copy(tmp.begin(), tmp.end(), data_ + i);
    size_ += tmp.size();
    return data_ + i;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> values) {
    return insert(pos, values.begin(), values.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    size_t i = static_cast<size_t>(first - data_), n = static_cast<size_t>(last - first);
    std::memmove(data_ + i, data_ + i + n, (size_ - i - n) * sizeof(T));
    size_ -= n;
    return data_ + i;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }
  friend bool operator<(const SmallVector& a, const SmallVector& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const SmallVector& a, const std::vector<T>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const std::vector<T>& a, const SmallVector& b) { return b == a; }
  friend bool operator!=(const SmallVector& a, const std::vector<T>& b) { return !(a == b); }
  friend bool operator!=(const std::vector<T>& a, const SmallVector& b) { return !(b == a); }

 private:
  bool on_heap() const { return data_ != inline_; }
  void free_heap() {
    if (on_heap()) delete[] data_;
    data_ = inline_;
    cap_ = N;
  }
  // Makes room for n elements, keeping the current ones (doubling, as std::vector).
  void grow_for(size_t n) {
    if (n > cap_) reserve(std::max(n, 2 * cap_));
  }
  // Takes o's elements (its heap block, or a copy of its inline ones); leaves o empty and inline.
  void take(SmallVector& o) {
    if (o.on_heap()) {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    } else {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
  T inline_[N];
};

TT_NAMESPACE_END  // namespace tinytorch
