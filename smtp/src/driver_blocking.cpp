// The blocking dispatcher and the accept thread of the thread and process
// models; see driver_blocking.hpp.
#include "driver_blocking.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace inlet::smtp::detail {
namespace {

constexpr auto tick = std::chrono::milliseconds(250);

// Polls `fd` for `events` until it is ready (true), or until the pending
// action's deadline passes or a stop asks to cancel it (false: the caller
// reports on_interrupted). Sees a stop within one tick.
bool wait_fd(int fd, short events, connection& conn, const std::atomic<bool>& stopping) {
  for (;;) {
    auto now = clock::now();
    if (stopping.load(std::memory_order_relaxed) && conn.on_stop(now)) return false;
    if (now >= conn.deadline()) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(conn.deadline() - now);
    pollfd p{fd, events, 0};
    int r = ::poll(
        &p, 1,
        static_cast<int>(std::clamp<std::chrono::milliseconds>(left + std::chrono::milliseconds(1),
                                                               std::chrono::milliseconds(1), tick)
                             .count()));
    if (r > 0) return true;  // readable, writable, or an error the next call reports
    if (r < 0 && errno != EINTR) return true;
  }
}

// A blocking read into the connection's buffers: the socket's receive
// timeout (one tick) bounds each recvmsg, so a stop or the deadline is seen
// within a tick. One syscall per read while bytes keep coming, as a thread
// per connection should be.
action read_fd(int fd, connection& conn, const std::atomic<bool>& stopping) {
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

action write_fd(int fd, connection& conn, const std::atomic<bool>& stopping) {
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

}  // namespace

void run_blocking(int fd, connection& conn, const std::atomic<bool>& stopping,
                  const std::function<delivery_result(received_message&&)>& deliver) {
  timeval tv{0, static_cast<suseconds_t>(std::chrono::microseconds(tick).count())};
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
      case act::deliver: {
        delivery_result r = deliver(conn.take_message());
        a = conn.on_delivered(r, clock::now());
        break;
      }
      case act::close:
        return;
    }
  }
}

// ---------------------------------------------------------------- listeners

namespace {
std::string ip_text(const sockaddr_storage& a, std::uint16_t& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6) {
    auto& s6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &s6.sin6_addr, buf, sizeof buf);
    port = ntohs(s6.sin6_port);
  } else {
    auto& s4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &s4.sin_addr, buf, sizeof buf);
    port = ntohs(s4.sin_port);
  }
  return buf;
}
}  // namespace

blocking_listeners::~blocking_listeners() {
  for (auto& l : listeners_) ::close(l.fd);
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

std::error_code blocking_listeners::bind_one(const listen_endpoint& l) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, l.address.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(l.port);
    len = sizeof *s4;
  } else if (::inet_pton(AF_INET6, l.address.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(l.port);
    len = sizeof *s6;
  } else {
    return std::make_error_code(std::errc::invalid_argument);
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return {errno, std::system_category()};
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    std::error_code ec(errno, std::system_category());
    ::close(fd);
    return ec;
  }
  len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  std::uint16_t port = 0;
  std::string ip = ip_text(ss, port);
  listeners_.push_back({fd, kind_of(l)});
  bound_.push_back({ip, port, l.lmtp, l.implicit_tls});
  return {};
}

std::error_code blocking_listeners::bind(const server_config& cfg) {
  std::error_code ec;
  for (const auto& l : cfg.listen)
    if ((ec = bind_one(l))) break;
  if (!ec && ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) ec = {errno, std::system_category()};
  if (ec) {
    for (auto& l : listeners_) ::close(l.fd);
    listeners_.clear();
  }
  return ec;
}

void blocking_listeners::run(const std::function<void()>& on_tick,
                             const std::function<void(accepted)>& take) {
  std::vector<pollfd> fds;
  for (const auto& l : listeners_) fds.push_back({l.fd, POLLIN, 0});
  fds.push_back({wake_[0], POLLIN, 0});
  while (!stopped_.load()) {
    if (on_tick) on_tick();
    if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
    for (std::size_t i = 0; i < listeners_.size() && !stopped_.load(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      for (int k = 0; k < 64 && !stopped_.load(); ++k) {  // a burst, then poll again
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        int fd =
            ::accept4(listeners_[i].fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EMFILE || errno == ENFILE)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          break;  // EAGAIN: drained
        }
        accepted a{fd, {}, 0, listeners_[i].kind};
        a.ip = ip_text(peer, a.port);
        take(std::move(a));
      }
    }
  }
  for (auto& l : listeners_) ::close(l.fd);
  listeners_.clear();
}

void blocking_listeners::stop() noexcept {
  stopped_.store(true);
  char c = 1;
  [[maybe_unused]] auto n = ::write(wake_[1], &c, 1);
}

blocking_server::blocking_server(const server_config& cfg, deliver_fn d,
                                 const std::atomic<bool>* conn_stop)
    : cfg_(cfg),
      hook_(std::move(d)),
      policy_(conn_policy::from(cfg_, conn_stop != nullptr ? conn_stop : &stopping_)),
      adm_(limits_of(cfg)) {
  policy_.pressure = &adm_.pressure_flag();
}

std::error_code blocking_server::prepare() {
  if (tls_context::load(cfg_.tls_cert, cfg_.tls_key, tls_))
    return make_error_code(errc::bad_config);
  policy_.use(tls_.get(), cfg_);
  return listeners_.bind(cfg_);
}

void blocking_server::serve(const blocking_listeners::accepted& a, const std::atomic<bool>& stop,
                            driver_counters& cnt, slot* s) {
  {
    connection conn(policy_, policy_.session(a.kind));
    conn.set_remote(a.ip, a.port);
    conn.set_slot(s);
    run_blocking(a.fd, conn, stop, [this, &cnt](received_message&& m) {
      return deliver_sync(hook_, cnt, std::move(m));
    });
  }
  ::shutdown(a.fd, SHUT_RDWR);
  ::close(a.fd);
}

bool admit_blocking(const blocking_listeners::accepted& a, const server_config& cfg, admission& adm,
                    driver_counters& cnt, bool stopping, slot& s) {
  cnt.accepted.fetch_add(1, std::memory_order_relaxed);
  if (stopping || !admitted(adm.admit(s, a.ip))) {
    cnt.refused.fetch_add(1, std::memory_order_relaxed);
    std::string r = stopping ? shutting_down_reply(cfg) : refusal_reply(cfg);
    ::send(a.fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(a.fd, SHUT_RDWR);
    ::close(a.fd);
    return false;
  }
  int one = 1;
  ::setsockopt(a.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return true;
}

}  // namespace inlet::smtp::detail
