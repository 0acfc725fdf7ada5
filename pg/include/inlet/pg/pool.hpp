// A connection pool: bounded size, acquisition queue with a limit and a timeout, idle
// timeout, maximum lifetime, a health check on acquire (a socket probe, or a query after
// an idle time: see health_check); connections handed back
// broken, busy or inside a transaction are dropped (and replaced on demand).
//
//   pg::pool p(io.get_executor(), {.dsn = dsn, .size = 16});
//   auto c = co_await p.async_acquire();           // pg::pooled_connection
//   auto r = co_await c->async_query(pg::sql("SELECT 1"));
//   // c goes back to the pool when destroyed
//
// Thread-safety: a pool may be used from any number of threads and io_contexts at once
// (state under a mutex). Every connection lives on its own strand of the pool's
// executor; handlers of acquire and of queries run on their own associated executors.
// A pooled_connection is used by one owner at a time.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>

#include "inlet/pg/connection.hpp"

namespace inlet::pg {

/// What the pool checks before handing out an idle connection.
enum class health_check {
  none,   ///< nothing: the caller's first query finds out
  probe,  ///< a non-blocking peek at the socket (free; sees a closed socket, not a
          ///< backend that was terminated and sent its error before closing)
  query,  ///< the probe, plus `SELECT 1` when the connection was idle longer than
          ///< health_check_idle; a failing connection is dropped and another one
          ///< (or a new one) is handed out instead, the caller sees no error
};

struct pool_options {
  std::string dsn;
  std::size_t size = 8;  ///< maximum connections
  /// Connections kept open even when idle (made at start, remade after losses). A pool
  /// with min_size > 0 runs a maintenance timer until close(): io_context::run() does
  /// not return while it is open.
  std::size_t min_size = 0;
  std::size_t queue_limit = 4096;                     ///< maximum waiting acquirers
  std::chrono::milliseconds acquire_timeout{10'000};  ///< waiting longer gives pool_timeout
  std::chrono::milliseconds idle_timeout{300'000};    ///< idle connections older are closed
  std::chrono::milliseconds max_lifetime{3'600'000};  ///< connections older are not reused
  health_check check = health_check::probe;
  std::chrono::milliseconds health_check_idle{5'000};  ///< query check after this idle time
  /// After a failed connect the next one waits: jittered, doubling from initial to max,
  /// reset by a success. Acquirers still wait at most acquire_timeout.
  std::chrono::milliseconds connect_backoff_initial{100};
  std::chrono::milliseconds connect_backoff_max{5'000};
  std::chrono::milliseconds maintenance_interval{1'000};  ///< min_size upkeep period
  connection_options connection{};
};

struct pool_stats {
  std::uint64_t acquired = 0, timeouts = 0, queue_full = 0, connects = 0, connect_failures = 0,
                dropped = 0;
  std::uint64_t health_checks = 0, health_check_failures = 0;  ///< health_check::query
  std::uint64_t wait_ns = 0;  ///< total time acquirers spent waiting for a connection
  std::size_t total = 0, idle = 0, waiting = 0;
  connection_stats queries;  ///< summed over connections returned to the pool
};

namespace detail {
class pool_impl;
struct pool_entry;
}  // namespace detail

/// A connection on loan from a pool; returns it when destroyed. Move-only.
class pooled_connection {
 public:
  pooled_connection() noexcept;
  pooled_connection(std::shared_ptr<detail::pool_impl> p,
                    std::unique_ptr<detail::pool_entry> e) noexcept;
  pooled_connection(pooled_connection&&) noexcept;
  pooled_connection& operator=(pooled_connection&&) noexcept;
  ~pooled_connection();

  explicit operator bool() const noexcept { return entry_ != nullptr; }
  connection& operator*() const noexcept;
  connection* operator->() const noexcept { return &**this; }
  /// Returns the connection now (same as destruction).
  void reset();

 private:
  std::shared_ptr<detail::pool_impl> pool_;
  std::unique_ptr<detail::pool_entry> entry_;
};

namespace detail {
struct waiter_base {
  std::chrono::steady_clock::time_point since;
  virtual ~waiter_base() = default;
  /// Runs the handler on its executor (posted, never inline).
  virtual void complete(std::error_code ec, pooled_connection c,
                        std::unique_ptr<diagnostics> d = nullptr) = 0;
  virtual asio::any_io_executor timer_executor() const = 0;
};
void pool_acquire(const std::shared_ptr<pool_impl>& p, std::unique_ptr<waiter_base> w);
void pool_release(std::shared_ptr<pool_impl> p, std::unique_ptr<pool_entry> e);
asio::any_io_executor pool_executor(const pool_impl& p) noexcept;
}  // namespace detail

class pool {
 public:
  pool(asio::any_io_executor ex, pool_options opts);
  ~pool();  ///< closes: waiters fail with pool_closed; loaned connections close on return
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  /// What async_get_connection yields (the pool is a connection_provider, concepts.hpp).
  using connection_type = pooled_connection;

  /// The provider interface (pg::async_request): the same as async_acquire.
  template <class Token = pg::use_awaitable_t>
  auto async_get_connection(Token&& token = {}) {
    return async_acquire(std::forward<Token>(token));
  }

  /// void(error_code, pooled_connection)
  template <class Token = pg::use_awaitable_t>
  auto async_acquire(Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, pooled_connection)>(
        [p = impl_](auto h) {
          using H = decltype(h);
          struct waiter final : detail::waiter_base {
            H h;
            asio::any_io_executor pool_ex;
            using work_t = std::decay_t<decltype(asio::prefer(
                std::declval<asio::associated_executor_t<H, asio::any_io_executor>>(),
                asio::execution::outstanding_work.tracked))>;
            work_t work;
            waiter(H hh, asio::any_io_executor pex)
                : h(std::move(hh)),
                  pool_ex(std::move(pex)),
                  work(asio::prefer(asio::get_associated_executor(h, pool_ex),
                                    asio::execution::outstanding_work.tracked)) {}
            void complete(std::error_code ec, pooled_connection c,
                          std::unique_ptr<diagnostics> d) override {
              if (ec && !d) {
                d = std::make_unique<diagnostics>();
                d->client_message = ec.message();
              }
              detail::pass_diagnostics(h, d);
              auto ex = asio::get_associated_executor(h, pool_ex);
              asio::post(ex, [hh = std::move(h), ec, c = std::move(c)]() mutable {
                std::move(hh)(ec, std::move(c));
              });
            }
            asio::any_io_executor timer_executor() const override { return pool_ex; }
          };
          detail::pool_acquire(p,
                               std::make_unique<waiter>(std::move(h), detail::pool_executor(*p)));
        },
        token);
  }

  pool_stats stats() const;
  void close();

 private:
  std::shared_ptr<detail::pool_impl> impl_;
};

}  // namespace inlet::pg
