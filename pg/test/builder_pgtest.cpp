// The _SQL builder against a server: OZO's example query and insert, with an array of
// composites as a parameter and as a column, the built query stored and run again.
#include <boost/describe/class.hpp>
#include <functional>

#include "inlet/pg/builder.hpp"
#include "inlet/pg/type_lookup.hpp"
#include "mail_attach.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using namespace pg::literals;

namespace {
using pg_test::attach;
}  // namespace

TEST(PgBuilder, SeedRequest) {
  REQUIRE_PG();
  asio::io_context io;
  {
    pg::connection s(io.get_executor());
    s.connect(pg_dsn());
    for (const char* q : {"SET client_min_messages = warning", "DROP SCHEMA IF EXISTS mail CASCADE",
                          "DROP SCHEMA IF EXISTS code CASCADE", "CREATE SCHEMA mail",
                          "CREATE SCHEMA code", "CREATE DOMAIN code.mids AS bigint[]",
                          "CREATE TYPE mail.attach AS (filename text, type text, size bigint)",
                          "CREATE TABLE mail.messages (uid bigint, mid bigint, st_id text, "
                          "attaches mail.attach[])"})
      s.execute(q);
  }
  const auto oid_map = pg::register_types<attach>();
  pg::connection_options o;
  o.types = oid_map;
  pg::connection c(io.get_executor(), o);
  std::int64_t uid = 0, mid = 0;
  std::string st_id;
  std::vector<attach> attaches;
  const auto insert = ("INSERT INTO mail.messages (uid, mid, st_id, attaches)"_SQL +
                       "VALUES ("_SQL + std::cref(uid) + ", "_SQL + std::cref(mid) + ", "_SQL +
                       std::cref(st_id) + ", "_SQL + std::cref(attaches) + ")"_SQL)
                          .build();
  static_assert(insert.text() ==
                "INSERT INTO mail.messages (uid, mid, st_id, attaches)VALUES ($1, $2, $3, $4)");
  run_co(io, [&]() -> asio::awaitable<void> {
    co_await c.async_connect(pg_dsn());
    co_await pg::async_lookup_types(c, *oid_map);
    for (int i = 1; i <= 3; ++i) {  // one stored query, run with new values each time
      std::tie(uid, mid, st_id, attaches) = std::make_tuple(
          std::int64_t{42}, std::int64_t{i}, "st" + std::to_string(i),
          std::vector<attach>(static_cast<std::size_t>(i), attach{"f", "text/plain", i}));
      co_await c.async_execute(insert);
    }
    std::vector<std::int64_t> mids{1, 3};
    const auto query = "SELECT mid, st_id, attaches"_SQL + " FROM mail.messages "_SQL +
                       "WHERE uid = "_SQL + uid + " AND mid = ANY("_SQL + mids +
                       "::code.mids)"_SQL + " ORDER BY mid"_SQL;
    using row_t = std::tuple<std::int64_t, std::string, std::vector<attach>>;
    std::vector<row_t> result;
    co_await c.async_query(query, pg::into(result));
    CO_ASSERT_TRUE(result.size() == 2u);
    EXPECT_EQ(std::get<0>(result[1]), 3);
    EXPECT_EQ(std::get<1>(result[1]), "st3");
    EXPECT_EQ(std::get<2>(result[1]), std::vector<attach>(3, attach{"f", "text/plain", 3}));
    // A value that looks like SQL stays a value.
    std::vector<std::tuple<std::int64_t>> n;
    co_await c.async_query(
        "SELECT count(*) FROM mail.messages WHERE st_id = "_SQL + std::string("x' OR 1=1 --"),
        pg::into(n));
    EXPECT_EQ(std::get<0>(n.at(0)), 0);
  });
}
