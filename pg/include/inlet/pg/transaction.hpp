// Transactions as a type. A transaction owns its connection exclusively from BEGIN to
// COMMIT/ROLLBACK: other requests on that connection (other coroutines pipelining on a
// shared connection) wait until it ends, so they never run inside it. Statements run
// only through the transaction object; commit and rollback consume it.
//
//   auto tx = co_await pg::async_begin(pool, {.level = pg::isolation::serializable});
//   co_await tx.async_execute(pg::sql("UPDATE acct SET n = n - $1 WHERE id = $2", amount, from));
//   {
//     auto sp = co_await tx.async_savepoint();          // nested scope
//     co_await tx.async_execute(...);
//     co_await std::move(sp).async_release();           // or drop it: rolled back to
//   }
//   co_await std::move(tx).async_commit();               // tx is consumed
//
// Rules the compiler checks: a transaction cannot be copied; async_commit and
// async_rollback only take an rvalue (`std::move(tx).async_commit()`: `tx.async_commit()`
// does not compile); what commit returns has no statements. Under clang with
// -Wconsumed -Werror=consumed, a statement or a second commit on a transaction that was
// committed, rolled back or moved from does not compile either (clang's typestate
// attributes below). Whatever the compiler, such a call at run time fails with
// errc::transaction_closed, never touches another transaction.
//
// Dropping an active transaction rolls it back (ROLLBACK is queued on its connection; a
// pooled connection goes back to its pool once ROLLBACK is done). COMMIT that cannot
// tell its outcome (the connection lost after COMMIT was sent, a timeout or cancellation
// while waiting) fails with errc::commit_outcome_unknown, distinct from a failure
// (an error from COMMIT itself: the transaction was rolled back). COMMIT of a
// transaction in which a statement failed rolls back and fails with
// errc::transaction_aborted.
//
// pg::transact(pool_or_connection, options, body) runs body(tx) and commits, and re-runs
// the whole body after a serialization failure or a deadlock (40001, 40P01) with a
// bounded, jittered exponential backoff (retry_policy).
//
// Thread-safety: as a connection: one user at a time; statements may be pipelined (issued
// before earlier ones complete). Savepoints and cursors must not outlive their transaction
// (they fail with transaction_closed afterwards).
#pragma once
#include <boost/asio/associator.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <string_view>
#include <type_traits>

#include "inlet/pg/pool.hpp"

#if defined(__clang__)
#define INLET_PG_CONSUMABLE [[clang::consumable(unconsumed)]]
#define INLET_PG_CALLABLE_WHEN_LIVE [[clang::callable_when("unconsumed", "unknown")]]
#define INLET_PG_CONSUMES [[clang::set_typestate(consumed)]]
#define INLET_PG_RETURNS_LIVE [[clang::return_typestate(unconsumed)]]
#define INLET_PG_RETURNS_CONSUMED [[clang::return_typestate(consumed)]]
#define INLET_PG_LEAVES_CONSUMED [[clang::return_typestate(consumed)]]
#else
#define INLET_PG_CONSUMABLE
#define INLET_PG_CALLABLE_WHEN_LIVE
#define INLET_PG_CONSUMES
#define INLET_PG_RETURNS_LIVE
#define INLET_PG_RETURNS_CONSUMED
#define INLET_PG_LEAVES_CONSUMED
#endif

namespace inlet::pg {

enum class isolation : unsigned char {
  default_level,
  read_committed,
  repeatable_read,
  serializable
};

struct transaction_options {
  isolation level = isolation::default_level;
  bool read_only = false;
  bool deferrable = false;  ///< only meaningful with serializable + read_only
};

class transaction;
class savepoint;

namespace detail {
/// What a transaction and its savepoints share: the connection, the lease that makes
/// the transaction its owner, the pooled connection it holds (if begun on a pool), the
/// savepoint depth.
struct tx_state {
  conn_ptr impl;
  std::uint64_t lease = 0;
  pooled_connection pooled;
  unsigned depth = 0;
  unsigned cursors = 0;  // names inlet_c<n>
  bool active() const noexcept { return impl && lease != 0; }
};
using tx_ptr = std::shared_ptr<tx_state>;
/// CLOSE a cursor without a caller (a cursor dropped while its transaction goes on).
void drop_cursor(const tx_ptr& t, std::string name);

std::string_view begin_sql(const transaction_options& o) noexcept;
/// Texts for savepoint depth d (1-based): SAVEPOINT, RELEASE SAVEPOINT, ROLLBACK TO
/// SAVEPOINT; kept for the life of the process (addresses stay valid).
std::string_view savepoint_sql(unsigned d, int kind);
/// ROLLBACK under the transaction's lease, without a caller; a pooled connection goes
/// back to its pool once it is done.
void drop_transaction(tx_ptr t);
/// ROLLBACK TO + RELEASE SAVEPOINT without a caller.
void drop_savepoint(const tx_ptr& t, unsigned depth);
const conn_ptr& impl_of(const connection& c) noexcept;
transaction make_transaction(tx_ptr t);
savepoint make_savepoint(tx_ptr t, unsigned depth);

/// Marks our handler wrappers (member `inner`, the caller's handler): their associated
/// executor, allocator and cancellation slot are the inner handler's.
template <class T>
concept handler_wrapper = requires(const T& t) {
  typename T::inlet_wrapped_handler;
  t.inner;
};

struct begin_sink {
  auto args(conn_impl&, request_base& r, std::error_code ec) {
    return std::make_tuple(ec, r.owner);
  }
};
/// COMMIT's own outcome: a server error from COMMIT is a failure (rolled back); losing
/// the connection (or giving up the wait) after COMMIT was sent is not knowing.
struct commit_sink {
  auto args(conn_impl&, request_base& r, std::error_code ec) {
    if (ec && r.sent &&
        !(ec.category() == sqlstate_category() && ec != condition::connection_error)) {
      if (!r.diag) r.diag = std::make_unique<diagnostics>();
      r.diag->client_message =
          "COMMIT was sent, then: " + ec.message() +
          (r.diag->client_message.empty() ? "" : " (" + r.diag->client_message + ")");
      ec = errc::commit_outcome_unknown;
    } else if (!ec && r.res.command_tag() == "ROLLBACK") {  // COMMIT of a failed transaction
      r.diag = std::make_unique<diagnostics>();
      r.diag->client_message = "COMMIT of a transaction in which a statement failed: rolled back";
      ec = errc::transaction_aborted;
    }
    return std::make_tuple(ec);
  }
};
struct void_sink {
  auto args(conn_impl&, request_base&, std::error_code ec) { return std::make_tuple(ec); }
};

/// Completes a handler with `ec` and default values, posted to its executor (a statement
/// on a transaction that is over: there is no connection to run it on).
template <class Sig, class Token>
auto fail_now(Token&& token, std::error_code ec);
template <class... Ts, class Token>
auto fail_now_impl(Token&& token, std::error_code ec, void (*)(std::error_code, Ts...)) {
  return asio::async_initiate<Token, void(std::error_code, Ts...)>(
      [ec](auto h) {
        auto ex = asio::get_associated_executor(h);
        asio::post(ex, [h = std::move(h), ec]() mutable {
          auto d = std::make_unique<diagnostics>();
          d->client_message = ec.message();
          pass_diagnostics(h, d);
          std::move(h)(ec, Ts{}...);
        });
      },
      token);
}
template <class Sig, class Token>
auto fail_now(Token&& token, std::error_code ec) {
  return fail_now_impl(std::forward<Token>(token), ec, static_cast<Sig*>(nullptr));
}

template <class Handler>
struct begin_handler {
  using inlet_wrapped_handler = void;
  Handler inner;
  tx_ptr tx;  // connection (and pooled connection) of the transaction being begun
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec, std::uint64_t lease);
};
template <class Handler>
struct end_handler {
  using inlet_wrapped_handler = void;
  Handler inner;
  pooled_connection keep;  // returned to its pool once COMMIT/ROLLBACK completed
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec) {
    keep.reset();
    std::move(inner)(ec);
  }
};
template <class Handler>
struct batch_void_handler {
  using inlet_wrapped_handler = void;
  Handler inner;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec, batch_result) { std::move(inner)(ec); }
};
template <class Handler>
struct savepoint_handler {
  using inlet_wrapped_handler = void;
  Handler inner;
  tx_ptr tx;
  unsigned depth;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec, std::uint64_t);
};
}  // namespace detail

/// A transaction (see the top of this file). Move-only; a moved-from or finished
/// transaction refuses statements (errc::transaction_closed).
class INLET_PG_CONSUMABLE transaction {
 public:
  INLET_PG_RETURNS_CONSUMED transaction() noexcept = default;
  INLET_PG_RETURNS_LIVE transaction(transaction&& o INLET_PG_LEAVES_CONSUMED) noexcept = default;
  transaction& operator=(transaction&& o) noexcept;
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  ~transaction();  ///< active: ROLLBACK

  /// True from a successful begin until commit, rollback or move.
  bool active() const noexcept { return t_ && t_->active(); }
  asio::any_io_executor get_executor() const noexcept;

  template <class Q, class Token = pg::use_awaitable_t>
    requires is_query<Q>::value
  INLET_PG_CALLABLE_WHEN_LIVE auto async_query(Q q, Token&& token = {}) {
    return run<void(std::error_code, result)>(std::move(q), detail::raw_sink{},
                                              std::forward<Token>(token));
  }
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE auto async_query(std::string_view text, Token&& token = {}) {
    return async_query(pg::query<>(text), std::forward<Token>(token));
  }
  template <class Q, class Row, class Out, class Token = pg::use_awaitable_t>
    requires is_query<Q>::value
  INLET_PG_CALLABLE_WHEN_LIVE auto async_query(Q q, into_t<Row, Out> into, Token&& token = {}) {
    return run<void(std::error_code, std::size_t)>(
        std::move(q), detail::into_sink<Row, Out>{into.out}, std::forward<Token>(token));
  }
  template <class Q, class Token = pg::use_awaitable_t>
    requires is_query<Q>::value
  INLET_PG_CALLABLE_WHEN_LIVE auto async_execute(Q q, Token&& token = {}) {
    return run<void(std::error_code, std::uint64_t)>(std::move(q), detail::exec_sink{},
                                                     std::forward<Token>(token));
  }
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE auto async_execute(std::string_view text, Token&& token = {}) {
    return async_execute(pg::query<>(text), std::forward<Token>(token));
  }
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE auto async_execute(batch b, Token&& token = {}) {
    return run<void(std::error_code, batch_result)>(std::move(b), detail::batch_sink{},
                                                    std::forward<Token>(token));
  }

  /// SAVEPOINT: a nested scope. void(error_code, savepoint).
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE auto async_savepoint(Token&& token = {});

  /// COMMIT; consumes the transaction. void(error_code): see the top of this file for
  /// commit_outcome_unknown and transaction_aborted.
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE INLET_PG_CONSUMES auto async_commit(Token&& token = {}) && {
    return end(std::string_view("COMMIT"), detail::commit_sink{}, std::forward<Token>(token));
  }
  /// ROLLBACK; consumes the transaction. void(error_code).
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE INLET_PG_CONSUMES auto async_rollback(Token&& token = {}) && {
    return end(std::string_view("ROLLBACK"), detail::void_sink{}, std::forward<Token>(token));
  }

  /// The lease (owner tag) of this transaction's requests; for cursors and COPY.
  const detail::tx_ptr& state() const noexcept { return t_; }

 private:
  friend transaction detail::make_transaction(detail::tx_ptr t);
  explicit transaction(detail::tx_ptr t) noexcept : t_(std::move(t)) {}

  // One initiation whatever the state, so that every token (deferred too) sees one type.
  template <class Sig, class Q, class Sink, class Token>
  auto run(Q q, Sink sink, Token&& token) {
    detail::conn_ptr impl = active() ? t_->impl : nullptr;
    const std::uint64_t lease = impl ? t_->lease : 0;
    return asio::async_initiate<Token, Sig>(
        [impl, lease](auto h, Q q, Sink sink) {
          if (!impl) return detail::fail_now<Sig>(std::move(h), errc::transaction_closed);
          detail::initiate<Sig>(impl, std::move(q), std::move(sink), std::move(h),
                                {lease, detail::lease_action::none});
        },
        token, std::move(q), std::move(sink));
  }
  template <class Sink, class Token>
  auto end(std::string_view sql, Sink sink, Token&& token) {
    detail::tx_ptr t = std::move(t_);
    auto impl = t ? t->impl : nullptr;
    const std::uint64_t lease = t ? std::exchange(t->lease, 0) : 0;  // savepoints see it ended
    pooled_connection keep = t ? std::move(t->pooled) : pooled_connection{};
    return asio::async_initiate<Token, void(std::error_code)>(
        [impl, lease, sql, sink](auto h, pooled_connection keep) {
          using H = decltype(h);
          if (!impl || lease == 0)
            return detail::fail_now<void(std::error_code)>(std::move(h), errc::transaction_closed);
          detail::initiate<void(std::error_code)>(
              impl, pg::query<>(sql), sink, detail::end_handler<H>{std::move(h), std::move(keep)},
              {lease, detail::lease_action::end});
        },
        token, std::move(keep));
  }

  detail::tx_ptr t_;
};

/// A savepoint of a transaction (a nested scope). Release or roll back to it, consuming
/// it; dropped without either, the transaction rolls back to it. Must not outlive its
/// transaction.
class INLET_PG_CONSUMABLE savepoint {
 public:
  INLET_PG_RETURNS_CONSUMED savepoint() noexcept = default;
  INLET_PG_RETURNS_LIVE savepoint(savepoint&& o INLET_PG_LEAVES_CONSUMED) noexcept = default;
  savepoint& operator=(savepoint&& o) noexcept;
  savepoint(const savepoint&) = delete;
  savepoint& operator=(const savepoint&) = delete;
  ~savepoint();  ///< active: ROLLBACK TO SAVEPOINT

  bool active() const noexcept { return t_ && t_->active() && depth_ != 0; }

  /// RELEASE SAVEPOINT: keeps what was done since. void(error_code).
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE INLET_PG_CONSUMES auto async_release(Token&& token = {}) && {
    return end(1, std::forward<Token>(token));
  }
  /// ROLLBACK TO SAVEPOINT (and release it): undoes what was done since; the transaction
  /// goes on. void(error_code).
  template <class Token = pg::use_awaitable_t>
  INLET_PG_CALLABLE_WHEN_LIVE INLET_PG_CONSUMES auto async_rollback(Token&& token = {}) && {
    return end(2, std::forward<Token>(token));
  }

 private:
  friend savepoint detail::make_savepoint(detail::tx_ptr t, unsigned depth);
  savepoint(detail::tx_ptr t, unsigned depth) noexcept : t_(std::move(t)), depth_(depth) {}

  template <class Token>
  auto end(int kind, Token&& token) {
    detail::tx_ptr t = std::move(t_);
    const unsigned depth = std::exchange(depth_, 0);
    const bool live = t && t->active() && depth != 0;
    batch b;
    if (live) {
      if (t->depth >= depth) t->depth = depth - 1;
      if (kind == 2) b.add(detail::savepoint_sql(depth, 2));
      b.add(detail::savepoint_sql(depth, 1));
    }
    return asio::async_initiate<Token, void(std::error_code)>(
        [t = live ? t : nullptr](auto h, batch b) {
          using H = decltype(h);
          if (!t)
            return detail::fail_now<void(std::error_code)>(std::move(h), errc::transaction_closed);
          detail::initiate<void(std::error_code, batch_result)>(
              t->impl, std::move(b), detail::batch_sink{},
              detail::batch_void_handler<H>{std::move(h)}, {t->lease, detail::lease_action::none});
        },
        token, std::move(b));
  }

  detail::tx_ptr t_;
  unsigned depth_ = 0;
};

template <class Token>
auto transaction::async_savepoint(Token&& token) {
  using sig = void(std::error_code, savepoint);
  const bool live = active();
  const unsigned depth = live ? ++t_->depth : 0;
  return asio::async_initiate<Token, sig>(
      [t = live ? t_ : nullptr, depth](auto h) {
        using H = decltype(h);
        if (!t) return detail::fail_now<sig>(std::move(h), errc::transaction_closed);
        detail::initiate<void(std::error_code, std::uint64_t)>(
            t->impl, pg::query<>(detail::savepoint_sql(depth, 0)), detail::begin_sink{},
            detail::savepoint_handler<H>{std::move(h), t, depth},
            {t->lease, detail::lease_action::none});
      },
      token);
}

namespace detail {
template <class Handler>
void begin_handler<Handler>::operator()(std::error_code ec, std::uint64_t lease) {
  if (ec) return std::move(inner)(ec, transaction{});
  tx->lease = lease;
  std::move(inner)(ec, make_transaction(std::move(tx)));
}
template <class Handler>
void savepoint_handler<Handler>::operator()(std::error_code ec, std::uint64_t) {
  if (ec) {
    if (tx->depth >= depth) tx->depth = depth - 1;
    return std::move(inner)(ec, savepoint{});
  }
  std::move(inner)(ec, make_savepoint(std::move(tx), depth));
}

template <class Handler>
struct acquire_then_begin {
  using inlet_wrapped_handler = void;
  Handler inner;
  std::string_view sql;
  void operator()(std::error_code ec, pooled_connection c) {
    if (ec) return std::move(inner)(ec, transaction{});
    auto t = std::make_shared<tx_state>();
    t->impl = impl_of(*c);
    t->pooled = std::move(c);
    auto impl = t->impl;
    initiate<void(std::error_code, std::uint64_t)>(
        impl, pg::query<>(sql), begin_sink{},
        begin_handler<Handler>{std::move(inner), std::move(t)}, {0, lease_action::begin});
  }
};
}  // namespace detail

/// BEGIN on a shared connection: the transaction owns it until it ends (other requests
/// on it wait). void(error_code, transaction).
template <class Token = pg::use_awaitable_t>
auto async_begin(connection& c, transaction_options o = {}, Token&& token = {}) {
  return asio::async_initiate<Token, void(std::error_code, transaction)>(
      [impl = detail::impl_of(c), sql = detail::begin_sql(o)](auto h) {
        using H = decltype(h);
        auto t = std::make_shared<detail::tx_state>();
        t->impl = impl;
        detail::initiate<void(std::error_code, std::uint64_t)>(
            impl, pg::query<>(sql), detail::begin_sink{},
            detail::begin_handler<H>{std::move(h), std::move(t)}, {0, detail::lease_action::begin});
      },
      token);
}
template <class Token = pg::use_awaitable_t>
  requires(!std::is_same_v<std::decay_t<Token>, transaction_options>)
auto async_begin(connection& c, Token&& token) {
  return async_begin(c, transaction_options{}, std::forward<Token>(token));
}

/// A connection from the pool, then BEGIN; the transaction holds the pooled connection
/// and hands it back when it ends. void(error_code, transaction).
template <class Token = pg::use_awaitable_t>
auto async_begin(pool& p, transaction_options o = {}, Token&& token = {}) {
  return asio::async_initiate<Token, void(std::error_code, transaction)>(
      [&p, sql = detail::begin_sql(o)](auto h) {
        using H = decltype(h);
        p.async_acquire(detail::acquire_then_begin<H>{std::move(h), sql});
      },
      token);
}
template <class Token = pg::use_awaitable_t>
  requires(!std::is_same_v<std::decay_t<Token>, transaction_options>)
auto async_begin(pool& p, Token&& token) {
  return async_begin(p, transaction_options{}, std::forward<Token>(token));
}

/// When pg::transact re-runs a transaction body.
struct retry_policy {
  unsigned max_attempts = 5;                   ///< including the first
  std::chrono::milliseconds initial_delay{5};  ///< before the 2nd attempt, at most
  std::chrono::milliseconds max_delay{500};    ///< cap of the exponential growth
};

/// True for the errors after which re-running the whole transaction may succeed:
/// serialization failure (40001) and deadlock (40P01). Never commit_outcome_unknown.
bool retryable(std::error_code ec) noexcept;
/// Full-jitter exponential backoff: uniform in [0, min(max_delay, initial * 2^(n-1))].
std::chrono::milliseconds retry_delay(const retry_policy& p, unsigned attempt);

namespace detail {
template <class F>
using body_value_t = typename std::invoke_result_t<F&, transaction&>::value_type;

template <class Source, class Body>
asio::awaitable<body_value_t<Body>> transact_impl(Source& src, transaction_options o, Body body,
                                                  retry_policy rp) {
  using T = body_value_t<Body>;
  for (unsigned attempt = 1;; ++attempt) {
    std::error_code failed;
    try {
      auto tx = co_await async_begin(src, o);
      if constexpr (std::is_void_v<T>) {
        co_await body(tx);
        co_await std::move(tx).async_commit();
        co_return;
      } else {
        T v = co_await body(tx);
        co_await std::move(tx).async_commit();
        co_return v;
      }
    } catch (const error& e) {
      if (!retryable(e.code()) || attempt >= rp.max_attempts) throw;
      failed = e.code();
    }
    asio::steady_timer t(co_await asio::this_coro::executor, retry_delay(rp, attempt));
    co_await t.async_wait(asio::use_awaitable);
  }
}
}  // namespace detail

/// Runs `body(tx)` in a transaction and commits; re-runs everything (a new BEGIN) after a
/// serialization failure or deadlock, at most rp.max_attempts times with jittered
/// backoff; any other error, and the last retryable one, is thrown. Body:
/// `(pg::transaction&) -> asio::awaitable<T>`; returns its T. For coroutines.
template <class Body>
asio::awaitable<detail::body_value_t<Body>> transact(pool& p, transaction_options o, Body body,
                                                     retry_policy rp = {}) {
  return detail::transact_impl(p, o, std::move(body), rp);
}
template <class Body>
asio::awaitable<detail::body_value_t<Body>> transact(connection& c, transaction_options o,
                                                     Body body, retry_policy rp = {}) {
  return detail::transact_impl(c, o, std::move(body), rp);
}

}  // namespace inlet::pg

template <template <class, class> class Associator, class Handler, class DefaultCandidate>
  requires inlet::pg::detail::handler_wrapper<Handler>
struct boost::asio::associator<Associator, Handler, DefaultCandidate>
    : Associator<decltype(std::declval<Handler>().inner), DefaultCandidate> {
  using inner_t = decltype(std::declval<Handler>().inner);
  static typename Associator<inner_t, DefaultCandidate>::type get(const Handler& h) noexcept {
    return Associator<inner_t, DefaultCandidate>::get(h.inner);
  }
  static auto get(const Handler& h, const DefaultCandidate& c) noexcept
      -> decltype(Associator<inner_t, DefaultCandidate>::get(h.inner, c)) {
    return Associator<inner_t, DefaultCandidate>::get(h.inner, c);
  }
};
