// COPY against a real server: typed rows in and out (tuples, structs, every common type,
// NULLs), raw bytes (text format), a million rows, COPY inside a transaction, neighbours
// on a shared connection waiting for the COPY, and errors mid-copy (constraint, type
// mismatch, writer/reader dropped, abort, a bad statement, a mismatched direction, a row
// type the data does not fit) after which the connection is still usable.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/describe/class.hpp>

#include "inlet/pg/copy.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using namespace std::chrono_literals;

namespace {
struct item {  // plain aggregate (Boost.PFR)
  std::int64_t id;
  std::optional<std::string> name;
  std::vector<std::byte> data;
  double score;
  bool flag;
  pg::timestamptz at;
  std::vector<std::int32_t> tags;
  bool operator==(const item&) const = default;
};
struct narrow {
  std::int64_t id;
  std::string v;
  bool operator==(const narrow&) const = default;
};
BOOST_DESCRIBE_STRUCT(narrow, (), (id, v))

std::vector<item> make_items(int n) {
  std::vector<item> v;
  for (int i = 0; i < n; ++i) {
    v.push_back(item{i, i % 5 ? std::optional<std::string>("n" + std::to_string(i)) : std::nullopt,
                     std::vector<std::byte>(static_cast<std::size_t>(i % 50),
                                            std::byte{static_cast<unsigned char>(i)}),
                     i * 0.25, i % 2 == 1,
                     pg::timestamptz(std::chrono::microseconds(1'700'000'000'000'000LL + i)),
                     std::vector<std::int32_t>{i, -i, 7}});
  }
  return v;
}
const char* item_cols =
    "(id int8 PRIMARY KEY, name text, data bytea, score float8, flag bool, at timestamptz, tags "
    "int4[])";

awaitable<std::int64_t> count(pg::connection& c, const char* table) {
  std::vector<std::int64_t> n;
  co_await c.async_query(pg::sql(std::string("SELECT count(*)::int8 FROM ") + table), pg::into(n));
  co_return n.at(0);
}
awaitable<void> table(pg::connection& c, const char* name, const char* cols) {
  co_await c.async_execute(pg::query<>(std::string("DROP TABLE IF EXISTS ") + name));
  co_await c.async_execute(pg::query<>(std::string("CREATE TABLE ") + name + " " + cols));
}
awaitable<void> usable(pg::connection& c) {
  std::vector<std::int32_t> v;
  co_await c.async_query(pg::sql("SELECT 41 + 1"), pg::into(v));
  EXPECT_EQ(v, std::vector<std::int32_t>{42});
}
}  // namespace

TEST(PgCopy, TypedRowsInAndOut) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    // Texts built at run time: the queries view them, they must live long enough.
    static const std::string drop = "DROP TABLE IF EXISTS t_copy1",
                             create = std::string("CREATE TABLE t_copy1 ") + item_cols;
    co_await c.async_execute(pg::query<>(drop));
    co_await c.async_execute(pg::query<>(create));
    const auto items = make_items(1000);
    auto n = co_await pg::async_copy_in(c, "COPY t_copy1 FROM STDIN (FORMAT binary)", items);
    EXPECT_EQ(n, 1000u);
    EXPECT_EQ(co_await count(c, "t_copy1"), 1000);
    // Typed out, in chunks.
    auto r = co_await pg::async_copy_out(
        c, "COPY (SELECT * FROM t_copy1 ORDER BY id) TO STDOUT (FORMAT binary)");
    std::vector<item> back;
    for (;;) {
      auto got = co_await r.async_read(back);
      if (got == 0) break;
    }
    EXPECT_FALSE(r.active());
    EXPECT_EQ(back.size(), items.size());
    EXPECT_TRUE(back == items);
    co_await usable(c);
  });
}

// A struct described with Boost.Describe, through a writer in two pieces.
TEST(PgCopy, AWriterInPieces) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    co_await table(c, "t_copy2", "(id int8, v text)");
    auto w = co_await pg::async_copy_in(c, "COPY t_copy2 FROM STDIN (FORMAT binary)");
    // Named, not temporaries in the co_await: g++ 12 rejects a braced list there
    // ("array used as initializer").
    const std::vector<narrow> rows1{{1, "a"}, {2, "b"}};
    co_await w.async_write_rows(rows1);
    const std::vector<narrow> rows2{{3, "c"}};
    co_await w.async_write_rows(rows2);
    EXPECT_EQ(co_await std::move(w).async_finish(), 3u);
    co_await usable(c);
  });
}

TEST(PgCopy, RawBytesInTextFormat) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    co_await table(c, "t_copy3", "(id int4, v text)");
    auto w = co_await pg::async_copy_in(c, "COPY t_copy3 FROM STDIN");
    co_await w.async_write(std::string("1\tone\n2\ttwo\n"));
    co_await w.async_write(std::string("3\t\\N\n"));
    EXPECT_EQ(co_await std::move(w).async_finish(), 3u);
    auto r = co_await pg::async_copy_out(c, "COPY (SELECT * FROM t_copy3 ORDER BY id) TO STDOUT");
    std::string all;
    for (;;) {
      auto chunk = co_await r.async_read_raw();
      if (chunk.empty()) break;
      all += chunk;
    }
    EXPECT_EQ(all, "1\tone\n2\ttwo\n3\t\\N\n");
    co_await usable(c);
  });
}

// Requests issued around a COPY on a shared connection: those before it complete first,
// those during it wait, everything completes.
TEST(PgCopy, NeighboursWaitForTheCopy) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  std::vector<std::string> order;
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    co_await table(c, "t_copy4", "(id int8, v text)");
    int done = 0;
    c.async_query(pg::sql("SELECT pg_sleep(0.05)"), [&](std::error_code ec, pg::result) {
      EXPECT_FALSE(ec);
      order.push_back("before");
      ++done;
    });
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
          auto w = co_await pg::async_copy_in(c, "COPY t_copy4 FROM STDIN (FORMAT binary)");
          order.push_back("copy started");
          // Issued while the COPY runs: must wait for its end.
          c.async_query(pg::sql("SELECT count(*)::int8 FROM t_copy4"),
                        [&](std::error_code ec, pg::result r) {
                          EXPECT_FALSE(ec) << ec.message();
                          std::int64_t n = -1;
                          if (!ec) r.at(0, 0).as(n);
                          EXPECT_EQ(n, 2);
                          order.push_back("during");
                          ++done;
                        });
          asio::steady_timer t(io, 30ms);
          co_await t.async_wait(asio::use_awaitable);
          const std::vector<narrow> rows3{{1, "a"}, {2, "b"}};
          co_await w.async_write_rows(rows3);
          co_await std::move(w).async_finish();
          order.push_back("copy finished");
          ++done;
        },
        asio::detached);
    asio::steady_timer t(io);
    for (int i = 0; i < 400 && done < 3; ++i) {
      t.expires_after(5ms);
      co_await t.async_wait(asio::use_awaitable);
    }
  });
  EXPECT_EQ(order, (std::vector<std::string>{"before", "copy started", "copy finished", "during"}));
}

TEST(PgCopy, InsideATransaction) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool p(io.get_executor(), {.dsn = pg_dsn(), .size = 1});
  run_co(io, [&]() -> awaitable<void> {
    {
      auto c = co_await p.async_acquire();
      co_await table(*c, "t_copy5", "(id int8, v text)");
    }
    const std::vector<narrow> rows{{1, "x"}, {2, "y"}};
    {
      auto tx = co_await pg::async_begin(p);
      co_await pg::async_copy_in(tx, "COPY t_copy5 FROM STDIN (FORMAT binary)", rows);
      co_await tx.async_execute("UPDATE t_copy5 SET v = v || '!'");
      co_await std::move(tx).async_rollback();
    }
    auto tx = co_await pg::async_begin(p);
    co_await pg::async_copy_in(tx, "COPY t_copy5 FROM STDIN (FORMAT binary)", rows);
    auto r = co_await pg::async_copy_out(tx, "COPY t_copy5 TO STDOUT (FORMAT binary)");
    std::vector<narrow> back;
    while (co_await r.async_read(back) > 0) {
    }
    EXPECT_EQ(back, rows);
    co_await std::move(tx).async_commit();
    auto c = co_await p.async_acquire();
    EXPECT_EQ(co_await count(*c, "t_copy5"), 2);
    // A finished transaction refuses a COPY.
    auto [ec, n] = co_await pg::async_copy_in(tx, "COPY t_copy5 FROM STDIN (FORMAT binary)", rows,
                                              asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, pg::errc::transaction_closed);
  });
  EXPECT_EQ(p.stats().dropped, 0u);
}

TEST(PgCopy, ErrorsMidCopyLeaveTheConnectionUsable) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    co_await table(c, "t_copy6", "(id int8 PRIMARY KEY, v text)");
    // 1. A duplicate key in the middle: nothing is inserted.
    {
      std::vector<narrow> rows{{1, "a"}, {2, "b"}, {1, "dup"}, {3, "c"}};
      pg::diagnostics d;
      auto [ec, n] =
          co_await pg::async_copy_in(c, "COPY t_copy6 FROM STDIN (FORMAT binary)", rows,
                                     pg::with_diagnostics(asio::as_tuple(asio::use_awaitable), d));
      EXPECT_EQ(ec, pg::condition::unique_violation);
      EXPECT_EQ(d.sqlstate, "23505");
      EXPECT_EQ(co_await count(c, "t_copy6"), 0);
      co_await usable(c);
    }
    // 2. C++ types that do not match the columns (int4 into int8).
    {
      std::vector<std::tuple<std::int32_t, std::string>> rows{{1, "a"}};
      auto [ec, n] = co_await pg::async_copy_in(c, "COPY t_copy6 FROM STDIN (FORMAT binary)", rows,
                                                asio::as_tuple(asio::use_awaitable));
      // The server says 22P03 (incorrect binary data format) or, for a value shorter
      // than the column's type, 08P01 (insufficient data left in message).
      EXPECT_TRUE(ec == pg::make_sqlstate_error("22P03") || ec == pg::make_sqlstate_error("08P01"))
          << ec.message();
      co_await usable(c);
    }
    // 3. A writer dropped mid-way: its COPY is aborted.
    {
      auto w = co_await pg::async_copy_in(c, "COPY t_copy6 FROM STDIN (FORMAT binary)");
      const std::vector<narrow> rows4{{10, "gone"}};
      co_await w.async_write_rows(rows4);
    }
    co_await usable(c);
    EXPECT_EQ(co_await count(c, "t_copy6"), 0);
    // 4. An explicit abort succeeds and keeps nothing.
    {
      auto w = co_await pg::async_copy_in(c, "COPY t_copy6 FROM STDIN (FORMAT binary)");
      const std::vector<narrow> rows5{{11, "gone"}};
      co_await w.async_write_rows(rows5);
      co_await std::move(w).async_abort("changed my mind");
      EXPECT_EQ(co_await count(c, "t_copy6"), 0);
    }
    // 5. A bad COPY statement fails at the start.
    {
      auto [ec, w] = co_await pg::async_copy_in(c, "COPY no_such_table FROM STDIN",
                                                asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(ec, pg::make_sqlstate_error("42P01"));
      EXPECT_FALSE(w.active());
      co_await usable(c);
    }
    // 6. A COPY FROM started as a reader.
    {
      auto [ec, r] = co_await pg::async_copy_out(c, "COPY t_copy6 FROM STDIN",
                                                 asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(ec, pg::errc::protocol_error);
      co_await usable(c);
    }
    // 7. A reader dropped in the middle of a long COPY OUT: cancelled, the rest dropped.
    {
      auto r = co_await pg::async_copy_out(
          c, "COPY (SELECT g, 'row ' || g FROM generate_series(1, 5000000) g) TO STDOUT");
      auto chunk = co_await r.async_read_raw(4096);
      EXPECT_FALSE(chunk.empty());
    }
    auto t0 = std::chrono::steady_clock::now();
    co_await usable(c);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);  // not the whole 5 M rows
    // 8. A row type the data does not fit (int8 column into int32).
    co_await c.async_execute("INSERT INTO t_copy6 VALUES (1, 'a'), (2, 'b')");
    {
      auto r = co_await pg::async_copy_out(c, "COPY t_copy6 TO STDOUT (FORMAT binary)");
      std::vector<std::tuple<std::int32_t, std::string>> rows;
      auto [ec, n] = co_await r.async_read(rows, asio::as_tuple(asio::use_awaitable));
      EXPECT_EQ(ec, pg::errc::invalid_value);
    }
    co_await usable(c);
    // 9. Operations on a finished writer.
    auto w = co_await pg::async_copy_in(c, "COPY t_copy6 FROM STDIN (FORMAT binary)");
    auto w2 = std::move(w);
    co_await std::move(w2).async_abort("");
    auto [ec, n] = co_await std::move(w2).async_finish(asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, pg::errc::copy_closed);
    co_await usable(c);
  });
}

// A million narrow rows in, then out, typed.
TEST(PgCopy, AMillionRows) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await c.async_connect(pg_dsn());
    co_await table(c, "t_copy7", "(id int8, v text)");
    constexpr int n = 1'000'000;
    std::vector<narrow> rows;
    rows.reserve(n);
    for (int i = 0; i < n; ++i) rows.push_back({i, "row " + std::to_string(i)});
    auto copied = co_await pg::async_copy_in(c, "COPY t_copy7 FROM STDIN (FORMAT binary)", rows);
    EXPECT_EQ(copied, static_cast<std::uint64_t>(n));
    EXPECT_EQ(co_await count(c, "t_copy7"), n);
    auto r = co_await pg::async_copy_out(c, "COPY t_copy7 TO STDOUT (FORMAT binary)");
    std::vector<narrow> chunk;
    std::int64_t seen = 0, sum = 0;
    for (;;) {
      chunk.clear();
      if (co_await r.async_read(chunk) == 0) break;
      for (const auto& x : chunk) sum += x.id;
      seen += static_cast<std::int64_t>(chunk.size());
    }
    EXPECT_EQ(seen, n);
    EXPECT_EQ(sum, static_cast<std::int64_t>(n) * (n - 1) / 2);
  });
}
