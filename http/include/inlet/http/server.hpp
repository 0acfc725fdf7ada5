// The HTTP server: Boost.Beast sessions (C++20 coroutines) in front of `api`.
//
// Lifecycle: construct, start() binds and listens (port 0 picks a free port; port() then
// tells which), stop() closes the listener, cancels every session (including event
// streams) and, when the server owns its threads, joins them. The destructor calls stop().
//
// Threads: either the server runs its own io_context on `threads` threads, or it runs on
// the io_context passed in `io` (the caller runs it; stop() then only cancels, sessions
// finish on the caller's threads). Each session runs on its own strand.
//
// Every store call is awaited through the store's asynchronous interface: a session
// waiting for its store is suspended and its I/O thread serves the others.
//
// Thread-safety: start/stop/port from one controlling thread; the store and hooks are
// used concurrently from the I/O threads. The store must outlive the server's sessions.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "inlet/http/api.hpp"

namespace boost::asio {
class io_context;
}

namespace inlet::http {

struct server_config {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8025;              ///< 0: any free port
  std::size_t threads = 0;                ///< own I/O threads (when `io` is null); 0: one per core
  boost::asio::io_context* io = nullptr;  ///< run on the caller's io_context instead
  std::size_t header_limit = 16 * 1024;   ///< bytes of request line + headers (431 above)
  std::size_t body_limit = 1024 * 1024;   ///< request body bytes (413 above)
  /// Timeouts. Past half of max_connections each shrinks with the free slots left (to
  /// 5 % of its value, never under min_timeout), as Postfix's stress mode does.
  std::chrono::milliseconds read_timeout{30000};   ///< first request, header to body end
  std::chrono::milliseconds idle_timeout{60000};   ///< keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30000};  ///< per piece of a response without progress
  std::chrono::milliseconds min_timeout{1000};
  std::size_t max_requests_per_connection = 1000;  ///< then "Connection: close"
  /// Connections at once. When a new one arrives at the cap, the connection that has been
  /// waiting the longest for its client (for a request, or on an event stream) is closed
  /// to make room; when none waits (all are being answered), the new one gets 503 with a
  /// JSON body and is closed.
  std::size_t max_connections = 4096;
  /// An event-stream client is dropped (it reconnects: EventSource, Mailpit's UI) when the
  /// events it has not taken yet exceed this many bytes, or when the oldest of them is
  /// older than event_max_lag (a write that makes no progress for that long counts).
  /// Events are serialised once and shared by every client.
  std::size_t event_max_behind_bytes = 4u << 20;
  std::chrono::milliseconds event_max_lag{30000};
  std::chrono::milliseconds event_ping{15000};  ///< SSE comment / websocket ping interval
  /// Event streams open at once, per client (IPv4 address or IPv6 /64) and in all; past
  /// them a new stream is answered 429 (the client's share) or 503 (all), with
  /// Retry-After. Each stream costs a wake-up and a write per new message.
  std::size_t max_event_streams_per_client = 32;
  std::size_t max_event_streams = 1024;
  /// Freed memory is given back to the system (malloc_trim) once this many connections
  /// have closed and at most a quarter of the slots are in use. 0: never.
  std::size_t trim_after_closed = 256;
  /// HTTPS (Mailpit's --ui-tls-cert / --ui-tls-key): PEM certificate chain and key files;
  /// empty: plain HTTP.
  std::string tls_cert;
  std::string tls_key;
  api_config api;
};

class server {
 public:
  server(store::store& store, server_config cfg);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Binds, listens and starts accepting. Errors: bind/listen failures, already_started.
  std::error_code start();

  /// Stops accepting and cancels every session. Idempotent.
  void stop();

  /// The bound address and port (valid after a successful start()).
  std::string address() const;
  std::uint16_t port() const;

  /// The request handler (for metrics or tests).
  const http::api& api() const noexcept;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace inlet::http
