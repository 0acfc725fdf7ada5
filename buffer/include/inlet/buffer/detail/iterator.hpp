// Internal: iterators over an array of slices (shared by segment and streambuf).
#pragma once

#include <inlet/buffer/detail/fragment.hpp>

#include <compare>
#include <cstddef>
#include <iterator>
#include <span>
#include <string_view>
#include <system_error>

namespace inlet::buffer::detail {

// Random-access iterator over the bytes of a slice array. Holds a pointer to
// the array: anything that reallocates or edits the array invalidates it.
// Invariant: off_ < s_[idx_].n, or idx_ == count_ && off_ == 0 (end).
class byte_iterator {
 public:
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::random_access_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using reference = const char&;
  using pointer = const char*;

  byte_iterator() = default;
  byte_iterator(const slice* s, std::size_t count, std::size_t pos) noexcept
      : s_(s), count_(count) {
    advance_from_start(pos);
  }

  reference operator*() const noexcept { return s_[idx_].p[off_]; }
  pointer operator->() const noexcept { return s_[idx_].p + off_; }
  reference operator[](difference_type n) const noexcept { return *(*this + n); }

  byte_iterator& operator++() noexcept {
    if (++off_ == s_[idx_].n) {
      ++idx_;
      off_ = 0;
    }
    ++pos_;
    return *this;
  }
  byte_iterator operator++(int) noexcept {
    auto t = *this;
    ++*this;
    return t;
  }
  byte_iterator& operator--() noexcept {
    if (off_ == 0) {
      --idx_;
      off_ = s_[idx_].n;
    }
    --off_;
    --pos_;
    return *this;
  }
  byte_iterator operator--(int) noexcept {
    auto t = *this;
    --*this;
    return t;
  }
  byte_iterator& operator+=(difference_type n) noexcept {
    if (n >= 0) forward(static_cast<std::size_t>(n));
    else backward(static_cast<std::size_t>(-n));
    return *this;
  }
  byte_iterator& operator-=(difference_type n) noexcept { return *this += -n; }
  friend byte_iterator operator+(byte_iterator it, difference_type n) noexcept { return it += n; }
  friend byte_iterator operator+(difference_type n, byte_iterator it) noexcept { return it += n; }
  friend byte_iterator operator-(byte_iterator it, difference_type n) noexcept { return it -= n; }
  friend difference_type operator-(const byte_iterator& a, const byte_iterator& b) noexcept {
    return static_cast<difference_type>(a.pos_) - static_cast<difference_type>(b.pos_);
  }
  friend bool operator==(const byte_iterator& a, const byte_iterator& b) noexcept {
    return a.pos_ == b.pos_;
  }
  friend std::strong_ordering operator<=>(const byte_iterator& a, const byte_iterator& b) noexcept {
    return a.pos_ <=> b.pos_;
  }

  // Offset from the first byte of the segment / readable data.
  std::size_t position() const noexcept { return pos_; }
  // The contiguous bytes from here to the end of the current piece (fast loops).
  std::string_view contiguous() const noexcept {
    if (idx_ == count_) return {};
    return {s_[idx_].p + off_, s_[idx_].n - off_};
  }

 private:
  void advance_from_start(std::size_t pos) noexcept {
    idx_ = 0;
    off_ = 0;
    pos_ = 0;
    forward(pos);
  }
  void forward(std::size_t n) noexcept {
    pos_ += n;
    while (n > 0 && idx_ < count_) {
      std::size_t rem = s_[idx_].n - off_;
      if (n < rem) {
        off_ += n;
        return;
      }
      n -= rem;
      ++idx_;
      off_ = 0;
    }
  }
  void backward(std::size_t n) noexcept {
    pos_ -= n;
    while (n > 0) {
      if (n <= off_) {
        off_ -= n;
        return;
      }
      n -= off_;
      --idx_;
      off_ = s_[idx_].n;
    }
  }

  const slice* s_ = nullptr;
  std::size_t count_ = 0;
  std::size_t idx_ = 0;
  std::size_t off_ = 0;
  std::size_t pos_ = 0;
};

// A forward range of std::string_view, one per slice.
class span_range {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using reference = std::string_view;
    using pointer = void;
    iterator() = default;
    explicit iterator(const slice* s) noexcept : s_(s) {}
    std::string_view operator*() const noexcept { return {s_->p, s_->n}; }
    iterator& operator++() noexcept {
      ++s_;
      return *this;
    }
    iterator operator++(int) noexcept {
      auto t = *this;
      ++s_;
      return t;
    }
    friend bool operator==(const iterator&, const iterator&) = default;

   private:
    const slice* s_ = nullptr;
  };

  span_range(const slice* s, std::size_t n) noexcept : s_(s), n_(n) {}
  iterator begin() const noexcept { return iterator(s_); }
  iterator end() const noexcept { return iterator(s_ + n_); }
  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  std::string_view operator[](std::size_t i) const noexcept { return {s_[i].p, s_[i].n}; }

 private:
  const slice* s_;
  std::size_t n_;
};

// Search over a slice array holding `total` bytes; npos when absent.
// Implemented in find.cpp. The start piece is located from whichever end of
// the array is nearer to `from`: a driver that searches again after each read
// resumes a few bytes before the end, found in O(1) however many pieces.
std::size_t find_byte(const slice* s, std::size_t count, std::size_t total, char c,
                      std::size_t from) noexcept;
std::size_t find_pattern(const slice* s, std::size_t count, std::size_t total,
                         std::string_view pat, std::size_t from) noexcept;
// The search inside one contiguous piece (SIMD filter + memcmp): the first
// occurrence of pat[0..m) in h[0..n), or nullptr; h itself when m == 0.
const char* find_in_piece(const char* h, std::size_t n, const char* pat, std::size_t m) noexcept;
// Linearised view / copy-out over a slice array. Implemented in segment.cpp.
std::string_view peek_slices(const slice* s, std::size_t count, std::size_t total, std::size_t pos,
                             std::size_t n, std::span<char> scratch, std::error_code& ec) noexcept;
std::size_t copy_slices(const slice* s, std::size_t count, char* out, std::size_t pos,
                        std::size_t n) noexcept;

}  // namespace inlet::buffer::detail
