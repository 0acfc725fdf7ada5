// What the Asio models (coro, async-1n/nn/n2n, stackful) share: the
// connection object, accepting and admission, the registry of live
// connections, the deadline reaper, the graceful stop, the thread topology,
// the STARTTLS context (TLS itself runs in the connection core) and the bridge from the deliver
// hook's callback back to the connection's strand. A model adds only its dispatcher: how it waits
// for an action to complete (completion handlers or a stackful fiber), in
// driver_coro.cpp and driver_stackful.cpp.
//
// Internal to inlet::smtp.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "connection.hpp"
#include "driver_common.hpp"

namespace inlet::smtp::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// One connection of an Asio model. It holds only what must survive while the
// peer is silent: an idle connection is a pending readiness wait whose
// handler owns it (see connection::action::idle). There is no timer per
// connection: `deadline` is checked by the server's reaper.
//
// Ownership: a shared_ptr held by whatever waits for it (dispatcher, readiness
// handler); the registry holds a weak_ptr. Touched only on its strand, except
// the two deadlines, which the reaper reads from its own strand, and the
// admission slot it is (admission.hpp), whose wake() posts a cancel to the
// strand. The pending wait's deadline is kept as it is with and without slot
// pressure, so a flip of the pressure needs no work per connection: the
// reaper reads the one that applies.
struct delivery_slot;

struct asio_conn : std::enable_shared_from_this<asio_conn>, slot {
  static constexpr clock::rep no_deadline = std::numeric_limits<clock::rep>::max();
  asio_conn(tcp::socket s, const conn_policy& p, std::shared_ptr<const session_config> cfg)
      : sock(std::move(s)), conn(p, std::move(cfg)) {
    conn.set_slot(this);
  }
  ~asio_conn() override;
  void wake() noexcept override;
  tcp::socket sock;

  connection conn;
  // The pending wait's deadline (steady_clock ticks), without and with pressure.
  std::atomic<clock::rep> deadline{no_deadline}, deadline_pressed{no_deadline};
  bool armed = false;  // a wait, write or handshake the reaper may cancel is pending
  delivery_slot* delivering = nullptr;  // the delivery in progress, if any

  /// The pending action's deadlines, for the reaper.
  void arm() noexcept {
    auto rep = [](clock::time_point t) {
      return t == clock::time_point::max() ? no_deadline : t.time_since_epoch().count();
    };
    deadline.store(rep(conn.deadline(false)), std::memory_order_relaxed);
    deadline_pressed.store(rep(conn.deadline(true)), std::memory_order_relaxed);
    armed = true;
  }
  void disarm() noexcept {
    deadline.store(no_deadline, std::memory_order_relaxed);
    deadline_pressed.store(no_deadline, std::memory_order_relaxed);
    armed = false;
  }
  clock::rep deadline_now(bool under_pressure) const noexcept {
    return (under_pressure ? deadline_pressed : deadline).load(std::memory_order_relaxed);
  }
};

// Results of socket operations as the connection's next action (each ends
// the wait the reaper was watching).
action read_now(asio_conn& c);  ///< a non-blocking read
action after_read(asio_conn& c, const error_code& ec, std::size_t n);
/// A readiness wait ended: read, or report why it ended.
inline action after_wait(asio_conn& c, const error_code& ec) {
  return ec ? after_read(c, ec, 0) : read_now(c);
}
action after_write(asio_conn& c, const error_code& ec);
/// Writes output() without waiting. True when that settled it (`next` is the
/// next action); false when the socket is full: the rest (`rest`) needs an
/// asynchronous write, whose deadline is armed. Replies are small, so this is
/// the usual case.
bool write_now(asio_conn& c, asio::const_buffer& rest, action& next);

// The deliver hook's answer for one message, in a slot that comes from a
// per-thread pool and goes back to it once the answer is taken: a delivery
// allocates nothing. The callback the hook gets holds the slot and its
// generation only (16 trivially copyable bytes, which std::function keeps
// inline); a stale copy of a callback (a second call, or one after the slot
// went on to another delivery) sees another generation and is ignored. The
// hook may answer inline (taken at once) or later from any thread: then the
// answer is posted to the connection's strand, the slot holding the
// connection until that handler has run (asio_server::resume_delivery).
// A slot is freed only with its thread's pool, when the I/O thread ends.
struct delivery_slot {
  /// The callback; any thread. Only the first call of generation `g` counts.
  void answer(std::uint64_t g, delivery_result r);
  static delivery_slot* acquire();
  static void release(delivery_slot* s) noexcept;

  std::mutex m;
  std::uint64_t gen = 0;  // guarded by m
  bool inline_phase = true;
  bool answered = false;
  bool ready = false;  // on the strand: the later answer has arrived
  std::optional<delivery_result> result;
  std::shared_ptr<asio_conn> conn;      // only while a later answer is awaited
  asio::steady_timer* timer = nullptr;  // stackful: what the fiber waits on
  class asio_server* server = nullptr;
};

class asio_server : public model_driver {
 public:
  asio_server(const server_config& cfg, deliver_fn d);
  std::error_code start() override;
  std::vector<listen_endpoint> local_endpoints() const override { return bound_; }
  void stop() override;
  void wait() override;
  server_stats stats() const override;

 protected:
  friend struct delivery_slot;
  /// Runs a connection that was just admitted, from its first action, on
  /// `ex` (the connection's strand).
  virtual void spawn(std::shared_ptr<asio_conn> c, const asio::any_io_executor& ex) = 0;
  /// Starts the delivery of the connection's message. True when the answer
  /// came inline: delivered() takes it. False: the answer comes later, and
  /// resume_delivery() runs on the connection's strand when it has.
  bool deliver(const std::shared_ptr<asio_conn>& c);
  /// The answer of a finished delivery, counted, as the next action.
  action delivered(asio_conn& c);
  /// A later answer has arrived (c->delivering->ready): go on with delivered().
  virtual void resume_delivery(std::shared_ptr<asio_conn> c) = 0;

  /// The close action: shut the socket, release the admission slot.
  void finish(asio_conn& c);

  const server_config cfg_;
  std::atomic<bool> stopping_{false};

 private:
  void accept_next(std::size_t i);
  void take(tcp::socket s, listener_kind kind);
  asio::io_context& next_ctx();
  clock::duration reap_period() const;
  void tick();
  bool reap();
  template <class F>
  void post_to_each(F f);

  deliver_fn hook_;
  conn_policy policy_;
  driver_counters cnt_;
  admission adm_;
  memory_keeper memory_;  // the reaper's
  // The reaper's place in conns_ when a tick had more expirations than it
  // posts at once (reap_batch); the next tick, 10 ms later, goes on from it.
  std::list<std::weak_ptr<asio_conn>>::iterator reap_at_;
  bool reap_more_ = false;
  std::unique_ptr<tls_context> tls_;  // STARTTLS, when a certificate is configured
  std::vector<std::unique_ptr<asio::io_context>> ctxs_;
  std::vector<std::thread> threads_;
  // Keep every io_context running while the server lives (the per-core
  // contexts of async-nn/n2n have no work of their own until a connection lands).
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
  std::vector<listen_endpoint> bound_;
  std::atomic<std::size_t> rr_{0};
  std::optional<asio::steady_timer> reaper_;   // on a strand of ctxs_[0]; see reap()
  std::mutex mu_;                              // guards conns_
  std::list<std::weak_ptr<asio_conn>> conns_;  // pruned by reap()
};

std::unique_ptr<model_driver> make_coro_driver(const server_config& cfg, deliver_fn deliver);

}  // namespace inlet::smtp::detail
