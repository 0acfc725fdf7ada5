// A connection's byte stream: plain TCP, or TLS over it (HTTPS, Mailpit's --ui-tls-cert),
// chosen when the connection is accepted. Beast's HTTP reads and writes, the chunked
// event stream and the websocket all run on it unchanged.
//
// Design note: a std::variant of the two Beast/Asio streams rather than templating the
// session code on the stream type. Every operation visits the variant; both alternatives
// complete with the same signature, and the initiating functions return the same type for
// the same token (void for a handler, one awaitable type for use_awaitable), so a visit
// compiles to one branch per call. The TCP stream stays the lowest layer, so its
// timeouts (expires_after) bound the TLS handshake and every record too.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/teardown.hpp>
#include <utility>
#include <variant>

namespace inlet::http::detail {

class http_stream {
 public:
  using plain = boost::beast::tcp_stream;
  using secure = boost::asio::ssl::stream<boost::beast::tcp_stream>;
  using executor_type = plain::executor_type;
  using next_layer_type = plain;

  /// `tls`: null for plain HTTP; else the server's context (outlives the stream).
  http_stream(boost::asio::ip::tcp::socket&& s, boost::asio::ssl::context* tls)
      : v_(make(std::move(s), tls)) {}

  executor_type get_executor() noexcept { return tcp().get_executor(); }
  plain& next_layer() noexcept { return tcp(); }
  plain& tcp() noexcept {
    return v_.index() == 0 ? std::get<plain>(v_) : std::get<secure>(v_).next_layer();
  }
  boost::asio::ip::tcp::socket& socket() noexcept { return tcp().socket(); }
  bool is_secure() const noexcept { return v_.index() == 1; }
  std::variant<plain, secure>& variant() noexcept { return v_; }

  template <class Duration>
  void expires_after(Duration d) {
    tcp().expires_after(d);
  }
  void expires_never() { tcp().expires_never(); }
  void cancel() { tcp().cancel(); }

  /// The server side of the TLS handshake (a plain stream completes at once).
  template <class Token>
  auto async_handshake(Token&& token) {
    return std::get<secure>(v_).async_handshake(boost::asio::ssl::stream_base::server,
                                                std::forward<Token>(token));
  }

  template <class Buffers, class Token>
  auto async_read_some(const Buffers& b, Token&& token) {
    if (v_.index() == 0) return std::get<plain>(v_).async_read_some(b, std::forward<Token>(token));
    return std::get<secure>(v_).async_read_some(b, std::forward<Token>(token));
  }

  template <class Buffers, class Token>
  auto async_write_some(const Buffers& b, Token&& token) {
    if (v_.index() == 0)
      return std::get<plain>(v_).async_write_some(b, std::forward<Token>(token));
    return std::get<secure>(v_).async_write_some(b, std::forward<Token>(token));
  }

 private:
  static std::variant<plain, secure> make(boost::asio::ip::tcp::socket&& s,
                                          boost::asio::ssl::context* tls) {
    if (tls) return std::variant<plain, secure>(std::in_place_type<secure>, plain(std::move(s)), *tls);
    return std::variant<plain, secure>(std::in_place_type<plain>, std::move(s));
  }

  std::variant<plain, secure> v_;
};

// A websocket over the stream closes the way its lower layer does (found by ADL).
inline void teardown(boost::beast::role_type role, http_stream& s,
                     boost::beast::error_code& ec) {
  using boost::beast::websocket::teardown;
  if (s.is_secure())
    teardown(role, std::get<http_stream::secure>(s.variant()), ec);
  else
    teardown(role, std::get<http_stream::plain>(s.variant()).socket(), ec);
}

template <class Handler>
void async_teardown(boost::beast::role_type role, http_stream& s, Handler&& handler) {
  using boost::beast::websocket::async_teardown;
  if (s.is_secure())
    async_teardown(role, std::get<http_stream::secure>(s.variant()),
                   std::forward<Handler>(handler));
  else
    async_teardown(role, std::get<http_stream::plain>(s.variant()).socket(),
                   std::forward<Handler>(handler));
}

}  // namespace inlet::http::detail
