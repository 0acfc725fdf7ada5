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

#include "admission.hpp"

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

/// Counters and the pressure flag of a server. Only lock-free atomics and no pointers, so the
/// process model can place one in memory shared with its children.
struct driver_counters {
  std::atomic<std::uint64_t> accepted{0}, refused{0}, delivered{0}, rejected{0}, queue_seq{0};
  std::atomic<bool> pressure{false};  ///< admission's slot pressure flag (read by connections)
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

/// The stats of a driver with counters `c` and its admission.
server_stats stats_of(const driver_counters& c, const admission& adm);

/// Without a deliver hook a message is accepted and dropped (a sink), with a
/// queue id from `c.queue_seq`.
delivery_result sink_answer(driver_counters& c);
/// The answer when the deliver hook throws.
delivery_result hook_failed();
/// Counts the answer as delivered (2xx) or rejected.
void count(driver_counters& c, const delivery_result& r);
/// Calls the hook and blocks until its callback ran (blocking models).
delivery_result deliver_sync(const deliver_fn& hook, driver_counters& c, received_message&& msg);

/// Gives freed memory back to the system: the buffer pools' spare fragments
/// are freed and the allocator returns its free pages (release_memory), when
/// - a wave of connections is over: the open count has fallen to half its peak
///   since the last release (the peak at least min_wave above it) and stopped
///   falling (or 5 s later); or
/// - the pools' spare fragments stayed above spare_bytes_max for a whole
///   spare_window: a few connections with large messages (no wave) leave up
///   to the pools' global limit (4,096 fragments, 32 MB of 8 KB ones) unused.
/// Called from one thread (the reaper, the accept loop) about once a second
/// with the open count; cheap when nothing happens.
class memory_keeper {
 public:
  explicit memory_keeper(bool enabled) : enabled_(enabled) {}
  /// True when it released memory now.
  bool tick(std::size_t active, clock::time_point now);
  /// The same with the pools' spare bytes given (tests).
  bool tick(std::size_t active, std::size_t spare_bytes, clock::time_point now);
  static constexpr std::size_t min_wave = 256;
  static constexpr std::size_t spare_bytes_max = std::size_t{4} << 20;
  static constexpr clock::duration spare_window = std::chrono::seconds(5);

 private:
  bool wave_over(std::size_t active, clock::time_point now);
  bool spare_unused(std::size_t spare_bytes, clock::time_point now);

  bool enabled_;
  std::size_t peak_ = 0;
  std::size_t last_active_ = 0;
  clock::time_point low_since_ = clock::time_point::max();   // the wave was over from then
  std::size_t spare_low_ = 0;                                // the window's least spare bytes
  clock::time_point spare_from_ = clock::time_point::max();  // the window's start
};

/// The bytes of the buffer pools' global spare lists (what release_memory frees).
std::size_t spare_fragment_bytes() noexcept;

/// Frees the buffer pools' spare fragments and gives the allocator's free pages back.
void release_memory() noexcept;
/// Gives the allocator's free pages back to the system: jemalloc's purge of every
/// arena, tcmalloc's ReleaseFreeMemory, or glibc's malloc_trim(0), whichever is
/// the process's malloc.
void release_free_heap() noexcept;

std::string refusal_reply(const server_config& cfg);        ///< 421 4.7.0 too many connections
std::string shutting_down_reply(const server_config& cfg);  ///< 421 4.3.2

}  // namespace inlet::smtp::detail
