// The event-driven Asio models (coro, async-1n, async-nn, async-n2n): a
// connection's actions run from completion handlers, on its strand. They
// differ in io_context/thread topology only (asio_server::start).
//
// Each asynchronous step (a readiness wait, the rest of a write the socket
// did not take, a delivery answered later) is one operation whose handler
// holds the connection and goes on with the next action; everything that
// completes at once (a read, a reply write, an inline delivery answer) runs
// in the same handler's loop. So a message costs no coroutine frame, spawn or
// shared state: the only per-step memory is Asio's operation, which Asio
// recycles per thread (it is freed before the handler runs, and the handler
// starts the next one). An idle connection holds its pending wait only.
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "driver_asio.hpp"

namespace inlet::smtp::detail {
namespace {

class coro_driver final : public asio_server {
 public:
  using asio_server::asio_server;

 private:
  void spawn(std::shared_ptr<asio_conn> c, const asio::any_io_executor& ex) override {
    asio::post(ex, [this, c = std::move(c)]() mutable {
      action first = c->conn.start(clock::now());
      run(std::move(c), first);
    });
  }
  void resume_delivery(std::shared_ptr<asio_conn> c) override {
    action next = delivered(*c);
    run(std::move(c), next);
  }
  void run(std::shared_ptr<asio_conn> c, action a);
};

// Runs actions until one has to wait; that one's handler calls run() again.
void coro_driver::run(std::shared_ptr<asio_conn> c, action a) {
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
      case act::deliver:
        if (!deliver(c)) return;  // resume_delivery() goes on
        a = delivered(*c);
        break;
      case act::close:
        finish(*c);
        return;
    }
  }
}

}  // namespace

std::unique_ptr<model_driver> make_coro_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<coro_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
