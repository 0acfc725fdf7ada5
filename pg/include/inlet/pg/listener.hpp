// LISTEN/NOTIFY: a listener owns one dedicated connection (LISTEN is session state, so
// never a pooled one), subscribes to channels and hands notifications out as an async
// stream. When its connection is lost it reconnects (jittered exponential backoff) and
// subscribes again; the first event after that is a *gap*: notifications sent while it
// was away are lost, re-read whatever state they were about. The gap comes once the
// channels are subscribed again, so state read after it misses nothing.
//
//   pg::listener l(io.get_executor(), {.dsn = dsn});
//   co_await l.async_listen("new_mail");
//   for (;;) {
//     pg::notification n = co_await l.async_receive();
//     if (n.gap) resync(); else handle(n.channel, n.payload);
//   }
//   // elsewhere: co_await conn.async_execute(pg::sql("SELECT pg_notify($1, $2)", ch, payload));
//
// Notifications wait in a queue of at most queue_limit; past that they are dropped and a
// gap is reported where they were. A listener keeps its connection (and a socket wait)
// until close() or destruction: io_context::run() does not return while it is open.
// Dead peers without a FIN are noticed through TCP keepalives: put keepalives_idle /
// keepalives_interval / keepalives_count in the DSN.
//
// Thread-safety: all members may be called from any thread (they post to the listener's
// strand). One async_receive at a time (a second one fails with errc::busy).
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "inlet/pg/connection.hpp"
#include "inlet/pg/detail/erased_handler.hpp"

namespace inlet::pg {

struct notification {
  std::string channel;  ///< empty for a gap
  std::string payload;
  int backend_pid = 0;  ///< the notifying session's server process
  /// Notifications may have been missed just before this event (the connection was
  /// re-established, or the queue overflowed); channel and payload are empty.
  bool gap = false;
};

struct listener_options {
  std::string dsn;
  connection_options connection{};
  std::chrono::milliseconds reconnect_initial{100};  ///< first retry after at most this (jittered)
  std::chrono::milliseconds reconnect_max{5'000};    ///< cap of the exponential growth
  std::size_t queue_limit = 65'536;                  ///< notifications waiting for async_receive
};

struct listener_stats {
  std::uint64_t received = 0;    ///< notifications read from the server
  std::uint64_t dropped = 0;     ///< dropped because the queue was full
  std::uint64_t reconnects = 0;  ///< successful re-subscriptions after a loss
  std::uint64_t connect_failures = 0;
  bool connected = false;  ///< subscribed on a live connection right now
};

namespace detail {
class listener_impl;
using listener_ptr = std::shared_ptr<listener_impl>;
void listener_listen(const listener_ptr& l, std::string channel, bool on,
                     std::unique_ptr<erased_handler<std::error_code>> h);
void listener_receive(const listener_ptr& l,
                      std::unique_ptr<erased_handler<std::error_code, notification>> h);
const asio::any_io_executor& listener_executor(const listener_impl& l) noexcept;
}  // namespace detail

class listener {
 public:
  listener(asio::any_io_executor ex, listener_options opts);
  ~listener();  ///< close()
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  /// LISTEN channel (kept across reconnects). Completes once the channel is subscribed
  /// on a live connection (connecting first if needed), or with the connect error if the
  /// connection cannot be made now (the listener keeps trying, the channel stays).
  /// void(error_code)
  template <class Token = pg::use_awaitable_t>
  auto async_listen(std::string channel, Token&& token = {}) {
    return subscribe(std::move(channel), true, std::forward<Token>(token));
  }
  /// UNLISTEN channel. void(error_code)
  template <class Token = pg::use_awaitable_t>
  auto async_unlisten(std::string channel, Token&& token = {}) {
    return subscribe(std::move(channel), false, std::forward<Token>(token));
  }
  /// The next notification (or gap). void(error_code, notification). Cancellable.
  template <class Token = pg::use_awaitable_t>
  auto async_receive(Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, notification)>(
        [l = impl_](auto h) {
          detail::listener_receive(l, detail::erase_handler<std::error_code, notification>(
                                          std::move(h), detail::listener_executor(*l)));
        },
        token);
  }

  /// Closes the connection; pending operations complete with operation_canceled.
  void close();
  listener_stats stats() const;
  /// Was subscribed on a live connection and has lost it (not yet back); false before the
  /// first connection. Any thread.
  bool lost() const noexcept;

 private:
  template <class Token>
  auto subscribe(std::string channel, bool on, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code)>(
        [l = impl_, on](auto h, std::string ch) {
          detail::listener_listen(
              l, std::move(ch), on,
              detail::erase_handler<std::error_code>(std::move(h), detail::listener_executor(*l)));
        },
        token, std::move(channel));
  }
  detail::listener_ptr impl_;
};

}  // namespace inlet::pg
