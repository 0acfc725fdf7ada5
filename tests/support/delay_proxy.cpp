// delay_proxy: a TCP forwarder that holds every byte for a fixed time in each direction,
// so a PostgreSQL shard on loopback behaves as one across a network (this kernel has
// no netem). Order is kept; throughput is not limited, only delayed.
//
//   delay_proxy --listen 127.0.0.1:0 --target 127.0.0.1:5432 --delay-ms 5
// Prints the bound port on the first line of stdout, then runs until killed.
//
// Design: one thread, per connection two pumps (client->server, server->client). A pump
// reads what is there, stamps it with now + delay and queues it; its writer sleeps until
// the head's stamp, then writes every chunk that is due in one gathered write.
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;
using namespace asio::experimental::awaitable_operators;

namespace {

struct pipe_state {
  explicit pipe_state(const asio::any_io_executor& ex) : wake(ex) {}
  std::deque<std::pair<clock_type::time_point, std::string>> queue;
  asio::steady_timer wake;
  bool closed = false;  // the reader saw the end: the writer shuts down after the queue
};

awaitable<void> read_side(tcp::socket& from, std::shared_ptr<pipe_state> p,
                          std::chrono::microseconds delay) {
  std::string buf(64 * 1024, '\0');
  for (;;) {
    auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (ec) break;
    p->queue.emplace_back(clock_type::now() + delay, buf.substr(0, n));
    p->wake.cancel();
  }
  p->closed = true;
  p->wake.cancel();
}

awaitable<void> write_side(tcp::socket& to, std::shared_ptr<pipe_state> p) {
  std::vector<asio::const_buffer> bufs;
  for (;;) {
    if (p->queue.empty()) {
      if (p->closed) break;
      p->wake.expires_at(clock_type::time_point::max());
      co_await p->wake.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    auto due = p->queue.front().first;
    if (due > clock_type::now()) {
      p->wake.expires_at(due);
      co_await p->wake.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    // Everything due now leaves in one write; the queue may grow meanwhile (new chunks
    // are appended behind the ones being written).
    const auto now = clock_type::now();
    std::size_t k = 0;
    bufs.clear();
    for (auto& [at, data] : p->queue) {
      if (at > now) break;
      bufs.push_back(asio::buffer(data));
      ++k;
    }
    auto [ec, n] = co_await asio::async_write(to, bufs, asio::as_tuple(asio::use_awaitable));
    if (ec) break;
    p->queue.erase(p->queue.begin(), p->queue.begin() + static_cast<std::ptrdiff_t>(k));
  }
  boost::system::error_code ignored;
  to.shutdown(tcp::socket::shutdown_send, ignored);
}

awaitable<void> serve(tcp::socket client, tcp::endpoint target, std::chrono::microseconds delay) {
  auto ex = co_await asio::this_coro::executor;
  tcp::socket server(ex);
  auto [ec] = co_await server.async_connect(target, asio::as_tuple(asio::use_awaitable));
  if (ec) co_return;
  client.set_option(tcp::no_delay(true));
  server.set_option(tcp::no_delay(true));
  auto up = std::make_shared<pipe_state>(ex), down = std::make_shared<pipe_state>(ex);
  co_await (read_side(client, up, delay) && write_side(server, up) &&
            read_side(server, down, delay) && write_side(client, down));
}

awaitable<void> accept_loop(tcp::acceptor& acc, tcp::endpoint target,
                            std::chrono::microseconds delay) {
  for (;;) {
    auto [ec, s] = co_await acc.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    asio::co_spawn(acc.get_executor(), serve(std::move(s), target, delay), asio::detached);
  }
}

tcp::endpoint parse_endpoint(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("host:port expected: " + s);
  return {asio::ip::make_address(s.substr(0, colon)),
          static_cast<unsigned short>(std::stoul(s.substr(colon + 1)))};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("TCP forwarder with a fixed delay each way");
  std::string listen = "127.0.0.1:0", target;
  double delay_ms = 0;
  app.add_option("--listen", listen, "address:port to accept on (loopback)");
  app.add_option("--target", target, "address:port to forward to")->required();
  app.add_option("--delay-ms", delay_ms, "one-way delay in milliseconds");
  CLI11_PARSE(app, argc, argv);
  try {
    asio::io_context io(1);
    tcp::acceptor acc(io, parse_endpoint(listen));
    std::cout << acc.local_endpoint().port() << std::endl;
    const auto delay = std::chrono::microseconds(static_cast<long>(delay_ms * 1000));
    asio::co_spawn(io, accept_loop(acc, parse_endpoint(target), delay), asio::detached);
    io.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "delay_proxy: %s\n", e.what());
    return 2;
  }
  return 0;
}
