// Value types of the message store: envelope, summary, the message handed to a store, the
// record a store keeps and hands out, a page of a listing, events.
//
// Thread-safety: plain values; a `stored_message` reached through `message_ptr` is
// immutable once published by a store, so any number of threads may read it at once —
// except its `read` flag and its tag list, which the store replaces atomically
// (store::async_set_read, store::async_set_tags): read them through `is_read()` and
// `tags()`.
// Views: a `message_ptr` keeps its record (raw bytes included, when loaded) alive after
// the store has evicted or deleted it; string_views into it stay valid as long as the
// pointer is held.
#pragma once

#include <array>
#include <atomic>
#include <boost/container/small_vector.hpp>
#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::store {

/// A display name and an addr-spec, as in `"Ann" <ann@example.com>`.
struct address {
  std::string name;
  std::string address;
  friend bool operator==(const struct address&, const struct address&) = default;
};

/// Envelope recipients. Nearly every message has one: it stays inline in the envelope
/// (no heap block per message); more spill to the heap like a vector.
using recipient_list = boost::container::small_vector<std::string, 1>;

/// What the SMTP session learnt, kept apart from the message bytes.
struct envelope {
  std::string helo;        ///< EHLO/HELO argument
  std::string mail_from;   ///< reverse-path, without <>; empty for the null sender
  recipient_list rcpt_to;  ///< forward-paths, without <>
  std::string remote;      ///< peer "ip:port"
  std::string protocol;    ///< "SMTP", "ESMTP", "LMTP", ...
  std::string auth_user;   ///< SMTP AUTH (or send API) user name; empty if none
};

/// One attachment as the MIME parse saw it (the bytes stay in `raw`).
struct attachment_info {
  std::string filename;
  std::string content_type;
  std::size_t size = 0;  ///< decoded size in bytes
};

using time_point = std::chrono::system_clock::time_point;

/// A summary's To list. Nearly every message has one To address: it stays inline in the
/// summary (no heap block), more spill to the heap like a vector. Cc, Bcc and Reply-To are
/// usually empty and stay plain vectors (no inline room to carry, cheaper to move).
using address_list = boost::container::small_vector<address, 1>;

/// Header-level facts the caller fills from its MIME parse. Text and HTML bodies are not
/// stored as such: the HTTP layer renders them from the raw bytes on demand. Every string
/// and list here is bounded by whoever fills it (an address list keeps its first entries
/// and a count), and a store counts these bytes against its limits like the raw bytes.
struct summary {
  address from;
  address_list to;
  std::vector<address> cc;
  /// Bcc header addresses, plus envelope recipients that no To/Cc/Bcc header names
  /// (as Mailpit shows them).
  std::vector<address> bcc;
  std::vector<address> reply_to;
  /// To, Cc, Bcc and Reply-To as views, for code that treats the four lists alike.
  std::array<std::span<const address>, 4> lists() const noexcept {
    return {std::span<const address>(to.data(), to.size()), cc, bcc, reply_to};
  }
  std::string subject;
  std::optional<time_point> date;  ///< the Date: header, in UTC
  std::string message_id;          ///< Message-ID without <>
  std::string snippet;             ///< first words of the text, for lists
  /// Attachments, without inline parts (a part with a Content-ID shown by the HTML).
  std::vector<attachment_info> attachments;
  std::uint32_t inline_parts = 0;  ///< parts shown inline (`has:inline`)
  /// How many entries the message has in all when a list above keeps only the first of
  /// them (the receive path bounds each list); 0 when the list is whole. A reader takes
  /// max(total, list size).
  struct list_totals {
    std::uint32_t to = 0, cc = 0, bcc = 0, reply_to = 0, attachments = 0;
  } totals;
  /// The words free-text search looks in, lower-cased UTF-8, whitespace collapsed:
  /// subject, names and addresses, the decoded text (HTML as text), attachment names.
  /// Bounded in length by whoever fills it. Left empty in a `new_message` (the usual
  /// case), the store derives it from the raw bytes (search::search_text_of), off the
  /// path that answers the SMTP client: the memory store at the first search that needs
  /// it, a store that writes it at insert on its writer thread.
  std::string search_text;
};

/// What a caller hands to `store::put`. `raw` is the one copy a store may keep: move it in.
struct new_message {
  struct envelope envelope;
  struct summary summary;
  std::string raw;  ///< the message exactly as received (after dot-unstuffing)
  std::vector<std::string> tags;
  /// When set (imports, tests): the received time to record instead of the store's
  /// clock. Listings stay in arrival order whatever it says.
  std::optional<time_point> created;
};

/// Length of a message ID: 22 characters of [0-9A-Za-z].
inline constexpr std::size_t id_length = 22;

/// A message ID held inline: at most id_length characters (a store's IDs have exactly
/// id_length; a default-constructed one is empty), so making, copying or storing one
/// costs no heap block. Reads as a std::string_view (implicit conversion), valid while
/// this object lives (inside a record: while its message_ptr is held).
/// Design note: id_length bytes plus a length byte, no terminator; compares, hashes and
/// prints as its characters. Thread-safety: a plain value.
class message_id {
 public:
  message_id() noexcept = default;
  /// Throws std::length_error past id_length characters.
  explicit message_id(std::string_view s) {
    if (s.size() > id_length) throw std::length_error("message ID longer than id_length");
    size_ = static_cast<std::uint8_t>(s.size());
    s.copy(chars_, s.size());
  }
  std::string_view view() const noexcept { return {chars_, size_}; }
  operator std::string_view() const noexcept { return view(); }
  /// A std::string copy, for the APIs that take one (may allocate; not for hot paths).
  operator std::string() const { return str(); }
  std::string str() const { return std::string(view()); }
  const char* data() const noexcept { return chars_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const char* begin() const noexcept { return chars_; }
  const char* end() const noexcept { return chars_ + size_; }

  friend bool operator==(const message_id& a, const message_id& b) noexcept {
    return a.view() == b.view();
  }
  friend auto operator<=>(const message_id& a, const message_id& b) noexcept {
    return a.view() <=> b.view();
  }
  friend bool operator==(const message_id& a, std::string_view b) noexcept { return a.view() == b; }
  friend auto operator<=>(const message_id& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend std::ostream& operator<<(std::ostream& os, const message_id& id) {
    return os << id.view();
  }

 private:
  char chars_[id_length] = {};
  std::uint8_t size_ = 0;
};

/// A message's tags, replaced whole (never edited in place), so a reader holding a list
/// keeps it while the store installs another.
using tag_list = std::shared_ptr<const std::vector<std::string>>;

/// A message as a store keeps it and hands it out. Immutable once published, except the
/// read flag and the tag list.
struct stored_message {
  message_id id;          ///< id_length characters of base62, unique within a store
  std::uint64_t seq = 0;  ///< arrival order within the store (or shard), for ordering ties
  time_point created;     ///< when the store accepted it (UTC)
  struct envelope envelope;
  struct summary summary;
  std::size_t size = 0;  ///< bytes of the raw message
  /// The message exactly as received. Listings may hand out records without it
  /// (`has_raw` false); store::async_get always loads it.
  std::string raw;
  bool has_raw = true;

  bool is_read() const noexcept { return read_.load(std::memory_order_relaxed); }
  tag_list tags() const noexcept { return tags_.load(std::memory_order_acquire); }

  // For stores only: publication-time setup and the two mutable fields.
  void init_read(bool r) noexcept { read_.store(r, std::memory_order_relaxed); }
  bool exchange_read(bool r) const noexcept { return read_.exchange(r, std::memory_order_relaxed); }
  void set_tags(tag_list t) const noexcept { tags_.store(std::move(t), std::memory_order_release); }

 private:
  mutable std::atomic<bool> read_{false};
  // Starts as the one shared empty list: a record costs no allocation for its tags.
  static const tag_list& no_tags() {
    static const tag_list empty = std::make_shared<const std::vector<std::string>>();
    return empty;
  }
  mutable std::atomic<tag_list> tags_{no_tags()};
};

using message_ptr = std::shared_ptr<const stored_message>;

/// One page of a listing, newest first.
struct page {
  std::size_t total = 0;           ///< messages in scope (whole store, or one mailbox)
  std::size_t unread = 0;          ///< of `total`, how many are not read
  std::size_t matched = 0;         ///< of `total`, how many match the search (== total without one)
  std::size_t matched_unread = 0;  ///< of `matched`, how many are not read
  std::size_t start = 0;           ///< offset of messages[0] among the matches, from the newest
  std::vector<message_ptr> messages;  ///< at most `limit`, newest first; raw may be absent
  /// Some part of the store (a shard) did not answer in time: the page and the counts
  /// cover the parts that did.
  bool partial = false;
  /// With `partial`: the parts that did not answer (shard indexes).
  std::vector<std::uint32_t> missing;
};

/// Counters for /metrics. Gauges are exact at the moment they are read for the memory
/// store; a distributed store reports what it last knew.
struct store_stats {
  std::uint64_t messages = 0;       ///< held now
  std::uint64_t unread = 0;         ///< held now and not read
  std::uint64_t bytes = 0;          ///< bytes held now (raw + summaries + tags)
  std::uint64_t stored_total = 0;   ///< accepted since start
  std::uint64_t evicted_total = 0;  ///< dropped to respect the bounds (or expired)
  std::uint64_t deleted_total = 0;  ///< removed by delete requests
  std::uint64_t rejected_total = 0;
};

/// Whether the store can take work now (for /readyz), with a human-readable reason.
struct store_health {
  bool ready = true;
  std::string detail;  ///< e.g. "shard 2 (127.0.0.1:5433): connection refused"
};

/// Something changed in the store; observers (the HTTP event stream) are told.
/// A distributed store also reports changes made by other instances.
struct store_event {
  enum class kind {
    created,       ///< `message` was stored (raw may be absent)
    deleted,       ///< the messages `ids` were deleted (or expired)
    read_changed,  ///< the messages `ids` are now `read`
    tags_changed,  ///< `message`'s tags changed (see message->tags())
    cleared,       ///< many or all messages changed at once: reload
  };
  kind what = kind::created;
  message_ptr message;
  std::vector<std::string> ids;
  bool read = false;
};

}  // namespace inlet::store

/// Hashes as its characters (the same value as std::hash<std::string_view>).
template <>
struct std::hash<inlet::store::message_id> {
  std::size_t operator()(const inlet::store::message_id& id) const noexcept {
    return std::hash<std::string_view>{}(id.view());
  }
};
