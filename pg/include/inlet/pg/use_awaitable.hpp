// The default completion token of inlet::pg: like asio::use_awaitable, but for our
// std::error_code signatures. `co_await conn.async_query(q)` returns the value and
// throws pg::error on failure (asio's use_awaitable only throws for
// boost::system::error_code and would hand back a tuple here).
#pragma once
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <tuple>

#include "inlet/pg/error.hpp"

namespace inlet::pg {
struct use_awaitable_t {
  constexpr use_awaitable_t() = default;
};
inline constexpr use_awaitable_t use_awaitable{};

namespace detail {
template <class... Ts>
struct awaitable_value {
  using type = std::tuple<Ts...>;
};
template <>
struct awaitable_value<> {
  using type = void;
};
template <class T>
struct awaitable_value<T> {
  using type = T;
};
}  // namespace detail
}  // namespace inlet::pg

namespace inlet::pg::detail {
// The handler of the default token: resumes the awaiting coroutine with the value, or
// with pg::error when the error_code is set. It mirrors Asio's own use_awaitable
// handler (boost/asio/impl/use_awaitable.hpp, Boost 1.81) so that `co_await op(...)`
// costs one coroutine frame, like Asio's token, instead of a wrapper coroutine around
// as_tuple(use_awaitable) (two frames, two resumptions; see docs/benchmarks/pg.md).
// The operation hands it its diagnostics before a failure (set_diagnostics), so the
// thrown pg::error carries them.
template <class Executor, class T, class... Ts>
class pg_awaitable_handler : public boost::asio::detail::awaitable_handler_base<Executor, T> {
 public:
  using boost::asio::detail::awaitable_handler_base<Executor, T>::awaitable_handler_base;

  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { diag_ = std::move(d); }

  template <class... A>
  void operator()(std::error_code ec, A&&... a) {
    auto* f = this->frame();
    f->attach_thread(this);
    if (ec)
      f->set_except(std::make_exception_ptr(error(ec, diag_ ? std::move(*diag_) : diagnostics{})));
    else if constexpr (std::is_void_v<T>)
      f->return_void();
    else if constexpr (sizeof...(A) == 1)
      f->return_value(std::forward<A>(a)...);
    else
      f->return_value(T(std::forward<A>(a)...));
    f->clear_cancellation_slot();
    f->pop_frame();
    this->pump();
  }

 private:
  std::unique_ptr<diagnostics> diag_;
};
}  // namespace inlet::pg::detail

template <class... Ts>
struct boost::asio::async_result<inlet::pg::use_awaitable_t, void(std::error_code, Ts...)> {
  using executor_type = boost::asio::any_io_executor;
  using value_type = typename inlet::pg::detail::awaitable_value<std::decay_t<Ts>...>::type;
  using handler_type =
      inlet::pg::detail::pg_awaitable_handler<executor_type, value_type, std::decay_t<Ts>...>;
  using return_type = boost::asio::awaitable<value_type, executor_type>;

  template <class Initiation, class... Args>
  static handler_type* do_init(boost::asio::detail::awaitable_frame_base<executor_type>* frame,
                               Initiation& initiation, Args&... args) {
    handler_type handler(frame->detach_thread());
    std::move(initiation)(std::move(handler), std::move(args)...);
    return nullptr;
  }

  template <class Initiation, class... Args>
  static return_type initiate(Initiation initiation, inlet::pg::use_awaitable_t, Args... args) {
    co_await [&](auto* frame) { return do_init(frame, initiation, args...); };
    for (;;) {
    }  // never reached: the handler resumes the caller directly
  }
};
