// chunked_view: a message held in non-contiguous pieces, addressed by absolute offsets.
//
// The view does not own bytes: it records std::string_view pieces (for example the
// spans of an inlet::buffer::segment) and their starting offsets. Everything the parser
// returns is a `span` (absolute [begin, end) offsets) into this view. A span is read in
// place when it lies in one piece; one that straddles pieces is linearised on demand
// into caller-provided scratch storage (`view(span, scratch)`), never the whole message.
//
// Thread-safety: none (a value type; const member functions may run concurrently).
// Invalidation: the bytes behind each piece must outlive the view; appending pieces
// may reallocate the piece table, but spans (offsets) stay valid forever.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::mime {

/// [begin, end) absolute byte offsets into a chunked_view.
struct span {
  std::size_t begin = 0;
  std::size_t end = 0;
  constexpr std::size_t size() const noexcept { return end - begin; }
  constexpr bool empty() const noexcept { return end <= begin; }
  friend constexpr bool operator==(span, span) = default;
};

class chunked_view {
 public:
  chunked_view() = default;
  explicit chunked_view(std::string_view flat) { append(flat); }
  explicit chunked_view(std::span<const std::string_view> pieces) {
    for (auto p : pieces) append(p);
  }

  /// Adds a piece at the end (empty pieces are ignored).
  void append(std::string_view piece) {
    if (piece.empty()) return;
    pieces_.push_back(piece);
    starts_.push_back(size_);
    size_ += piece.size();
  }
  void clear() noexcept {
    pieces_.clear();
    starts_.clear();
    size_ = 0;
  }
  void reserve(std::size_t n) {
    pieces_.reserve(n);
    starts_.reserve(n);
  }

  std::size_t size() const noexcept { return size_; }
  std::size_t piece_count() const noexcept { return pieces_.size(); }
  std::string_view piece(std::size_t i) const noexcept { return pieces_[i]; }
  std::size_t piece_start(std::size_t i) const noexcept { return starts_[i]; }

  /// Index of the piece holding offset `off` (off < size()).
  std::size_t piece_of(std::size_t off) const noexcept {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), off);
    return static_cast<std::size_t>(it - starts_.begin()) - 1;
  }

  char at(std::size_t off) const noexcept {
    std::size_t i = piece_of(off);
    return pieces_[i][off - starts_[i]];
  }

  /// Bytes of `s`: in place when inside one piece, else copied into `scratch`.
  std::string_view view(span s, std::string& scratch) const {
    s.end = std::min(s.end, size_);
    if (s.empty()) return {};
    if (pieces_.size() == 1) return pieces_[0].substr(s.begin, s.size());  // flat input
    std::size_t i = piece_of(s.begin);
    std::size_t rel = s.begin - starts_[i];
    if (rel + s.size() <= pieces_[i].size()) return pieces_[i].substr(rel, s.size());
    scratch.clear();
    for_each(s, [&](std::string_view p) { scratch.append(p); });
    return scratch;
  }

  /// Copies the bytes of `s` into a new string.
  std::string copy(span s) const {
    std::string out;
    for_each(s, [&](std::string_view p) { out.append(p); });
    return out;
  }

  /// Calls f(std::string_view) for each in-place piece of `s`, in order.
  template <class F>
  void for_each(span s, F&& f) const {
    s.end = std::min(s.end, size_);
    if (s.empty()) return;
    std::size_t i = piece_of(s.begin);
    std::size_t off = s.begin;
    while (off < s.end && i < pieces_.size()) {
      std::size_t rel = off - starts_[i];
      std::size_t n = std::min(pieces_[i].size() - rel, s.end - off);
      f(pieces_[i].substr(rel, n));
      off += n;
      ++i;
    }
  }

 private:
  std::vector<std::string_view> pieces_;
  std::vector<std::size_t> starts_;
  std::size_t size_ = 0;
};

}  // namespace inlet::mime
