// Mailpit's automatic sending of new messages: auto-relay (--smtp-relay-all,
// --smtp-relay-matching: each message on to its own recipients through the relay) and
// forwarding (--smtp-forward-config: a copy to fixed addresses). Both are a
// mail_sender: a bounded queue of stored messages and a thread that hands each to a
// `send` function (the SMTP client inletd wires in, the one message release uses), so
// neither ever runs on an SMTP I/O thread or holds back a reply.
//
// Thread-safety: enqueue() from any thread; the rest from the owner.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "inlet/outbound/bounded_queue.hpp"
#include "inlet/store/types.hpp"

namespace inlet::outbound {

struct mail_sender_config {
  std::string name = "relay";          ///< in the metric names: inlet_<name>_sent_total, ...
  std::size_t queue_capacity = 1000;   ///< messages waiting; more are dropped (counted)
  /// Bytes of the messages waiting (their raw size); past it a message is dropped too.
  /// Queued messages stay alive while they wait, even once the store let them go.
  std::size_t queue_bytes = std::size_t{64} << 20;
  /// Threads sending at once, each with a send function (a connection) of its own: one
  /// connection waits on the server's replies most of the time, so a second keeps the
  /// queue short when mail arrives faster than one round-trip chain can pass it on.
  std::size_t workers = 1;
  /// Messages a worker takes from the queue at once for a batch send (its SMTP client
  /// pipelines them over one connection); 1 with a per-message send.
  std::size_t batch = 1;
};

class mail_sender {
 public:
  /// Sends one message; "" on success, else why not (logged, counted as failed).
  using send_fn = std::function<std::string(const store::stored_message&)>;
  /// Sends several messages in order; one "" or reason per message.
  using batch_send_fn =
      std::function<std::vector<std::string>(const std::vector<store::message_ptr>&)>;
  /// Whether a message is for this sender at all (auto-relay: a recipient matches).
  using wants_fn = std::function<bool(const store::stored_message&)>;

  /// One `send` shared by every worker (cfg.workers of them).
  mail_sender(mail_sender_config cfg, send_fn send, wants_fn wants = {});
  /// `make_send()` once per worker: each sends through what its call made (a client).
  mail_sender(mail_sender_config cfg, const std::function<send_fn()>& make_send,
              wants_fn wants = {});
  /// `make_batch_send()` once per worker; each takes up to cfg.batch queued messages a time.
  mail_sender(mail_sender_config cfg, const std::function<batch_send_fn()>& make_batch_send,
              wants_fn wants = {});
  ~mail_sender();
  mail_sender(const mail_sender&) = delete;
  mail_sender& operator=(const mail_sender&) = delete;

  /// Never blocks beyond a short lock: queues `m`, or counts a drop when full.
  void enqueue(store::message_ptr m);
  /// Stops the thread once the message in hand is sent; queued ones are dropped (counted).
  void stop();
  /// inlet_<name>_{sent,failed,dropped}_total and inlet_<name>_queue_depth.
  void append_metrics(std::string& out) const;

  std::uint64_t sent() const noexcept { return sent_.load(); }
  std::uint64_t failed() const noexcept { return failed_.load(); }
  std::uint64_t dropped() const noexcept { return dropped_.load(); }

 private:
  void start();
  void run(const batch_send_fn& send);

  mail_sender_config cfg_;
  std::vector<batch_send_fn> sends_;  // one per worker
  wants_fn wants_;
  bounded_queue<store::message_ptr> queue_;
  std::atomic<std::uint64_t> sent_{0}, failed_{0}, dropped_{0};
  std::atomic<std::size_t> queued_bytes_{0};
  std::vector<std::thread> workers_;
};

/// `raw` with header field `name` set to `value` (every earlier instance, folded lines
/// included, removed; the new one first), for Mailpit's override-from and subject prefix.
std::string with_header(std::string_view raw, std::string_view name, std::string_view value);

/// The value of the first header field `name` of `raw` (unfolded), or empty.
std::string header_value(std::string_view raw, std::string_view name);

}  // namespace inlet::outbound

namespace inlet::outbound {

/// Mailpit's override-from: the From address replaced by `address` (its display name
/// kept), the original address kept as X-Original-From; a From added when there is none.
std::string override_from(std::string_view raw, std::string_view address);

/// Mailpit's subject prefix: Subject becomes "PREFIX SUBJECT" (`subject` decoded, as the
/// summary holds it), RFC 2047-encoded when it is not ASCII.
std::string prefix_subject(std::string_view raw, std::string_view prefix,
                           std::string_view subject);

}  // namespace inlet::outbound
