// The coroutine models (coro, async-1n, async-nn, async-n2n): a C++20
// coroutine per busy connection runs the connection core's actions. They
// differ in io_context/thread topology only (asio_server::start). A plain-TCP
// wait ends the coroutine: the connection is handed to a readiness wait whose
// handler starts a new one, so an idle connection holds no coroutine frame.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "driver_asio.hpp"

namespace inlet::smtp::detail {
namespace {

constexpr auto tok = asio::as_tuple(asio::use_awaitable);

class coro_driver final : public asio_server {
 public:
  using asio_server::asio_server;

 private:
  void spawn(std::shared_ptr<asio_conn> c) override {
    auto ex = c->sock.get_executor();
    asio::co_spawn(ex, run(std::move(c), std::nullopt), asio::detached);
  }
  void resume(std::shared_ptr<asio_conn> c, action a) {
    auto ex = c->sock.get_executor();
    asio::co_spawn(ex, run(std::move(c), a), asio::detached);
  }
  asio::awaitable<void> run(std::shared_ptr<asio_conn> c, std::optional<action> first);
};

asio::awaitable<void> coro_driver::run(std::shared_ptr<asio_conn> c, std::optional<action> first) {
  action a = first ? *first : c->conn.start(clock::now());
  for (;;) {
    error_code ec;
    switch (a.kind) {
      case act::read:
        a = read_now(*c);
        break;
      case act::wait: {
        if (!c->tls) {
          wait_readable(std::move(c), a,
                        [this](auto conn, action next) { resume(std::move(conn), next); });
          co_return;
        }
        std::size_t n = 0;
        c->arm(a.deadline);  // TLS reads directly: the SSL layer may hold bytes the socket does not
                             // show
        std::tie(ec, n) = co_await c->tls->async_read_some(c->conn.read_buffers(), tok);
        a = after_read(*c, ec, n);
        break;
      }
      case act::write:
        c->arm(a.deadline);
        if (c->tls)
          std::tie(ec, std::ignore) =
              co_await asio::async_write(*c->tls, asio::buffer(c->conn.output()), tok);
        else
          std::tie(ec, std::ignore) =
              co_await asio::async_write(c->sock, asio::buffer(c->conn.output()), tok);
        a = after_write(*c, ec);
        break;
      case act::deliver: {
        delivery_wait w(deliver(c), c->sock.get_executor());
        while (!w.done()) co_await w.timer.async_wait(tok);
        a = delivered(*c, *w.p);
        break;
      }
      case act::handshake:
        make_tls(*c);
        c->arm(a.deadline);
        std::tie(ec) = co_await c->tls->async_handshake(asio::ssl::stream_base::server, tok);
        a = after_handshake(*c, ec);
        break;
      case act::close:
        finish(*c);
        co_return;
    }
  }
}

}  // namespace

std::unique_ptr<model_driver> make_coro_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<coro_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
