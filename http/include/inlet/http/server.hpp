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
  std::uint16_t port = 8025;                       ///< 0: any free port
  std::size_t threads = 1;                         ///< own I/O threads (when `io` is null)
  boost::asio::io_context* io = nullptr;           ///< run on the caller's io_context instead
  std::size_t header_limit = 16 * 1024;            ///< bytes of request line + headers (431 above)
  std::size_t body_limit = 1024 * 1024;            ///< request body bytes (413 above)
  std::chrono::milliseconds read_timeout{30000};   ///< per request, header to body end
  std::chrono::milliseconds idle_timeout{60000};   ///< keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30000};  ///< per response / per event write
  std::size_t max_requests_per_connection = 1000;  ///< then "Connection: close"
  std::size_t max_connections = 4096;              ///< beyond: accept and close at once
  std::size_t event_queue_limit = 1024;            ///< events queued per slow client, then dropped
  std::chrono::milliseconds event_ping{15000};     ///< SSE comment to keep proxies open
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
