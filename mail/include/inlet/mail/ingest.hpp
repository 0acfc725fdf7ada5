// Ingest: the one path from a message's bytes to the store, for every way a message
// comes in (SMTP and LMTP delivery, POST /api/v1/send, sendmail, the ingest command).
//
//   parse once (or take the parse made while the body arrived, --parse streaming)
//   -> summary (summary.hpp)
//   -> the tags the message carries (X-Tags, user+tag addresses: tags.hpp)
//   -> the content filter's verdict: over the threshold, reject (nothing is stored, the
//      SMTP reply is 550 5.7.1) or tag "spam"
//   -> Mailpit's tag rules (tags.hpp), which see the summary and the raw bytes
//   -> store::put; the SMTP reply (or the API's answer) is sent from the store's
//      completion, so "250" means the store holds the message.
// The search text is not made here: the store derives it from the raw bytes off this
// path (store::search::search_text_of, over mime::body_text).
//
// Thread-safety: deliver() and submit() are called concurrently from every I/O thread;
// an ingest holds no per-message state of its own, its counters are relaxed atomics,
// the filter is read through an atomically swapped snapshot.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <inlet/smtp/message.hpp>
#include <inlet/store/store.hpp>
#include <memory>
#include <optional>
#include <inlet/filter/filter.hpp>
#include <inlet/mime/message.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "inlet/mail/submission.hpp"
#include "inlet/mail/tags.hpp"

namespace inlet::mail {

class content_filter;  // content_filter.hpp
class worker_pool;     // worker_pool.hpp

struct ingest_counters {
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> stored{0};
  std::atomic<std::uint64_t> store_errors{0};
  std::atomic<std::uint64_t> filter_tagged{0};
  std::atomic<std::uint64_t> filter_rejected{0};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> duplicates_ignored{0};  ///< --ignore-duplicate-ids
};

struct ingest_options {
  tag_options tags;
  tag_rules rules;
  /// Messages of at least this many bytes are parsed and stored on a worker pool, not on
  /// the SMTP I/O thread that received them (0: never).
  std::size_t heavy_bytes = 256 * 1024;
  /// Mailpit's --use-message-dates: the Date header (when there is one) is the time the
  /// message is recorded as received; listings stay in arrival order.
  bool use_message_dates = false;
  /// Mailpit's --tags-username: the SMTP AUTH user (the send API's, if any) as a tag.
  bool tag_auth_user = false;
  /// Mailpit's --verbose: a line on stdout for every message stored.
  bool log_stored = false;
  /// Mailpit's --smtp-strict-rfc-headers: a header block with a bare CR before its CRLF
  /// (CR CR LF, as some mailers write it) is refused with 451 4.3.5. Otherwise every CR CR
  /// LF of the message becomes CR LF before it is stored, as Mailpit stores it.
  bool strict_rfc_headers = false;
  /// Mailpit's --ignore-duplicate-ids: an SMTP message whose Message-ID the store already
  /// holds is answered 250 and not stored (one search of the store per message).
  bool ignore_duplicate_ids = false;
  /// Called once per message the store accepted (SMTP and submit), after the reply was
  /// handed back, on the thread that completed the put: must only hand over (outbound).
  std::function<void(const inlet::store::message_ptr&)> on_stored;
};

class ingest {
 public:
  /// `store` null = sink: parse and filter, then accept and discard. `filter` may be null.
  ingest(inlet::store::store* store, content_filter* filter, ingest_options opts = {});
  ~ingest();
  ingest(const ingest&) = delete;
  ingest& operator=(const ingest&) = delete;

  /// An SMTP/LMTP delivery hook (smtp::deliver_hook): `done` gets the reply.
  void deliver(inlet::smtp::received_message&& m, inlet::smtp::delivery_callback done);

  /// Any other source of messages; `done` may run on any thread, once.
  void submit(submission msg, submit_callback done);

  const ingest_counters& counters() const noexcept { return counters_; }

  /// The counters (and the filter's) for /metrics, Prometheus text format.
  void append_metrics(std::string& out) const;

 private:
  enum class verdict { keep, reject };
  // While the parse is valid: the summary and the tags the message carries; the filter
  // scan is fed the decoded text.
  void summarize(const inlet::mime::parsed_message& parse, inlet::store::new_message& msg,
                 inlet::filter::scan* scan) const;
  // Once msg.raw is set: the filter's verdict, then the tag rules.
  verdict judge(inlet::store::new_message& msg, std::optional<inlet::filter::scan>& scan);
  void deliver_now(inlet::smtp::received_message&& m, inlet::smtp::delivery_callback done);
  void store_message(inlet::store::new_message&& msg, inlet::smtp::delivery_callback done);
  void log_stored(const inlet::store::stored_message& m) const;

  inlet::store::store* store_;
  content_filter* filter_;
  ingest_options opts_;
  ingest_counters counters_;
  std::unique_ptr<worker_pool> heavy_;  // last: its jobs use the members above
};

/// Fills `out`, the envelope as the store keeps it, moving the strings out of `e` (in
/// place: a recipient list with inline room costs a copy per move).
void to_store_envelope(inlet::smtp::envelope& e, inlet::store::envelope& out);

}  // namespace inlet::mail
