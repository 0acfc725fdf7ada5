// inlet::pop3::server — the I/O front of the POP3 session: one TCP listener,
// clear text with STLS or implicit TLS, a connection limit, deadlines, graceful
// stop. It reads the maildrop through the store's async interface, so every
// store (memory, file, PostgreSQL) is served alike. Asio stays out of this
// header.
//
// Thread-safety: start(), stop(), wait() and stats() may be called from any
// thread. The store is used from the server's I/O threads and must outlive the
// server.
#pragma once

#include <chrono>
#include <cstdint>
#include <inlet/pop3/session.hpp>
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

struct server_config {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0: pick a free port (see server::port())
  session_config session;  ///< label, limits, credentials (session.stls is set by the server)
  std::string tls_cert;    ///< PEM certificate chain file; empty: no TLS
  std::string tls_key;     ///< PEM private key file (empty: in tls_cert)
  tls_mode tls = tls_mode::implicit;
  unsigned threads = 1;                 ///< I/O threads (0: one per core)
  // Admission (inlet/net/admission.hpp, the rules SMTP's listeners follow): limits per
  // address and subnet, slot pressure, and an idle connection's slot given to a new
  // client when every slot is taken.
  /// Every slot taken: an idle connection is closed to make room (evict_when_full),
  /// else the new client gets -ERR [SYS/TEMP] and is closed.
  std::size_t max_connections = 1000;
  /// Connections from one client address at once (as SMTP's --max-connections-per-ip),
  /// so one host cannot take every slot; past it: -ERR [SYS/TEMP] and close.
  std::size_t max_connections_per_ip = 1000;
  /// From one subnet (the address masked to subnet_prefix_v4 / _v6 bits); 0: no limit.
  std::size_t max_connections_per_subnet = 0;
  unsigned subnet_prefix_v4 = 24;
  unsigned subnet_prefix_v6 = 64;
  /// From this percentage of max_connections open (0: never) a client whose address or
  /// subnet holds pressure_per_ip / pressure_per_subnet already is refused, and the idle
  /// timeout is cut to pressure_timeout.
  unsigned pressure_percent = 75;
  std::size_t pressure_per_ip = 50;
  std::size_t pressure_per_subnet = 200;
  std::chrono::milliseconds pressure_timeout{std::chrono::seconds(10)};
  bool evict_when_full = true;
  /// Waiting for a command (RFC 1939 3: an autologout timer of at least 10 minutes).
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  /// The whole TLS handshake (implicit TLS or after STLS).
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(30)};
  /// Writing one batch of replies (a client that stops reading).
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
};

struct server_stats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;  ///< over a limit (total, per address, per subnet)
  std::uint64_t connections_evicted = 0;  ///< idle ones closed to make room (evict_when_full)
  bool under_pressure = false;            ///< slot pressure now (pressure_percent)
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
