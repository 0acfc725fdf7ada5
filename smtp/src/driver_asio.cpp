// The non-template part of the Asio models; see driver_asio.hpp.
#include "driver_asio.hpp"

namespace inlet::smtp::detail {

std::error_code open_listeners(const std::vector<listen_endpoint>& listen,
                               const std::function<asio::any_io_executor()>& make_executor,
                               std::vector<std::unique_ptr<tcp::acceptor>>& out,
                               std::vector<listen_endpoint>& bound) {
  for (const auto& l : listen) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(l.address, ec);
    if (ec) return std::make_error_code(std::errc::invalid_argument);
    auto acc = std::make_unique<tcp::acceptor>(make_executor());
    tcp::endpoint ep(addr, l.port);
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return std::error_code(ec.value(), std::system_category());
    auto local = acc->local_endpoint(ec);
    bound.push_back(
        listen_endpoint{local.address().to_string(), local.port(), l.lmtp, l.implicit_tls});
    out.push_back(std::move(acc));
  }
  return {};
}

// Asio's reactor keeps one small state per socket it ever registered at
// once, in a pool it never frees. Allocated one by one as connections
// arrive, those states end up scattered over the heap between the buffers
// and frames of the connections of that moment, and each pins its page long
// after the wave has gone (measured: ~4 KB of RSS per peak connection that
// malloc_trim cannot return). Registering `n` sockets at start, together,
// packs the states the server will need in a few contiguous pages instead.
// Done on the context's own threads once the server is listening, a chunk per turn: the
// server is ready at once (about 25 us a slot: a quarter of a second for 10,000) and a
// connection that arrives meanwhile waits at most one chunk.
void reserve_socket_states(asio::io_context& ctx, std::size_t n) {
  constexpr std::size_t chunk = 256;
  struct job {
    asio::io_context& ctx;
    std::size_t left;
    std::vector<tcp::socket> socks;
    void step(std::shared_ptr<job> self) {
      for (std::size_t i = 0; i < chunk && left > 0; ++i, --left) {
        error_code ec;
        tcp::socket s(ctx);
        s.open(tcp::v4(), ec);
        if (ec) {  // out of descriptors: as many as there were
          left = 0;
          break;
        }
        socks.push_back(std::move(s));
      }
      if (left > 0) asio::post(ctx, [self]() mutable { self->step(self); });
      // else: the sockets close as the job goes, their states staying in the reactor.
    }
  };
  auto j = std::make_shared<job>(job{ctx, n, {}});
  j->socks.reserve(n);
  asio::post(ctx, [j]() mutable { j->step(j); });
}

void refuse(tcp::socket& s, const std::string& reply) {
  error_code ig;
  if (!reply.empty()) boost::asio::write(s, boost::asio::buffer(reply), ig);
  s.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ig);
  s.close(ig);
}

}  // namespace inlet::smtp::detail
