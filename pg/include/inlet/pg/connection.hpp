// An asynchronous PostgreSQL connection over libpq in non-blocking pipeline mode, driven
// by Asio (a posix::stream_descriptor on PQsocket waiting for readiness).
//
// Requests issued while others are in flight are pipelined automatically: each is sent at
// once with its own Sync, so a failing statement never aborts a neighbour. Statements are
// prepared on first use and cached per connection (LRU, keyed by SQL text and parameter
// OIDs); set statement_cache_size = 0 for PgBouncer in transaction mode.
//
// Every operation: async_xxx(..., CompletionToken&& token = {}) with the default token
// usable with co_await (asio::deferred, use_future, yield_context, callbacks work too),
// plus synchronous forms (error_code and throwing) for scripts and tests. A failed
// operation's diagnostics travel with it: in the pg::error the default token throws, or
// through pg::with_diagnostics(token, diag) for other tokens.
//
// Thread-safety: a connection is bound to its executor, which must not run two of its
// handlers at once (an io_context run by one thread, or a strand; the pool gives each
// connection a strand). Every entry into the connection runs there: initiating functions,
// cancellation (Asio cancellation slots emitted from any thread), close() and the
// destructor post to it when called from elsewhere. Handlers run on their own associated
// executor. The synchronous forms must not be mixed with in-flight async operations
// (they return errc::busy) and are used from one thread at a time. is_open(),
// is_idle_clean(), in_flight(), last_diagnostics() and stats() read state owned by the
// executor: call them there, or when no operation is in flight and the caller has
// synchronized with the last completion (as the pool does).
// Results handed to handlers are owned values; views into them follow result.hpp.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "inlet/pg/batch.hpp"
#include "inlet/pg/detail/op.hpp"
#include "inlet/pg/detail/request.hpp"
#include "inlet/pg/error.hpp"
#include "inlet/pg/query.hpp"
#include "inlet/pg/result.hpp"
#include "inlet/pg/use_awaitable.hpp"
#include "inlet/pg/with_diagnostics.hpp"

namespace inlet::pg {

namespace asio = boost::asio;

struct connection_options {
  std::size_t statement_cache_size = 256;      ///< 0: no prepared statements
  std::chrono::milliseconds query_timeout{0};  ///< 0: none; else per request
  /// Deadline of each host's connect attempt (libpq ignores connect_timeout in
  /// asynchronous connects; we enforce it). 0: the DSN's connect_timeout, else 10 s.
  std::chrono::milliseconds connect_timeout{0};
  /// User-defined types (oid_map.hpp): shared by every connection given these options
  /// (a pool's); async_lookup_types fills the OIDs once.
  std::shared_ptr<const type_map> types{};
};

/// Counters of one connection (read on its executor).
struct connection_stats {
  std::uint64_t queries = 0;         ///< requests completed (ok or not)
  std::uint64_t errors = 0;          ///< requests completed with an error
  std::uint64_t prepares = 0;        ///< statements prepared (cache misses)
  std::uint64_t bytes_sent = 0;      ///< SQL text + parameter bytes handed to libpq
  std::uint64_t bytes_received = 0;  ///< libpq memory of data results received (PQresultMemorySize)
  std::uint64_t cancels = 0;         ///< server-side cancel requests issued
};

namespace detail {
void start_connect(const conn_ptr& c, std::string dsn, request_base* r);
}  // namespace detail

class connection;
namespace detail {
const conn_ptr& impl_of(const connection& c) noexcept;
}
class connection {
 public:
  using executor_type = asio::any_io_executor;

  explicit connection(executor_type ex, connection_options opts = {});
  ~connection();  ///< closes; in-flight handlers complete with operation_aborted
  connection(connection&&) noexcept = default;
  connection& operator=(connection&&) noexcept;

  executor_type get_executor() const noexcept;
  bool is_open() const noexcept;
  /// True when idle and outside a transaction (what the pool checks on release).
  bool is_idle_clean() const noexcept;
  std::size_t in_flight() const noexcept;
  /// Cheap liveness probe of an idle connection: false when the server closed the socket.
  bool probe_alive() const noexcept;
  /// Stricter, for idle connections nobody uses: open and nothing unsolicited pending (a
  /// terminated backend sends its error, then closes).
  bool probe_quiet() const noexcept;
  void close();
  const diagnostics& last_diagnostics() const noexcept;
  connection_stats stats() const noexcept;
  PGconn* native_handle() const noexcept;
  /// The OID map of user types this connection binds and decodes with (null: none).
  const type_map* types() const noexcept { return impl_ ? detail::types_of(*impl_) : nullptr; }

  /// Connects (conninfo string or URI as libpq takes them). Signature void(error_code).
  template <class Token = pg::use_awaitable_t>
  auto async_connect(std::string dsn, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code)>(
        [impl = impl_](auto h, std::string dsn) {
          auto ex = asio::get_associated_executor(h, detail::executor_of(*impl));
          auto* op = detail::op_t<decltype(h), detail::connect_sink>::make(
              std::move(h), pg::query<>(""), detail::connect_sink{});
          op->work.emplace(asio::prefer(ex, asio::execution::outstanding_work.tracked));
          detail::link_cancellation(impl, op);
          detail::start_connect(impl, std::move(dsn), op);
        },
        token, std::move(dsn));
  }

  /// Raw result. Signature void(error_code, result); on a server error the result is
  /// the error result (error_diagnostics() reads it).
  template <class Q, class Token = pg::use_awaitable_t>
    requires is_query<Q>::value
  auto async_query(Q q, Token&& token = {}) {
    return detail::initiate<void(std::error_code, result)>(impl_, std::move(q), detail::raw_sink{},
                                                           std::forward<Token>(token));
  }
  template <class Token = pg::use_awaitable_t>
  auto async_query(std::string_view text, Token&& token = {}) {
    return async_query(pg::query<>(text), std::forward<Token>(token));
  }

  /// Typed rows appended to a container / output iterator. void(error_code, size_t rows).
  template <class Q, class Row, class Out, class Token = pg::use_awaitable_t>
    requires is_query<Q>::value
  auto async_query(Q q, into_t<Row, Out> into, Token&& token = {}) {
    return detail::initiate<void(std::error_code, std::size_t)>(
        impl_, std::move(q), detail::into_sink<Row, Out>{into.out}, std::forward<Token>(token));
  }

  /// INSERT/UPDATE/DELETE/...: void(error_code, uint64_t affected_rows).
  template <class Q, class Token = pg::use_awaitable_t>
    requires is_query<Q>::value
  auto async_execute(Q q, Token&& token = {}) {
    return detail::initiate<void(std::error_code, std::uint64_t)>(
        impl_, std::move(q), detail::exec_sink{}, std::forward<Token>(token));
  }
  template <class Token = pg::use_awaitable_t>
  auto async_execute(std::string_view text, Token&& token = {}) {
    return async_execute(pg::query<>(text), std::forward<Token>(token));
  }

  /// An explicit batch: every statement, then one Sync (batch.hpp for the semantics).
  /// void(error_code, batch_result); on failure batch_result::failed names the statement.
  template <class Token = pg::use_awaitable_t>
  auto async_execute(batch b, Token&& token = {}) {
    return detail::initiate<void(std::error_code, batch_result)>(
        impl_, std::move(b), detail::batch_sink{}, std::forward<Token>(token));
  }

  // ---- synchronous forms (poll on the socket; no executor needed) --------------------
  void connect(const std::string& dsn, std::error_code& ec);
  void connect(const std::string& dsn);
  template <class Q>
    requires is_query<Q>::value
  result query(const Q& q, std::error_code& ec) {
    sync_op<Q> op(q);
    run_sync(op, ec);
    if (const auto& t = detail::shared_types_of(*impl_)) op.res.set_types(t);
    return std::move(op.res);
  }
  template <class Q>
    requires is_query<Q>::value
  result query(const Q& q) {
    return throw_on_error([&](std::error_code& ec) { return query(q, ec); });
  }
  result query(std::string_view text, std::error_code& ec) { return query(pg::query<>(text), ec); }
  result query(std::string_view text) { return query(pg::query<>(text)); }
  template <class Q, class Row, class Out>
    requires is_query<Q>::value
  std::size_t query(const Q& q, into_t<Row, Out> into, std::error_code& ec) {
    result r = query(q, ec);
    if (ec) return 0;
    detail::type_scope scope(detail::types_of(*impl_));
    ec = r.template read_all<Row>(*into.out, &diag_ref());
    return ec ? 0 : static_cast<std::size_t>(r.rows());
  }
  template <class Q, class Row, class Out>
    requires is_query<Q>::value
  std::size_t query(const Q& q, into_t<Row, Out> into) {
    return throw_on_error([&](std::error_code& ec) { return query(q, into, ec); });
  }
  template <class Q>
    requires is_query<Q>::value
  std::uint64_t execute(const Q& q, std::error_code& ec) {
    result r = query(q, ec);
    return ec ? 0 : r.affected_rows();
  }
  template <class Q>
    requires is_query<Q>::value
  std::uint64_t execute(const Q& q) {
    return throw_on_error([&](std::error_code& ec) { return execute(q, ec); });
  }
  std::uint64_t execute(std::string_view text) { return execute(pg::query<>(text)); }
  batch_result execute(batch b, std::error_code& ec) {
    sync_op<batch> op(b);
    run_sync(op, ec);
    if (const auto& t = detail::shared_types_of(*impl_))
      for (auto& res : b.out_ref().results) res.set_types(t);
    return std::move(b.out_ref());
  }
  batch_result execute(batch b) {
    std::error_code ec;
    auto r = execute(std::move(b), ec);
    if (ec) throw error(ec, last_diagnostics());
    return r;
  }

 private:
  template <class Q>
  struct sync_op final : detail::request_base {
    const Q& q;
    explicit sync_op(Q& qq) : q(qq) {
      refs = 2;  // never freed by the router
      if constexpr (is_batch<Q>::value) this->bat = &qq;
    }
    explicit sync_op(const Q& qq)
      requires(!is_batch<Q>::value)
        : q(qq) {
      refs = 2;
    }
    std::string_view sql() const noexcept override {
      if constexpr (is_batch<Q>::value)
        return {};
      else
        return q.text();
    }
    void bind(detail::param_buffer& pb, std::error_code& e) const override {
      if constexpr (!is_batch<Q>::value) q.bind(pb, e);
    }
    void deliver(detail::conn_impl&, std::error_code e, detail::completion_from) override {
      ec = e;
    }
    void destroy() noexcept override {}
  };
  void run_sync(detail::request_base& op, std::error_code& ec);
  diagnostics& diag_ref() noexcept;
  template <class F>
  auto throw_on_error(F&& f) {
    std::error_code ec;
    auto v = f(ec);
    if (ec) throw error(ec, last_diagnostics());
    return v;
  }

  friend const detail::conn_ptr& detail::impl_of(const connection& c) noexcept;
  detail::conn_ptr impl_;
};

}  // namespace inlet::pg
