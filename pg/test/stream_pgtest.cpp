// Streaming reads against a real server: rows in chunks as they arrive (single-row
// mode), back-pressure (the server waits while the reader does), a dropped stream
// cancelled, errors before and in the middle of the rows, type mismatches, streams in
// transactions, typed cursors, and flat memory (RSS sampled) over millions of rows.
// INLET_PG_STREAM_ROWS sets the row count of the memory test (default 10,000,000; 500,000
// under sanitizers, where RSS is not checked).
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fstream>

#include "inlet/pg/stream.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using namespace std::chrono_literals;

namespace {
using row = std::tuple<std::int32_t, std::string>;
awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}
awaitable<void> usable(pg::connection& c) {
  std::vector<std::int32_t> v;
  co_await c.async_query(pg::sql("SELECT 41 + 1"), pg::into(v));
  EXPECT_EQ(v, std::vector<std::int32_t>{42});
}
std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}
// Sanitizers keep freed memory in quarantine or shadow (hundreds of MB): RSS says nothing
// there, and they are ten times slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool rss_meaningful = false;
constexpr int default_rows = 500'000;
#else
constexpr bool rss_meaningful = true;
constexpr int default_rows = 10'000'000;
#endif
int stream_rows() {
  const char* e = std::getenv("INLET_PG_STREAM_ROWS");
  return e ? std::atoi(e) : default_rows;
}
}  // namespace

TEST(PgStream, RowsInChunksAsTheyArrive) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    auto s = pg::stream<row>(
        c, pg::sql("SELECT g::int4, 'r' || g FROM generate_series(1, $1::int4) g", 100'000),
        {.chunk = 1000});
    std::vector<row> rows;
    int calls = 0;
    std::size_t biggest = 0;
    for (;;) {
      const std::size_t before = rows.size();
      const std::size_t n = co_await s.async_next(rows);
      if (n == 0) break;
      ++calls;
      biggest = std::max(biggest, rows.size() - before);
    }
    EXPECT_EQ(rows.size(), 100'000u);
    EXPECT_LE(biggest, 1000u + 1000u);  // a chunk, plus what one socket read carried
    EXPECT_GE(calls, 50);
    bool ordered = true;
    for (std::size_t i = 0; i < rows.size(); ++i)
      ordered = ordered && std::get<0>(rows[i]) == static_cast<std::int32_t>(i + 1) &&
                std::get<1>(rows[i]) == "r" + std::to_string(i + 1);
    EXPECT_TRUE(ordered);
    // Again: prepared now, and an empty result.
    auto again = pg::stream<row>(
        c, pg::sql("SELECT g::int4, 'r' || g FROM generate_series(1, $1::int4) g", 0));
    std::vector<row> none;
    EXPECT_EQ(co_await again.async_next(none), 0u);
    co_await usable(c);
  });
}

TEST(PgStream, PipelinedWithOtherRequests) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  std::vector<std::string> order;
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    c.async_query(pg::sql("SELECT 1"), [&](std::error_code ec, pg::result) {
      EXPECT_FALSE(ec);
      order.push_back("before");
    });
    auto s = pg::stream<std::int32_t>(c, pg::sql("SELECT generate_series(1, 20000)::int4"),
                                      {.chunk = 500});
    c.async_query(pg::sql("SELECT 2"), [&](std::error_code ec, pg::result) {
      EXPECT_FALSE(ec);
      order.push_back("after");
    });
    std::vector<std::int32_t> v;
    co_await s.async_next(v);
    co_await sleep_for(50ms);
    // The stream is paused (its reader has not asked again): the request behind it waits.
    EXPECT_EQ(order, std::vector<std::string>{"before"});
    while (co_await s.async_next(v) > 0) {
    }
    EXPECT_EQ(v.size(), 20'000u);
    co_await sleep_for(20ms);
  });
  EXPECT_EQ(order, (std::vector<std::string>{"before", "after"}));
}

// While the reader does not ask, the connection stops reading: the server is left
// waiting to write (wait_event ClientWrite), nothing piles up in the client.
TEST(PgStream, BackPressureLeavesTheServerWaiting) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  pg::connection observer(io.get_executor());
  observer.connect(pg_dsn());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    std::vector<std::int32_t> pid;
    co_await c.async_query(pg::sql("SELECT pg_backend_pid()"), pg::into(pid));
    auto s = pg::stream<std::string>(
        c, pg::sql("SELECT repeat('x', 100) FROM generate_series(1, 5000000)"), {.chunk = 100});
    std::vector<std::string> rows;
    co_await s.async_next(rows);
    std::vector<std::string> wait_event;
    for (int i = 0; i < 100; ++i) {  // bounded: 5 s
      co_await sleep_for(50ms);
      wait_event.clear();
      co_await observer.async_query(
          pg::sql("SELECT coalesce(wait_event, '') FROM pg_stat_activity WHERE pid = $1::int4",
                  pid.at(0)),
          pg::into(wait_event));
      if (wait_event == std::vector<std::string>{"ClientWrite"}) break;
    }
    EXPECT_EQ(wait_event, std::vector<std::string>{"ClientWrite"});
    EXPECT_LT(c.stats().bytes_received, 64u << 20);  // not 5 M rows' worth
  });
}

TEST(PgStream, DroppedStreamIsCancelledAndTheConnectionGoesOn) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    {
      auto s = pg::stream<std::int64_t>(c, pg::sql("SELECT generate_series(1, 50000000)::int8"),
                                        {.chunk = 1000});
      std::vector<std::int64_t> rows;
      co_await s.async_next(rows);
      EXPECT_FALSE(rows.empty());
    }
    auto t0 = std::chrono::steady_clock::now();
    co_await usable(c);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);  // cancelled, not read to the end
    EXPECT_EQ(c.stats().cancels, 1u);
    // Dropped before it started (queued behind a slow query): cancelled when its rows come.
    bool slept = false;
    c.async_query(pg::sql("SELECT pg_sleep(0.2)"), [&](std::error_code ec, pg::result) {
      EXPECT_FALSE(ec);
      slept = true;
    });
    {
      auto s = pg::stream<std::int64_t>(c, pg::sql("SELECT generate_series(1, 50000000)::int8"));
    }
    t0 = std::chrono::steady_clock::now();
    co_await usable(c);
    EXPECT_TRUE(slept);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
    EXPECT_EQ(c.stats().cancels, 2u);
  });
}

TEST(PgStream, ErrorsAndTypeMismatches) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    {  // an error before any row
      auto s = pg::stream<std::int32_t>(c, pg::sql("SELECT 1/0"));
      std::vector<std::int32_t> v;
      pg::diagnostics d;
      auto [ec, n] =
          co_await s.async_next(v, pg::with_diagnostics(asio::as_tuple(asio::use_awaitable), d));
      EXPECT_EQ(ec, pg::make_sqlstate_error("22012"));
      EXPECT_EQ(d.message, "division by zero");
    }
    co_await usable(c);
    {  // an error in the middle: the rows before it, then the error
      auto s = pg::stream<std::int32_t>(c,
                                        pg::sql("SELECT CASE WHEN g = 5000 THEN g / (g - g) ELSE g "
                                                "END::int4 FROM generate_series(1, 10000) g"),
                                        {.chunk = 100});
      std::vector<std::int32_t> v;
      std::error_code last;
      for (;;) {
        auto [ec, n] = co_await s.async_next(v, asio::as_tuple(asio::use_awaitable));
        if (ec || n == 0) {
          last = ec;
          break;
        }
      }
      EXPECT_EQ(last, pg::make_sqlstate_error("22012"));
      EXPECT_LT(v.size(), 5000u);
      EXPECT_FALSE(v.empty());
    }
    co_await usable(c);
    {  // the C++ row does not fit the columns
      auto s =
          pg::stream<std::string>(c, pg::sql("SELECT generate_series(1, 50000000)::int4 AS num"));
      std::vector<std::string> v;
      try {
        co_await s.async_next(v);
        ADD_FAILURE() << "no throw";
      } catch (const pg::error& e) {
        EXPECT_EQ(e.code(), pg::errc::type_mismatch);
        EXPECT_EQ(e.diag().column, "num");
      }
    }
    co_await usable(c);
    EXPECT_EQ(c.stats().cancels, 1u);  // the rest of the statement was not read
  });
}

TEST(PgStream, InATransactionAndCursors) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool p(io.get_executor(), {.dsn = pg_dsn(), .size = 1});
  run_co(io, [&]() -> awaitable<void> {
    auto tx = co_await pg::async_begin(p);
    co_await tx.async_execute("CREATE TEMP TABLE t_cur (id int4, v text) ON COMMIT DROP");
    co_await tx.async_execute(
        "INSERT INTO t_cur SELECT g, 'v' || g FROM generate_series(1, 25000) g");
    {  // a stream sees the transaction's own rows
      auto s = pg::stream<row>(tx, pg::sql("SELECT id, v FROM t_cur ORDER BY id"));
      std::vector<row> v;
      while (co_await s.async_next(v) > 0) {
      }
      EXPECT_EQ(v.size(), 25'000u);
    }
    // A cursor with a parameter, fetched in chunks.
    auto cur = co_await pg::async_declare<row>(
        tx, pg::sql("SELECT id, v FROM t_cur WHERE id > $1::int4 ORDER BY id", 5000));
    std::vector<row> got;
    int fetches = 0;
    for (;;) {
      const std::size_t n = co_await cur.async_fetch(got, 3000);
      if (n == 0) break;
      EXPECT_LE(n, 3000u);
      ++fetches;
    }
    EXPECT_EQ(got.size(), 20'000u);
    EXPECT_EQ(fetches, 7);
    EXPECT_EQ(std::get<0>(got.front()), 5001);
    co_await std::move(cur).async_close();
    {  // a dropped cursor is closed; the transaction goes on
      auto c2 = co_await pg::async_declare<row>(tx, pg::sql("SELECT id, v FROM t_cur"));
      std::vector<row> few;
      co_await c2.async_fetch(few, 10);
    }
    std::vector<std::int64_t> open;  // (the unnamed portal of this very query has no name)
    co_await tx.async_query(pg::sql("SELECT count(*)::int8 FROM pg_cursors WHERE name <> ''"),
                            pg::into(open));
    EXPECT_EQ(open, std::vector<std::int64_t>{0});
    // A cursor must not outlive its transaction.
    auto c3 = co_await pg::async_declare<row>(tx, pg::sql("SELECT id, v FROM t_cur"));
    co_await std::move(tx).async_commit();
    std::vector<row> after;
    auto [ec, n] = co_await c3.async_fetch(after, 10, asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, pg::errc::transaction_closed);
  });
  EXPECT_EQ(p.stats().dropped, 0u);
}

// Memory stays flat while ten million rows (about 600 MB on the wire) go through a cursor
// and a stream: RSS is sampled after every chunk; its growth after the first chunks stays
// under 32 MB. A control at the end shows the measure can fail: a buffered read of a
// tenth of the rows grows RSS by more than that bound.
TEST(PgStream, FlatMemoryOverMillionsOfRows) {
  REQUIRE_PG();
  const int total = stream_rows();
  asio::io_context io;
  pg::pool p(io.get_executor(), {.dsn = pg_dsn(), .size = 1});
  run_co(io, [&]() -> awaitable<void> {
    // A cursor, 10,000 rows per FETCH.
    auto tx = co_await pg::async_begin(p);
    auto cur = co_await pg::async_declare<row>(
        tx, pg::sql("SELECT g::int4, repeat('x', 40) FROM generate_series(1, $1::int4) g", total));
    std::vector<row> chunk;
    std::size_t seen = 0, base = 0, peak = 0;
    for (;;) {
      chunk.clear();
      const std::size_t n = co_await cur.async_fetch(chunk, 10'000);
      if (n == 0) break;
      seen += n;
      const std::size_t rss = rss_bytes();
      if (seen <= 50'000) base = std::max(base, rss);
      peak = std::max(peak, rss);
    }
    co_await std::move(cur).async_close();
    co_await std::move(tx).async_commit();
    EXPECT_EQ(seen, static_cast<std::size_t>(total));
    std::printf("cursor: %d rows, RSS after the first chunks %.1f MB, peak %.1f MB\n", total,
                base / 1048576.0, peak / 1048576.0);
    if (rss_meaningful) {
      EXPECT_LT(peak - base, 32u << 20);
    }

    // A stream, 1,000-row chunks.
    auto c = co_await p.async_acquire();
    auto s = pg::stream<row>(
        *c, pg::sql("SELECT g::int4, repeat('x', 40) FROM generate_series(1, $1::int4) g", total),
        {.chunk = 1000});
    seen = base = peak = 0;
    for (;;) {
      chunk.clear();
      const std::size_t n = co_await s.async_next(chunk);
      if (n == 0) break;
      seen += n;
      const std::size_t rss = rss_bytes();
      if (seen <= 50'000) base = std::max(base, rss);
      peak = std::max(peak, rss);
    }
    EXPECT_EQ(seen, static_cast<std::size_t>(total));
    std::printf("stream: %d rows, RSS after the first chunks %.1f MB, peak %.1f MB\n", total,
                base / 1048576.0, peak / 1048576.0);
    if (rss_meaningful) {
      EXPECT_LT(peak - base, 32u << 20);
    }

    // The control: the same rows read buffered (one result, one vector) need their size.
    const int some = std::min(total, 1'000'000);
    std::vector<row> all;
    const std::size_t before = rss_bytes();
    co_await c->async_query(
        pg::sql("SELECT g::int4, repeat('x', 40) FROM generate_series(1, $1::int4) g", some),
        pg::into(all));
    const std::size_t after = rss_bytes();
    EXPECT_EQ(all.size(), static_cast<std::size_t>(some));
    std::printf("buffered: %d rows, RSS grew by %.1f MB\n", some,
                (after > before ? after - before : 0) / 1048576.0);
    if (rss_meaningful && some == 1'000'000) {
      EXPECT_GT(after, before + (32u << 20));
    }
  });
}
