// The `stackful` I/O model: one io_context, N threads, a stackful coroutine
// (boost::asio::spawn + yield_context, Boost.Context fibers) per connection on
// its own strand, running the connection core's actions with `yield[ec]`.
// Everything else (accept, limits, deadlines, stop) is asio_server's.
//
// Stacks: 256 KiB per connection, protected_fixedsize_stack (mmap with a
// guard page: an overflow faults instead of corrupting a neighbour). Only
// the touched pages are resident; the deliver hook runs on this stack (inletd
// parses and filters there), hence the generous size. The fiber lives as long
// as the connection, idle or not: that is the model.
#include <boost/asio/spawn.hpp>
#include <boost/asio/write.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include "driver_asio.hpp"

namespace inlet::smtp::detail {
namespace {

constexpr std::size_t stack_size = 256 * 1024;

// A fiber's exception must not escape into io_context::run(); the connection
// is closed by the fiber's guard either way.
struct ignore_exception {
  void operator()(std::exception_ptr) const noexcept {}
};

class stackful_driver final : public asio_server {
 public:
  using asio_server::asio_server;

 private:
  void spawn(std::shared_ptr<asio_conn> c, const asio::any_io_executor& ex) override {
    asio::spawn(
        ex, std::allocator_arg, boost::context::protected_fixedsize_stack(stack_size),
        [this, c = std::move(c)](asio::yield_context y) { run(c, y); }, ignore_exception{});
  }
  void run(const std::shared_ptr<asio_conn>& c, asio::yield_context& y);
  void resume_delivery(std::shared_ptr<asio_conn> c) override {
    if (asio::steady_timer* t = c->delivering->timer) t->cancel();
  }
};

void stackful_driver::run(const std::shared_ptr<asio_conn>& c, asio::yield_context& y) {
  struct closer {
    stackful_driver& d;
    asio_conn& c;
    ~closer() { d.finish(c); }
  } guard{*this, *c};
  action a = c->conn.start(clock::now());
  for (;;) {
    error_code ec;
    switch (a.kind) {
      case act::read:
        a = read_now(*c);
        break;
      case act::wait:  // the fiber stays: that is the model
        c->arm();
        c->sock.async_wait(tcp::socket::wait_read, y[ec]);
        a = after_wait(*c, ec);
        break;
      case act::write:
        if (asio::const_buffer rest; !write_now(*c, rest, a)) {
          asio::async_write(c->sock, rest, y[ec]);
          a = after_write(*c, ec);
        }
        break;
      case act::deliver:
        if (!deliver(c)) {  // the answer comes later: sleep until resume_delivery()
          asio::steady_timer t(c->sock.get_executor(), clock::time_point::max());
          c->delivering->timer = &t;
          while (!c->delivering->ready) t.async_wait(y[ec]);
        }
        a = delivered(*c);
        break;
      case act::close:
        return;
    }
  }
}

}  // namespace

std::unique_ptr<model_driver> make_stackful_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<stackful_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
