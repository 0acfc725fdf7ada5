// The raw-socket SMTP client of the driver tests (server_test, observer_test):
// blocking, loopback only, every read bounded (10 s).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inlet::smtp::test {

// Blocking client with bounded waits (every read gives up after 10 s).
class client {
 public:
  /// `source`: the local address to connect from (any 127.x.y.z works on
  /// Linux loopback), or null for the default.
  explicit client(std::uint16_t port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in l{};
      l.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &l.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&l), sizeof l) != 0) return;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~client() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool ok() const { return ok_; }
  // Each send() leaves at once (no Nagle coalescing of small writes).
  void no_delay() {
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  void send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      s.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  // Reads until `n` complete replies (final lines "ddd ") arrived, or EOF/timeout.
  std::string replies(int n) {
    std::string got;
    int finals = 0;
    while (finals < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) break;
      char buf[4096];
      ssize_t k = ::recv(fd_, buf, sizeof buf, 0);
      if (k <= 0) break;
      buf_.append(buf, static_cast<std::size_t>(k));
      std::size_t e;
      while ((e = buf_.find("\r\n")) != std::string::npos) {
        std::string line = buf_.substr(0, e + 2);
        buf_.erase(0, e + 2);
        got += line;
        if (line.size() >= 4 && line[3] == ' ') ++finals;
      }
    }
    return got;
  }
  // The complete reply lines that have arrived by now (no waiting).
  std::string replies_now() {
    std::string got;
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) break;
      char buf[4096];
      ssize_t k = ::recv(fd_, buf, sizeof buf, 0);
      if (k <= 0) break;
      buf_.append(buf, static_cast<std::size_t>(k));
    }
    std::size_t e;
    while ((e = buf_.find("\r\n")) != std::string::npos) {
      got += buf_.substr(0, e + 2);
      buf_.erase(0, e + 2);
    }
    return got;
  }
  // True when the server closed the connection (EOF within 10 s).
  bool closed_by_peer() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::string buf_;
};

}  // namespace inlet::smtp::test
