// The accept thread of the thread and process models; see driver_blocking.hpp.
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

std::error_code blocking_listeners::bind(const std::vector<listen_endpoint>& listen) {
  std::error_code ec;
  for (const auto& l : listen)
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

}  // namespace inlet::smtp::detail
