// The `stackful` I/O model for any protocol plug: one io_context, N threads, a
// stackful coroutine (boost::asio::spawn + yield_context, Boost.Context
// fibers) per connection on its own strand, running the connection core's
// actions with `yield[ec]`. Everything else (accept, limits, deadlines, stop)
// is asio_server's.
//
// Stacks: 256 KiB per connection, protected_fixedsize_stack (mmap with a
// guard page: an overflow faults instead of corrupting a neighbour). Only
// the touched pages are resident; an inline call-out runs on this stack
// (inletd parses and filters there), hence the generous size. The fiber lives
// as long as the connection, idle or not: that is the model.
#pragma once

#include <boost/asio/spawn.hpp>
#include <boost/asio/write.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include "driver_asio.hpp"

namespace inlet::smtp::detail {
// Internal linkage, as driver_coro.hpp's dispatcher: one instantiation per protocol,
// in the file that makes it.
namespace {

inline constexpr std::size_t stackful_stack_size = 256 * 1024;

// A fiber's exception must not escape into io_context::run(); the connection
// is closed by the fiber's guard either way.
struct ignore_exception {
  void operator()(std::exception_ptr) const noexcept {}
};

template <class P>
class stackful_driver final : public asio_server<P> {
  using base = asio_server<P>;
  using conn_ptr = typename base::conn_ptr;

 public:
  using base::base;

 private:
  void spawn(conn_ptr c, const asio::any_io_executor& ex) override {
    asio::spawn(
        ex, std::allocator_arg, boost::context::protected_fixedsize_stack(stackful_stack_size),
        [this, c = std::move(c)](asio::yield_context y) { run(c, y); }, ignore_exception{});
  }
  void run(const conn_ptr& c, asio::yield_context& y);
  void resume_call(conn_ptr c) override {
    if (asio::steady_timer* t = c->delivering->timer) t->cancel();
  }
};

template <class P>
void stackful_driver<P>::run(const conn_ptr& c, asio::yield_context& y) {
  struct closer {
    stackful_driver& d;
    asio_conn<P>& c;
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
      case act::call_out:
        if (!this->call_out(c)) {  // the answer comes later: sleep until resume_call()
          asio::steady_timer t(c->sock.get_executor(), clock::time_point::max());
          c->delivering->timer = &t;
          while (!c->delivering->ready) t.async_wait(y[ec]);
        }
        a = this->answered(*c);
        break;
      case act::close:
        return;
    }
  }
}

}  // namespace
}  // namespace inlet::smtp::detail
