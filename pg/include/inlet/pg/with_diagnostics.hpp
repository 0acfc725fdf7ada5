// pg::with_diagnostics(token, diag): a completion token adapter that stores a failed
// operation's diagnostics (server fields, client text) in `diag` before the handler runs,
// for tokens that only see the error_code (callbacks, as_tuple, use_future, deferred...).
//
//   pg::diagnostics d;
//   auto [ec, n] = co_await conn.async_execute(q,
//   pg::with_diagnostics(asio::as_tuple(asio::use_awaitable), d)); if (ec) log(ec, d.to_string());
//
// `diag` is cleared when the operation starts and must outlive it. The default token
// (pg::use_awaitable) needs no adapter: the thrown pg::error carries the diagnostics.
#pragma once
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <memory>
#include <utility>

#include "inlet/pg/error.hpp"

namespace inlet::pg {

template <class Token>
struct with_diagnostics_t {
  Token token;
  diagnostics* diag;
};

template <class Token>
with_diagnostics_t<std::decay_t<Token>> with_diagnostics(Token&& token, diagnostics& d) {
  return {std::forward<Token>(token), &d};
}

namespace detail {
/// Hands a failed operation's diagnostics to handlers that take them (ours: the default
/// token's handler and with_diagnostics'); other handlers ignore them.
template <class Handler>
void pass_diagnostics(Handler& h, std::unique_ptr<diagnostics>& d) {
  if constexpr (requires { h.set_diagnostics(std::move(d)); }) {
    if (d) h.set_diagnostics(std::move(d));
  }
}

template <class Handler>
struct diag_handler {
  Handler inner;
  diagnostics* diag;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept {
    if (d) *diag = std::move(*d);
  }
  template <class... A>
  void operator()(A&&... a) {
    std::move(inner)(std::forward<A>(a)...);
  }
};

template <class Initiation>
struct diag_init {
  Initiation init;
  diagnostics* diag;
  template <class Handler, class... Args>
  void operator()(Handler&& h, Args&&... args) && {
    diag->clear();
    std::move(init)(diag_handler<std::decay_t<Handler>>{std::forward<Handler>(h), diag},
                    std::forward<Args>(args)...);
  }
};
}  // namespace detail
}  // namespace inlet::pg

template <class Token, class... Sigs>
struct boost::asio::async_result<inlet::pg::with_diagnostics_t<Token>, Sigs...> {
  template <class Initiation, class RawToken, class... Args>
  static auto initiate(Initiation&& init, RawToken&& token, Args&&... args) {
    return boost::asio::async_initiate<Token, Sigs...>(
        inlet::pg::detail::diag_init<std::decay_t<Initiation>>{std::forward<Initiation>(init),
                                                               token.diag},
        token.token, std::forward<Args>(args)...);
  }
};

// Executor, allocator and cancellation slot of the inner handler carry through.
template <template <class, class> class Associator, class Handler, class DefaultCandidate>
struct boost::asio::associator<Associator, inlet::pg::detail::diag_handler<Handler>,
                               DefaultCandidate> : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const inlet::pg::detail::diag_handler<Handler>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.inner);
  }
  static auto get(const inlet::pg::detail::diag_handler<Handler>& h,
                  const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.inner, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.inner, c);
  }
};
