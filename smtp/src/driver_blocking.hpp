// What the blocking models (thread, process) share, for any protocol plug:
// listeners polled by one accept thread, admission of an accepted socket, and
// the dispatcher that runs the connection core's actions over a blocking
// socket with poll() ticks.
//
// Internal to inlet::smtp and the protocols built on its drivers.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "driver_common.hpp"

namespace inlet::smtp::detail {

// ---------------------------------------------------------------- dispatcher

inline constexpr auto blocking_tick = std::chrono::milliseconds(250);

// Polls `fd` for `events` until it is ready (true), or until the pending
// action's deadline passes or a stop asks to cancel it (false: the caller
// reports on_interrupted). Sees a stop within one tick.
template <class C>
bool wait_fd(int fd, short events, C& conn, const std::atomic<bool>& stopping) {
  for (;;) {
    auto now = clock::now();
    if (stopping.load(std::memory_order_relaxed) && conn.on_stop(now)) return false;
    if (now >= conn.deadline()) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(conn.deadline() - now);
    pollfd p{fd, events, 0};
    auto wait_ms = std::clamp<std::chrono::milliseconds>(left + std::chrono::milliseconds(1),
                                                         std::chrono::milliseconds(1), blocking_tick);
    int r = ::poll(&p, 1, static_cast<int>(wait_ms.count()));
    if (r > 0) return true;  // readable, writable, or an error the next call reports
    if (r < 0 && errno != EINTR) return true;
  }
}

// A blocking read into the connection's buffers: the socket's receive
// timeout (one tick) bounds each recvmsg, so a stop or the deadline is seen
// within a tick. One syscall per read while bytes keep coming, as a thread
// per connection should be.
template <class C>
action read_fd(int fd, C& conn, const std::atomic<bool>& stopping) {
  iovec iov[16];
  int k = 0;
  for (auto b : conn.read_buffers()) {
    if (k == 16) break;
    iov[k++] = iovec{b.data(), b.size()};
  }
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = static_cast<std::size_t>(k);
  for (;;) {
    ssize_t n = ::recvmsg(fd, &m, 0);
    if (n > 0) return conn.on_read(static_cast<std::size_t>(n), clock::now());
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
      return conn.on_lost();
    auto now = clock::now();
    if ((stopping.load(std::memory_order_relaxed) && conn.on_stop(now)) || now >= conn.deadline())
      return conn.on_interrupted(now);
  }
}

template <class C>
action write_fd(int fd, C& conn, const std::atomic<bool>& stopping) {
  std::string_view out = conn.output();
  while (!out.empty()) {
    ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(fd, POLLOUT, conn, stopping)) return conn.on_interrupted(clock::now());
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return conn.on_lost();
    }
  }
  return conn.on_written(clock::now());
}


template <class C, class CallOut>
/// Runs `conn` over blocking socket `fd` until it closes. Waits with poll() in
/// ticks of at most 250 ms, so deadlines and `stopping` are seen within one
/// tick; reads and writes never block (MSG_DONTWAIT). `call_out(conn)` makes
/// the call-out synchronously and returns the next action (call_sync).
void run_blocking(int fd, C& conn, const std::atomic<bool>& stopping, CallOut call_out) {
  timeval tv{0, static_cast<suseconds_t>(std::chrono::microseconds(blocking_tick).count())};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  action a = conn.start(clock::now());
  for (;;) {
    switch (a.kind) {
      case act::read:  // a thread may block: no separate readiness wait
        a = read_fd(fd, conn, stopping);
        break;
      case act::wait:  // idle: poll first, so that no fragment is held while the peer is silent
        if (a.idle && !wait_fd(fd, POLLIN, conn, stopping))
          a = conn.on_interrupted(clock::now());
        else
          a = read_fd(fd, conn, stopping);
        break;
      case act::write:
        a = write_fd(fd, conn, stopping);
        break;
      case act::call_out:
        a = call_out(conn);
        break;
      case act::close:
        return;
    }
  }
}


/// The listening sockets of a blocking model and the loop of its accept
/// thread. Thread-safety: bind() and run() from one thread; stop() from any.
class blocking_listeners {
 public:
  blocking_listeners() = default;
  ~blocking_listeners();
  blocking_listeners(const blocking_listeners&) = delete;
  blocking_listeners& operator=(const blocking_listeners&) = delete;

  std::error_code bind(const std::vector<listen_endpoint>& listen);
  const std::vector<listen_endpoint>& bound() const noexcept { return bound_; }

  struct accepted {
    int fd;
    std::string ip;
    std::uint16_t port;
    listener_kind kind;
  };
  /// Until stop(): polls the listeners (50 ms ticks, `on_tick` each round),
  /// accepts bursts of up to 64 and passes each socket to `take`, which owns
  /// it. Closes the listeners before it returns.
  void run(const std::function<void()>& on_tick, const std::function<void(accepted)>& take);
  /// Makes run() return (async-signal-safe: a write to a pipe).
  void stop() noexcept;

 private:
  struct listener {
    int fd;
    listener_kind kind;
  };
  std::error_code bind_one(const listen_endpoint& l);
  std::vector<listener> listeners_;
  std::vector<listen_endpoint> bound_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopped_{false};
};

/// Counts the connection and admits `s` for it (which may evict the slowest
/// connection); past the limits (or while stopping) writes the plug's refusal
/// on `fd` and closes it, returning false.
template <class P>
bool admit_blocking(const blocking_listeners::accepted& a, const P& plug, admission& adm,
                    driver_counters& cnt, bool stopping, slot& s) {
  cnt.accepted.fetch_add(1, std::memory_order_relaxed);
  admit_result r = stopping ? admit_result::full : adm.admit(s, a.ip);
  if (stopping || !admitted(r)) {
    cnt.refused.fetch_add(1, std::memory_order_relaxed);
    std::string reply = plug.refusal(stopping, r);
    if (!reply.empty()) ::send(a.fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(a.fd, SHUT_RDWR);
    ::close(a.fd);
    return false;
  }
  int one = 1;
  ::setsockopt(a.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

/// What the thread and process drivers share: the plug (config, hook,
/// connection policy), the limits, TLS, the listeners and the accept thread.
/// `conn_stop` is the flag connections watch (the process model's children
/// have their own); null: this server's `stopping_`.
template <class P>
class blocking_server : public model_driver {
 public:
  template <class... A>
  explicit blocking_server(const std::atomic<bool>* conn_stop, A&&... plug_args)
      : plug_(std::forward<A>(plug_args)...), cfg_(plug_.driver()), adm_(cfg_.limits) {
    plug_.bind(conn_stop != nullptr ? conn_stop : &stopping_, &adm_.pressure_flag());
  }
  std::vector<listen_endpoint> local_endpoints() const override { return listeners_.bound(); }
  P& plug() noexcept { return plug_; }

 protected:
  /// Loads the TLS context and binds the listeners.
  std::error_code prepare() {
    if (tls_context::load(cfg_.tls_cert, cfg_.tls_key, tls_))
      return make_error_code(errc::bad_config);
    plug_.use_tls(tls_.get());
    return listeners_.bind(cfg_.listen);
  }
  /// Runs the connection of `a` on the calling thread to its end, then
  /// closes the socket. Call-outs are counted in `cnt`; the connection keeps
  /// `s` (its admission slot, or null) current.
  void serve(const blocking_listeners::accepted& a, const std::atomic<bool>& stop,
             driver_counters& cnt, slot* s) {
    {
      typename P::connection conn(plug_.open(a.kind));
      conn.set_remote(a.ip, a.port);
      conn.set_slot(s);
      run_blocking(a.fd, conn, stop,
                   [this, &cnt](typename P::connection& c) { return call_sync(plug_, cnt, c); });
    }
    ::shutdown(a.fd, SHUT_RDWR);
    ::close(a.fd);
  }

  P plug_;
  const driver_config& cfg_;
  std::atomic<bool> stopping_{false};
  admission adm_;
  std::unique_ptr<tls_context> tls_;
  blocking_listeners listeners_;
  std::thread acceptor_;
};

}  // namespace inlet::smtp::detail
