// Explicit batches against a real PostgreSQL: one Sync for many statements, per-statement
// results, all-or-nothing on failure (which statement failed is reported), neighbours in
// other pipelined requests unaffected, inside and outside a transaction, the statement
// cache while a batch's Parse is in flight.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>

#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;

namespace {
pg::connection connect_sync(asio::io_context& io, pg::connection_options o = {}) {
  pg::connection c(io.get_executor(), o);
  c.connect(pg_dsn());
  return c;
}
std::int64_t count_rows(pg::connection& c, const char* table) {
  auto r = c.query(std::string("SELECT count(*)::int8 FROM ") + table);
  std::int64_t n = -1;
  EXPECT_FALSE(r.at(0, 0).as(n));
  return n;
}
awaitable<void> wait_until(asio::io_context& io, const int& done, int n) {
  asio::steady_timer t(io);
  for (int spin = 0; done < n && spin < 2000; ++spin) {
    t.expires_after(std::chrono::milliseconds(5));
    co_await t.async_wait(asio::use_awaitable);
  }
}
}  // namespace

TEST(PgBatch, PerStatementResults) {
  REQUIRE_PG();
  asio::io_context io;
  auto setup = connect_sync(io);
  setup.execute("DROP TABLE IF EXISTS t_batch1");
  setup.execute("CREATE TABLE t_batch1 (id int4 PRIMARY KEY, v text)");
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    pg::batch b;
    b.add("INSERT INTO t_batch1 VALUES ($1, $2)", std::int32_t{1}, std::string("one"))
        .add("INSERT INTO t_batch1 VALUES ($1, $2)", std::int32_t{2}, std::string("two"))
        .add("UPDATE t_batch1 SET v = v || '!' WHERE id <= $1", std::int32_t{2})
        .add("SELECT id, v FROM t_batch1 ORDER BY id");
    EXPECT_EQ(b.size(), 4u);
    auto r = co_await c.async_execute(std::move(b));
    EXPECT_EQ(r.size(), 4u);
    if (r.size() != 4u) co_return;
    EXPECT_EQ(r.failed, pg::batch_result::npos);
    EXPECT_EQ(r.affected_rows(0), 1u);
    EXPECT_EQ(r.affected_rows(1), 1u);
    EXPECT_EQ(r.affected_rows(2), 2u);
    std::vector<std::tuple<std::int32_t, std::string>> rows;
    auto rec = r.results[3].read_all<std::tuple<std::int32_t, std::string>>(rows);
    EXPECT_FALSE(rec);
    EXPECT_EQ(rows.size(), 2u);
    if (rows.size() == 2u) {
      EXPECT_EQ(rows[1], std::make_tuple(2, std::string("two!")));
    }
    // The same statement twice in a batch is prepared once.
    EXPECT_EQ(c.stats().prepares, 3u);
    // An empty batch completes with no results.
    auto e = co_await c.async_execute(pg::batch{});
    EXPECT_EQ(e.size(), 0u);
  });
  EXPECT_EQ(count_rows(setup, "t_batch1"), 2);
}

TEST(PgBatch, FailureInTheMiddleRollsBackTheWholeBatch) {
  REQUIRE_PG();
  asio::io_context io;
  auto c = connect_sync(io);
  c.execute("DROP TABLE IF EXISTS t_batch2");
  c.execute("CREATE TABLE t_batch2 (id int4 PRIMARY KEY)");
  pg::batch b;
  for (std::int32_t i : {1, 2, 1, 3}) b.add("INSERT INTO t_batch2 VALUES ($1)", i);  // the 3rd duplicates
  std::error_code ec;
  auto r = c.execute(std::move(b), ec);
  EXPECT_EQ(ec, pg::condition::unique_violation);
  EXPECT_EQ(r.failed, 2u);
  EXPECT_EQ(c.last_diagnostics().sqlstate, "23505");
  EXPECT_EQ(r.results[2].error_diagnostics().sqlstate, "23505");
  EXPECT_EQ(r.affected_rows(0), 1u);  // ran, then rolled back with the batch
  EXPECT_FALSE(r.results[3]);         // skipped by the server (PGRES_PIPELINE_ABORTED)
  EXPECT_EQ(count_rows(c, "t_batch2"), 0);
  // A Parse error (bad SQL) in the middle is reported the same way.
  pg::batch bad;
  bad.add("INSERT INTO t_batch2 VALUES ($1)", std::int32_t{10}).add("SELEC 1").add("SELECT 1");
  r = c.execute(std::move(bad), ec);
  EXPECT_EQ(ec, pg::condition::syntax_error);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(count_rows(c, "t_batch2"), 0);
  // The throwing form carries the diagnostics; the connection stays usable.
  pg::batch again;
  again.add("INSERT INTO t_batch2 VALUES ($1)", std::int32_t{5}).add("SELECT 1 / $1::int4", std::int32_t{0});
  try {
    c.execute(std::move(again));
    ADD_FAILURE() << "no throw";
  } catch (const pg::error& e) {
    EXPECT_EQ(e.diag().sqlstate, "22012");
  }
  pg::batch good;
  good.add("INSERT INTO t_batch2 VALUES ($1)", std::int32_t{5});
  EXPECT_EQ(c.execute(std::move(good)).affected_rows(0), 1u);
  EXPECT_EQ(count_rows(c, "t_batch2"), 1);
}

TEST(PgBatch, NeighboursInOtherPipelinedRequestsAreUnaffected) {
  REQUIRE_PG();
  asio::io_context io;
  auto setup = connect_sync(io);
  setup.execute("DROP TABLE IF EXISTS t_batch3");
  setup.execute("CREATE TABLE t_batch3 (id int4 PRIMARY KEY)");
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    constexpr int singles = 60, batches = 6;
    int done = 0;
    std::vector<std::error_code> single_ec(singles, pg::errc::protocol_error), batch_ec(batches);
    std::vector<std::size_t> failed(batches);
    for (int i = 0; i < singles; ++i) {
      if (i % 10 == 0) {  // interleave a batch whose 2nd statement fails, every 10 requests
        int k = i / 10;
        pg::batch b;
        b.add("INSERT INTO t_batch3 VALUES ($1)", std::int32_t{1000 + k})
            .add("SELECT 1 / $1::int4", std::int32_t{0})
            .add("INSERT INTO t_batch3 VALUES ($1)", std::int32_t{2000 + k});
        c.async_execute(std::move(b), [&, k](std::error_code ec, pg::batch_result r) {
          batch_ec[k] = ec;
          failed[k] = r.failed;
          ++done;
        });
      }
      c.async_execute(pg::sql("INSERT INTO t_batch3 VALUES ($1)", std::int32_t{i}),
                      [&, i](std::error_code ec, std::uint64_t) {
                        single_ec[i] = ec;
                        ++done;
                      });
    }
    EXPECT_GT(c.in_flight(), 1u);
    co_await wait_until(io, done, singles + batches);
    EXPECT_EQ(done, singles + batches);
    for (int i = 0; i < singles; ++i) EXPECT_FALSE(single_ec[i]) << i << " " << single_ec[i].message();
    for (int k = 0; k < batches; ++k) {
      EXPECT_EQ(batch_ec[k], pg::make_sqlstate_error("22012")) << k;
      EXPECT_EQ(failed[k], 1u) << k;
    }
  });
  EXPECT_EQ(count_rows(setup, "t_batch3"), 60);  // every single insert, no batch insert
}

TEST(PgBatch, InsideATransaction) {
  REQUIRE_PG();
  asio::io_context io;
  auto c = connect_sync(io);
  c.execute("DROP TABLE IF EXISTS t_batch4");
  c.execute("CREATE TABLE t_batch4 (id int4 PRIMARY KEY)");
  // Success inside BEGIN: nothing is committed until COMMIT; ROLLBACK undoes the batch.
  c.execute("BEGIN");
  pg::batch b;
  b.add("INSERT INTO t_batch4 VALUES ($1)", std::int32_t{1}).add("INSERT INTO t_batch4 VALUES ($1)", std::int32_t{2});
  EXPECT_EQ(c.execute(std::move(b)).size(), 2u);
  EXPECT_EQ(PQtransactionStatus(c.native_handle()), PQTRANS_INTRANS);
  c.execute("ROLLBACK");
  EXPECT_EQ(count_rows(c, "t_batch4"), 0);
  // Committed batch inside a transaction.
  c.execute("BEGIN");
  pg::batch b2;
  b2.add("INSERT INTO t_batch4 VALUES ($1)", std::int32_t{3});
  c.execute(std::move(b2));
  c.execute("COMMIT");
  EXPECT_EQ(count_rows(c, "t_batch4"), 1);
  // A failing batch leaves the surrounding transaction failed (25P02 until ROLLBACK).
  c.execute("BEGIN");
  c.execute(pg::sql("INSERT INTO t_batch4 VALUES ($1)", std::int32_t{4}));
  pg::batch b3;
  b3.add("INSERT INTO t_batch4 VALUES ($1)", std::int32_t{5}).add("INSERT INTO t_batch4 VALUES ($1)", std::int32_t{3});
  std::error_code ec;
  auto r = c.execute(std::move(b3), ec);
  EXPECT_EQ(ec, pg::condition::unique_violation);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(PQtransactionStatus(c.native_handle()), PQTRANS_INERROR);
  c.query("SELECT 1", ec);
  EXPECT_EQ(ec, pg::make_sqlstate_error("25P02"));
  c.execute("ROLLBACK");
  EXPECT_EQ(count_rows(c, "t_batch4"), 1);  // only the committed row 3
}

TEST(PgBatch, PendingStatementIsNotUsedByNeighbours) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor());
    co_await c.async_connect(pg_dsn());
    // The batch fails at its first statement, so the server skips the Parse of the
    // second; a neighbour sent meanwhile with that same (valid) SQL must still work.
    pg::batch b;
    b.add("SELECT 1 / $1::int4", std::int32_t{0}).add("SELECT $1::int4 + 40", std::int32_t{2});
    std::error_code bec;
    int done = 0;
    c.async_execute(std::move(b), [&](std::error_code ec, pg::batch_result) {
      bec = ec;
      ++done;
    });
    std::error_code nec = pg::errc::protocol_error;
    std::int32_t v = 0;
    c.async_query(pg::sql("SELECT $1::int4 + 40", std::int32_t{2}), [&](std::error_code ec, pg::result r) {
      nec = ec;
      if (!ec) r.at(0, 0).as(v);
      ++done;
    });
    co_await wait_until(io, done, 2);
    EXPECT_EQ(bec, pg::make_sqlstate_error("22012"));
    EXPECT_FALSE(nec) << nec.message();
    EXPECT_EQ(v, 42);
    // The skipped Parse left nothing behind: the next use prepares it again and works.
    auto r = co_await c.async_query(pg::sql("SELECT $1::int4 + 40", std::int32_t{3}));
    r.at(0, 0).as(v);
    EXPECT_EQ(v, 43);
  });
}

TEST(PgBatch, ManyStatementsWithASmallCacheAndWithoutCache) {
  REQUIRE_PG();
  asio::io_context io;
  for (std::size_t cache : {std::size_t{0}, std::size_t{2}}) {
    auto c = connect_sync(io, {.statement_cache_size = cache});
    c.execute("DROP TABLE IF EXISTS t_batch5");
    c.execute("CREATE TABLE t_batch5 (id int4, k int4)");
    pg::batch b;
    for (std::int32_t i = 0; i < 300; ++i) {  // three distinct statements cycling: evictions mid-batch
      if (i % 3 == 0) b.add("INSERT INTO t_batch5 VALUES ($1, 0)", i);
      else if (i % 3 == 1) b.add("INSERT INTO t_batch5 VALUES ($1, 1)", i);
      else b.add("INSERT INTO t_batch5 VALUES ($1, 2)", i);
    }
    auto r = c.execute(std::move(b));
    EXPECT_EQ(r.size(), 300u);
    EXPECT_EQ(count_rows(c, "t_batch5"), 300);
    auto live = c.query("SELECT count(*)::int8 FROM pg_prepared_statements");
    std::int64_t n = -1;
    live.at(0, 0).as(n);
    EXPECT_LE(n, static_cast<std::int64_t>(cache) + 1) << "cache " << cache;
  }
}
