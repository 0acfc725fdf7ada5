// What every I/O model shares: the model_driver interface behind server's
// pimpl, the counters, the deliver-hook call, admission (connection limits),
// the refusal replies and the per-connection session config. The protocol
// and every connection policy are in connection.hpp; the Asio models' common
// part in driver_asio.hpp, the blocking models' in driver_blocking.hpp.
//
// Internal to inlet::smtp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <inlet/smtp/server.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

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

/// The models: coro and async-1n/nn/n2n (driver_coro.cpp), stackful,
/// thread, process (driver_<model>.cpp).
std::unique_ptr<model_driver> make_coro_driver(const server_config& cfg, deliver_fn deliver);
std::unique_ptr<model_driver> make_stackful_driver(const server_config& cfg, deliver_fn deliver);
std::unique_ptr<model_driver> make_thread_driver(const server_config& cfg, deliver_fn deliver);
std::unique_ptr<model_driver> make_process_driver(const server_config& cfg, deliver_fn deliver);

/// Counters of a server. Only lock-free atomics and no pointers, so the
/// process model can place one in memory shared with its children.
struct driver_counters {
  std::atomic<std::uint64_t> accepted{0}, refused{0}, delivered{0}, rejected{0}, queue_seq{0};
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

/// The stats of a driver with counters `c` and `active` open connections.
server_stats stats_of(const driver_counters& c, std::size_t active);

/// Without a deliver hook a message is accepted and dropped (a sink), with a
/// queue id from `c.queue_seq`.
delivery_result sink_answer(driver_counters& c);
/// The answer when the deliver hook throws.
delivery_result hook_failed();
/// Counts the answer as delivered (2xx) or rejected.
void count(driver_counters& c, const delivery_result& r);
/// Calls the hook and blocks until its callback ran (blocking models).
delivery_result deliver_sync(const deliver_fn& hook, driver_counters& c, received_message&& msg);

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

}  // namespace inlet::smtp::detail
