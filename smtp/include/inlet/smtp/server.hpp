// inlet::smtp::server — the I/O front of the SMTP/LMTP session: listeners,
// connections, timeouts, limits, graceful stop. Each I/O model is a thin driver
// over inlet::smtp::server_session; Asio stays out of this header.
//
// Thread-safety: start(), stop(), wait(), local_endpoints() and stats() may be
// called from any thread; stop() is also safe from a signal-handling thread
// (it only posts work). The deliver hook is called from the I/O threads; its
// callback may be invoked from any thread, exactly once.
#pragma once

#include <inlet/smtp/message.hpp>
#include <inlet/smtp/server_session.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace inlet::smtp {

/// How connections are driven. See docs/smtp.md for what each does.
enum class io_model : std::uint8_t {
  coro,      ///< C++20 coroutines, one io_context, a thread per core (default)
  async_1n,  ///< one io_context, N threads (same coroutine driver)
  async_nn,  ///< one io_context per thread, each thread pinned, round-robin accept
  async_n2n, ///< one io_context per core, two threads each
  thread,    ///< blocking sockets, one thread per connection
  stackful,  ///< stackful coroutines (asio::spawn + yield_context), one io_context, N threads
  process,   ///< a process per connection (fork after accept), blocking I/O in the child;
             ///< the deliver hook runs in the child (see docs/smtp.md)
};

/// Parses "coro", "async-1n", "async-nn", "async-n2n", "thread", "stackful",
/// "process". False if unknown.
bool parse_io_model(std::string_view name, io_model& out) noexcept;
std::string_view to_string(io_model m) noexcept;

struct listen_endpoint {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0 = pick a free port; see server::local_endpoints()
  bool lmtp = false;       ///< speak LMTP (RFC 2033) on this listener
  /// TLS from the first byte (SMTPS, RFC 8314), before the greeting; needs tls_cert.
  /// SMTP listeners only.
  bool implicit_tls = false;
};

struct server_config {
  std::vector<listen_endpoint> listen{listen_endpoint{}};
  session_config session;               ///< hostname, limits, domains, extensions
  io_model model = io_model::coro;
  unsigned threads = 0;                 ///< 0 = std::thread::hardware_concurrency()
  unsigned reads_per_event = 1;         ///< async models: reads per wake-up (>= 1)
  unsigned accepts_per_event = 1;       ///< coro/async/stackful: accepts per listener wake-up (>= 1)
  std::chrono::milliseconds greeting_timeout{std::chrono::minutes(5)};  ///< first command
  std::chrono::milliseconds command_timeout{std::chrono::minutes(5)};   ///< per command line
  std::chrono::milliseconds data_timeout{std::chrono::minutes(3)};      ///< per body read
  std::chrono::milliseconds message_timeout{std::chrono::minutes(10)};  ///< whole body
  /// After stop(): how long a transaction in flight may take to finish; then
  /// every remaining connection gets 421 4.3.2 (where it can be written) and
  /// is closed, so a client stalled inside DATA cannot hold wait() for
  /// data_timeout.
  std::chrono::milliseconds shutdown_grace{std::chrono::seconds(30)};
  /// Every slot taken: a client within its shares takes the slot of the
  /// slowest connection (evict_when_full), else 421 4.7.0.
  std::size_t max_connections = 10000;
  std::size_t max_connections_per_ip = 1000;  ///< 421 4.7.0 past it
  /// Connections from one subnet (the address masked to subnet_prefix_v4 /
  /// subnet_prefix_v6 bits); 421 4.7.0 past it. 0 = no limit.
  std::size_t max_connections_per_subnet = 2500;
  unsigned subnet_prefix_v4 = 24;
  unsigned subnet_prefix_v6 = 64;
  /// Slot pressure begins when this share (percent) of max_connections is open
  /// and ends below four fifths of it; 0 = never. Under pressure a client whose
  /// IP or subnet already has pressure_per_ip / pressure_per_subnet
  /// connections is refused, and the greeting, command, data and reply-write
  /// timeouts are cut to pressure_timeout (Postfix's stress mode).
  unsigned pressure_percent = 75;
  std::size_t pressure_per_ip = 50;
  std::size_t pressure_per_subnet = 200;
  std::chrono::milliseconds pressure_timeout{std::chrono::seconds(10)};
  /// Octets per second a body must keep up (DATA and BDAT): each read
  /// advances the body's deadline by its size / min_data_rate, never past
  /// now + data_timeout, so a trickled body runs out of time however it
  /// spreads its bytes (a command line already has to arrive whole within
  /// its timeout). 0 = every read restarts data_timeout.
  std::size_t min_data_rate = 500;
  /// When every slot is taken, a new client within its shares takes the slot
  /// of the slowest connection waiting for its client (over-share groups
  /// first); that one gets 421 4.7.0 and is closed. Not in the process model.
  bool evict_when_full = true;
  /// After a wave of connections ends (the open count falls to half its
  /// peak, the peak at least 256 above), give freed memory back to the
  /// system: the buffer pool's spare fragments and malloc_trim(0). Process-wide.
  bool release_memory = true;
  std::size_t read_buffer_size = 64 * 1024;
  /// Async models: `false` (default) reads into the zero-copy segmented
  /// buffer; `true` reads into a per-connection std::string and copies each
  /// message body out (a copying baseline, for comparisons).
  bool flat_receive_buffer = false;
  /// Optional: an observer for each message body, fed while it is received
  /// (message.hpp, body_observer); every I/O model supports it. Empty (default):
  /// no observer, no cost.
  body_observer_factory body_observer;
  std::string tls_cert;                 ///< PEM certificate chain file; enables STARTTLS
                                        ///< (every model)
  std::string tls_key;                  ///< PEM private key file
};

struct server_stats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;  ///< over a connection limit
  std::uint64_t connections_evicted = 0;  ///< closed to make room (evict_when_full)
  bool under_pressure = false;            ///< slot pressure now (pressure_percent)
  std::uint64_t messages_delivered = 0;   ///< deliver hook answered 2xx
  std::uint64_t messages_rejected = 0;    ///< deliver hook answered 4xx/5xx
  std::uint64_t active_connections = 0;
};

class server {
 public:
  /// `deliver` may be empty: messages are then accepted and dropped (a sink).
  server(server_config cfg, deliver_fn deliver);
  ~server();  ///< stops and waits
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Binds every listener and starts the I/O threads.
  std::error_code start();
  /// Bound endpoints in listen order (port 0 resolved).
  std::vector<listen_endpoint> local_endpoints() const;
  /// Graceful stop: stop accepting; idle sessions get 421 4.3.2 now, sessions
  /// in a transaction finish it and then get 421 4.3.2; after
  /// shutdown_grace the rest get 421 4.3.2 and are closed. Returns at once.
  void stop();
  /// Blocks until every connection is closed and the I/O threads have exited.
  void wait();
  server_stats stats() const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace inlet::smtp
