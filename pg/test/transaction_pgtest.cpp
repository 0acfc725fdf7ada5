// Transactions against a real server: commit, rollback, drop = rollback, savepoints,
// options, exclusive ownership of a shared connection (neighbours never run inside),
// COMMIT outcomes (failure, aborted, unknown), the retry helper.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

#include "inlet/pg/transaction.hpp"
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
void reset_table(const char* name, const char* cols = "(id int4 PRIMARY KEY, v text)") {
  asio::io_context io;
  pg::connection c(io.get_executor());
  c.connect(pg_dsn());
  c.execute(std::string("DROP TABLE IF EXISTS ") + name);
  c.execute(std::string("CREATE TABLE ") + name + " " + cols);
}
std::int64_t count_rows(const char* table) {
  asio::io_context io;
  pg::connection c(io.get_executor());
  c.connect(pg_dsn());
  std::vector<std::int64_t> n;
  c.query(pg::sql(std::string("SELECT count(*)::int8 FROM ") + table), pg::into(n));
  return n.at(0);
}
awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}
}  // namespace

TEST(PgTransaction, CommitAndRollbackOnAPool) {
  REQUIRE_PG();
  reset_table("t_tx1");
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(2));
  run_co(io, [&]() -> awaitable<void> {
    auto tx = co_await pg::async_begin(p);
    EXPECT_TRUE(tx.active());
    co_await tx.async_execute(pg::sql("INSERT INTO t_tx1 VALUES ($1::int4, 'a')", 1));
    std::vector<std::int64_t> n;
    co_await tx.async_query(pg::sql("SELECT count(*)::int8 FROM t_tx1"), pg::into(n));
    EXPECT_EQ(n, std::vector<std::int64_t>{1});
    co_await std::move(tx).async_commit();
    EXPECT_FALSE(tx.active());  // NOLINT(bugprone-use-after-move): checking the moved-from state

    auto tx2 = co_await pg::async_begin(p);
    co_await tx2.async_execute(pg::sql("INSERT INTO t_tx1 VALUES ($1::int4, 'b')", 2));
    co_await std::move(tx2).async_rollback();
  });
  EXPECT_EQ(count_rows("t_tx1"), 1);
  // The connections went back clean (nothing dropped).
  auto s = p.stats();
  EXPECT_EQ(s.dropped, 0u);
}

TEST(PgTransaction, DropRollsBackAndReturnsThePooledConnection) {
  REQUIRE_PG();
  reset_table("t_tx2");
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(1));
  run_co(io, [&]() -> awaitable<void> {
    {
      auto tx = co_await pg::async_begin(p);
      co_await tx.async_execute(pg::sql("INSERT INTO t_tx2 VALUES ($1::int4, 'x')", 1));
    }  // dropped: ROLLBACK, then the connection goes back
    // Size 1: this waits for the rollback to finish and gets the same, clean connection.
    auto c = co_await p.async_acquire();
    std::vector<std::int64_t> n;
    co_await c->async_query(pg::sql("SELECT count(*)::int8 FROM t_tx2"), pg::into(n));
    EXPECT_EQ(n, std::vector<std::int64_t>{0});
  });
  EXPECT_EQ(p.stats().dropped, 0u);
  EXPECT_EQ(p.stats().connects, 1u);
}

// Another coroutine pipelining on the same connection while a transaction is open: its
// statement waits until the transaction ends and runs outside it (it is neither rolled
// back with it nor failed by its error).
TEST(PgTransaction, NeighboursNeverRunInsideATransactionOnASharedConnection) {
  REQUIRE_PG();
  reset_table("t_tx3");
  asio::io_context io;
  pg::connection c(io.get_executor());
  bool neighbour_done = false;
  std::error_code neighbour_ec;
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    auto tx = co_await pg::async_begin(c);
    co_await tx.async_execute(pg::sql("INSERT INTO t_tx3 VALUES ($1::int4, 'tx')", 1));
    // The neighbour issues its statement while the transaction is open.
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
          auto [ec, n] = co_await c.async_execute(
              pg::sql("INSERT INTO t_tx3 VALUES ($1::int4, 'neighbour')", 2),
              asio::as_tuple(asio::use_awaitable));
          neighbour_ec = ec;
          neighbour_done = true;
        },
        asio::detached);
    co_await sleep_for(50ms);
    EXPECT_FALSE(neighbour_done);  // held while the transaction owns the connection
    // The transaction fails, then rolls back.
    auto [ec, n] =
        co_await tx.async_execute(pg::sql("SELECT 1/0"), asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, pg::make_sqlstate_error("22012"));
    co_await std::move(tx).async_rollback();
    for (int i = 0; i < 200 && !neighbour_done; ++i) co_await sleep_for(5ms);
  });
  EXPECT_TRUE(neighbour_done);
  EXPECT_FALSE(neighbour_ec) << neighbour_ec.message();
  std::vector<std::string> v;
  asio::io_context io2;
  pg::connection check(io2.get_executor());
  check.connect(pg_dsn());
  check.query(pg::sql("SELECT v FROM t_tx3 ORDER BY id"), pg::into(v));
  EXPECT_EQ(v, std::vector<std::string>{"neighbour"});
}

// Requests already in flight when BEGIN is issued run before it, outside; a second
// transaction on the same connection waits for the first.
TEST(PgTransaction, TransactionsOnOneConnectionTakeTurns) {
  REQUIRE_PG();
  reset_table("t_tx4");
  asio::io_context io;
  pg::connection c(io.get_executor());
  std::vector<std::string> order;
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    int finished = 0;
    for (int k = 0; k < 3; ++k) {
      asio::co_spawn(
          io,
          [&, k]() -> awaitable<void> {
            auto tx = co_await pg::async_begin(c);
            order.push_back("begin" + std::to_string(k));
            std::vector<bool> in_tx;
            co_await tx.async_query(pg::sql("SELECT now() = statement_timestamp()"),
                                    pg::into(in_tx));
            co_await sleep_for(20ms);
            co_await tx.async_execute(pg::sql("INSERT INTO t_tx4 VALUES ($1::int4, 'k')", k));
            order.push_back("end" + std::to_string(k));
            co_await std::move(tx).async_commit();
            ++finished;
          },
          asio::detached);
    }
    for (int i = 0; i < 400 && finished < 3; ++i) co_await sleep_for(5ms);
    EXPECT_EQ(finished, 3);
  });
  ASSERT_EQ(order.size(), 6u);
  for (std::size_t i = 0; i < 6; i += 2) {  // never interleaved
    EXPECT_EQ(order[i].substr(0, 5), "begin");
    EXPECT_EQ(order[i + 1].substr(0, 3), "end");
    EXPECT_EQ(order[i].back(), order[i + 1].back());
  }
  EXPECT_EQ(count_rows("t_tx4"), 3);
}

TEST(PgTransaction, SavepointsReleaseRollBackAndDrop) {
  REQUIRE_PG();
  reset_table("t_tx5");
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(1));
  run_co(io, [&]() -> awaitable<void> {
    auto tx = co_await pg::async_begin(p);
    co_await tx.async_execute(pg::sql("INSERT INTO t_tx5 VALUES ($1::int4, 'base')", 1));
    {
      auto sp = co_await tx.async_savepoint();
      co_await tx.async_execute(pg::sql("INSERT INTO t_tx5 VALUES ($1::int4, 'kept')", 2));
      {
        auto inner = co_await tx.async_savepoint();  // depth 2
        co_await tx.async_execute(pg::sql("INSERT INTO t_tx5 VALUES ($1::int4, 'undone')", 3));
        co_await std::move(inner).async_rollback();
      }
      co_await std::move(sp).async_release();
    }
    {
      auto sp = co_await tx.async_savepoint();
      // A failing statement inside a savepoint: rolling back to it rescues the transaction.
      auto [ec, n] =
          co_await tx.async_execute(pg::sql("INSERT INTO t_tx5 VALUES ($1::int4, 'dup')", 1),
                                    asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(ec, pg::condition::unique_violation);
      co_await std::move(sp).async_rollback();
    }
    {
      auto sp = co_await tx.async_savepoint();
      co_await tx.async_execute(pg::sql("INSERT INTO t_tx5 VALUES ($1::int4, 'dropped')", 4));
    }  // dropped: rolled back to it
    co_await tx.async_execute(pg::sql("INSERT INTO t_tx5 VALUES ($1::int4, 'after')", 5));
    co_await std::move(tx).async_commit();
  });
  asio::io_context io2;
  pg::connection check(io2.get_executor());
  check.connect(pg_dsn());
  std::vector<std::string> v;
  check.query(pg::sql("SELECT v FROM t_tx5 ORDER BY id"), pg::into(v));
  EXPECT_EQ(v, (std::vector<std::string>{"base", "kept", "after"}));
}

TEST(PgTransaction, OptionsIsolationReadOnly) {
  REQUIRE_PG();
  reset_table("t_tx6");
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(1));
  run_co(io, [&]() -> awaitable<void> {
    auto tx =
        co_await pg::async_begin(p, {.level = pg::isolation::serializable, .read_only = true});
    std::vector<std::string> iso, ro;
    co_await tx.async_query(pg::sql("SELECT current_setting('transaction_isolation')"),
                            pg::into(iso));
    co_await tx.async_query(pg::sql("SELECT current_setting('transaction_read_only')"),
                            pg::into(ro));
    EXPECT_EQ(iso, std::vector<std::string>{"serializable"});
    EXPECT_EQ(ro, std::vector<std::string>{"on"});
    auto [ec, n] = co_await tx.async_execute(pg::sql("INSERT INTO t_tx6 VALUES (1, 'x')"),
                                             asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, pg::condition::database_readonly);
    // COMMIT of a transaction in which a statement failed: rolled back, and said so.
    auto [cec] = co_await std::move(tx).async_commit(asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(cec, pg::errc::transaction_aborted);
    auto tx2 = co_await pg::async_begin(p, {.level = pg::isolation::repeatable_read});
    co_await tx2.async_query(pg::sql("SELECT current_setting('transaction_isolation')"),
                             pg::into(iso));
    EXPECT_EQ(iso.back(), "repeatable read");
    co_await std::move(tx2).async_commit();
  });
}

TEST(PgTransaction, AFinishedTransactionRefusesStatements) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(1));
  run_co(io, [&]() -> awaitable<void> {
    auto tx = co_await pg::async_begin(p);
    auto sp = co_await tx.async_savepoint();
    co_await std::move(tx).async_commit();
    // Written on purpose: what -Wconsumed rejects at compile time fails at run time.
    auto [ec, r] =
        co_await tx.async_query(pg::sql("SELECT 1"), asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, pg::errc::transaction_closed);
    auto [ec2] = co_await std::move(tx).async_commit(asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec2, pg::errc::transaction_closed);
    auto [ec3] = co_await std::move(sp).async_release(asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec3, pg::errc::transaction_closed);
    try {
      co_await tx.async_execute(pg::sql("SELECT 1"));
      ADD_FAILURE() << "no throw";
    } catch (const pg::error& e) {
      EXPECT_EQ(e.code(), pg::errc::transaction_closed);
      EXPECT_FALSE(e.diag().client_message.empty());
    }
    // The connection itself is fine and went back to the pool.
    auto c = co_await p.async_acquire();
    EXPECT_EQ((co_await c->async_query(pg::sql("SELECT 1"))).rows(), 1);
  });
}

// A connection lost while COMMIT is on its way: "outcome unknown", not a failure.
TEST(PgTransaction, ConnectionLostDuringCommitIsOutcomeUnknown) {
  REQUIRE_PG();
  reset_table("t_tx7", "(id int4)");
  {
    asio::io_context io;
    pg::connection c(io.get_executor());
    c.connect(pg_dsn());
    // A deferred constraint trigger makes COMMIT itself take a while.
    c.execute(
        "CREATE OR REPLACE FUNCTION t_tx7_slow() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$");
    c.execute(
        "CREATE CONSTRAINT TRIGGER t_tx7_slow AFTER INSERT ON t_tx7 DEFERRABLE INITIALLY DEFERRED "
        "FOR EACH ROW EXECUTE FUNCTION t_tx7_slow()");
  }
  asio::io_context io;
  pg::connection c(io.get_executor());
  pg::connection killer(io.get_executor());
  killer.connect(pg_dsn());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    std::vector<std::int32_t> pid;
    co_await c.async_query(pg::sql("SELECT pg_backend_pid()"), pg::into(pid));
    auto tx = co_await pg::async_begin(c);
    co_await tx.async_execute(pg::sql("INSERT INTO t_tx7 VALUES (1)"));
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
          co_await sleep_for(300ms);  // COMMIT is running its trigger by now
          co_await killer.async_query(pg::sql("SELECT pg_terminate_backend($1::int4)", pid.at(0)));
        },
        asio::detached);
    pg::diagnostics d;
    auto [ec] = co_await std::move(tx).async_commit(
        pg::with_diagnostics(asio::as_tuple(asio::use_awaitable), d));
    EXPECT_EQ(ec, pg::errc::commit_outcome_unknown) << ec.message() << " " << d.to_string();
    EXPECT_NE(ec, pg::condition::connection_error);
    EXPECT_NE(d.client_message.find("COMMIT was sent"), std::string::npos) << d.to_string();
  });
}

// A COMMIT refused by the server is a failure (rolled back), not "unknown".
TEST(PgTransaction, CommitErrorFromTheServerIsAFailure) {
  REQUIRE_PG();
  reset_table("t_tx8", "(id int4 UNIQUE DEFERRABLE INITIALLY DEFERRED)");
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(1));
  run_co(io, [&]() -> awaitable<void> {
    auto tx = co_await pg::async_begin(p);
    co_await tx.async_execute(pg::sql("INSERT INTO t_tx8 VALUES (1), (1)"));  // checked at COMMIT
    try {
      co_await std::move(tx).async_commit();
      ADD_FAILURE() << "no throw";
    } catch (const pg::error& e) {
      EXPECT_EQ(e.code(), pg::condition::unique_violation);
      EXPECT_EQ(e.diag().sqlstate, "23505");
    }
  });
  EXPECT_EQ(count_rows("t_tx8"), 0);
}

// Two serializable transactions that conflict: one fails with 40001 and pg::transact
// runs it again; both increments land.
TEST(PgTransaction, TransactRetriesSerializationFailures) {
  REQUIRE_PG();
  reset_table("t_tx9", "(id int4 PRIMARY KEY, n int4)");
  {
    asio::io_context io;
    pg::connection c(io.get_executor());
    c.connect(pg_dsn());
    c.execute("INSERT INTO t_tx9 VALUES (1, 0)");
  }
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(2));
  int attempts = 0, done = 0;
  for (int k = 0; k < 2; ++k) {
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
          co_await pg::transact(
              p, {.level = pg::isolation::serializable},
              [&](pg::transaction& tx) -> awaitable<void> {
                ++attempts;
                std::vector<std::int32_t> n;
                co_await tx.async_query(pg::sql("SELECT n FROM t_tx9 WHERE id = 1"), pg::into(n));
                co_await sleep_for(100ms);  // both read before either writes
                co_await tx.async_execute(
                    pg::sql("UPDATE t_tx9 SET n = $1::int4 WHERE id = 1", n.at(0) + 1));
              },
              {.max_attempts = 5, .initial_delay = 20ms, .max_delay = 200ms});
          ++done;
        },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
  }
  io.run();
  EXPECT_EQ(done, 2);
  EXPECT_GE(attempts, 3);  // at least one re-run
  asio::io_context io2;
  pg::connection c(io2.get_executor());
  c.connect(pg_dsn());
  std::vector<std::int32_t> n;
  c.query(pg::sql("SELECT n FROM t_tx9 WHERE id = 1"), pg::into(n));
  EXPECT_EQ(n, std::vector<std::int32_t>{2});
}

// Non-retryable errors go straight out; the attempts are bounded.
TEST(PgTransaction, TransactGivesUp) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(1));
  run_co(io, [&]() -> awaitable<void> {
    int attempts = 0;
    try {
      co_await pg::transact(p, {}, [&](pg::transaction& tx) -> awaitable<void> {
        ++attempts;
        co_await tx.async_execute(pg::sql("SELECT 1/0"));
      });
    } catch (const pg::error& e) {
      EXPECT_EQ(e.code(), pg::make_sqlstate_error("22012"));
    }
    EXPECT_EQ(attempts, 1);
    attempts = 0;
    try {
      co_await pg::transact(p, {},
                            [&](pg::transaction& tx) -> awaitable<int> {
                              ++attempts;
                              co_await tx.async_execute(pg::sql("SELECT 1"));
                              throw pg::error(pg::make_sqlstate_error("40P01"), {});
                            },
                            {.max_attempts = 3, .initial_delay = 1ms, .max_delay = 5ms});
    } catch (const pg::error& e) {
      EXPECT_EQ(e.code(), pg::condition::deadlock_detected);
    }
    EXPECT_EQ(attempts, 3);
    // With a value.
    int v = co_await pg::transact(p, {}, [&](pg::transaction& tx) -> awaitable<int> {
      std::vector<std::int32_t> r;
      co_await tx.async_query(pg::sql("SELECT 41 + 1"), pg::into(r));
      co_return r.at(0);
    });
    EXPECT_EQ(v, 42);
  });
}

TEST(PgTransaction, OtherTokensAndBatches) {
  REQUIRE_PG();
  reset_table("t_tx10");
  asio::io_context io;
  pg::pool p(io.get_executor(), opts(1));
  std::error_code got = pg::errc::protocol_error;
  pg::async_begin(p, [&](std::error_code ec, pg::transaction tx) {
    got = ec;
    if (ec) return;
    pg::batch b;
    b.add("INSERT INTO t_tx10 VALUES ($1::int4, 'a')", 1);
    b.add("INSERT INTO t_tx10 VALUES ($1::int4, 'b')", 2);
    auto t = std::make_shared<pg::transaction>(std::move(tx));
    t->async_execute(std::move(b), [&, t](std::error_code ec2, pg::batch_result) {
      EXPECT_FALSE(ec2);
      std::move(*t).async_commit(asio::deferred)([&, t](std::error_code ec3) { got = ec3; });
    });
  });
  io.run();
  EXPECT_FALSE(got) << got.message();
  EXPECT_EQ(count_rows("t_tx10"), 2);
}
