// The pool against a real server: reuse, limits, timeouts, dirty connections dropped,
// load from 4 threads on 4 io_contexts (run under TSan too), and a server restart under
// load (connections recover, no request hangs).
#include <unistd.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <thread>

#include "inlet/pg/pool.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using namespace std::chrono_literals;

namespace {
pg::pool_options opts(std::size_t size) {
  pg::pool_options o;
  o.dsn = pg_dsn();
  o.size = size;
  return o;
}
}  // namespace

TEST(PgPool, ReusesConnections) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(4));
  run_co(io, [&]() -> awaitable<void> {
    for (int i = 0; i < 20; ++i) {
      auto c = co_await p.async_acquire();
      auto r = co_await c->async_query(pg::sql("SELECT $1::int4", i));
      std::int32_t v = -1;
      r.at(0, 0).as(v);
      EXPECT_EQ(v, i);
    }
  });
  auto s = p.stats();
  EXPECT_EQ(s.connects, 1u);
  EXPECT_EQ(s.acquired, 20u);
  EXPECT_EQ(s.idle, 1u);
  EXPECT_EQ(s.queries.queries, 21u);  // 20 queries + the connect
}

TEST(PgPool, QueueLimitAndAcquireTimeout) {
  REQUIRE_PG();
  asio::io_context io;
  auto o = opts(1);
  o.queue_limit = 1;
  o.acquire_timeout = 200ms;
  pg::pool p(io.get_executor(), o);
  run_co(io, [&]() -> awaitable<void> {
    auto held = co_await p.async_acquire();
    std::error_code second = pg::errc::protocol_error, third = pg::errc::protocol_error;
    p.async_acquire([&](std::error_code ec, pg::pooled_connection) { second = ec; });
    p.async_acquire([&](std::error_code ec, pg::pooled_connection) { third = ec; });
    asio::steady_timer t(io, 600ms);
    co_await t.async_wait(asio::use_awaitable);
    EXPECT_EQ(third, pg::errc::pool_queue_full);
    EXPECT_EQ(second, pg::errc::pool_timeout);
    EXPECT_EQ(second, pg::condition::timeout);
    auto r = co_await held->async_query(pg::sql("SELECT 1"));
    EXPECT_EQ(r.rows(), 1);
  });
  EXPECT_EQ(p.stats().timeouts, 1u);
  EXPECT_EQ(p.stats().queue_full, 1u);
}

TEST(PgPool, DirtyConnectionsAreDropped) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(2));
  run_co(io, [&]() -> awaitable<void> {
    std::vector<std::int32_t> pid1, pid2;
    {
      auto c = co_await p.async_acquire();
      co_await c->async_execute(pg::sql("BEGIN"));
      co_await c->async_query(pg::sql("SELECT pg_backend_pid()"), pg::into(pid1));
      EXPECT_FALSE(c->is_idle_clean());
    }  // returned inside a transaction: dropped
    auto c = co_await p.async_acquire();
    co_await c->async_query(pg::sql("SELECT pg_backend_pid()"), pg::into(pid2));
    EXPECT_NE(pid1.at(0), pid2.at(0));  // a different server session
    EXPECT_TRUE(c->is_idle_clean());
  });
  EXPECT_EQ(p.stats().dropped, 1u);
  EXPECT_EQ(p.stats().connects, 2u);
}

TEST(PgPool, LoadFromFourThreadsAndIoContexts) {
  REQUIRE_PG();
  asio::thread_pool pool_threads(2);
  pg::pool p(pool_threads.get_executor(), opts(6));
  constexpr int threads = 4, coros = 8, per = 40;
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      asio::io_context io;  // each thread its own io_context
      for (int k = 0; k < coros; ++k) {
        asio::co_spawn(
            io,
            [&, t, k]() -> awaitable<void> {
              for (int i = 0; i < per; ++i) {
                try {
                  auto c = co_await p.async_acquire();
                  std::vector<std::int32_t> v;
                  co_await c->async_query(pg::sql("SELECT $1::int4 + $2::int4", t * 1000 + k, i),
                                          pg::into(v));
                  if (v.size() == 1 && v[0] == t * 1000 + k + i)
                    ++ok;
                  else
                    ++failed;
                } catch (const std::exception&) {
                  ++failed;
                }
              }
            },
            asio::detached);
      }
      io.run();
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(ok.load(), threads * coros * per);
  EXPECT_EQ(failed.load(), 0);
  auto s = p.stats();
  EXPECT_LE(s.total, 6u);
  EXPECT_EQ(s.waiting, 0u);
  EXPECT_EQ(s.acquired, static_cast<std::uint64_t>(threads * coros * per));
  p.close();
  pool_threads.join();
}

TEST(PgPool, ServerRestartUnderLoad) {
  REQUIRE_PG();
  const char* bin = std::getenv("INLET_PG_BIN");
  const char* data = std::getenv("INLET_PG_DATA");
  if (!bin || !data) GTEST_SKIP() << "INLET_PG_BIN/INLET_PG_DATA not set";
  std::string ctl =
      std::string(bin) + "/pg_ctl -D " + data + " -m fast -w -t 60 restart >/dev/null 2>&1";
  if (::geteuid() == 0) ctl = "runuser -u postgres -- " + ctl;

  asio::io_context io;
  auto o = opts(4);
  o.acquire_timeout = 2s;
  o.connection.query_timeout = 5s;  // nothing may hang
  pg::pool p(io.get_executor(), o);
  std::atomic<bool> restarted{false};
  int ok_before = 0, ok_after = 0, errors = 0, done = 0;
  std::thread restarter;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < 4; ++k) {
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
          // Bounded: at most 3000 iterations or 40 s.
          for (int i = 0; i < 3000 && std::chrono::steady_clock::now() - t0 < 40s; ++i) {
            std::error_code ec;
            try {
              auto c = co_await p.async_acquire();
              auto r = co_await c->async_query(pg::sql("SELECT pg_backend_pid()"));
              (restarted ? ok_after : ok_before)++;
              if (restarted && ok_after >= 200) break;
            } catch (const pg::error& e) {
              ec = e.code();
            }
            if (ec) {
              ++errors;
              // The server going away shows as a connection error (or, for a query sent
              // just as the server shut down, its admin-shutdown SQLSTATE 57P01).
              EXPECT_TRUE(ec == pg::condition::connection_error || ec == pg::condition::timeout)
                  << ec.message();
              asio::steady_timer t(io, 20ms);
              co_await t.async_wait(asio::use_awaitable);
            }
            if (ok_before == 200 && !restarter.joinable()) {
              restarter = std::thread([&] {
                EXPECT_EQ(std::system(ctl.c_str()), 0);
                restarted = true;
              });
            }
          }
          ++done;
        },
        asio::detached);
  }
  io.run();
  if (restarter.joinable()) restarter.join();
  EXPECT_EQ(done, 4);
  EXPECT_TRUE(restarted.load());
  EXPECT_GE(ok_after, 200) << "errors: " << errors;
  EXPECT_GT(p.stats().connects, 1u);  // reconnected after the restart
}

TEST(PgPool, HealthCheckQueryReplacesATerminatedBackend) {
  REQUIRE_PG();
  asio::io_context io;
  auto o = opts(2);
  o.check = pg::health_check::query;
  o.health_check_idle = 0ms;  // check on every acquire of an idle connection
  pg::pool p(io.get_executor(), o);
  pg::connection killer(io.get_executor());
  killer.connect(pg_dsn());
  run_co(io, [&]() -> awaitable<void> {
    std::vector<std::int32_t> pid1, pid2;
    {
      auto c = co_await p.async_acquire();
      co_await c->async_query(pg::sql("SELECT pg_backend_pid()"), pg::into(pid1));
    }
    EXPECT_EQ(pid1.size(), 1u);
    if (pid1.size() != 1) co_return;
    // Terminate that backend from another connection and wait until it is gone (bounded).
    std::vector<bool> killed;
    co_await killer.async_query(pg::sql("SELECT pg_terminate_backend($1::int4)", pid1[0]),
                                pg::into(killed));
    EXPECT_EQ(killed, std::vector<bool>{true});
    asio::steady_timer t(io);
    for (int i = 0; i < 500; ++i) {
      std::vector<std::int64_t> n;
      co_await killer.async_query(
          pg::sql("SELECT count(*)::int8 FROM pg_stat_activity WHERE pid = $1::int4", pid1[0]),
          pg::into(n));
      if (n.at(0) == 0) break;
      t.expires_after(10ms);
      co_await t.async_wait(asio::use_awaitable);
    }
    // The acquire hands out a healthy connection; the caller sees no error.
    auto c = co_await p.async_acquire();
    co_await c->async_query(pg::sql("SELECT pg_backend_pid()"), pg::into(pid2));
    EXPECT_EQ(pid2.size(), 1u);
    if (pid2.size() == 1) {
      EXPECT_NE(pid1[0], pid2[0]);
    }
  });
  auto s = p.stats();
  EXPECT_EQ(s.health_checks, 1u);
  EXPECT_EQ(s.health_check_failures, 1u);
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.connects, 2u);
  EXPECT_EQ(s.acquired, 2u);
}

TEST(PgPool, HealthCheckQueryPassesForAHealthyConnection) {
  REQUIRE_PG();
  asio::io_context io;
  auto o = opts(1);
  o.check = pg::health_check::query;
  o.health_check_idle = 0ms;
  pg::pool p(io.get_executor(), o);
  run_co(io, [&]() -> awaitable<void> {
    for (int i = 0; i < 5; ++i) {
      auto c = co_await p.async_acquire();
      auto r = co_await c->async_query(pg::sql("SELECT $1::int4", i));
      EXPECT_EQ(r.rows(), 1);
    }
  });
  auto s = p.stats();
  EXPECT_EQ(s.health_checks, 4u);  // the first acquire made a new connection
  EXPECT_EQ(s.health_check_failures, 0u);
  EXPECT_EQ(s.connects, 1u);
  // With a long idle threshold, no query is spent.
  auto o2 = opts(1);
  o2.check = pg::health_check::query;
  o2.health_check_idle = std::chrono::milliseconds(600'000);
  pg::pool p2(io.get_executor(), o2);
  run_co(io, [&]() -> awaitable<void> {
    for (int i = 0; i < 3; ++i) {
      auto c = co_await p2.async_acquire();
      co_await c->async_query(pg::sql("SELECT 1"));
    }
  });
  EXPECT_EQ(p2.stats().health_checks, 0u);
}

// Every idle connection older than idle_timeout goes, not only the one on top of the
// idle stack: with one connection kept busy, the three below it age out.
TEST(PgPool, IdleTimeoutClosesEveryOldIdleConnection) {
  REQUIRE_PG();
  asio::io_context io;
  auto o = opts(4);
  o.idle_timeout = 300ms;
  pg::pool p(io.get_executor(), o);
  run_co(io, [&]() -> awaitable<void> {
    {
      std::vector<pg::pooled_connection> four;
      for (int i = 0; i < 4; ++i) four.push_back(co_await p.async_acquire());
    }
    asio::steady_timer t(io);
    for (int i = 0; i < 100 && p.stats().idle < 4; ++i) {  // released on their strands
      t.expires_after(1ms);
      co_await t.async_wait(asio::use_awaitable);
    }
    EXPECT_EQ(p.stats().idle, 4u);
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < 1200ms) {
      {
        auto c = co_await p.async_acquire();
        co_await c->async_query(pg::sql("SELECT 1"));
      }
      t.expires_after(20ms);
      co_await t.async_wait(asio::use_awaitable);
    }
  });
  EXPECT_EQ(p.stats().total, 1u);
  EXPECT_EQ(p.stats().dropped, 3u);
}

// A host that accepts and never answers: connects fail at their deadline, count as
// failures, and the pool's slots come back (it does not stay full of stuck connects).
TEST(PgPool, StuckConnectsAreEvicted) {
  REQUIRE_PG();
  silent_server stuck;
  asio::io_context io;
  pg::pool_options o;
  o.dsn = "postgresql://postgres@127.0.0.1:" + std::to_string(stuck.port()) +
          "/postgres?connect_timeout=1";
  o.size = 2;
  o.acquire_timeout = 300ms;
  pg::pool p(io.get_executor(), o);
  int failed = 0;
  for (int i = 0; i < 4; ++i) {
    p.async_acquire([&](std::error_code ec, pg::pooled_connection c) {
      EXPECT_TRUE(ec);
      EXPECT_FALSE(c);
      ++failed;
    });
  }
  io.run_for(std::chrono::seconds(8));
  EXPECT_EQ(failed, 4);
  auto s = p.stats();
  EXPECT_EQ(s.total, 0u) << "stuck connects still hold pool slots";
  EXPECT_GE(s.connect_failures, 1u);
  EXPECT_EQ(s.waiting, 0u);
}

// min_size connections are made without any acquire, kept through idle_timeout, and
// remade when their backends are terminated.
TEST(PgPool, MinSizeIsKeptWarm) {
  REQUIRE_PG();
  asio::io_context io;
  auto o = opts(6);
  o.dsn = pg_dsn() + (pg_dsn().find('?') == std::string::npos ? "?" : "&") +
          "application_name=inlet_warm";
  o.min_size = 3;
  o.idle_timeout = 100ms;
  o.maintenance_interval = 30ms;
  pg::pool p(io.get_executor(), o);
  pg::connection killer(io.get_executor());
  killer.connect(pg_dsn());
  auto count_backends = [&] {
    std::vector<std::int64_t> n;
    killer.query(
        pg::sql(
            "SELECT count(*)::int8 FROM pg_stat_activity WHERE application_name = 'inlet_warm'"),
        pg::into(n));
    return n.at(0);
  };
  run_co(io, [&]() -> awaitable<void> {
    asio::steady_timer t(io);
    for (int i = 0; i < 200 && p.stats().idle < 3; ++i) {
      t.expires_after(10ms);
      co_await t.async_wait(asio::use_awaitable);
    }
    t.expires_after(400ms);  // several idle_timeouts: still three
    co_await t.async_wait(asio::use_awaitable);
    EXPECT_EQ(p.stats().total, 3u);
    EXPECT_EQ(p.stats().idle, 3u);
    EXPECT_EQ(count_backends(), 3);
    killer.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
        "'inlet_warm'");
    for (int i = 0; i < 300 && (p.stats().connects < 6 || p.stats().idle < 3); ++i) {
      t.expires_after(10ms);
      co_await t.async_wait(asio::use_awaitable);
    }
    EXPECT_EQ(p.stats().connects, 6u);
    EXPECT_EQ(p.stats().idle, 3u);
    EXPECT_EQ(count_backends(), 3);
    p.close();  // stops the maintenance timer: run() returns
  });
}

// Connects to a dead server back off (no tight loop), and acquirers never wait longer
// than their acquire_timeout for it.
TEST(PgPool, ConnectFailuresBackOffAndAcquirersDoNotWait) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool_options o;
  o.dsn = "postgresql://postgres@127.0.0.1:1/postgres";
  o.size = 2;
  o.min_size = 2;
  o.maintenance_interval = 10ms;
  o.connect_backoff_initial = 100ms;
  o.connect_backoff_max = 400ms;
  o.acquire_timeout = 250ms;
  pg::pool p(io.get_executor(), o);
  int completed = 0;
  std::vector<std::error_code> ecs;
  auto t0 = std::chrono::steady_clock::now();
  run_co(io, [&]() -> awaitable<void> {
    asio::steady_timer t(io);
    for (int i = 0; i < 6; ++i) {
      auto [ec, c] = co_await p.async_acquire(asio::as_tuple(asio::use_awaitable));
      ecs.push_back(ec);
      ++completed;
      t.expires_after(100ms);
      co_await t.async_wait(asio::use_awaitable);
    }
    p.close();
  });
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(completed, 6);
  for (auto& ec : ecs)
    EXPECT_TRUE(ec == pg::condition::connection_error || ec == pg::errc::pool_timeout)
        << ec.message();
  // Bounded by the acquirers' own timeouts (6 x (250 + 100) ms), not by the backoff.
  EXPECT_LT(elapsed, 4s);
  // Without a backoff, 2 slots every 10 ms would be ~300 attempts in that time.
  EXPECT_LT(p.stats().connect_failures, 40u);
  EXPECT_GE(p.stats().connect_failures, 3u);
}
