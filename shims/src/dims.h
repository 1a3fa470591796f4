// Dims: a tensor's sizes or strides, held inline up to kInlineDims and on the heap only
// beyond. A std::vector<int64_t> costs a heap allocation and a free per tensor and per
// view for each of the two; a model's tensors rarely pass 5 dims.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>

namespace aotishim {

class Dims {
 public:
  // The ranks of a model's tensors in practice (conv3d's are 5-dim); more go to the heap.
  static constexpr size_t kInlineDims = 6;
  using value_type = int64_t;
  using size_type = size_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  Dims() noexcept = default;
  explicit Dims(size_t count, int64_t value = 0) { assign(count, value); }
  Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  // Any iterator range whose values convert to int64_t (a pointer range, a vector<int>'s).
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  Dims(It first, It last) {
    assign(first, last);
  }
  Dims(const Dims& other) { assign(other.begin(), other.end()); }
  Dims(Dims&& other) noexcept { take(other); }
  Dims& operator=(const Dims& other) {
    if (this != &other) {
      assign(other.begin(), other.end());
    }
    return *this;
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  Dims& operator=(std::initializer_list<int64_t> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  ~Dims() { release(); }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  int64_t* data() noexcept { return data_; }
  const int64_t* data() const noexcept { return data_; }
  int64_t& operator[](size_t i) noexcept { return data_[i]; }
  const int64_t& operator[](size_t i) const noexcept { return data_[i]; }
  int64_t& back() noexcept { return data_[size_ - 1]; }
  const int64_t& back() const noexcept { return data_[size_ - 1]; }
  iterator begin() noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator end() const noexcept { return data_ + size_; }

  void clear() noexcept { size_ = 0; }
  void reserve(size_t count) {
    if (count > capacity_) {
      grow(count);
    }
  }
  void push_back(int64_t value) {
    if (size_ == capacity_) {
      grow(capacity_ * 2);
    }
    data_[size_++] = value;
  }
  // New elements are `value` (zero by default), as std::vector's.
  void resize(size_t count, int64_t value = 0) {
    reserve(count);
    for (size_t i = size_; i < count; ++i) {
      data_[i] = value;
    }
    size_ = count;
  }
  // Room first, then the old values go: a failed allocation leaves the Dims unchanged.
  void assign(size_t count, int64_t value) {
    reserve(count);
    clear();
    resize(count, value);
  }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    auto count = static_cast<size_t>(std::distance(first, last));
    reserve(count);
    clear();
    // Through a local pointer, size_ set once: a store to data_[i] may alias size_ (an
    // unsigned long), which otherwise goes to memory and back on every element.
    int64_t* out = data_;
    for (; first != last; ++first) {
      *out++ = static_cast<int64_t>(*first);
    }
    size_ = count;
  }

  void assign(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  // Sized to `count` with its values left for the caller to write through the pointer
  // returned: a reader that checks values as it copies them touches each once.
  int64_t* overwrite(size_t count) {
    reserve(count);
    size_ = count;
    return data_;
  }

  friend bool operator==(const Dims& a, const Dims& b) noexcept {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_ * sizeof(int64_t)) == 0);
  }
  friend bool operator!=(const Dims& a, const Dims& b) noexcept { return !(a == b); }

 private:
  bool on_heap() const noexcept { return data_ != inline_; }
  void grow(size_t count) {
    if (count < kInlineDims * 2) {
      count = kInlineDims * 2;
    }
    if (count > SIZE_MAX / sizeof(int64_t)) {
      throw std::bad_alloc();
    }
    auto* bigger = static_cast<int64_t*>(std::malloc(count * sizeof(int64_t)));
    if (bigger == nullptr) {
      throw std::bad_alloc();  // guarded() reports it as out of host memory
    }
    if (size_ > 0) {
      std::memcpy(bigger, data_, size_ * sizeof(int64_t));
    }
    release();
    data_ = bigger;
    capacity_ = count;
  }
  void release() noexcept {
    if (on_heap()) {
      std::free(data_);
    }
    data_ = inline_;
    capacity_ = kInlineDims;
  }
  // Leaves `other` empty and inline.
  void take(Dims& other) noexcept {
    size_ = other.size_;
    if (other.on_heap()) {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = kInlineDims;
    } else if (size_ > 0) {
      std::memcpy(inline_, other.inline_, size_ * sizeof(int64_t));
    }
    other.size_ = 0;
  }

  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = kInlineDims;
  int64_t inline_[kInlineDims];
};

}  // namespace aotishim
