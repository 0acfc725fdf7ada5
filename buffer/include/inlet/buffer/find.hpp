// Resumable search over a segment or a streambuf's readable data.
//
// `segment::find` / `streambuf::find` search once from a position. A `finder`
// remembers where a failed search may resume once more bytes have arrived, so
// that a driver that searches after every read scans each byte once (plus at
// most pattern.size() - 1 bytes of overlap at the old end).
//
// Thread-safety: a finder is a small value; one per connection.
#pragma once

#include <inlet/buffer/segment.hpp>

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace inlet::buffer {

class finder {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // The pattern's bytes must outlive the finder (a literal, typically).
  explicit finder(std::string_view pattern) noexcept : pat_(pattern) {}

  // Position of the next occurrence at or after the resume position, or npos;
  // on npos the resume position moves to where a later match could start.
  // `Buffer` is segment or streambuf (anything with size() and find()).
  template <class Buffer>
  std::size_t next(const Buffer& b) noexcept {
    std::size_t pos = b.find(pat_, resume_);
    if (pos == Buffer::npos) {
      std::size_t keep = pat_.empty() ? 0 : pat_.size() - 1;
      if (b.size() > keep) resume_ = std::max(resume_, b.size() - keep);
      return npos;
    }
    return pos;
  }

  // The buffer dropped its first n bytes (consume/detach): shift the resume position.
  void consumed(std::size_t n) noexcept { resume_ = resume_ > n ? resume_ - n : 0; }
  void reset(std::size_t pos = 0) noexcept { resume_ = pos; }
  std::size_t resume_position() const noexcept { return resume_; }
  std::string_view pattern() const noexcept { return pat_; }

 private:
  std::string_view pat_;
  std::size_t resume_ = 0;
};

// Search in one contiguous range (what segment::find runs inside each piece):
// SSE2 first/last-byte filter, then memcmp. npos when absent.
std::size_t find_in(std::string_view hay, std::string_view pattern, std::size_t from = 0) noexcept;

// Free-function forms.
inline std::size_t find(const segment& s, char c, std::size_t from = 0) noexcept {
  return s.find(c, from);
}
inline std::size_t find(const segment& s, std::string_view pattern, std::size_t from = 0) noexcept {
  return s.find(pattern, from);
}

}  // namespace inlet::buffer
