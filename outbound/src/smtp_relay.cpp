#include "inlet/outbound/smtp_relay.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "inlet/outbound/client_pool.hpp"
#include "inlet/outbound/smtp_client_session.hpp"
#include "inlet/outbound/webhook.hpp"

namespace inlet::outbound {
namespace {

using clock = std::chrono::steady_clock;

// Where a connection is, for the timeouts counted by phase.
enum class phase { resolve, connect, setup, transaction };

struct atomic_counters {
  std::atomic<std::uint64_t> opened{0}, reused{0}, resolve_failures{0};
  std::atomic<std::uint64_t> timeouts[4]{};
};
atomic_counters g_counters;

void count_timeout(phase p) {
  g_counters.timeouts[static_cast<int>(p)].fetch_add(1, std::memory_order_relaxed);
}

const char* phase_name(phase p) {
  switch (p) {
    case phase::resolve: return "resolve";
    case phase::connect: return "connect";
    case phase::setup: return "setup";
    case phase::transaction: return "transaction";
  }
  return "?";
}

std::string helo_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == 0) return "localhost";
  return name;
}

std::string ssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "TLS failure";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Mailpit's internal-address rule on the numeric address connected to.
bool internal(const sockaddr* a) {
  char ip[INET6_ADDRSTRLEN] = {0};
  if (a->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, ip, sizeof ip);
    return is_internal_url(std::string("smtp://") + ip + "/");
  }
  if (a->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, ip, sizeof ip);
    return is_internal_url(std::string("smtp://[") + ip + "]/");
  }
  return true;
}

}  // namespace

// A socket (non-blocking, every wait a poll bounded by the timeout) and, with TLS, the
// OpenSSL session on it; the protocol is the session's.
struct smtp_client::connection {
  int fd = -1;
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  std::chrono::milliseconds timeout;
  smtp_client_session session;
  // The whole set-up's bound, then the current batch's: no wait goes past it.
  clock::time_point deadline = clock::time_point::max();
  phase where = phase::connect;

  connection(std::chrono::seconds t, smtp_client_options opts)
      : timeout(std::chrono::duration_cast<std::chrono::milliseconds>(t)),
        session(std::move(opts)) {}
  ~connection() {
    if (ssl) {
      SSL_shutdown(ssl);
      SSL_free(ssl);
    }
    if (ctx) SSL_CTX_free(ctx);
    if (fd >= 0) ::close(fd);
  }

  // Waits for `events` up to the timeout and the deadline; false (and `err`, the timeout
  // counted by phase) when either passed, or the wait failed.
  bool wait(short events, std::string& err) const {
    pollfd p{fd, events, 0};
    for (;;) {
      const auto now = clock::now();
      auto left = timeout;
      bool by_deadline = false;
      if (deadline != clock::time_point::max()) {
        const auto until = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
        if (until <= left) {
          left = std::max(until, std::chrono::milliseconds(0));
          by_deadline = true;
        }
      }
      const int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r > 0) return true;
      if (r == 0) {
        count_timeout(where);
        err = by_deadline ? std::string("timed out: the ") + phase_name(where) +
                                " took longer than its bound"
                          : std::string("timed out waiting for the server (") +
                                phase_name(where) + ")";
        return false;
      }
      if (errno != EINTR) {
        err = std::string("poll: ") + std::strerror(errno);
        return false;
      }
    }
  }

  bool open(const smtp_relay_config& cfg, std::string& err) {
    const std::string port = std::to_string(cfg.port);
    where = phase::resolve;
    auto resolved = resolve(cfg.host, cfg.port, std::min(deadline, clock::now() + timeout),
                            cfg.lookup);
    if (!resolved.addresses) {
      g_counters.resolve_failures.fetch_add(1, std::memory_order_relaxed);
      if (resolved.timed_out) count_timeout(phase::resolve);
      err = resolved.error;
      return false;
    }
    where = phase::connect;
    err = "no address for " + cfg.host;
    for (addrinfo* a = resolved.addresses.get(); a; a = a->ai_next) {
      if (!cfg.allow_internal && internal(a->ai_addr)) {
        err = "connection to an internal address refused (--allow-internal-http-requests)";
        continue;
      }
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
      if (!ok && errno == EINPROGRESS) {
        ok = wait(POLLOUT, err) && connected(err);
      } else if (!ok) {
        err = std::string("connect: ") + std::strerror(errno);
      }
      if (ok) break;
      ::close(fd);
      fd = -1;
    }
    where = phase::setup;
    if (fd < 0) {
      err = "cannot connect to " + cfg.host + ":" + port + ": " + err;
      return false;
    }
    return true;
  }

  bool connected(std::string& err) {
    int e = 0;
    socklen_t n = sizeof e;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &n);
    if (e == 0) return true;
    err = std::string("connect: ") + std::strerror(e);
    return false;
  }

  bool handshake(const smtp_relay_config& cfg, std::string& err) {
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return err = ssl_error(), false;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!cfg.allow_insecure) {
      SSL_CTX_set_default_verify_paths(ctx);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    }
    ssl = SSL_new(ctx);
    if (!ssl) return err = ssl_error(), false;
    SSL_set_fd(ssl, fd);
    in6_addr ip6;
    in_addr ip4;
    const bool numeric = ::inet_pton(AF_INET, cfg.host.c_str(), &ip4) == 1 ||
                         ::inet_pton(AF_INET6, cfg.host.c_str(), &ip6) == 1;
    if (!numeric) SSL_set_tlsext_host_name(ssl, cfg.host.c_str());
    if (!cfg.allow_insecure) {
      if (numeric)
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), cfg.host.c_str());
      else
        SSL_set1_host(ssl, cfg.host.c_str());
    }
    for (;;) {
      const int r = SSL_connect(ssl);
      if (r == 1) return true;
      const int e = SSL_get_error(ssl, r);
      if (e == SSL_ERROR_WANT_READ) {
        if (!wait(POLLIN, err)) return false;
      } else if (e == SSL_ERROR_WANT_WRITE) {
        if (!wait(POLLOUT, err)) return false;
      } else {
        const long v = SSL_get_verify_result(ssl);
        err = "TLS handshake: " + (v != X509_V_OK ? std::string(X509_verify_cert_error_string(v))
                                                  : ssl_error());
        return false;
      }
    }
  }

  bool write_all(std::string_view data, std::string& err) {
    while (!data.empty()) {
      long n;
      if (ssl) {
        const int r = SSL_write(ssl, data.data(), static_cast<int>(std::min<std::size_t>(
                                                      data.size(), 1 << 30)));
        if (r > 0) {
          n = r;
        } else {
          const int e = SSL_get_error(ssl, r);
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            if (!wait(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, err)) return false;
            continue;
          }
          err = "TLS write: " + ssl_error();
          return false;
        }
      } else {
        n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EAGAIN || errno == EINTR) {
            if (!wait(POLLOUT, err)) return false;
            continue;
          }
          err = std::string("send: ") + std::strerror(errno);
          return false;
        }
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Bytes from the server into `buf`: > 0 read, 0 the server closed, < 0 failed (`err`).
  long read_some(char* buf, std::size_t size, std::string& err) {
    for (;;) {
      if (ssl) {
        const int r = SSL_read(ssl, buf, static_cast<int>(size));
        if (r > 0) return r;
        const int e = SSL_get_error(ssl, r);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
          if (!wait(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, err)) return -1;
          continue;
        }
        if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) return 0;
        err = "TLS read: " + ssl_error();
        return -1;
      }
      const long n = ::recv(fd, buf, size, 0);
      if (n >= 0) return n;
      if (errno == EAGAIN || errno == EINTR) {
        if (!wait(POLLIN, err)) return -1;
        continue;
      }
      err = std::string("recv: ") + std::strerror(errno);
      return -1;
    }
  }

  // An idle kept connection the server has closed (or sent a 421 on) meanwhile.
  bool stale() const {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) != 0 || (ssl && SSL_pending(ssl) > 0);
  }

  // Runs the session until every submitted message has its result; once the set-up is
  // done, the batch has `budget` in all.
  void drive(clock::duration budget) {
    char buf[16384];
    std::string err;
    // Until every reply is in (an RSET's too): a reply left unread would look like the
    // server closing the kept connection at the next batch.
    while (session.awaiting() && !session.failed()) {
      if (where != phase::transaction && session.ready()) {
        where = phase::transaction;
        deadline = clock::now() + budget;
      }
      if (deadline != clock::time_point::max() && clock::now() >= deadline) {
        // A server that keeps bytes coming never makes a wait time out: the bound still holds.
        count_timeout(where);
        return session.connection_lost(std::string("timed out: the ") + phase_name(where) +
                                       " took longer than its bound");
      }
      if (!session.output().empty()) {
        if (!write_all(session.output(), err)) return session.connection_lost(err);
        session.clear_output();
      }
      if (session.wants_tls()) {
        if (!handshake_again(err)) return session.connection_lost(err);
        session.tls_started();
        continue;
      }
      const long n = read_some(buf, sizeof buf, err);
      if (n <= 0) return session.connection_lost(n == 0 ? "the server closed the connection" : err);
      session.receive(std::string_view(buf, static_cast<std::size_t>(n)));
    }
    if (!session.output().empty() && write_all(session.output(), err)) session.clear_output();
  }

  const smtp_relay_config* cfg = nullptr;
  bool handshake_again(std::string& err) { return handshake(*cfg, err); }
};

smtp_client::smtp_client(smtp_relay_config cfg) : cfg_(std::move(cfg)) {}

bool smtp_client::connected() const noexcept { return conn_ && conn_->session.ready(); }

client_counters counters() noexcept {
  client_counters c;
  c.connections_opened = g_counters.opened.load();
  c.connections_reused = g_counters.reused.load();
  c.resolve_failures = g_counters.resolve_failures.load();
  c.timeouts_resolve = g_counters.timeouts[static_cast<int>(phase::resolve)].load();
  c.timeouts_connect = g_counters.timeouts[static_cast<int>(phase::connect)].load();
  c.timeouts_setup = g_counters.timeouts[static_cast<int>(phase::setup)].load();
  c.timeouts_transaction = g_counters.timeouts[static_cast<int>(phase::transaction)].load();
  return c;
}

void append_client_metrics(std::string& out) {
  const client_counters c = counters();
  out += "# TYPE inlet_outbound_connections_total counter\n";
  out += "inlet_outbound_connections_total{kind=\"opened\"} " +
         std::to_string(c.connections_opened) + "\n";
  out += "inlet_outbound_connections_total{kind=\"reused\"} " +
         std::to_string(c.connections_reused) + "\n";
  out += "# TYPE inlet_outbound_resolve_failures_total counter\n";
  out += "inlet_outbound_resolve_failures_total " + std::to_string(c.resolve_failures) + "\n";
  out += "# TYPE inlet_outbound_timeouts_total counter\n";
  const std::pair<const char*, std::uint64_t> by_phase[] = {
      {"resolve", c.timeouts_resolve},
      {"connect", c.timeouts_connect},
      {"setup", c.timeouts_setup},
      {"transaction", c.timeouts_transaction}};
  for (const auto& [name, v] : by_phase)
    out += std::string("inlet_outbound_timeouts_total{phase=\"") + name + "\"} " +
           std::to_string(v) + "\n";
}

smtp_client::~smtp_client() {
  if (conn_ && conn_->session.ready()) {  // a polite QUIT; its reply is not awaited
    conn_->deadline = clock::time_point::max();  // the last batch's bound is not the QUIT's
    conn_->session.quit();
    std::string err;
    conn_->write_all(conn_->session.output(), err);
  }
}

std::string smtp_client::send(const std::string& mail_from, const std::vector<std::string>& rcpt,
                              const std::string& raw, bool all_recipients) {
  auto why = send_many({mail_item{&mail_from, &rcpt, &raw, all_recipients}});
  last_reply_ = last_replies_.empty() ? std::string() : last_replies_.front();
  return why.front();
}

std::vector<std::string> smtp_client::send_many(const std::vector<mail_item>& items) {
  last_replies_.assign(items.size(), {});
  if (items.empty()) return {};
  const bool reused = conn_ && !conn_->stale() && conn_->session.ready();
  if (!reused) conn_.reset();
  if (reused) g_counters.reused.fetch_add(1, std::memory_order_relaxed);
  return run(items, !reused);
}

std::vector<std::string> smtp_client::run(const std::vector<mail_item>& items, bool fresh) {
  std::vector<std::string> why(items.size());
  std::vector<std::size_t> todo(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) todo[i] = i;
  // Messages that never reached the server when a connection ended (a kept one the
  // server had closed, or one it ends after so many messages) go on over a fresh one, as
  // long as each connection passes at least one message on.
  while (!todo.empty()) {
    std::string err;
    if (!conn_) {
      fresh = true;
      smtp_client_options opts;
      opts.helo_name = helo_name();
      opts.require_starttls = cfg_.starttls && !cfg_.tls;
      opts.tls_active = cfg_.tls;
      opts.auth = cfg_.auth;
      opts.username = cfg_.username;
      opts.password = cfg_.password;
      conn_ = std::make_unique<connection>(cfg_.timeout, std::move(opts));
      conn_->cfg = &cfg_;
      conn_->deadline = clock::now() + cfg_.setup_timeout;
      ++connections_;
      g_counters.opened.fetch_add(1, std::memory_order_relaxed);
      if (!conn_->open(cfg_, err) || (cfg_.tls && !conn_->handshake(cfg_, err))) {
        conn_.reset();
        for (std::size_t i : todo) why[i] = "relay failed: " + err;
        return why;
      }
    }
    // The batch's bound: each message's fixed part and its body at the minimum rate.
    clock::duration budget{0};
    const std::size_t rate = std::max<std::size_t>(cfg_.min_data_rate, 1);
    for (std::size_t i : todo)
      budget += cfg_.message_timeout +
                std::chrono::milliseconds(items[i].raw->size() * 1000 / rate);
    for (std::size_t i : todo) {
      outgoing_message m;
      m.id = i;
      m.mail_from = *items[i].mail_from;
      m.rcpt = *items[i].rcpt;
      m.data = items[i].raw;
      m.all_recipients = cfg_.forward_smtp_errors || items[i].all_recipients;
      conn_->session.submit(std::move(m));
    }
    if (conn_->where == phase::transaction) conn_->deadline = clock::now() + budget;
    conn_->drive(budget);
    const bool broken = conn_->session.failed();
    std::vector<std::size_t> again;
    bool progress = false;
    for (auto& r : conn_->session.take_results()) {
      if (r.id >= items.size()) continue;
      if (broken && !r.ok && r.reply.code == 0 && !r.data_sent) {
        again.push_back(r.id);
        why[r.id] = "relay failed: " + r.error;
        continue;
      }
      progress = true;
      if (r.ok) {
        why[r.id].clear();
        continue;
      }
      why[r.id] = "relay failed: " + r.error;
      if (r.reply.code != 0) last_replies_[r.id] = r.reply.first_line();
    }
    if (broken) conn_.reset();
    if (fresh && !progress) break;  // a fresh connection passed nothing on: give up
    std::sort(again.begin(), again.end());
    todo = std::move(again);
    fresh = false;
  }
  return why;
}

std::string send_mail(const smtp_relay_config& cfg, const std::string& mail_from,
                      const std::vector<std::string>& rcpt, const std::string& raw) {
  auto c = client_pool::shared().acquire(cfg);
  return c->send(mail_from, rcpt, raw, cfg.forward_smtp_errors);
}

std::string prepare_release(std::string_view raw, const smtp_relay_config& cfg,
                            std::string_view new_id) {
  // The header block, without the fields we replace (and their folded continuations).
  auto end = raw.find("\r\n\r\n");
  std::size_t body_at = end == std::string_view::npos ? raw.size() : end + 2;
  std::string head;
  bool skipping = false;
  std::size_t i = 0;
  auto drop = [&](std::string_view line) {
    auto colon = line.find(':');
    std::string name(line.substr(0, colon));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return (name == "message-id" && !cfg.preserve_message_ids) ||
           (name == "return-path" && !cfg.return_path.empty());
  };
  while (i < body_at) {
    auto nl = raw.find('\n', i);
    std::size_t e = nl == std::string_view::npos ? body_at : std::min(nl + 1, body_at);
    std::string_view line = raw.substr(i, e - i);
    const bool continuation = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (!continuation) skipping = drop(line);
    if (!skipping) head.append(line);
    i = e;
  }
  std::string out;
  out.reserve(raw.size() + 128);
  if (!cfg.return_path.empty()) out += "Return-Path: <" + cfg.return_path + ">\r\n";
  if (!cfg.preserve_message_ids) out += "Message-ID: <" + std::string(new_id) + ">\r\n";
  out += head;
  out.append(raw.substr(body_at));
  return out;
}

}  // namespace inlet::outbound
