// What every I/O model shares: the model_driver interface behind a server's
// pimpl, driver_config, the protocol plug contract, the counters, the
// deliver-hook call, admission (connection limits) and the refusal replies.
// The SMTP connection core and its plug are in connection.hpp; the Asio
// models' common part in driver_asio.hpp, the blocking models' in
// driver_blocking.hpp. POP3 (pop3/src/plug.hpp) plugs into the same drivers.
//
// Internal to inlet::smtp and the protocols built on its drivers (inlet::pop3).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <inlet/smtp/server.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "admission.hpp"
#include "tls.hpp"

namespace inlet::smtp::detail {

using clock = std::chrono::steady_clock;

/// What a connection core asks its driver to do next (connection.hpp describes
/// each, for every protocol).
enum class act : std::uint8_t { read, wait, write, call_out, close };

struct action {
  act kind = act::close;
  clock::time_point deadline = clock::time_point::max();  ///< read, wait, write
  bool idle = false;                                      ///< wait: nothing is held while waiting
};

/// What a listener speaks: SMTP, LMTP, or SMTP inside TLS from the first byte
/// (for POP3: plain, or implicit TLS).
enum class listener_kind : std::uint8_t { smtp, lmtp, smtps };
inline listener_kind kind_of(const listen_endpoint& l) noexcept {
  return l.lmtp ? listener_kind::lmtp : l.implicit_tls ? listener_kind::smtps : listener_kind::smtp;
}

/// What a model driver reads of a server's configuration, whatever its protocol.
struct driver_config {
  std::vector<listen_endpoint> listen;
  io_model model = io_model::coro;
  unsigned threads = 0;  ///< 0: one per core
  unsigned accepts_per_event = 1;
  std::size_t max_connections = 10000;
  bool release_memory = true;
  /// The shortest deadline a connection may have: the reaper ticks at a quarter of it.
  clock::duration shortest_timeout = std::chrono::seconds(1);
  std::string tls_cert, tls_key;  ///< empty: no TLS
  admission_limits limits;
};
/// The driver part of an SMTP server_config.
driver_config driver_config_of(const server_config& cfg);

// A protocol plugged into the drivers: one object per server (P), what the
// driver templates (asio_server<P>, blocking_server<P>, the models) require:
//
//   P::connection   the sans-io connection core: start / on_read /
//                   on_would_block / on_written / on_interrupted / on_lost /
//                   on_stop, read_buffers / output / deadline(bool) / pending /
//                   set_slot / set_remote, answering each with an `action`
//                   (connection.hpp)
//   P::answer       what a call-out answers (SMTP: delivery_result)
//   P::connection P::open(listener_kind) const     a new connection
//   const driver_config& P::driver() const
//   void P::bind(const atomic<bool>* stopping, const atomic<bool>* pressure)
//   void P::use_tls(const tls_context*)            after the certificate loaded
//   void P::call_out(connection&, driver_counters&, Cb cb)
//       act::call_out: hands the connection's pending request to the server's
//       hook; cb(answer) is called once, inline or later from any thread
//   action P::answered(connection&, driver_counters&, answer&&, time_point)
//       the answer, on the connection's thread/strand: resume the connection
//   std::string P::refusal(bool stopping, admit_result) const
//       what a refused client reads (empty: closed without a word)

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

/// SMTP's models: coro and async-1n/nn/n2n (driver_coro.hpp), stackful,
/// thread (driver_<model>.hpp, templates over the plug), process (SMTP only).
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
/// Calls the deliver hook (or answers as a sink, or hook_failed() when it
/// throws); `cb(delivery_result)` runs once, inline or later from any thread.
template <class Cb>
void call_deliver(const deliver_fn& hook, driver_counters& c, received_message&& msg, Cb cb) {
  if (!hook) return cb(sink_answer(c));
  try {
    hook(std::move(msg), cb);
  } catch (...) {
    cb(hook_failed());
  }
}

/// A call-out made synchronous (blocking models): P::call_out, then blocks
/// until its callback ran; the connection's next action.
template <class P>
auto call_sync(P& plug, driver_counters& c, typename P::connection& conn) {
  using answer = typename P::answer;
  // Shared state: the callback may run on another thread after this returned
  // from a spurious wake-up path; keep it alive with the callback.
  struct waiter {
    std::mutex m;
    std::condition_variable cv;
    std::optional<answer> res;
  };
  auto w = std::make_shared<waiter>();
  plug.call_out(conn, c, [w](answer r) {
    std::lock_guard lk(w->m);
    if (w->res) return;  // the first call counts
    w->res = std::move(r);
    w->cv.notify_one();
  });
  std::unique_lock lk(w->m);
  w->cv.wait(lk, [&] { return w->res.has_value(); });
  answer r = std::move(*w->res);
  lk.unlock();
  return plug.answered(conn, c, std::move(r), clock::now());
}

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
