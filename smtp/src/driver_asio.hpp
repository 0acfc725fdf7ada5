// What the Asio models (coro, async-1n/nn/n2n, stackful) share: the
// connection object, accepting and admission, the registry of live
// connections, the deadline reaper, the graceful stop, the thread topology,
// the STARTTLS context (TLS itself runs in the connection core) and the bridge from the deliver
// hook's callback back to the connection's strand. A model adds only its dispatcher: how it waits
// for an action to complete (C++20 coroutine or stackful fiber), in
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
struct asio_conn : std::enable_shared_from_this<asio_conn>, slot {
  static constexpr clock::rep no_deadline = std::numeric_limits<clock::rep>::max();
  asio_conn(tcp::socket s, const conn_policy& p, std::shared_ptr<const session_config> cfg)
      : sock(std::move(s)), conn(p, std::move(cfg)) {
    conn.set_slot(this);
  }
  ~asio_conn() override { leave(); }
  void wake() noexcept override;
  tcp::socket sock;

  connection conn;
  // The pending wait's deadline (steady_clock ticks), without and with pressure.
  std::atomic<clock::rep> deadline{no_deadline}, deadline_pressed{no_deadline};
  bool armed = false;  // a wait, write or handshake the reaper may cancel is pending

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

// The deliver hook's answer for one message. The hook may answer inline
// (taken at once) or later from any thread (posted to the connection's strand,
// where it cancels `timer` to resume the dispatcher, which waits on it while
// waiting() is true). Only a weak reference to the connection travels with the
// callback: a copy the application keeps after calling it must not keep
// sockets alive past the server.
struct pending_delivery : std::enable_shared_from_this<pending_delivery> {
  void answer(delivery_result r);  // the callback; any thread, the first call counts
  bool waiting() const noexcept { return !result.has_value(); }
  std::mutex m;
  bool inline_phase = true;
  bool answered = false;
  std::optional<delivery_result> result;    // set on the strand
  std::optional<asio::steady_timer> timer;  // only when the answer did not come inline
  std::weak_ptr<asio_conn> conn;
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
  /// Runs a connection that was just admitted, from its first action, on
  /// `ex` (the connection's strand).
  virtual void spawn(std::shared_ptr<asio_conn> c, const asio::any_io_executor& ex) = 0;
  /// A dispatcher's plain-TCP wait: hand the connection to a readiness wait
  /// and return. The handler reads (or reports the interruption) and calls
  /// `resume` with the connection and its next action.
  template <class Resume>
  static void wait_readable(std::shared_ptr<asio_conn> c, const action& a, Resume resume);
  /// Starts the delivery of the connection's message.
  std::shared_ptr<pending_delivery> deliver(const std::shared_ptr<asio_conn>& c);
  /// The answer of a finished delivery, counted, as the next action.
  action delivered(asio_conn& c, pending_delivery& p);

  /// The close action: shut the socket, release the admission slot.
  void finish(asio_conn& c);

  const server_config cfg_;
  std::atomic<bool> stopping_{false};

 private:
  void accept_next(std::size_t i);
  void take(tcp::socket s, bool lmtp);
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

template <class Resume>
void asio_server::wait_readable(std::shared_ptr<asio_conn> c, const action&, Resume resume) {
  c->arm();
  tcp::socket& sock = c->sock;
  sock.async_wait(tcp::socket::wait_read,
                  [c = std::move(c), resume = std::move(resume)](error_code ec) mutable {
                    action next = ec ? after_read(*c, ec, 0) : read_now(*c);
                    resume(std::move(c), next);
                  });
}

std::unique_ptr<model_driver> make_coro_driver(const server_config& cfg, deliver_fn deliver);

}  // namespace inlet::smtp::detail
