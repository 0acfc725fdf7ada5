// The default completion token of inlet::pg: like asio::use_awaitable, but for our
// std::error_code signatures. `co_await conn.async_query(q)` returns the value and
// throws pg::error on failure (asio's use_awaitable only throws for
// boost::system::error_code and would hand back a tuple here).
#pragma once
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <tuple>

#include "inlet/pg/error.hpp"

namespace inlet::pg {
struct use_awaitable_t {
  constexpr use_awaitable_t() = default;
};
inline constexpr use_awaitable_t use_awaitable{};

namespace detail {
template <class... Ts> struct awaitable_value { using type = std::tuple<Ts...>; };
template <> struct awaitable_value<> { using type = void; };
template <class T> struct awaitable_value<T> { using type = T; };
}  // namespace detail
}  // namespace inlet::pg

template <class... Ts>
struct boost::asio::async_result<inlet::pg::use_awaitable_t, void(std::error_code, Ts...)> {
  using value_type = typename inlet::pg::detail::awaitable_value<Ts...>::type;
  using return_type = boost::asio::awaitable<value_type>;

  template <class Initiation, class... Args>
  static return_type initiate(Initiation init, inlet::pg::use_awaitable_t, Args... args) {
    auto t = co_await boost::asio::async_initiate<const boost::asio::as_tuple_t<boost::asio::use_awaitable_t<>>&,
                                                  void(std::error_code, Ts...)>(
        std::move(init), boost::asio::as_tuple(boost::asio::use_awaitable), std::move(args)...);
    if (std::get<0>(t)) throw inlet::pg::error(std::get<0>(t), {});
    if constexpr (sizeof...(Ts) == 1) co_return std::move(std::get<1>(t));
    else if constexpr (sizeof...(Ts) > 1)
      co_return std::apply([](auto&&, auto&&... v) { return value_type(std::move(v)...); }, std::move(t));
  }
};
