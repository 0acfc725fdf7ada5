// inlet::pg connection against a real PostgreSQL: connect, typed results, pipelining,
// failure isolation, prepared-statement cache, completion tokens, timeouts, cancellation.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/describe/class.hpp>
#include <thread>

#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using pg::use_awaitable_t;

namespace {
struct type_row {  // plain aggregate, read by Boost.PFR
  std::string typname;
  std::int32_t oid_as_int;  // deliberately wrong type for the mismatch test (int4 vs oid)
};
struct pair_row {
  std::int32_t a;
  std::optional<std::string> b;
};
struct described_row {
  std::int64_t id;
  std::string name;
};
BOOST_DESCRIBE_STRUCT(described_row, (), (id, name))

pg::connection connect_sync(asio::io_context& io, pg::connection_options o = {}) {
  pg::connection c(io.get_executor(), o);
  c.connect(pg_dsn());
  return c;
}
}  // namespace

TEST(PgConnection, SyncConnectAndTypedQuery) {
  REQUIRE_PG();
  asio::io_context io;
  auto c = connect_sync(io);
  EXPECT_TRUE(c.is_open());
  std::vector<std::tuple<std::int32_t, std::string>> rows;
  auto n = c.query(pg::sql("SELECT g::int4, 'r' || g FROM generate_series(1, $1::int4) g", 3), pg::into(rows));
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(rows[2], std::make_tuple(3, std::string("r3")));
  auto r = c.query("SELECT 1::int4 + 1");
  ASSERT_EQ(r.rows(), 1);
  std::int32_t v = 0;
  EXPECT_FALSE(r.at(0, 0).as(v));
  EXPECT_EQ(v, 2);
}

TEST(PgConnection, AsyncTypedRowsTuplesAggregatesDescribe) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    std::vector<pair_row> rows;
    auto n = co_await c.async_query(
        pg::sql("SELECT x::int4, CASE WHEN x % 2 = 0 THEN NULL ELSE x::text END FROM generate_series(1, 4) x"),
        pg::into(rows));
    EXPECT_EQ(n, 4u);
    EXPECT_EQ(rows[0].b, "1");
    EXPECT_FALSE(rows[1].b.has_value());
    std::vector<described_row> d;
    co_await c.async_query(pg::sql("SELECT $1::text AS name, $2::int8 AS id", std::string("seven"), std::int64_t{7}), pg::into(d));
    EXPECT_EQ(d.size(), 1u);
    if (d.size() == 1) {
      EXPECT_EQ(d[0].id, 7);
      EXPECT_EQ(d[0].name, "seven");
    }
    // Single-column rows into a plain vector of scalars.
    std::vector<std::int64_t> ids;
    co_await c.async_query(pg::sql("SELECT generate_series(1, 10)::int8"), pg::into(ids));
    EXPECT_EQ(ids.size(), 10u);
    EXPECT_EQ(ids.back(), 10);
  });
}

TEST(PgConnection, TypeMismatchNamesTheColumn) {
  REQUIRE_PG();
  asio::io_context io;
  auto c = connect_sync(io);
  std::vector<type_row> rows;
  std::error_code ec;
  c.query(pg::sql("SELECT typname, oid FROM pg_type LIMIT 1"), pg::into(rows), ec);
  EXPECT_EQ(ec, pg::errc::type_mismatch);
  EXPECT_EQ(ec, pg::condition::type_mismatch);
  EXPECT_EQ(c.last_diagnostics().column, "oid");
  EXPECT_NE(c.last_diagnostics().client_message.find("column 1 \"oid\""), std::string::npos)
      << c.last_diagnostics().client_message;
  std::vector<std::tuple<std::string>> one;
  c.query(pg::sql("SELECT 1, 2"), pg::into(one), ec);
  EXPECT_EQ(ec, pg::errc::column_count_mismatch);
  std::vector<std::int32_t> nn;
  c.query(pg::sql("SELECT NULL::int4"), pg::into(nn), ec);
  EXPECT_EQ(ec, pg::errc::unexpected_null);
}

TEST(PgConnection, AffectedRowsAndServerDiagnostics) {
  REQUIRE_PG();
  asio::io_context io;
  auto c = connect_sync(io);
  c.execute("DROP TABLE IF EXISTS t_aff");
  c.execute("CREATE TABLE t_aff (id int4 PRIMARY KEY, v text)");
  EXPECT_EQ(c.execute(pg::sql("INSERT INTO t_aff SELECT g, 'x' FROM generate_series(1, $1::int4) g", 5)), 5u);
  EXPECT_EQ(c.execute(pg::sql("UPDATE t_aff SET v = $1 WHERE id <= $2::int4", std::string("y"), 3)), 3u);
  EXPECT_EQ(c.execute(pg::sql("DELETE FROM t_aff WHERE id = $1::int4", 5)), 1u);
  std::error_code ec;
  c.execute(pg::sql("INSERT INTO t_aff VALUES ($1::int4, 'dup')", 1), ec);
  EXPECT_EQ(ec, pg::condition::unique_violation);
  EXPECT_EQ(ec, pg::condition::server_error);
  const auto& d = c.last_diagnostics();
  EXPECT_EQ(d.sqlstate, "23505");
  EXPECT_EQ(d.severity, "ERROR");
  EXPECT_EQ(d.constraint, "t_aff_pkey");
  EXPECT_NE(d.detail.find("(id)=(1)"), std::string::npos) << d.detail;
  EXPECT_TRUE(d.client_message.empty());
  // Syntax error position; the throwing form carries the diagnostics.
  try {
    c.execute("SELEC 1");
    FAIL() << "no throw";
  } catch (const pg::error& e) {
    EXPECT_EQ(e.code(), pg::condition::syntax_error);
    EXPECT_EQ(e.diag().position, 1);
  }
  // The connection is still usable after errors.
  EXPECT_EQ(c.query("SELECT 1").rows(), 1);
}

TEST(PgConnection, PipelinedFailuresAreIsolated) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    constexpr int n = 200;
    std::vector<std::error_code> ecs(n);
    std::vector<std::int32_t> vals(n, -1);
    int done = 0;
    for (int i = 0; i < n; ++i) {
      // Every 7th statement divides by zero; the others must not notice.
      auto q = pg::sql("SELECT 100 / $1::int4", i % 7 == 0 ? 0 : 1);
      c.async_query(std::move(q), [&, i](std::error_code ec, pg::result r) {
        ecs[i] = ec;
        if (!ec) r.at(0, 0).as(vals[i]);
        ++done;
      });
    }
    EXPECT_GT(c.in_flight(), 0u);
    asio::steady_timer t(io);
    for (int spin = 0; done < n && spin < 1000; ++spin) {
      t.expires_after(std::chrono::milliseconds(5));
      co_await t.async_wait(use_awaitable);
    }
    EXPECT_EQ(done, n);
    for (int i = 0; i < n; ++i) {
      if (i % 7 == 0) {
        EXPECT_EQ(ecs[i], pg::make_sqlstate_error("22012")) << i;
      } else {
        EXPECT_FALSE(ecs[i]) << i << " " << ecs[i].message();
        EXPECT_EQ(vals[i], 100);
      }
    }
    // Same SQL text and parameter types: prepared once.
    EXPECT_EQ(c.stats().prepares, 1u);
    EXPECT_EQ(c.stats().queries, static_cast<std::uint64_t>(n) + 1);  // +1: the connect
  });
}

TEST(PgConnection, StatementCacheCanBeTurnedOffAndEvicts) {
  REQUIRE_PG();
  asio::io_context io;
  auto off = connect_sync(io, {.statement_cache_size = 0});
  for (int i = 0; i < 5; ++i) off.query(pg::sql("SELECT $1::int4", i));
  EXPECT_EQ(off.stats().prepares, 0u);
  auto small = connect_sync(io, {.statement_cache_size = 2});
  for (int i = 0; i < 3; ++i) {
    small.query("SELECT 1");
    small.query("SELECT 2");
    small.query("SELECT 3");
  }
  EXPECT_EQ(small.stats().prepares, 9u);  // LRU of 2 over a cycle of 3: always a miss
  auto r = small.query("SELECT count(*)::int8 FROM pg_prepared_statements");
  std::int64_t live = 0;
  r.at(0, 0).as(live);
  EXPECT_LE(live, 3);  // evicted statements are deallocated on the server
}

TEST(PgConnection, CompletionTokens) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  // Callback.
  std::error_code cec = pg::errc::protocol_error;
  c.async_connect(pg_dsn(), [&](std::error_code ec) { cec = ec; });
  io.run();
  io.restart();
  ASSERT_FALSE(cec) << cec.message() << c.last_diagnostics().to_string();
  // deferred, then launched with a callback.
  auto op = c.async_execute(pg::sql("SELECT 1"), asio::deferred);
  std::uint64_t affected = 0;
  std::move(op)([&](std::error_code ec, std::uint64_t n) {
    EXPECT_FALSE(ec);
    affected = n;
  });
  io.run();
  io.restart();
  EXPECT_EQ(affected, 1u);  // "SELECT 1" tag
  // use_future with the io_context on another thread.
  {
    auto guard = asio::make_work_guard(io);
    std::thread th([&] { io.run(); });
    auto f = c.async_query(pg::sql("SELECT 42::int4"), asio::use_future);
    auto [fec, r] = f.get();  // std::error_code signatures come back as a tuple
    EXPECT_FALSE(fec);
    std::int32_t v = 0;
    r.at(0, 0).as(v);
    EXPECT_EQ(v, 42);
    guard.reset();
    th.join();
    io.restart();
  }
  // Stackful coroutine.
  bool ran = false;
  asio::spawn(io, [&](asio::yield_context y) {
    std::vector<std::int32_t> v;
    auto [ec, n] = c.async_query(pg::sql("SELECT generate_series(1, 5)::int4"), pg::into(v), y);
    EXPECT_FALSE(ec);
    EXPECT_EQ(n, 5u);
    ran = true;
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  io.run();
  EXPECT_TRUE(ran);
}

TEST(PgConnection, TimeoutCancelsOnServerAndConnectionRecovers) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor(), {.query_timeout = std::chrono::milliseconds(200)});
    co_await c.async_connect(pg_dsn());
    auto t0 = std::chrono::steady_clock::now();
    auto [ec, r] = co_await c.async_query(pg::sql("SELECT pg_sleep(30)"), asio::as_tuple(use_awaitable));
    EXPECT_EQ(ec, pg::errc::timeout);
    EXPECT_EQ(ec, pg::condition::timeout);
    EXPECT_EQ(c.stats().cancels, 1u);
    // The next query waits behind the cancelled one; it must succeed well before 30 s.
    auto [ec2, r2] = co_await c.async_query(pg::sql("SELECT 7::int4"), asio::as_tuple(use_awaitable));
    EXPECT_FALSE(ec2) << ec2.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  });
}

TEST(PgConnection, AsioCancellationSendsServerCancel) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    asio::cancellation_signal sig;
    std::error_code got = pg::errc::protocol_error;
    c.async_query(pg::sql("SELECT pg_sleep(30)"),
                  asio::bind_cancellation_slot(sig.slot(), [&](std::error_code ec, pg::result) { got = ec; }));
    asio::steady_timer t(io, std::chrono::milliseconds(100));
    co_await t.async_wait(use_awaitable);
    sig.emit(asio::cancellation_type::terminal);
    EXPECT_EQ(got, std::errc::operation_canceled);
    auto r = co_await c.async_query(pg::sql("SELECT 1::int4"));
    EXPECT_EQ(r.rows(), 1);
    EXPECT_EQ(c.stats().cancels, 1u);
  });
}

TEST(PgConnection, ConnectErrorsAreConnectionErrors) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  std::error_code ec;
  c.connect("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2", ec);
  EXPECT_EQ(ec, pg::condition::connection_error);
  EXPECT_FALSE(c.last_diagnostics().client_message.empty());
  std::error_code aec;
  c.async_connect("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2", [&](std::error_code e) { aec = e; });
  io.run();
  EXPECT_EQ(aec, pg::condition::connection_error);
  EXPECT_EQ(c.query("SELECT 1", ec).rows(), 0);
  EXPECT_EQ(ec, pg::errc::not_connected);
}

TEST(PgConnection, DefaultTokenReturnsValuesAndThrowsPgError) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());  // void
    std::uint64_t n = co_await c.async_execute(pg::sql("SELECT generate_series(1, 3)"));
    EXPECT_EQ(n, 3u);
    std::vector<std::int32_t> v;
    std::size_t rows = co_await c.async_query(pg::sql("SELECT 5::int4"), pg::into(v));
    EXPECT_EQ(rows, 1u);
    pg::result r = co_await c.async_query(pg::sql("SELECT 'x'::text"));
    EXPECT_EQ(r.rows(), 1);
    bool threw = false;
    try {
      co_await c.async_query(pg::sql("SELEC 1"));
    } catch (const pg::error& e) {
      threw = true;
      EXPECT_EQ(e.code(), pg::condition::syntax_error);
    }
    EXPECT_TRUE(threw);
    threw = false;
    try {
      std::vector<std::string> wrong;
      co_await c.async_query(pg::sql("SELECT 1::int4"), pg::into(wrong));
    } catch (const pg::error& e) {
      threw = true;
      EXPECT_EQ(e.code(), pg::errc::type_mismatch);
    }
    EXPECT_TRUE(threw);
    // The coroutine continues normally after the exceptions.
    EXPECT_EQ((co_await c.async_query(pg::sql("SELECT 1"))).rows(), 1);
  });
}

namespace {
std::string dsn_to_port(unsigned short port, const char* extra = "") {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/postgres?connect_timeout=1" + extra;
}
}  // namespace

// A host that accepts and never answers: the connect fails at its deadline (the DSN's
// connect_timeout, which libpq itself ignores in asynchronous connects).
TEST(PgConnection, ConnectToAStuckHostFailsAtItsDeadline) {
  REQUIRE_PG();
  silent_server stuck;
  asio::io_context io;
  pg::connection c(io.get_executor());
  bool done = false;
  std::error_code got;
  auto t0 = std::chrono::steady_clock::now();
  c.async_connect(dsn_to_port(stuck.port()), [&](std::error_code ec) {
    got = ec;
    done = true;
  });
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(done) << "the connect never completed";
  EXPECT_EQ(got, pg::condition::timeout) << got.message();
  EXPECT_EQ(got, pg::condition::connection_error) << got.message();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  EXPECT_EQ(stuck.accepted(), 1u);
  EXPECT_FALSE(c.is_open());
}

// A connect can be cancelled through its cancellation slot.
TEST(PgConnection, ConnectCanBeCancelled) {
  REQUIRE_PG();
  silent_server stuck;
  asio::io_context io;
  pg::connection c(io.get_executor());
  asio::cancellation_signal sig;
  bool done = false;
  std::error_code got;
  c.async_connect("postgresql://postgres@127.0.0.1:" + std::to_string(stuck.port()) + "/postgres",
                  asio::bind_cancellation_slot(sig.slot(), [&](std::error_code ec) {
                    got = ec;
                    done = true;
                  }));
  asio::steady_timer t(io, std::chrono::milliseconds(100));
  t.async_wait([&](boost::system::error_code) { sig.emit(asio::cancellation_type::terminal); });
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(done) << "the connect was not cancelled";
  EXPECT_EQ(got, std::errc::operation_canceled) << got.message();
  // The connection can connect again afterwards.
  io.restart();
  done = false;
  c.async_connect(pg_dsn(), [&](std::error_code ec) {
    got = ec;
    done = true;
  });
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(done);
  EXPECT_FALSE(got) << got.message();
  EXPECT_TRUE(c.is_open());
}

// With several hosts, a stuck first host costs its own deadline, then the next is tried.
TEST(PgConnection, StuckFirstHostThenTheNextOne) {
  REQUIRE_PG();
  silent_server stuck;
  asio::io_context io;
  pg::connection c(io.get_executor());
  const char* port = std::getenv("PGPORT");
  ASSERT_NE(port, nullptr);
  std::string dsn = "postgresql://postgres@127.0.0.1:" + std::to_string(stuck.port()) + ",127.0.0.1:" + port +
                    "/postgres?connect_timeout=1";
  bool done = false;
  std::error_code got;
  c.async_connect(dsn, [&](std::error_code ec) {
    got = ec;
    done = true;
  });
  io.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(done) << "the connect never completed";
  EXPECT_FALSE(got) << got.message() << " " << c.last_diagnostics().to_string();
  EXPECT_TRUE(c.is_open());
}

// Each operation's failure carries its own server diagnostics, also with the default
// token (the thrown pg::error) and with many requests in flight on one connection.
TEST(PgConnection, DiagnosticsTravelWithEachOperation) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    co_await c.async_execute("DROP TABLE IF EXISTS t_diag");
    co_await c.async_execute("CREATE TABLE t_diag (id int4 PRIMARY KEY)");
    co_await c.async_execute("INSERT INTO t_diag VALUES (1)");
    try {
      co_await c.async_execute(pg::sql("INSERT INTO t_diag VALUES ($1::int4)", 1));
      ADD_FAILURE() << "no throw";
    } catch (const pg::error& e) {
      EXPECT_EQ(e.code(), pg::condition::unique_violation);
      EXPECT_EQ(e.diag().sqlstate, "23505");
      EXPECT_EQ(e.diag().constraint, "t_diag_pkey");
      EXPECT_NE(std::string(e.what()).find("duplicate key"), std::string::npos) << e.what();
    }
    // 50 failing requests in flight at once, each with its own message.
    constexpr int n = 50;
    int ok = 0, finished = 0;
    for (int i = 0; i < n; ++i) {
      asio::co_spawn(io, [&, i]() -> awaitable<void> {
        try {
          co_await c.async_query(pg::sql("SELECT ('x' || $1::text)::int4", std::to_string(i)));
        } catch (const pg::error& e) {
          if (e.diag().sqlstate == "22P02" && e.diag().message.find("\"x" + std::to_string(i) + "\"") != std::string::npos)
            ++ok;
          else
            ADD_FAILURE() << i << ": " << e.diag().to_string();
        }
        ++finished;
      }, asio::detached);
    }
    asio::steady_timer t(io);
    for (int spin = 0; finished < n && spin < 2000; ++spin) {
      t.expires_after(std::chrono::milliseconds(5));
      co_await t.async_wait(use_awaitable);
    }
    EXPECT_EQ(ok, n);
    // A type mismatch names the column in the thrown error's diagnostics.
    try {
      std::vector<std::string> wrong;
      co_await c.async_query(pg::sql("SELECT 1::int4 AS num"), pg::into(wrong));
      ADD_FAILURE() << "no throw";
    } catch (const pg::error& e) {
      EXPECT_EQ(e.code(), pg::errc::type_mismatch);
      EXPECT_EQ(e.diag().column, "num");
    }
  });
}

// Tokens that only see the error_code get the diagnostics through pg::with_diagnostics.
TEST(PgConnection, WithDiagnosticsForOtherTokens) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    pg::diagnostics d;
    d.message = "stale";
    auto [ec, n] = co_await c.async_execute(pg::sql("SELECT 1/0"), pg::with_diagnostics(asio::as_tuple(use_awaitable), d));
    EXPECT_EQ(ec, pg::make_sqlstate_error("22012"));
    EXPECT_EQ(d.sqlstate, "22012");
    EXPECT_EQ(d.message, "division by zero");
    // Success clears it.
    auto [ec2, n2] = co_await c.async_execute(pg::sql("SELECT 1"), pg::with_diagnostics(asio::as_tuple(use_awaitable), d));
    EXPECT_FALSE(ec2);
    EXPECT_TRUE(d.sqlstate.empty());
    // A callback; a client-side error has client text.
    pg::diagnostics d2;
    std::error_code got;
    pg::connection never(io.get_executor());
    never.async_execute(pg::sql("SELECT 1"), pg::with_diagnostics([&](std::error_code e, std::uint64_t) { got = e; }, d2));
    asio::steady_timer t(io, std::chrono::milliseconds(20));
    co_await t.async_wait(use_awaitable);
    EXPECT_EQ(got, pg::errc::not_connected);
    EXPECT_FALSE(d2.client_message.empty());
  });
}
