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

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <inlet/buffer/streambuf.hpp>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace inlet::smtp::detail {

// Flat mode (server_config::flat_receive_buffer, a copying
// baseline for comparisons): reads go into one per-connection contiguous
// std::string (consumed bytes are skipped, and the rest moves to the front at
// the next prepare, as asio::streambuf does), and every body piece is copied into a
// per-message std::string that becomes the message segment (wrap, no second
// copy). Nothing is zero-copy in this mode; it exists to measure against.
class driver_input {
 public:
  /// `flat_storage` non-null selects flat mode; the string is the connection's
  /// buffer and outlives this object (the copying baseline keeps it while idle).
  driver_input(std::size_t read_size, std::size_t max_line, std::string* flat_storage = nullptr)
      : flat_(flat_storage),
        read_size_(std::max<std::size_t>(read_size, 512)),
        scratch_size_(2 * max_line + 64),
        flat_mode_(flat_storage != nullptr) {}
  // (A driver_input is dropped only when empty or when the connection ends,
  // so a new one starts with no readable bytes in the storage.)

  buffer::streambuf& buf() noexcept { return sb_; }
  bool flat() const noexcept { return flat_mode_; }
  bool empty() const noexcept {
    return flat_mode_ ? flat_start_ == flat_size_ : sb_.empty() && parked_.empty();
  }
  /// How often a straddling tail was linearised (tests).
  std::size_t scratch_views() const noexcept { return scratch_views_; }
  std::size_t read_size() const noexcept { return read_size_; }

  /// What to pass to server_session::consume() next.
  std::string_view view() {
    view_is_scratch_ = false;
    if (flat_mode_) return {flat_->data() + flat_start_, flat_size_ - flat_start_};
    unpark();
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
    if (flat_mode_) {
      flat_start_ += std::min(consumed, flat_size_ - flat_start_);
      if (flat_start_ == flat_size_) flat_start_ = flat_size_ = 0;
      return false;  // the session saw every byte: read more
    }
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
  buffer::segment piece(std::string_view p) {
    if (flat_mode_) {  // copy out; take_flat_body() hands the copy on
      if (!body_copy_) body_copy_ = std::make_unique<std::string>();
      body_copy_->append(p);
      return {};
    }
    std::error_code ec;
    buffer::segment s = sb_.slice(p.data(), p.size(), ec);
    if (ec) return buffer::segment::copy_of(p);
    return s;
  }

  /// Flat mode, body observed (server_config::body_observer): copies a body
  /// piece out like piece() does, but into blocks that never move, and returns
  /// the copy. A body observer keeps views of what it was given (a streaming
  /// parser does), and the one growing std::string of piece() would move those
  /// bytes when it reallocates. Blocks: 16 KiB, then twice the last one (or the
  /// piece's size); the body is one block unless it outgrows the first.
  std::string_view copy_flat_stable(std::string_view p) {
    if (blocks_.empty() || blocks_.back()->capacity() - blocks_.back()->size() < p.size()) {
      std::size_t cap = blocks_.empty() ? std::size_t{16384} : 2 * blocks_.back()->capacity();
      auto b = std::make_unique<std::string>();
      b->reserve(std::max(cap, p.size()));
      blocks_.push_back(std::move(b));
    }
    std::string& b = *blocks_.back();
    std::size_t at = b.size();
    b.append(p);  // within capacity: no reallocation, earlier views stay valid
    return {b.data() + at, p.size()};
  }

  /// Flat mode: the message body copied so far, as a segment owning the
  /// string(s) (empty in segment mode, where the pieces are the body).
  buffer::segment take_flat_body() {
    buffer::segment body;
    if (body_copy_) {
      std::string* str = body_copy_.release();
      body = buffer::segment::wrap(str->data(), str->size(), [str] { delete str; });
    }
    for (auto& b : blocks_) {
      std::string* str = b.release();
      body.append(buffer::segment::wrap(str->data(), str->size(), [str] { delete str; }));
    }
    blocks_.clear();
    return body;
  }
  /// Flat mode: drop a body copied so far (message aborted).
  void drop_flat_body() noexcept {
    body_copy_.reset();
    blocks_.clear();
  }

  /// Drops every readable byte (RFC 3207 4.2: input pipelined after STARTTLS).
  void clear() noexcept {
    parked_.clear();
    flat_start_ = flat_size_ = 0;
    sb_.consume(sb_.size());
    straddle_ = false;
  }

  /// Gives the fragments back when nothing is pending (idle connection).
  /// Flat mode keeps its string (the baseline's per-connection buffer).
  void release_if_empty() noexcept {
    if (flat_mode_) return;
    if (sb_.empty()) {
      straddle_ = false;
      sb_.release_if_empty();
    }
  }

  /// Before waiting for input. Outside a message: release_if_empty(). Inside
  /// one (a body or BDAT chunks being collected): the fragment the body already
  /// shares stays as the next read's space, so small reads fill it one after
  /// another instead of pinning a fragment each.
  void release_for_wait(bool in_message) noexcept {
    if (!in_message) return park();
    if (flat_mode_) return;
    if (sb_.empty()) {
      straddle_ = false;
      sb_.release_spare();
    }
  }

  /// Space for the next read: read_size octets (several fragments, one readv)
  /// for a body, one fragment for commands — command reads are small, and a
  /// fragment taken for them is all an idle-after-commands thread caches.
  buffer::streambuf::mutable_buffers_type prepare(bool bulk = true) {
    std::size_t n = bulk ? read_size_ : std::min(read_size_, sb_.fragment_pool().fragment_size());
    if (!flat_mode_) {
      unpark();
      return sb_.prepare(n);
    }
    if (flat_start_ > 0) {  // move the unconsumed rest to the front (asio::streambuf does this)
      std::memmove(flat_->data(), flat_->data() + flat_start_, flat_size_ - flat_start_);
      flat_size_ -= flat_start_;
      flat_start_ = 0;
    }
    if (flat_->size() < flat_size_ + n) flat_->resize(flat_size_ + n);  // grows, zero-filled
    flat_space_ = buffer::detail::slice{nullptr, flat_->data() + flat_size_, n};
    return {&flat_space_, 1, 0, n, n};
  }
  void commit(std::size_t n) noexcept {
    if (!flat_mode_) return sb_.commit(n);
    flat_size_ += std::min(n, flat_space_.n);
    flat_space_.n = 0;
  }

 private:
  // Outside a message, before a wait: an unfinished command line (at most a
  // scratch window of it) is copied out and its fragment given back, so a
  // client trickling a line holds a few octets while it is silent, not a
  // fragment; the next read or view puts the octets back in front.
  void park() noexcept {
    if (flat_mode_) return;
    if (!sb_.empty() && parked_.empty() && sb_.size() <= scratch_size_) {
      try {
        parked_.resize(sb_.size());
        std::error_code ec;
        std::string_view v =
            sb_.peek(0, parked_.size(), std::span<char>(parked_.data(), parked_.size()), ec);
        if (ec || v.size() != parked_.size()) {
          parked_.clear();
        } else {
          if (v.data() != parked_.data()) std::memcpy(parked_.data(), v.data(), v.size());
          sb_.consume(sb_.size());
        }
      } catch (...) {  // no memory for the copy: keep the fragment
        parked_.clear();
      }
    }
    release_if_empty();
  }
  void unpark() {
    if (parked_.empty()) return;
    auto space = sb_.prepare(parked_.size());
    std::size_t at = 0;
    for (auto b : space) {
      std::size_t k = std::min(b.size(), parked_.size() - at);
      std::memcpy(b.data(), parked_.data() + at, k);
      at += k;
      if (at == parked_.size()) break;
    }
    sb_.commit(parked_.size());
    straddle_ = false;
    parked_.clear();
    parked_.shrink_to_fit();
  }

  buffer::streambuf sb_;
  std::string parked_;           // an unfinished command line while waiting (park())
  std::string* flat_ = nullptr;  // flat mode: storage; readable = [flat_start_, flat_size_)
  std::size_t flat_start_ = 0;
  std::size_t flat_size_ = 0;
  buffer::detail::slice flat_space_{nullptr, nullptr, 0};  // flat mode: prepared space
  std::unique_ptr<std::string> body_copy_;                 // flat mode: the body copied so far
  std::vector<std::unique_ptr<std::string>> blocks_;  // flat mode, observed: copy_flat_stable()
  std::size_t read_size_;
  std::size_t scratch_size_;
  std::unique_ptr<char[]> scratch_;
  bool straddle_ = false;
  bool view_is_scratch_ = false;
  std::size_t scratch_views_ = 0;
  bool flat_mode_ = false;
};

}  // namespace inlet::smtp::detail
