// swallow: the TCP limit for SMTP benchmarks. It reads the client's byte stream and answers
// as little SMTP as a client needs (greeting, EHLO with PIPELINING+CHUNKING, 250 to every
// command, 354 to DATA, 250 after "\r\n.\r\n" or after the BDAT byte count, 221 to QUIT).
// It keeps nothing, parses nothing else, answers once per read (pipelined replies batched).
// Threads: one epoll loop per thread, each with its own SO_REUSEPORT listener.
// Bounded: exits by itself after --max-seconds (default 3600).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

struct conn {
  enum class mode : unsigned char { command, data, bdat } m = mode::command;
  int fd = -1;
  int match = 0;             // data: bytes of "\r\n.\r\n" matched so far
  bool bdat_last = false;
  bool close_after = false;
  std::uint64_t remaining = 0;  // bdat bytes still to swallow
  std::string line;          // command line being assembled
  std::string out;           // replies not yet written
};

constexpr std::string_view ehlo_reply =
    "250-swallow\r\n250-PIPELINING\r\n250-CHUNKING\r\n250-8BITMIME\r\n250 SIZE 104857600\r\n";

bool starts_with_ci(std::string_view s, std::string_view kw) {
  if (s.size() < kw.size()) return false;
  for (std::size_t i = 0; i < kw.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(s[i])) != kw[i]) return false;
  return true;
}

void on_command(conn& c, std::string_view line) {
  if (starts_with_ci(line, "EHLO")) {
    c.out += ehlo_reply;
  } else if (starts_with_ci(line, "DATA")) {
    c.out += "354 go ahead\r\n";
    c.m = conn::mode::data;
    c.match = 2;  // the DATA line ended with CRLF: a "." line may come at once
  } else if (starts_with_ci(line, "BDAT ")) {
    char* end = nullptr;
    const char* p = line.data() + 5;
    std::string num(p, line.size() - 5);
    c.remaining = std::strtoull(num.c_str(), &end, 10);
    c.bdat_last = num.find("LAST") != std::string::npos || num.find("last") != std::string::npos;
    c.m = conn::mode::bdat;
    if (c.remaining == 0) {
      c.out += "250 ok\r\n";
      c.m = conn::mode::command;
    }
  } else if (starts_with_ci(line, "QUIT")) {
    c.out += "221 bye\r\n";
    c.close_after = true;
  } else {
    c.out += "250 ok\r\n";  // HELO, MAIL, RCPT, RSET, NOOP and anything else
  }
}

// Consumes one read's bytes.
void consume(conn& c, const char* p, std::size_t n) {
  static constexpr char eod[] = "\r\n.\r\n";
  std::size_t i = 0;
  while (i < n && !c.close_after) {
    if (c.m == conn::mode::bdat) {
      const std::uint64_t take = std::min<std::uint64_t>(c.remaining, n - i);
      i += take;
      c.remaining -= take;
      if (c.remaining == 0) {
        c.out += "250 ok\r\n";
        c.m = conn::mode::command;
      }
    } else if (c.m == conn::mode::data) {
      if (c.match == 0) {
        const void* cr = std::memchr(p + i, '\r', n - i);
        if (!cr) { i = n; break; }
        i = static_cast<std::size_t>(static_cast<const char*>(cr) - p) + 1;
        c.match = 1;
        continue;
      }
      const char ch = p[i++];
      if (ch == eod[c.match]) {
        if (++c.match == 5) {
          c.out += "250 ok\r\n";
          c.m = conn::mode::command;
          c.match = 0;
        }
      } else {
        c.match = ch == '\r' ? 1 : 0;
      }
    } else {
      const void* nl = std::memchr(p + i, '\n', n - i);
      const std::size_t end = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - p) : n;
      if (c.line.size() < 4096) c.line.append(p + i, std::min(end - i, 4096 - c.line.size()));
      i = end;
      if (!nl) break;
      ++i;
      std::string_view l = c.line;
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      on_command(c, l);
      c.line.clear();
    }
  }
}

std::atomic<bool> g_stop{false};

int make_listener(const sockaddr_in& addr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 4096) != 0) {
    std::perror("swallow: bind/listen");
    std::exit(1);
  }
  return fd;
}

void close_conn(int ep, std::vector<std::unique_ptr<conn>>& conns, int fd) {
  ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  conns[static_cast<std::size_t>(fd)].reset();
}

// Writes what is pending; returns false when the connection must be closed.
bool flush(int ep, conn& c) {
  while (!c.out.empty()) {
    const ssize_t w = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN) {
        epoll_event ev{EPOLLIN | EPOLLOUT, {.fd = c.fd}};
        ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
        return true;
      }
      return false;
    }
    c.out.erase(0, static_cast<std::size_t>(w));
  }
  return !c.close_after;
}

void loop(const sockaddr_in addr) {
  const int lfd = make_listener(addr);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event lev{EPOLLIN, {.fd = lfd}};
  ::epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  std::vector<std::unique_ptr<conn>> conns(1024);
  std::vector<char> buf(256 * 1024);
  epoll_event events[256];
  while (!g_stop.load(std::memory_order_relaxed)) {
    const int n = ::epoll_wait(ep, events, 256, 200);
    for (int k = 0; k < n; ++k) {
      const int fd = events[k].data.fd;
      if (fd == lfd) {
        for (;;) {
          const int cfd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd < 0) break;
          const int one = 1;
          ::setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          if (static_cast<std::size_t>(cfd) >= conns.size()) conns.resize(cfd * 2 + 1);
          auto c = std::make_unique<conn>();
          c->fd = cfd;
          c->out = "220 swallow ESMTP\r\n";
          epoll_event ev{EPOLLIN, {.fd = cfd}};
          ::epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
          if (!flush(ep, *c)) { ::epoll_ctl(ep, EPOLL_CTL_DEL, cfd, nullptr); ::close(cfd); continue; }
          conns[static_cast<std::size_t>(cfd)] = std::move(c);
        }
        continue;
      }
      conn* c = conns[static_cast<std::size_t>(fd)].get();
      if (!c) continue;
      bool alive = true;
      if (events[k].events & EPOLLOUT) {
        epoll_event ev{EPOLLIN, {.fd = fd}};
        ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
      }
      if (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
        if (r == 0 || (r < 0 && errno != EAGAIN)) alive = false;
        else if (r > 0) consume(*c, buf.data(), static_cast<std::size_t>(r));
      }
      if (alive) alive = flush(ep, *c);
      if (!alive) close_conn(ep, conns, fd);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:2525";
  int threads = 1;
  double max_seconds = 3600;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--listen") listen = argv[i + 1];
    else if (a == "--threads") threads = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--max-seconds") max_seconds = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: swallow [--listen 127.0.0.1:PORT] [--threads N] [--max-seconds S]\n");
      return 1;
    }
  }
  const auto colon = listen.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(listen.c_str() + colon + 1)));
  if (colon == std::string::npos || ::inet_pton(AF_INET, listen.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "swallow: bad --listen %s\n", listen.c_str());
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(loop, addr);
  std::fprintf(stderr, "swallow: listening on %s, %d thread(s), exits after %.0f s\n", listen.c_str(),
               threads, max_seconds);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  while (std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  g_stop = true;
  for (auto& t : ts) t.join();
  return 0;
}
