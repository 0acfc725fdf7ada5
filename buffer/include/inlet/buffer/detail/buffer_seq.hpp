// Internal: an Asio buffer sequence over a slice array, trimmed at both ends,
// computed lazily so that it never allocates however many fragments it spans.
#pragma once

#include <inlet/buffer/detail/fragment.hpp>

#include <cstddef>
#include <iterator>
#include <type_traits>

namespace inlet::buffer::detail {

template <class Buffer>
class buffer_seq {
 public:
  using value_type = Buffer;

  class const_iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = Buffer;
    using difference_type = std::ptrdiff_t;
    using reference = Buffer;
    using pointer = void;

    const_iterator() = default;
    const_iterator(const buffer_seq* q, std::size_t i) noexcept
        : s_(q->s_), count_(q->count_), first_off_(q->first_off_), last_len_(q->last_len_), i_(i) {}

    Buffer operator*() const noexcept {
      const slice& s = s_[i_];
      std::size_t off = i_ == 0 ? first_off_ : 0;
      std::size_t len = i_ + 1 == count_ ? last_len_ : s.n - off;
      using ptr = std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(Buffer().data())>>,
                                     const void*, void*>;
      return Buffer(const_cast<ptr>(static_cast<const void*>(s.p + off)), len);
    }
    const_iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) noexcept {
      auto t = *this;
      ++i_;
      return t;
    }
    const_iterator& operator--() noexcept {
      --i_;
      return *this;
    }
    const_iterator operator--(int) noexcept {
      auto t = *this;
      --i_;
      return t;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) noexcept {
      return a.i_ == b.i_;
    }

   private:
    const slice* s_ = nullptr;
    std::size_t count_ = 0;
    std::size_t first_off_ = 0;
    std::size_t last_len_ = 0;
    std::size_t i_ = 0;
  };
  using iterator = const_iterator;

  buffer_seq() = default;
  // Pieces s[0..count): the first starts first_off bytes in, the last is
  // last_len bytes long (counted after first_off when count == 1).
  buffer_seq(const slice* s, std::size_t count, std::size_t first_off, std::size_t last_len,
             std::size_t total) noexcept
      : s_(s), count_(count), first_off_(first_off), last_len_(last_len), total_(total) {}

  const_iterator begin() const noexcept { return {this, 0}; }
  const_iterator end() const noexcept { return {this, count_}; }
  std::size_t count() const noexcept { return count_; }
  // Total bytes (Asio's buffer_size computes the same by walking).
  std::size_t bytes() const noexcept { return total_; }

 private:
  const slice* s_ = nullptr;
  std::size_t count_ = 0;
  std::size_t first_off_ = 0;
  std::size_t last_len_ = 0;
  std::size_t total_ = 0;
};

}  // namespace inlet::buffer::detail
