// inlet::pop3::server — the POP3 session on one TCP listener, run by the SMTP
// server's connection drivers (its I/O models, admission, deadlines, TLS,
// graceful stop): clear text with STLS or implicit TLS. It reads the maildrop
// through the store's async interface, so every store (memory, file,
// PostgreSQL) is served alike. Asio stays out of this header.
//
// Thread-safety: start(), stop(), wait() and stats() may be called from any
// thread. The store is used from the server's I/O threads and must outlive the
// server.
#pragma once

#include <chrono>
#include <cstdint>
#include <inlet/net/admission.hpp>
#include <inlet/pop3/session.hpp>
#include <inlet/smtp/server.hpp>
#include <memory>
#include <string>
#include <system_error>

namespace inlet::store {
class store;
}

namespace inlet::pop3 {

/// How a listener with a certificate speaks TLS.
enum class tls_mode : std::uint8_t {
  implicit,  ///< TLS from the first byte (POP3S; what Mailpit does with --pop3-tls-cert)
  stls,      ///< clear text, STLS offered (RFC 2595)
};

/// POP3's admission unless configured: 1,000 slots, 1,000 per address, no subnet
/// limit, pressure from 75 % (shares 50 per address, 200 per subnet), eviction on.
net::admission_limits default_admission() noexcept;

struct server_config {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0: pick a free port (see server::port())
  session_config session;  ///< label, limits, credentials (session.stls is set by the server)
  std::string tls_cert;    ///< PEM certificate chain file; empty: no TLS
  std::string tls_key;     ///< PEM private key file (empty: in tls_cert)
  tls_mode tls = tls_mode::implicit;
  /// The I/O model, as the SMTP server's (inletd: --io-model). Every model but
  /// `process` (start() answers errc::bad_config): a forked child could not
  /// remove messages from the parent's store.
  smtp::io_model model = smtp::io_model::coro;
  unsigned threads = 1;                 ///< I/O threads of the Asio models (0: one per core)
  /// Admission by SMTP's rules (inlet/net/admission.hpp): limits per address and
  /// subnet, slot pressure, and when every slot is taken an idle connection's slot
  /// given to the newcomer; else -ERR [SYS/TEMP] and close.
  net::admission_limits admission = default_admission();
  /// Under slot pressure the idle timeout is at most this.
  std::chrono::milliseconds pressure_timeout{std::chrono::seconds(10)};
  /// Waiting for a command (RFC 1939 3: an autologout timer of at least 10 minutes).
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  /// The whole TLS handshake (implicit TLS or after STLS).
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(30)};
  /// Writing one batch of replies (a client that stops reading).
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
  /// After stop(): how long a store call in flight may take before the
  /// connection is answered -ERR [SYS/TEMP] and closed.
  std::chrono::milliseconds shutdown_grace{std::chrono::seconds(30)};
};

struct server_stats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;  ///< over a limit (total, per address, per subnet)
  std::uint64_t connections_evicted = 0;  ///< idle ones closed to make room
  bool under_pressure = false;            ///< slot pressure now
  std::uint64_t active_connections = 0;
  std::uint64_t sign_ins = 0;             ///< maildrops listed
  std::uint64_t messages_retrieved = 0;   ///< RETR and TOP answered from the store
  std::uint64_t messages_deleted = 0;     ///< removed from the store at QUIT
};

class server {
 public:
  server(server_config cfg, store::store& messages);
  ~server();  ///< stops and waits
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Loads the certificate, binds and starts the I/O threads. errc::bad_config
  /// when the certificate cannot be loaded; a system error when binding fails.
  std::error_code start();
  /// The bound address and port (after start()).
  std::string address() const;
  std::uint16_t port() const;
  /// Stops accepting; a connection waiting for a command gets
  /// "-ERR [SYS/TEMP] server shutting down" and is closed (nothing it marked is
  /// removed); one in the middle of a command finishes it first. Returns at once.
  void stop();
  /// Blocks until every connection is closed and the I/O threads have exited.
  void wait();
  server_stats stats() const;
  /// Appends the counters in Prometheus' text format (inlet_pop3_*), for /metrics.
  void append_metrics(std::string& out) const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace inlet::pop3
