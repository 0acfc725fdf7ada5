// A completion handler behind a virtual call, for operations that wait in a queue of an
// object (listener receives, cluster waits) rather than in a connection's FIFO. Keeps
// outstanding work on the handler's executor; completes by posting to that executor,
// never inline; hands diagnostics to handlers that take them. Internal.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <memory>
#include <tuple>

#include "inlet/pg/with_diagnostics.hpp"

namespace inlet::pg::detail {

template <class... Args>
struct erased_handler {
  virtual ~erased_handler() = default;
  /// Posts the handler with args to its executor. Called once.
  virtual void complete(std::unique_ptr<diagnostics> d, Args... args) = 0;
  /// The handler's cancellation slot (may be unconnected).
  virtual boost::asio::cancellation_slot slot() noexcept = 0;
};

template <class Handler, class... Args>
struct erased_handler_impl final : erased_handler<Args...> {
  using work_t = std::decay_t<decltype(boost::asio::prefer(
      std::declval<boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>>(),
      boost::asio::execution::outstanding_work.tracked))>;
  Handler h;
  work_t work;
  erased_handler_impl(Handler hh, const boost::asio::any_io_executor& fallback)
      : h(std::move(hh)),
        work(boost::asio::prefer(boost::asio::get_associated_executor(h, fallback),
                                 boost::asio::execution::outstanding_work.tracked)) {}
  void complete(std::unique_ptr<diagnostics> d, Args... args) override {
    pass_diagnostics(h, d);
    auto ex = boost::asio::get_associated_executor(h, work);
    boost::asio::post(ex, [h = std::move(h), a = std::make_tuple(std::move(args)...)]() mutable {
      auto s = boost::asio::get_associated_cancellation_slot(h);
      if (s.is_connected()) s.clear();
      std::apply(std::move(h), std::move(a));
    });
  }
  boost::asio::cancellation_slot slot() noexcept override {
    return boost::asio::get_associated_cancellation_slot(h);
  }
};

template <class... Args, class Handler>
std::unique_ptr<erased_handler<Args...>> erase_handler(
    Handler h, const boost::asio::any_io_executor& fallback) {
  return std::make_unique<erased_handler_impl<Handler, Args...>>(std::move(h), fallback);
}

}  // namespace inlet::pg::detail
