// The drivers' input: an inlet::buffer::streambuf the socket reads into, fed to
// the sans-io session one readable span at a time.
//
// The session keeps nothing: what it did not consume it asks for again, followed
// by new bytes. Inside one fragment that is free (the next call gets the rest of
// the span). When the unconsumed tail of a span is followed by bytes in the next
// fragment (a command line or the end-of-data marker straddling two fragments),
// the driver copies a small window — at most `scratch` bytes, about two command
// lines — into a scratch block and feeds that instead. Body bytes are never
// linearised: body_data pieces that point into the streambuf become slices of its
// fragments (no copy); only a piece that came from the scratch window (at most a
// few bytes of body right after a straddle) is copied.
//
// Internal to inlet::smtp. Not thread-safe; one per connection.
#pragma once

#include <inlet/buffer/streambuf.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <system_error>

namespace inlet::smtp::detail {

class driver_input {
 public:
  driver_input(std::size_t read_size, std::size_t max_line)
      : read_size_(std::max<std::size_t>(read_size, 512)), scratch_size_(2 * max_line + 64) {}

  buffer::streambuf& buf() noexcept { return sb_; }
  bool empty() const noexcept { return sb_.empty(); }
  /// How often a straddling tail was linearised (tests).
  std::size_t scratch_views() const noexcept { return scratch_views_; }
  std::size_t read_size() const noexcept { return read_size_; }

  /// What to pass to server_session::consume() next.
  std::string_view view() {
    view_is_scratch_ = false;
    if (sb_.empty()) return {};
    std::string_view first = *sb_.readable_spans().begin();
    if (first.size() >= sb_.size()) straddle_ = false;
    if (!straddle_) return first;
    if (!scratch_) scratch_ = std::make_unique<char[]>(scratch_size_);
    std::error_code ec;
    std::size_t n = std::min(sb_.size(), scratch_size_);
    std::string_view v = sb_.peek(0, n, std::span<char>(scratch_.get(), scratch_size_), ec);
    if (ec) return first;  // cannot happen: n fits the scratch
    view_is_scratch_ = true;
    ++scratch_views_;
    return v;
  }

  /// After a step: `consumed` octets of the view are done. For need_more,
  /// returns true when the session must be called again without a read (the
  /// view did not show every readable byte).
  bool consumed(std::string_view v, std::size_t consumed, bool need_more) {
    sb_.consume(consumed);
    if (consumed > 0 && view_is_scratch_) straddle_ = false;
    if (!need_more) return false;
    std::size_t rest = v.size() - std::min(consumed, v.size());
    if (sb_.size() <= rest) return false;  // it saw everything: read more
    // More bytes lie beyond what the session saw. An unconsumed tail must be
    // joined with them (scratch); with no tail the next span simply follows.
    if (rest > 0) straddle_ = true;
    // A full scratch window that made no progress cannot happen (the session
    // always moves on within two command lines); read rather than spin.
    return !(view_is_scratch_ && consumed == 0 && v.size() >= scratch_size_);
  }

  /// The message body bytes of a body_data piece: a slice of the streambuf's
  /// fragments, or a copy when the piece lies in the scratch window.
  buffer::segment piece(std::string_view p) const {
    std::error_code ec;
    buffer::segment s = sb_.slice(p.data(), p.size(), ec);
    if (ec) return buffer::segment::copy_of(p);
    return s;
  }

  /// Drops every readable byte (RFC 3207 4.2: input pipelined after STARTTLS).
  void clear() noexcept {
    sb_.consume(sb_.size());
    straddle_ = false;
  }

  /// Gives the fragments back when nothing is pending (idle connection).
  void release_if_empty() noexcept {
    if (sb_.empty()) {
      straddle_ = false;
      sb_.release_if_empty();
    }
  }

  /// Space for the next read: read_size octets (several fragments, one readv)
  /// for a body, one fragment for commands — command reads are small, and a
  /// fragment taken for them is all an idle-after-commands thread caches.
  buffer::streambuf::mutable_buffers_type prepare(bool bulk = true) {
    return sb_.prepare(bulk ? read_size_ : std::min(read_size_, sb_.fragment_pool().fragment_size()));
  }
  void commit(std::size_t n) noexcept { sb_.commit(n); }

 private:
  buffer::streambuf sb_;
  std::size_t read_size_;
  std::size_t scratch_size_;
  std::unique_ptr<char[]> scratch_;
  bool straddle_ = false;
  bool view_is_scratch_ = false;
  std::size_t scratch_views_ = 0;
};

}  // namespace inlet::smtp::detail
