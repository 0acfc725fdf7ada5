// Mailpit's webhook: for each new message, a POST of its MessageSummary JSON to a fixed
// URL, at most `limit` requests a second, each after `delay`. Failures are logged and
// counted, never retried (as Mailpit). Work is handed over through a bounded queue and
// sent by one thread of its own with one reused libcurl handle (HTTP keep-alive), so the
// store's and SMTP's threads never wait on the receiver.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "inlet/outbound/bounded_queue.hpp"
#include "inlet/store/types.hpp"

namespace inlet::outbound {

struct webhook_config {
  std::string url;                          ///< empty: no webhook
  int limit = 1;                            ///< requests a second; 0: unlimited
  std::chrono::seconds delay{0};            ///< wait before each request
  std::chrono::seconds timeout{5};          ///< per request (Mailpit's client timeout)
  std::size_t queue_capacity = 1000;        ///< messages waiting; more are dropped
  bool allow_internal = true;               ///< false: refuse loopback/private targets
  std::string label;                        ///< non-empty: sent as Mailpit-Label
  std::string user_agent = "inlet";
};

/// Minimum spacing between requests for `limit` a second (zero when unlimited).
std::chrono::nanoseconds webhook_interval(int limit);

/// Whether `url`'s host is a literal loopback, private, link-local or unspecified
/// address (or "localhost"): Mailpit's --allow-internal-http-requests rule.
bool is_internal_url(std::string_view url);

class webhook_sender {
 public:
  using payload_fn = std::function<std::string(const store::stored_message&)>;

  webhook_sender(webhook_config cfg, payload_fn payload);
  ~webhook_sender();
  webhook_sender(const webhook_sender&) = delete;
  webhook_sender& operator=(const webhook_sender&) = delete;

  /// Never blocks beyond a short lock: queues `m`, or counts a drop when full.
  void enqueue(store::message_ptr m);

  /// Stops the sending thread; queued messages are dropped (counted).
  void stop();

  /// Prometheus lines: inlet_webhook_{sent,failed,dropped}_total, inlet_webhook_queue_depth.
  void append_metrics(std::string& out) const;

  std::uint64_t sent() const noexcept { return sent_.load(); }
  std::uint64_t failed() const noexcept { return failed_.load(); }
  std::uint64_t dropped() const noexcept { return dropped_.load(); }

 private:
  void run();

  webhook_config cfg_;
  payload_fn payload_;
  bounded_queue<store::message_ptr> queue_;
  std::atomic<std::uint64_t> sent_{0}, failed_{0}, dropped_{0};
  std::thread worker_;
};

}  // namespace inlet::outbound
