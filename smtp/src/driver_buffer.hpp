// The drivers' input buffer: one flat block; the session's unconsumed bytes
// (at most one incomplete command line, or two bytes of a possible body
// terminator) stay at the front and new reads append after them.
// Internal to inlet::smtp. Not thread-safe; one per connection.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace inlet::smtp::detail {

class driver_buffer {
 public:
  driver_buffer(std::size_t size, std::size_t max_line)
      : cap_(std::max(size, 2 * max_line + 4096)), buf_(new char[cap_]) {}

  std::string_view data() const noexcept { return {buf_.get() + begin_, end_ - begin_}; }
  bool empty() const noexcept { return begin_ == end_; }
  void consume(std::size_t n) noexcept {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void clear() noexcept { begin_ = end_ = 0; }
  /// Moves unconsumed bytes to the front when the free tail got small.
  void prepare() noexcept {
    if (cap_ - end_ >= cap_ / 2 || begin_ == 0) return;
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  char* free_data() noexcept { return buf_.get() + end_; }
  std::size_t free_size() const noexcept { return cap_ - end_; }
  void commit(std::size_t n) noexcept { end_ += n; }

 private:
  std::size_t cap_;
  std::unique_ptr<char[]> buf_;
  std::size_t begin_ = 0, end_ = 0;
};

}  // namespace inlet::smtp::detail
