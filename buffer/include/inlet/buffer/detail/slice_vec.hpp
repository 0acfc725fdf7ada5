// Internal: a small vector of slices with N slots inline, heap storage beyond.
// It does not touch reference counts: its owner (segment, streambuf) does.
#pragma once

#include <inlet/buffer/detail/fragment.hpp>

#include <cstddef>
#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

namespace inlet::buffer::detail {

template <std::size_t N>
class slice_vec {
 public:
  slice_vec() noexcept : data_(inline_) {}
  ~slice_vec() { free_heap(); }

  slice_vec(const slice_vec& o) : data_(inline_) { assign(o.data_, o.size_); }
  slice_vec& operator=(const slice_vec& o) {
    if (this != &o) {
      size_ = 0;
      assign(o.data_, o.size_);
    }
    return *this;
  }
  slice_vec(slice_vec&& o) noexcept : data_(inline_) { steal(o); }
  slice_vec& operator=(slice_vec&& o) noexcept {
    if (this != &o) {
      free_heap();
      data_ = inline_;
      cap_ = N;
      size_ = 0;
      steal(o);
    }
    return *this;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  slice* data() noexcept { return data_; }
  const slice* data() const noexcept { return data_; }
  slice& operator[](std::size_t i) noexcept { return data_[i]; }
  const slice& operator[](std::size_t i) const noexcept { return data_[i]; }
  slice& front() noexcept { return data_[0]; }
  slice& back() noexcept { return data_[size_ - 1]; }
  const slice& back() const noexcept { return data_[size_ - 1]; }
  bool on_heap() const noexcept { return data_ != inline_; }
  std::size_t capacity() const noexcept { return cap_; }

  void push_back(const slice& s) {
    if (size_ == cap_) grow(cap_ * 2);
    data_[size_++] = s;
  }
  void push_front(const slice& s) {
    if (size_ == cap_) grow(cap_ * 2);
    std::memmove(static_cast<void*>(data_ + 1), data_, size_ * sizeof(slice));
    data_[0] = s;
    ++size_;
  }
  void pop_back() noexcept { --size_; }
  // Drops the first k slices (k <= size()).
  void erase_front(std::size_t k) noexcept {
    if (k == 0) return;
    std::memmove(static_cast<void*>(data_), data_ + k, (size_ - k) * sizeof(slice));
    size_ -= k;
  }
  void clear() noexcept { size_ = 0; }
  // Gives heap storage back (only when empty).
  void shrink_to_fit() noexcept {
    if (size_ == 0 && on_heap()) {
      free_heap();
      data_ = inline_;
      cap_ = N;
    }
  }
  void reserve(std::size_t n) {
    if (n > cap_) grow(n);
  }
  /// Room for `extra` more slices, growing geometrically: appending pieces one
  /// at a time (a body built from many reads) stays amortised O(1) per piece.
  void reserve_more(std::size_t extra) {
    if (size_ + extra > cap_) grow(std::max(size_ + extra, cap_ * 2));
  }

 private:
  void assign(const slice* s, std::size_t n) {
    reserve(n);
    std::memcpy(static_cast<void*>(data_), s, n * sizeof(slice));
    size_ = n;
  }
  void steal(slice_vec& o) noexcept {
    if (o.on_heap()) {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    } else {
      std::memcpy(static_cast<void*>(inline_), o.inline_, o.size_ * sizeof(slice));
    }
    size_ = o.size_;
    o.size_ = 0;
  }
  void grow(std::size_t cap) {
    auto* p = static_cast<slice*>(::operator new(cap * sizeof(slice)));
    std::memcpy(static_cast<void*>(p), data_, size_ * sizeof(slice));
    free_heap();
    data_ = p;
    cap_ = cap;
  }
  void free_heap() noexcept {
    if (on_heap()) ::operator delete(data_);
  }

  slice* data_;
  std::size_t size_ = 0;
  std::size_t cap_ = N;
  slice inline_[N];
};

// Removes the first n bytes (n <= total bytes) of a chain of slices owned by the caller:
// whole slices are dropped and their fragment references released, a partial one is
// shortened in place. Shared by segment::remove_prefix and streambuf::consume.
template <std::size_t N>
void release_front(slice_vec<N>& v, std::size_t n) noexcept {
  std::size_t drop = 0;
  while (n > 0) {
    slice& s = v[drop];
    if (n >= s.n) {
      n -= s.n;
      unref(s.f);
      ++drop;
    } else {
      s.p += n;
      s.n -= n;
      n = 0;
    }
  }
  v.erase_front(drop);
}

}  // namespace inlet::buffer::detail
