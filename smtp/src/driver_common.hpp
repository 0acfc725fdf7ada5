// Pieces shared by the I/O models that live in their own files (stackful,
// process) and by the blocking loop of the thread and process models.
//
// A model in its own file is a complete `model_driver` behind server's pimpl:
// server.cpp only dispatches start/stop/wait/stats to it. The bookkeeping it
// needs (admission, counters, the deliver-hook call) is here so that each
// driver stays a thin loop over server_session.
//
// Internal to inlet::smtp.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <inlet/smtp/server.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "driver_buffer.hpp"

namespace inlet::smtp::detail {

using clock = std::chrono::steady_clock;

/// One I/O model, complete: binds, accepts, runs sessions, stops.
/// Thread-safety as inlet::smtp::server.
class model_driver {
 public:
  virtual ~model_driver() = default;
  virtual std::error_code start() = 0;
  virtual std::vector<listen_endpoint> local_endpoints() const = 0;
  virtual void stop() = 0;
  virtual void wait() = 0;
  virtual server_stats stats() const = 0;
};

std::unique_ptr<model_driver> make_stackful_driver(const server_config& cfg, deliver_fn deliver);
std::unique_ptr<model_driver> make_process_driver(const server_config& cfg, deliver_fn deliver);

/// Counters of a server. Only lock-free atomics and no pointers, so the
/// process model can place one in memory shared with its children.
struct driver_counters {
  std::atomic<std::uint64_t> accepted{0}, refused{0}, delivered{0}, rejected{0}, queue_seq{0};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

/// Calls the deliver hook; `done` runs exactly once. An empty hook accepts
/// and drops the message (a sink) with a queue id from `c.queue_seq`.
void call_deliver(const deliver_fn& hook, driver_counters& c, received_message&& msg,
                  delivery_callback done);
/// Counts the answer as delivered (2xx) or rejected.
void count(driver_counters& c, const delivery_result& r);
/// Calls the hook and blocks until its callback ran (blocking models).
delivery_result deliver_sync(const deliver_fn& hook, driver_counters& c, received_message&& msg);

/// The body of the message being received, as every driver collects it: the
/// pieces of body_data steps (a slice of the receive buffer, or a copy in flat
/// mode), and the application's body_observer told about each, in order.
///
/// Design: one per connection loop (a local of the driver's loop, so a dropped
/// connection drops it). The observer is made from the factory when a body
/// starts (its first piece, or message_complete for an empty body) and leaves
/// with the received_message, or is aborted: on message_aborted, when the
/// loop ends (connection lost, server stopped), and when a new body starts
/// while the old one was never finished. That last case is how the session
/// drops a BDAT body without a step (RSET between chunks, or a new MAIL): a
/// session counts the body octets of the current message (body_size()), and
/// every body_data piece is counted there first, so a piece that does not
/// add up to body_size() belongs to a new message. Without a factory the
/// observer branches are never taken (a null check per piece).
///
/// Memory: a body piece of at least `min_slice` octets is referenced where it
/// was read (a slice of the receive fragment); a smaller one, or one that is
/// not in the receive buffer (the straddle window), is copied into a fragment
/// the collector fills (buffer::copy_appender). So a body pins fragments in
/// proportion to its octets however the client splits them: a trickle of
/// reads of a few bytes, or lines that each start with a stuffed dot, cost a
/// copy, not a fragment or a slice each (docs/buffer.md, "Pinned fragments").
///
/// Not thread-safe; the driver's loop only.
class body_collector {
 public:
  body_collector(const body_observer_factory& f, driver_input& in)
      : factory_(f ? &f : nullptr), in_(in) {}
  ~body_collector() { abort(); }
  body_collector(const body_collector&) = delete;
  body_collector& operator=(const body_collector&) = delete;

  /// A body_data step: `data` (a view into in's current view) must be taken
  /// before in.consumed(). `session_body_size` = server_session::body_size().
  void add(std::string_view data, std::uint64_t session_body_size);
  /// message_complete: the body (and its observer, end() called).
  received_message complete(envelope env, std::uint64_t session_body_size);
  /// message_aborted, or the message is dropped: forget the body.
  void abort() noexcept;
  /// True while part of a body is held (BDAT chunks before the LAST one): a
  /// driver must keep this collector (the async models do not go idle).
  bool holding() const noexcept { return fed_ > 0 || obs_ != nullptr; }

  /// Pieces shorter than this are copied, not referenced.
  static constexpr std::size_t min_slice = 256;

 private:
  void begin();
  const body_observer_factory* factory_;
  driver_input& in_;
  message_body body_;
  buffer::copy_appender copies_;  // small pieces of the current body
  body_observer_ptr obs_;
  std::uint64_t fed_ = 0;  // body octets taken for the current message
};

/// Total and per-client-IP connection limits. Thread-safe.
class admission {
 public:
  admission(std::size_t max_total, std::size_t max_per_ip) : max_(max_total), max_ip_(max_per_ip) {}
  bool admit(const std::string& ip);
  void release(const std::string& ip);
  std::size_t active() const;
  /// Blocks until no connection is active (true) or `deadline` passed (false).
  bool wait_idle_until(clock::time_point deadline);
  /// Blocks until no connection is active.
  void wait_idle();

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::map<std::string, std::size_t> per_ip_;
  std::size_t active_ = 0;
  std::size_t max_, max_ip_;
};

std::string refusal_reply(const server_config& cfg);        ///< 421 4.7.0 too many connections
std::string shutting_down_reply(const server_config& cfg);  ///< 421 4.3.2
/// Opens, binds and listens on every endpoint of cfg.listen, each acceptor
/// with an executor from `make_executor()` (a strand of the accepting
/// context). Appends the acceptors and their bound endpoints (port 0 resolved).
std::error_code open_listeners(const server_config& cfg,
                               const std::function<boost::asio::any_io_executor()>& make_executor,
                               std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>>& out,
                               std::vector<listen_endpoint>& bound);

/// A connection the server does not take: 421 4.3.2 while stopping, else
/// 421 4.7.0 (past the connection limits); then shutdown and close. The
/// write is a best-effort blocking send of one short line.
void refuse(boost::asio::ip::tcp::socket& s, const server_config& cfg, bool stopping);

/// The session config of one connection of `cfg`'s server.
session_config session_for(const server_config& cfg, bool lmtp, bool tls_offered);

/// The blocking loop of the thread and process models (driver_thread.cpp):
/// runs one session over blocking socket `fd` until it closes. Waits for
/// readability with poll() in 250 ms ticks (deadlines, `stopping`); the socket
/// must have SO_RCVTIMEO of about that tick for reads inside a body. Once
/// `stopping` is seen, idle sessions get 421 4.3.2 at once and a transaction
/// may finish within cfg.shutdown_grace; after it, 421 4.3.2 and close.
struct blocking_env {
  const server_config& cfg;
  const std::atomic<bool>& stopping;
  std::function<delivery_result(received_message&&)> deliver;  ///< synchronous
};
void run_blocking_session(int fd, server_session& s, const blocking_env& env);

}  // namespace inlet::smtp::detail
