// Value types of the message store: envelope, summary, the message handed to a store and
// the record a store keeps.
//
// Thread-safety: plain values; a `stored_message` reached through `message_ptr` is
// immutable once published by a store, so any number of threads may read it at once —
// except its `read` flag, an atomic that the store flips (store::set_read).
// Views: a `message_ptr` keeps its record (raw bytes included) alive after the store has
// evicted or deleted it; string_views into it stay valid as long as the pointer is held.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace inlet::store {

/// A display name and an addr-spec, as in `"Ann" <ann@example.com>`.
struct address {
  std::string name;
  std::string address;
  friend bool operator==(const struct address&, const struct address&) = default;
};

/// What the SMTP session learnt, kept apart from the message bytes.
struct envelope {
  std::string helo;                  ///< EHLO/HELO argument
  std::string mail_from;             ///< reverse-path, without <>; empty for the null sender
  std::vector<std::string> rcpt_to;  ///< forward-paths, without <>
  std::string remote;                ///< peer "ip:port"
  std::string protocol;              ///< "SMTP", "ESMTP", "LMTP", ...
};

/// One attachment as the MIME parse saw it (the bytes stay in `raw`).
struct attachment_info {
  std::string filename;
  std::string content_type;
  std::size_t size = 0;  ///< decoded size in bytes
};

using time_point = std::chrono::system_clock::time_point;

/// Header-level facts the caller fills from its MIME parse. Text and HTML bodies are not
/// stored: the HTTP layer renders them from the raw bytes on demand.
struct summary {
  address from;
  std::vector<address> to;
  std::vector<address> cc;
  std::vector<address> bcc;
  std::vector<address> reply_to;
  std::string subject;
  std::optional<time_point> date;  ///< the Date: header, in UTC
  std::string message_id;          ///< Message-ID without <>
  std::string snippet;             ///< first words of the text, for lists
  std::vector<attachment_info> attachments;
};

/// What a caller hands to `store::put`. `raw` is the one copy a store may keep: move it in.
struct new_message {
  struct envelope envelope;
  struct summary summary;
  std::string raw;  ///< the message exactly as received (after dot-unstuffing)
  std::vector<std::string> tags;
};

/// Length of a message ID: 22 characters of [0-9A-Za-z] (two 11-digit groups, 64 random bits each).
inline constexpr std::size_t id_length = 22;

/// A message as a store keeps it. Immutable once published, except `read`.
struct stored_message {
  std::string id;        ///< id_length characters of base62
  std::uint64_t seq = 0; ///< store-local arrival order, strictly increasing
  time_point created;    ///< when the store accepted it (UTC)
  struct envelope envelope;
  struct summary summary;
  std::string raw;
  std::vector<std::string> tags;
  /// Seen by a reader (Mailpit's "Read"): set by store::set_read, which keeps the
  /// store's unread count in step; the only field that changes after publication.
  mutable std::atomic<bool> read{false};
  std::size_t size() const noexcept { return raw.size(); }
};

using message_ptr = std::shared_ptr<const stored_message>;

/// One page of a listing, newest first.
struct page {
  std::size_t total = 0;              ///< messages matching (whole store or one mailbox)
  std::size_t start = 0;              ///< offset of messages[0] from the newest
  std::size_t unread = 0;             ///< of the `total`, how many are not read
  std::vector<message_ptr> messages;  ///< at most `limit`, newest first
};

/// Counters for /metrics. Gauges are exact at the moment they are read.
struct store_stats {
  std::uint64_t messages = 0;     ///< held now
  std::uint64_t unread = 0;       ///< held now and not read
  std::uint64_t bytes = 0;        ///< raw bytes held now
  std::uint64_t stored_total = 0; ///< accepted since start
  std::uint64_t evicted_total = 0;///< dropped to respect the bounds
  std::uint64_t deleted_total = 0;///< removed by delete requests
  std::uint64_t rejected_total = 0;
};

}  // namespace inlet::store
