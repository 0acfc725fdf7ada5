// inlet::pg from several threads (run under TSan too, label tsan): queries raced against
// timers by coroutines on a thread_pool (Asio cancellation emitted from other threads),
// pooled connections handed back from threads other than their strand's.
#include <atomic>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <mutex>
#include <random>

#include "inlet/pg/transaction.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

namespace {
pg::pool_options opts(std::size_t size) {
  pg::pool_options o;
  o.dsn = pg_dsn();
  o.size = size;
  return o;
}

/// Runs f as `coros` coroutines on a thread_pool of `threads`, each on its own strand
/// (Asio's awaitable operators need one: their branches are separate coroutines on the
/// same executor, and a raw thread_pool runs them at once; even two plain timers raced
/// with || report data races under TSan then). Waits for all of them.
template <class F>
void run_on_thread_pool(std::size_t threads, int coros, F f) {
  asio::thread_pool tp(threads);
  std::atomic<int> done{0};
  std::mutex m;
  std::vector<std::exception_ptr> errors;
  for (int k = 0; k < coros; ++k) {
    asio::any_io_executor ex = asio::make_strand(tp);
    asio::co_spawn(ex, f(ex, k), [&](std::exception_ptr e) {
      if (e) {
        std::lock_guard lk(m);
        errors.push_back(e);
      }
      ++done;
    });
  }
  tp.join();
  EXPECT_EQ(done.load(), coros);
  for (auto& e : errors) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      ADD_FAILURE() << "coroutine failed: " << x.what();
    }
  }
}
}  // namespace

// Coroutines on a 2-thread pool race queries (alone and two pipelined) against short
// timers; the loser is cancelled through its cancellation slot from the coroutine's
// thread, while the connection runs on its own strand of another thread pool. Every
// operation completes exactly once and every connection stays usable.
TEST(PgConcurrency, QueriesRacedAgainstTimersFromAThreadPool) {
  REQUIRE_PG();
  constexpr int coros = 12, iterations = 200;  // 2400 races
  std::atomic<int> query_won{0}, timer_won{0}, completions{0}, final_ok{0};
  asio::thread_pool conn_threads(2);
  pg::pool p(conn_threads.get_executor(), opts(6));
  run_on_thread_pool(2, coros, [&](asio::any_io_executor ex, int k) -> awaitable<void> {
    std::mt19937 rng(static_cast<unsigned>(k) * 7919u + 1u);
    std::uniform_int_distribution<int> us(0, 2500);
    auto c = co_await p.async_acquire();
    for (int i = 0; i < iterations; ++i) {
      asio::steady_timer t(ex, std::chrono::microseconds(us(rng)));
      const double sleep_s = us(rng) / 1e6;
      try {
        if (i % 2 == 0) {
          auto r = co_await (c->async_query(pg::sql("SELECT pg_sleep($1::float8)", sleep_s)) ||
                             t.async_wait(asio::use_awaitable));
          (r.index() == 0 ? query_won : timer_won)++;
        } else {
          auto r = co_await ((c->async_query(pg::sql("SELECT pg_sleep($1::float8)", sleep_s)) &&
                              c->async_query(pg::sql("SELECT $1::int4", i))) ||
                             t.async_wait(asio::use_awaitable));
          (r.index() == 0 ? query_won : timer_won)++;
        }
      } catch (const pg::error& e) {
        // The server-side cancel can hit the next pipelined statement (57014): allowed.
        EXPECT_TRUE(e.code() == pg::condition::query_canceled) << e.what();
      }
      ++completions;
    }
    // The connection still answers, with the right value.
    std::vector<std::int32_t> v;
    for (int attempt = 0; attempt < 3 && v.empty(); ++attempt) {
      try {
        co_await c->async_query(pg::sql("SELECT $1::int4", k), pg::into(v));
      } catch (const pg::error& e) {  // a late cancel may still land on this one
        EXPECT_TRUE(e.code() == pg::condition::query_canceled) << e.what();
      }
    }
    if (v == std::vector<std::int32_t>{k}) ++final_ok;
  });
  EXPECT_EQ(completions.load(), coros * iterations);
  EXPECT_EQ(final_ok.load(), coros);
  EXPECT_GT(timer_won.load(), 0);
  EXPECT_GT(query_won.load(), 0);
  p.close();
  conn_threads.join();
}

// A pooled connection handed back from a thread other than its strand's is checked on
// its strand: while that strand is busy, the connection does not reach the idle list.
TEST(PgConcurrency, ReleaseIsCheckedOnTheConnectionsOwnStrand) {
  REQUIRE_PG();
  asio::thread_pool conn_threads(2);
  pg::pool p(conn_threads.get_executor(), opts(1));
  asio::io_context io;
  pg::pooled_connection held;
  run_co(io, [&]() -> awaitable<void> {
    held = co_await p.async_acquire();
    co_await held->async_query(pg::sql("SELECT 1"));
  });
  // Block the connection's strand, then hand the connection back from this thread.
  std::mutex m;
  std::condition_variable cv;
  bool entered = false, go = false;
  asio::post(held->get_executor(), [&] {
    std::unique_lock lk(m);
    entered = true;
    cv.notify_all();
    cv.wait(lk, [&] { return go; });
  });
  {
    std::unique_lock lk(m);
    cv.wait(lk, [&] { return entered; });
  }
  held.reset();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(p.stats().idle, 0u);  // not checked yet: its strand is busy
  {
    std::lock_guard lk(m);
    go = true;
  }
  cv.notify_all();
  for (int i = 0; i < 200 && p.stats().idle == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(p.stats().idle, 1u);
  EXPECT_EQ(p.stats().dropped, 0u);
  p.close();
  conn_threads.join();
}

// Transactions from 4 threads (each its own io_context) on one pool, and on one shared
// connection: every increment lands once, savepoint rollbacks undo only their part.
TEST(PgConcurrency, TransactionsFromFourThreads) {
  REQUIRE_PG();
  {
    asio::io_context io;
    pg::connection c(io.get_executor());
    c.connect(pg_dsn());
    c.execute("DROP TABLE IF EXISTS t_conc_tx");
    c.execute("CREATE TABLE t_conc_tx (id int4 PRIMARY KEY, n int4)");
    c.execute("INSERT INTO t_conc_tx SELECT g, 0 FROM generate_series(0, 7) g");
  }
  asio::thread_pool conn_threads(2);
  pg::pool p(conn_threads.get_executor(), opts(4));
  pg::connection shared(asio::make_strand(conn_threads));
  shared.connect(pg_dsn());
  constexpr int threads = 4, coros = 3, per = 15;
  std::atomic<int> committed{0}, failed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      asio::io_context io;
      for (int k = 0; k < coros; ++k) {
        asio::co_spawn(
            io,
            [&, t, k]() -> awaitable<void> {
              for (int i = 0; i < per; ++i) {
                try {
                  const bool on_pool = (k + i) % 2 == 0;
                  auto body = [&, t](pg::transaction& tx) -> awaitable<void> {
                    co_await tx.async_execute(
                        pg::sql("UPDATE t_conc_tx SET n = n + 1 WHERE id = $1::int4", t));
                    auto sp = co_await tx.async_savepoint();
                    co_await tx.async_execute(
                        pg::sql("UPDATE t_conc_tx SET n = n + 1000 WHERE id = $1::int4", t));
                    co_await std::move(sp).async_rollback();
                    co_await tx.async_execute(
                        pg::sql("UPDATE t_conc_tx SET n = n + 1 WHERE id = $1::int4", t + 4));
                  };
                  if (on_pool)
                    co_await pg::transact(p, {}, body);
                  else
                    co_await pg::transact(shared, {}, body);
                  ++committed;
                } catch (const std::exception& e) {
                  ++failed;
                  ADD_FAILURE() << e.what();
                }
              }
            },
            asio::detached);
      }
      io.run();
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(committed.load(), threads * coros * per);
  EXPECT_EQ(failed.load(), 0);
  asio::io_context io;
  pg::connection c(io.get_executor());
  c.connect(pg_dsn());
  std::vector<std::int32_t> n;
  c.query(pg::sql("SELECT n FROM t_conc_tx ORDER BY id"), pg::into(n));
  EXPECT_EQ(n, std::vector<std::int32_t>(8, coros * per));
  p.close();
  shared.close();
  conn_threads.join();
}
