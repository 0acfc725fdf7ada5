// The typed operations of a connection: the handler, the query and a sink that turns the
// collected result into the handler's arguments, in one node of the connection's request
// FIFO. Internal.
#pragma once
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <memory>
#include <optional>
#include <tuple>

#include "inlet/pg/batch.hpp"
#include "inlet/pg/detail/request.hpp"
#include "inlet/pg/query.hpp"
#include "inlet/pg/result.hpp"
#include "inlet/pg/with_diagnostics.hpp"

namespace inlet::pg::detail {

namespace asio = boost::asio;

class conn_impl;
using conn_ptr = std::shared_ptr<conn_impl>;
void start_request(const conn_ptr& c, request_base* r);
void cancel_request(const conn_ptr& c, const std::shared_ptr<cancel_link>& l);
const asio::any_io_executor& executor_of(const conn_impl& c) noexcept;
diagnostics& diag_of(conn_impl& c) noexcept;
const type_map* types_of(const conn_impl& c) noexcept;
const std::shared_ptr<const type_map>& shared_types_of(const conn_impl& c) noexcept;
/// Installs a cancellation handler when op's handler has a connected slot. The handler
/// only posts to the connection's executor (it may run on any thread).
template <class Op>
void link_cancellation(const conn_ptr& impl, Op* op) {
  auto slot = asio::get_associated_cancellation_slot(op->handler);
  if (!slot.is_connected()) return;
  op->cancel = std::make_shared<cancel_link>(cancel_link{op});
  slot.assign([impl, l = op->cancel](asio::cancellation_type) { cancel_request(impl, l); });
}
template <class Handler>
void clear_cancellation(Handler& h) {
  auto slot = asio::get_associated_cancellation_slot(h);
  if (slot.is_connected()) slot.clear();
}
/// True when a handler's executor is the connection's own. Decided once per op at
/// initiation: such an op takes no outstanding-work guard (the connection's pending
/// socket wait keeps that executor busy while the op is queued), and its completion,
/// which always runs on the connection's executor, calls the handler inline.
template <class Ex>
bool same_executor(const Ex& ex, const conn_impl& c) noexcept {
  if constexpr (std::is_same_v<Ex, asio::any_io_executor>)
    return ex == executor_of(c);
  else
    return false;
}
/// True when the calling thread may run ex's handlers inline (what asio::dispatch checks
/// before it runs a function inline): an io_context executor or a strand of one. Lets
/// the hot paths skip dispatch's type-erased function wrapper (callgrind).
bool running_in(const asio::any_io_executor& ex) noexcept;
template <class Ex>
bool running_in_this_thread(const Ex& ex) noexcept {
  if constexpr (std::is_same_v<Ex, asio::any_io_executor>)
    return running_in(ex);
  else if constexpr (requires { ex.running_in_this_thread(); })
    return ex.running_in_this_thread();
  else
    return false;
}

/// Which transaction a request belongs to, and whether it opens or ends it.
struct lease_tag {
  std::uint64_t owner = 0;
  lease_action action = lease_action::none;
  bool unnamed = false;  // send as an unnamed statement (texts unique per use: cursors)
};

// Sinks turn the collected result into the handler's arguments.
struct connect_sink {
  auto args(conn_impl&, request_base&, std::error_code ec) { return std::make_tuple(ec); }
};
struct raw_sink {  // the result remembers the connection's OID map (result::types)
  auto args(conn_impl& c, request_base& r, std::error_code ec) {
    if (const auto& t = shared_types_of(c)) r.res.set_types(t);
    return std::make_tuple(ec, std::move(r.res));
  }
};
struct exec_sink {
  auto args(conn_impl&, request_base& r, std::error_code ec) {
    return std::make_tuple(ec, ec ? std::uint64_t{0} : r.res.affected_rows());
  }
};
struct batch_sink {
  auto args(conn_impl& c, request_base& r, std::error_code ec) {
    if (const auto& t = shared_types_of(c))
      for (auto& res : r.bat->out_ref().results) res.set_types(t);
    return std::make_tuple(ec, std::move(r.bat->out_ref()));
  }
};
template <class Row, class Out>
struct into_sink {
  Out* out;
  auto args(conn_impl& c, request_base& r, std::error_code ec) {
    std::size_t n = 0;
    if (!ec) {
      type_scope scope(types_of(c));
      ec = r.res.template read_all<Row>(*out, &diag_of(c));
      if (!ec)
        n = static_cast<std::size_t>(r.res.rows());
      else
        r.diag = std::make_unique<diagnostics>(diag_of(c));
    }
    return std::make_tuple(ec, n);
  }
};

// The typed operation: owns the handler, the query and the sink.
template <class Handler, class Sink, class Q = pg::query<>>
struct op_t final : request_base {
  using work_t = std::decay_t<decltype(asio::prefer(
      std::declval<asio::associated_executor_t<Handler, asio::any_io_executor>>(),
      asio::execution::outstanding_work.tracked))>;
  Handler handler;
  Q q;
  Sink sink;
  std::optional<work_t> work;
  bool same_ex = false;  // the handler's executor is the connection's (same_executor)

  op_t(Handler h, Q qq, Sink s) : handler(std::move(h)), q(std::move(qq)), sink(std::move(s)) {
    if constexpr (is_batch<Q>::value) this->bat = &q;
  }
  std::string_view sql() const noexcept override {
    if constexpr (is_batch<Q>::value)
      return {};
    else
      return q.text();
  }
  void bind(param_buffer& pb, std::error_code& e) const override {
    if constexpr (!is_batch<Q>::value) q.bind(pb, e);
  }
  void deliver(conn_impl& c, std::error_code e, completion_from w) override {
    auto a = sink.args(c, *this, e);
    if (std::get<0>(a)) [[unlikely]]
      pass_diagnostics(handler, this->diag);
    if (w == completion_from::own_executor && same_ex) {  // the handler's executor is running us
      clear_cancellation(handler);
      std::apply(std::move(handler), std::move(a));
      return;
    }
    auto ex = asio::get_associated_executor(handler, executor_of(c));
    // The slot is cleared on the handler's side: that is where it may also be emitted.
    auto fn = [h = std::move(handler), a = std::move(a)]() mutable {
      clear_cancellation(h);
      std::apply(std::move(h), std::move(a));
    };
    if (w == completion_from::initiation)
      asio::post(ex, std::move(fn));
    else if (running_in_this_thread(ex))
      fn();  // what dispatch would do, minus its wrapper
    else
      asio::dispatch(ex, std::move(fn));
    work.reset();
  }
  // Ops come from Asio's per-thread recycling cache: no malloc per query once warm.
  using alloc_t = asio::recycling_allocator<op_t>;
  template <class... A>
  static op_t* make(A&&... a) {
    alloc_t al;
    op_t* p = al.allocate(1);
    try {
      return new (p) op_t(std::forward<A>(a)...);
    } catch (...) {
      al.deallocate(p, 1);
      throw;
    }
  }
  void destroy() noexcept override {
    alloc_t al;
    this->~op_t();
    al.deallocate(this, 1);
  }
};

/// Starts a typed operation on a connection. `tag` says which transaction it belongs
/// to (tag.owner, 0 for none) and whether it opens or ends that exclusive ownership.
template <class Sig, class Q, class Sink, class Token>
auto initiate(const conn_ptr& impl, Q q, Sink sink, Token&& token, lease_tag tag = {}) {
  return asio::async_initiate<Token, Sig>(
      [impl, tag](auto h, Q q, Sink sink) {
        using H = decltype(h);
        auto ex = asio::get_associated_executor(h, executor_of(*impl));
        auto* op = op_t<H, Sink, Q>::make(std::move(h), std::move(q), std::move(sink));
        op->owner = tag.owner;
        op->lease = tag.action;
        op->unnamed = tag.unnamed;
        op->same_ex = same_executor(ex, *impl);
        if (!op->same_ex)
          op->work.emplace(asio::prefer(ex, asio::execution::outstanding_work.tracked));
        link_cancellation(impl, op);
        start_request(impl, op);
      },
      token, std::move(q), std::move(sink));
}

}  // namespace inlet::pg::detail
