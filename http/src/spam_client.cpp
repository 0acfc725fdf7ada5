// The blocking halves of the spam checks, run on the api's thread pool: a SPAMC/1.5
// REPORT over TCP or a Unix socket (non-blocking socket, poll against one deadline), and
// rspamd's POST /checkv2 through libcurl. Both bounded by the configured timeout and
// reply size.
#include <curl/curl.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "spam_check.hpp"

namespace inlet::http::detail {
namespace {

using clock_type = std::chrono::steady_clock;

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

int remaining_ms(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on fd; false on the deadline.
bool wait_for(int fd, short events, clock_type::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ms = remaining_ms(deadline);
    if (ms == 0) return false;
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// A non-blocking connect within the deadline; "" and fd set, or why not.
std::string connect_to(const sockaddr* sa, socklen_t len, int family,
                       clock_type::time_point deadline, fd_guard& out) {
  fd_guard g{::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (g.fd < 0) return std::strerror(errno);
  if (::connect(g.fd, sa, len) != 0) {
    if (errno != EINPROGRESS) return std::strerror(errno);
    if (!wait_for(g.fd, POLLOUT, deadline)) return "timed out";
    int err = 0;
    socklen_t el = sizeof err;
    ::getsockopt(g.fd, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err != 0) return std::strerror(err);
  }
  std::swap(out.fd, g.fd);
  return {};
}

std::string dial(const std::string& service, clock_type::time_point deadline, fd_guard& out) {
  if (service.starts_with("unix:")) {
    const std::string path = service.substr(5);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof sa.sun_path) return "invalid Unix socket path";
    std::memcpy(sa.sun_path, path.data(), path.size());
    auto why = connect_to(reinterpret_cast<const sockaddr*>(&sa), sizeof sa, AF_UNIX, deadline, out);
    return why.empty() ? why : "dial unix " + path + ": " + why;
  }
  const auto colon = service.rfind(':');
  if (colon == std::string::npos) return "missing port in address " + service;
  std::string host = service.substr(0, colon);
  const std::string port = service.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";  // Go dials the local system for ":783"
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return "dial tcp " + service + ": " + ::gai_strerror(rc);
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    why = connect_to(a->ai_addr, a->ai_addrlen, a->ai_family, deadline, out);
    if (why.empty()) break;
  }
  ::freeaddrinfo(res);
  return why.empty() ? why : "dial tcp " + service + ": " + why;
}

bool send_all(int fd, std::string_view data, clock_type::time_point deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return false;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

spam_result spamassassin_check(const spam_check_config& cfg, const std::string& raw) {
  spam_result r;
  const auto deadline = clock_type::now() + cfg.timeout;
  fd_guard fd;
  if (auto why = dial(cfg.spamassassin, deadline, fd); !why.empty()) {
    r.error = why;
    return r;
  }
  const std::string head =
      "REPORT SPAMC/1.5\r\nContent-length: " + std::to_string(raw.size()) + "\r\n\r\n";
  if (!send_all(fd.fd, head, deadline) || !send_all(fd.fd, raw, deadline)) {
    r.error = remaining_ms(deadline) == 0 ? "spamd: timed out sending the message"
                                          : std::string("spamd: ") + std::strerror(errno);
    return r;
  }
  ::shutdown(fd.fd, SHUT_WR);  // spamd reads to the end of the request
  spamd_reply_parser parser(cfg.max_reply_bytes);
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd.fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (!parser.feed(std::string_view(buf, static_cast<std::size_t>(n)))) break;
    } else if (n == 0) {
      parser.finish();
      break;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd.fd, POLLIN, deadline)) {
        r.error = "spamd: timed out waiting for the reply";
        return r;
      }
    } else if (errno != EINTR) {
      r.error = std::string("spamd: ") + std::strerror(errno);
      return r;
    }
  }
  return parser.result();
}

namespace {

struct body_sink {
  std::string data;
  std::size_t max = 0;
  bool too_long = false;
};

std::size_t collect(char* p, std::size_t size, std::size_t n, void* user) {
  auto* s = static_cast<body_sink*>(user);
  if (s->data.size() + size * n > s->max) {
    s->too_long = true;
    return 0;  // ends the transfer
  }
  s->data.append(p, size * n);
  return size * n;
}

}  // namespace

spam_result rspamd_check(const spam_check_config& cfg, const std::string& raw) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  spam_result r;
  CURL* h = curl_easy_init();
  if (!h) {
    r.error = "out of memory";
    return r;
  }
  const std::string url = cfg.rspamd + "/checkv2";
  body_sink sink{{}, cfg.max_reply_bytes, false};
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  // No form content type, and no 100-continue wait on a large message.
  headers = curl_slist_append(headers, "Content-Type:");
  headers = curl_slist_append(headers, "Expect:");
  std::string pw;
  if (!cfg.rspamd_password.empty()) {
    pw = "Password: " + cfg.rspamd_password;
    headers = curl_slist_append(headers, pw.c_str());
  }
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, raw.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(raw.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(cfg.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(cfg.timeout.count()));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "inlet spam check");
  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  if (sink.too_long) {
    r.error = "Rspamd's reply is longer than " + std::to_string(cfg.max_reply_bytes) + " bytes";
    return r;
  }
  if (rc != CURLE_OK) {
    r.error = "Post \"" + url + "\": " + (errbuf[0] ? errbuf : curl_easy_strerror(rc));
    return r;
  }
  return read_rspamd_reply(status, sink.data);
}

}  // namespace inlet::http::detail
