// The event-driven Asio models (coro, async-1n, async-nn, async-n2n) for any
// protocol plug: a connection's actions run from completion handlers, on its
// strand. They differ in io_context/thread topology only (asio_server::start).
//
// Each asynchronous step (a readiness wait, the rest of a write the socket
// did not take, a call-out answered later) is one operation whose handler
// holds the connection and goes on with the next action; everything that
// completes at once (a read, a reply write, an inline answer) runs in the
// same handler's loop. So a message costs no coroutine frame, spawn or
// shared state: the only per-step memory is Asio's operation, which Asio
// recycles per thread (it is freed before the handler runs, and the handler
// starts the next one). An idle connection holds its pending wait only.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "driver_asio.hpp"

namespace inlet::smtp::detail {
// Internal linkage: each protocol's instantiation lives in the one file that
// makes it (SMTP: driver_coro.cpp; POP3: pop3/src/server.cpp), so the compiler
// treats run() and its handlers as local and inlines them as it did when this
// was SMTP's alone (measured: docs/smtp.md, "One set of drivers").
namespace {

template <class P>
class coro_driver final : public asio_server<P> {
  using base = asio_server<P>;
  using conn_ptr = typename base::conn_ptr;

 public:
  using base::base;

 private:
  void spawn(conn_ptr c, const asio::any_io_executor& ex) override {
    asio::post(ex, [this, c = std::move(c)]() mutable {
      action first = c->conn.start(clock::now());
      run(std::move(c), first);
    });
  }
  void resume_call(conn_ptr c) override {
    action next = this->answered(*c);
    run(std::move(c), next);
  }
  void run(conn_ptr c, action a);
};

// Runs actions until one has to wait; that one's handler calls run() again.
template <class P>
void coro_driver<P>::run(conn_ptr c, action a) {
  for (;;) {
    switch (a.kind) {
      case act::read:
        a = read_now(*c);
        break;
      case act::wait: {
        c->arm();
        tcp::socket& sock = c->sock;
        sock.async_wait(tcp::socket::wait_read, [this, c = std::move(c)](error_code ec) mutable {
          action next = after_wait(*c, ec);
          run(std::move(c), next);
        });
        return;
      }
      case act::write: {
        asio::const_buffer rest;
        if (write_now(*c, rest, a)) break;
        tcp::socket& sock = c->sock;
        asio::async_write(sock, rest, [this, c = std::move(c)](error_code ec, std::size_t) mutable {
          action next = after_write(*c, ec);
          run(std::move(c), next);
        });
        return;
      }
      case act::call_out:
        if (!this->call_out(c)) return;  // resume_call() goes on
        a = this->answered(*c);
        break;
      case act::close:
        this->finish(*c);
        return;
    }
  }
}

}  // namespace
}  // namespace inlet::smtp::detail
