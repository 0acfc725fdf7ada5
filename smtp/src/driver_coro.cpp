// The coroutine models (coro, async-1n, async-nn, async-n2n): a C++20
// coroutine per busy connection runs the connection core's actions. They
// differ in io_context/thread topology only (asio_server::start). An idle
// wait ends the coroutine: the connection is handed to a readiness wait whose
// handler starts a new one, so an idle connection holds no coroutine frame.
// Writes and inline delivery answers complete without suspending.
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
  void spawn(std::shared_ptr<asio_conn> c, const asio::any_io_executor& ex) override {
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
    switch (a.kind) {
      case act::read:
        a = read_now(*c);
        break;
      case act::wait: {
        if (a.idle) {  // nothing held: no coroutine either while the peer is silent
          wait_readable(std::move(c), a,
                        [this](auto conn, action next) { resume(std::move(conn), next); });
          co_return;
        }
        c->arm();
        auto [ec] = co_await c->sock.async_wait(tcp::socket::wait_read, tok);
        a = after_wait(*c, ec);
        break;
      }
      case act::write: {
        asio::const_buffer rest;
        if (write_now(*c, rest, a)) break;
        auto [ec, n] = co_await asio::async_write(c->sock, rest, tok);
        a = after_write(*c, ec);
        break;
      }
      case act::deliver: {
        auto p = deliver(c);
        while (p->waiting()) co_await p->timer->async_wait(tok);
        a = delivered(*c, *p);
        break;
      }
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
