// User-defined types through a real server and back (binary both ways): composites,
// nested composites, arrays of composites, NULL fields, enums, domains, ranges, hstore,
// jsonb as Boost.JSON; the OID map's lookup and its error naming a missing type.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe/class.hpp>
#include <boost/describe/enum.hpp>
#include <map>

#include "inlet/pg/json_value.hpp"
#include "inlet/pg/pool.hpp"
#include "inlet/pg/request.hpp"
#include "inlet/pg/type_lookup.hpp"
#include "mail_attach.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;

namespace mail {
using pg_test::attach;
// Described: fields by Boost.Describe; the NULL-able field is an optional.
struct envelope {
  std::optional<std::string> sender;
  std::vector<attach> parts;
  attach main;
  static constexpr std::string_view pg_type_name = "mail.envelope";
  friend bool operator==(const envelope&, const envelope&) = default;
};
BOOST_DESCRIBE_STRUCT(envelope, (), (sender, parts, main))

enum class folder { inbox, sent, spam };
BOOST_DESCRIBE_ENUM(folder, inbox, sent, spam)

struct address : pg::domain<std::string> {
  static constexpr std::string_view pg_type_name = "mail.address";
};

struct floatrange : pg::range<double> {  // a user-defined range type
  static constexpr std::string_view pg_type_name = "mail.floatrange";
};
}  // namespace mail
template <>
inline constexpr std::string_view inlet::pg::type_name_v<mail::folder> = "mail.folder";

namespace {
struct nowhere {
  int x;
  static constexpr std::string_view pg_type_name = "mail.nowhere";
};
using types_t = pg::oid_map<mail::attach, mail::envelope, mail::folder, mail::address, pg::hstore,
                            mail::floatrange>;

class PgUserTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (pg_dsn().empty()) GTEST_SKIP() << "INLET_PG_DSN not set";
    {
      pg::connection setup(io_.get_executor());
      setup.connect(pg_dsn());
      for (const char* stmt :
           {"SET client_min_messages = warning", "DROP SCHEMA IF EXISTS mail CASCADE",
            "CREATE SCHEMA mail", "CREATE EXTENSION IF NOT EXISTS hstore",
            "CREATE TYPE mail.attach AS (filename text, type text, size bigint)",
            "CREATE TYPE mail.envelope AS (sender text, parts mail.attach[], main mail.attach)",
            "CREATE TYPE mail.folder AS ENUM ('inbox', 'sent', 'spam')",
            "CREATE DOMAIN mail.address AS text CHECK (VALUE LIKE '%@%')",
            "CREATE TYPE mail.floatrange AS RANGE (subtype = float8)"})
        setup.execute(stmt);
    }
    pg::connection_options o;
    o.types = types_;
    c_.emplace(io_.get_executor(), o);
    c_->connect(pg_dsn());
    pg::lookup_types(*c_, *types_);
  }
  template <class T>
  T echo(const T& v, const char* cast) {
    std::string q = std::string("SELECT $1::") + cast;
    std::vector<std::tuple<T>> rows;
    std::error_code ec;
    c_->query(pg::sql(q, v), pg::into(rows), ec);
    EXPECT_FALSE(ec) << cast << ": " << ec.message() << " " << c_->last_diagnostics().to_string();
    return rows.empty() ? T{} : std::get<0>(rows[0]);
  }
  template <class T>
  T literal(const std::string& sql) {
    std::vector<std::tuple<T>> rows;
    std::error_code ec;
    c_->query(pg::sql(sql), pg::into(rows), ec);
    EXPECT_FALSE(ec) << sql << ": " << ec.message() << " " << c_->last_diagnostics().to_string();
    return rows.empty() ? T{} : std::get<0>(rows[0]);
  }
  asio::io_context io_;
  std::shared_ptr<types_t> types_ = std::make_shared<types_t>();
  std::optional<pg::connection> c_;
};
}  // namespace

TEST_F(PgUserTypes, OidsAreLookedUp) {
  EXPECT_TRUE(types_->resolved());
  EXPECT_EQ(pg::type_oid<mail::attach>(*types_),
            literal<std::uint32_t>("SELECT 'mail.attach'::regtype::oid"));
  EXPECT_EQ(pg::array_oid<mail::attach>(*types_),
            literal<std::uint32_t>("SELECT 'mail.attach[]'::regtype::oid"));
  EXPECT_EQ(pg::type_oid<pg::hstore>(*types_),
            literal<std::uint32_t>("SELECT 'hstore'::regtype::oid"));
}

TEST_F(PgUserTypes, MissingTypeIsNamed) {
  pg::oid_map<mail::attach, nowhere> m;
  std::error_code ec;
  pg::lookup_types(*c_, m, ec);
  EXPECT_EQ(ec, pg::errc::unknown_type);
  EXPECT_EQ(ec, pg::condition::type_mismatch);
  EXPECT_NE(m.last_error().find("\"mail.nowhere\" does not exist"), std::string::npos)
      << m.last_error();
  EXPECT_EQ(m.last_error().find("mail.attach"), std::string::npos);
  try {
    pg::lookup_types(*c_, m);
    ADD_FAILURE() << "no throw";
  } catch (const pg::error& e) {
    EXPECT_NE(e.diag().client_message.find("mail.nowhere"), std::string::npos);
  }
}

TEST_F(PgUserTypes, AsyncLookup) {
  auto m = pg::register_types<mail::attach, mail::folder>();
  std::error_code got = pg::errc::protocol_error;
  run_co(io_, [&]() -> asio::awaitable<void> {
    pg::connection c(io_.get_executor());
    co_await c.async_connect(pg_dsn());
    auto [ec] = co_await pg::async_lookup_types(c, *m, asio::as_tuple(asio::use_awaitable));
    got = ec;
    co_await pg::async_lookup_types(c, *m);  // the default token
  });
  EXPECT_FALSE(got) << got.message();
  EXPECT_EQ(pg::type_oid<mail::folder>(*m), pg::type_oid<mail::folder>(*types_));
}

TEST_F(PgUserTypes, Composite) {
  mail::attach a{"a.txt", "text/plain", 42};
  EXPECT_EQ(echo(a, "mail.attach"), a);
  // Built by the server from text: our decoder against its encoder.
  EXPECT_EQ(literal<mail::attach>("SELECT ROW('x', 'y', 7)::mail.attach"),
            (mail::attach{"x", "y", 7}));
  // An anonymous record decodes into the struct too (field OIDs are checked).
  EXPECT_EQ(literal<mail::attach>("SELECT ROW('x'::text, 'y'::text, 7::int8)"),
            (mail::attach{"x", "y", 7}));
  // A NULL field into a non-optional is an error, not a silent default.
  std::vector<std::tuple<mail::attach>> rows;
  std::error_code ec;
  c_->query(pg::sql("SELECT ROW('x', NULL, 7)::mail.attach"), pg::into(rows), ec);
  EXPECT_EQ(ec, pg::errc::unexpected_null);
  // The server checks our field OIDs: the text of a comparison.
  EXPECT_TRUE(literal<bool>("SELECT ROW('x','y',7)::mail.attach = ROW('x','y',7)::mail.attach"));
}

TEST_F(PgUserTypes, NestedAndArrays) {
  std::vector<mail::attach> parts{
      {"a", "text/plain", 1}, {"b.png", "image/png", 123456789012}, {"", "", 0}};
  EXPECT_EQ(echo(parts, "mail.attach[]"), parts);
  EXPECT_EQ(echo(std::vector<mail::attach>{}, "mail.attach[]"), std::vector<mail::attach>{});
  mail::envelope e{std::nullopt, parts, {"m", "text/html", 5}};
  EXPECT_EQ(echo(e, "mail.envelope"), e);
  e.sender = "a@b";
  EXPECT_EQ(echo(e, "mail.envelope"), e);
  std::vector<mail::envelope> es{e, e};
  es[1].parts.clear();
  EXPECT_EQ(echo(es, "mail.envelope[]"), es);
  // The server reads what we sent: field by field.
  std::vector<std::tuple<std::string, std::int64_t>> rows;
  c_->query(pg::sql("SELECT (p).filename, (p).size FROM unnest($1::mail.attach[]) AS p", parts),
            pg::into(rows));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(std::get<0>(rows[1]), "b.png");
  EXPECT_EQ(std::get<1>(rows[1]), 123456789012);
  auto arr = literal<std::vector<std::optional<mail::attach>>>(
      "SELECT ARRAY[ROW('x','y',1)::mail.attach, NULL]");
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0], (mail::attach{"x", "y", 1}));
  EXPECT_FALSE(arr[1]);
}

TEST_F(PgUserTypes, EnumByLabel) {
  EXPECT_EQ(echo(mail::folder::spam, "mail.folder"), mail::folder::spam);
  EXPECT_EQ(literal<mail::folder>("SELECT 'sent'::mail.folder"), mail::folder::sent);
  std::vector<std::tuple<std::string>> rows;
  c_->query(pg::sql("SELECT $1::text", mail::folder::inbox), pg::into(rows));
  EXPECT_EQ(std::get<0>(rows.at(0)), "inbox");
  // A label the C++ enum does not have is an error.
  std::vector<std::tuple<mail::folder>> bad;
  std::error_code ec;
  c_->query(pg::sql("SELECT 'x'::text::mail.folder"), pg::into(bad), ec);
  EXPECT_TRUE(ec);
}

TEST_F(PgUserTypes, Domain) {
  mail::address a;
  a.value = "x@y";
  EXPECT_EQ(echo(a, "mail.address").value, "x@y");
  // Sent with the domain's OID: the server checks the domain's constraint.
  a.value = "nope";
  std::vector<std::tuple<std::string>> rows;
  std::error_code ec;
  c_->query(pg::sql("SELECT $1", a), pg::into(rows), ec);
  EXPECT_EQ(ec, pg::make_sqlstate_error("23514")) << ec.message();  // check_violation
}

TEST_F(PgUserTypes, Ranges) {
  pg::range<std::int32_t> r{1, 10, true, false, false};
  EXPECT_EQ(echo(r, "int4range"), r);
  EXPECT_EQ(literal<pg::range<std::int32_t>>("SELECT '[3,7]'::int4range"),
            (pg::range<std::int32_t>{3, 8, true, false, false}));
  auto empty = literal<pg::range<std::int64_t>>("SELECT 'empty'::int8range");
  EXPECT_TRUE(empty.empty);
  auto inf = literal<pg::range<pg::timestamptz>>("SELECT '[2020-01-01 00:00:00+00,)'::tstzrange");
  ASSERT_TRUE(inf.lower);
  EXPECT_FALSE(inf.upper);
  EXPECT_EQ(echo(inf, "tstzrange"), inf);
  pg::range<pg::date> d{std::nullopt, pg::date{std::chrono::days{19000}}, false, false, false};
  EXPECT_EQ(echo(d, "daterange"), d);
  EXPECT_TRUE(literal<bool>("SELECT int4range(1, 10) = '[1,10)'::int4range"));
  std::vector<std::tuple<bool>> rows;
  c_->query(pg::sql("SELECT $1 = int4range(1, 10)", r), pg::into(rows));
  EXPECT_TRUE(std::get<0>(rows.at(0)));
}

TEST_F(PgUserTypes, Hstore) {
  pg::hstore h;
  h.items = {{"a", "1"}, {"b", std::nullopt}, {"k\"ey", "v,al"}};
  EXPECT_EQ(echo(h, "hstore"), h);
  auto got = literal<pg::hstore>("SELECT 'x=>1, y=>NULL'::hstore");
  EXPECT_EQ(got.items.at("x"), "1");
  EXPECT_FALSE(got.items.at("y"));
  std::vector<std::tuple<std::optional<std::string>>> rows;
  c_->query(pg::sql("SELECT $1 -> 'k\"ey'", h), pg::into(rows));
  EXPECT_EQ(std::get<0>(rows.at(0)), "v,al");
}

TEST_F(PgUserTypes, JsonbAsBoostJson) {
  auto v = literal<boost::json::value>(R"(SELECT '{"a": [1, 2, {"b": null}], "c": "d"}'::jsonb)");
  EXPECT_EQ(v.at("c").as_string(), "d");
  EXPECT_EQ(v.at("a").as_array().size(), 3u);
  auto j = literal<boost::json::value>(R"(SELECT '[true]'::json)");
  EXPECT_TRUE(j.as_array()[0].as_bool());
  boost::json::value in = {{"x", 1}, {"y", {1, 2}}};
  EXPECT_EQ(echo(in, "jsonb"), in);
  EXPECT_EQ(literal<pg::jsonb>(R"(SELECT '{"a":1}'::jsonb)").text, R"({"a": 1})");  // and as text
}

namespace {
struct message_row {
  std::int64_t mid = 0;
  std::string st_id;
  std::vector<mail::attach> attaches;
};
BOOST_DESCRIBE_STRUCT(message_row, (), (mid, st_id, attaches))
}  // namespace

TEST_F(PgUserTypes, RowsByName) {
  std::vector<message_row> rows;
  // Columns in another order than the fields: matched by name.
  c_->query(
      pg::sql(
          "SELECT ARRAY[ROW('f', 't', 3)::mail.attach] AS attaches, 's1' AS st_id, 7::int8 AS mid"),
      pg::into(rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].mid, 7);
  EXPECT_EQ(rows[0].st_id, "s1");
  ASSERT_EQ(rows[0].attaches.size(), 1u);
  EXPECT_EQ(rows[0].attaches[0].size, 3);
  // Two columns of the same type swapped: by position this would pass unnoticed.
  std::vector<std::tuple<std::string, std::string>> by_pos;
  c_->query(pg::sql("SELECT 'B' AS b, 'A' AS a"), pg::into(by_pos));
  EXPECT_EQ(std::get<0>(by_pos.at(0)), "B");  // tuples stay positional

  std::error_code ec;
  rows.clear();
  c_->query(pg::sql("SELECT 1::int8 AS mid, 's' AS st_id"), pg::into(rows), ec);  // missing
  EXPECT_EQ(ec, pg::errc::column_count_mismatch);
  EXPECT_NE(c_->last_diagnostics().client_message.find("no column for field(s) \"attaches\""),
            std::string::npos)
      << c_->last_diagnostics().client_message;
  c_->query(
      pg::sql("SELECT 1::int8 AS mid, 's' AS st_id, NULL::mail.attach[] AS attaches, 2 AS other"),
      pg::into(rows), ec);  // extra
  EXPECT_EQ(ec, pg::errc::column_count_mismatch);
  EXPECT_NE(c_->last_diagnostics().client_message.find("column(s) \"other\" match no field"),
            std::string::npos)
      << c_->last_diagnostics().client_message;
  c_->query(pg::sql("SELECT 's' AS st_id, 1::int4 AS mid, '{}'::mail.attach[] AS attaches"),
            pg::into(rows),
            ec);  // wrong type
  EXPECT_EQ(ec, pg::errc::type_mismatch);
  EXPECT_NE(c_->last_diagnostics().client_message.find("\"mid\""), std::string::npos)
      << c_->last_diagnostics().client_message;
  EXPECT_TRUE(rows.empty());
}

TEST_F(PgUserTypes, UserDefinedRange) {
  mail::floatrange r;
  r.lower = 1.5;
  r.upper = 2.5;
  r.upper_inc = true;
  EXPECT_EQ(echo(r, "mail.floatrange"), r);
  mail::floatrange half;  // [-1, infinity)
  half.lower = -1.0;
  EXPECT_EQ(echo(half, "mail.floatrange"), half);
  mail::floatrange none;
  none.empty = true;
  none.lower_inc = false;
  EXPECT_EQ(echo(none, "mail.floatrange"), none);
  const auto l = literal<mail::floatrange>("SELECT mail.floatrange(0.5, 1.0, '(]')");
  EXPECT_EQ(l.lower, 0.5);
  EXPECT_FALSE(l.lower_inc);
  EXPECT_EQ(l.upper, 1.0);
  EXPECT_TRUE(l.upper_inc);
  const std::vector<mail::floatrange> v{r, half, none};
  EXPECT_EQ(echo(v, "mail.floatrange[]"), v);
  // The server reads what we send as the range it is.
  std::vector<std::tuple<bool, bool>> rows;
  c_->query(pg::sql("SELECT $1 @> 2.0::float8, $1 = mail.floatrange(1.5, 2.5, '[]')", r),
            pg::into(rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(std::get<0>(rows[0]));
  EXPECT_TRUE(std::get<1>(rows[0]));
  // Another range type's column is not a floatrange.
  std::vector<std::tuple<mail::floatrange>> wrong;
  std::error_code ec;
  c_->query(pg::sql("SELECT numrange(1, 2)"), pg::into(wrong), ec);
  EXPECT_EQ(ec, pg::errc::type_mismatch);
}

TEST_F(PgUserTypes, BatchAndRawResultsSeeTheConnectionsMap) {
  c_->execute(
      "CREATE TABLE mail.box (id int4, env mail.envelope, f mail.folder, r mail.floatrange)");
  const mail::envelope env{"a@b", {{"x", "t", 1}, {"y", "u", 2}}, {"m", "v", 3}};
  mail::floatrange r;
  r.lower = 0.25;
  r.upper = 0.75;
  // Without the map a batch is refused before anything is sent, saying what to do.
  pg::batch plain;
  plain.add("INSERT INTO mail.box VALUES ($1, $2)", 1, env);
  EXPECT_EQ(plain.encode_error(), pg::errc::unknown_type);
  std::error_code ec;
  c_->execute(std::move(plain), ec);
  EXPECT_EQ(ec, pg::errc::unknown_type);
  EXPECT_NE(c_->last_diagnostics().client_message.find("pg::batch b(conn.types())"),
            std::string::npos)
      << c_->last_diagnostics().client_message;
  // With the connection's map: nested composites, an enum and a user range as parameters.
  pg::batch b(c_->types());
  b.add("INSERT INTO mail.box VALUES ($1, $2, $3, $4)", 1, env, mail::folder::spam, r)
      .add("SELECT env, f, r FROM mail.box WHERE id = $1", 1);
  EXPECT_FALSE(b.encode_error());
  pg::batch_result res = c_->execute(std::move(b));
  ASSERT_EQ(res.failed, pg::batch_result::npos);
  EXPECT_EQ(res.affected_rows(0), 1u);
  // The batch's raw results decode user types by hand (read_all).
  using box_row = std::tuple<mail::envelope, mail::folder, mail::floatrange>;
  std::vector<box_row> rows;
  ASSERT_FALSE(res.results[1].read_all<box_row>(rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::get<0>(rows[0]), env);
  EXPECT_EQ(std::get<1>(rows[0]), mail::folder::spam);
  EXPECT_EQ(std::get<2>(rows[0]), r);
  // field::as on a raw result, synchronous and asynchronous.
  pg::result raw = c_->query(pg::sql("SELECT env, r FROM mail.box"));
  EXPECT_EQ(raw.types(), c_->types());
  mail::envelope got;
  EXPECT_FALSE(raw.at(0, 0).as(got));
  EXPECT_EQ(got, env);
  mail::floatrange got_r;
  EXPECT_FALSE(raw.at(0, 1).as(got_r));
  EXPECT_EQ(got_r, r);
  std::vector<mail::attach> parts;
  run_co(io_, [&]() -> asio::awaitable<void> {
    pg::result a = co_await c_->async_query(pg::sql("SELECT (env).parts FROM mail.box"));
    EXPECT_FALSE(a.at(0, 0).as(parts));
  });
  EXPECT_EQ(parts, env.parts);
  // A result that has no map (made by hand, or its map dropped): a user type's column
  // is a type mismatch, not a guess.
  raw.set_types(nullptr);
  EXPECT_EQ(raw.at(0, 0).as(got), pg::errc::type_mismatch);
}

TEST_F(PgUserTypes, AsyncRequestOnConnectionPoolAndHandle) {
  pg::pool_options po;
  po.dsn = pg_dsn();
  po.size = 2;
  po.connection.types = types_;  // looked up already: the pool's connections share it
  pg::pool p(io_.get_executor(), po);
  c_->execute("CREATE TABLE mail.msgs (mid int8, parts mail.attach[])");
  c_->execute(pg::sql("INSERT INTO mail.msgs VALUES (1, $1), (2, '{}')",
                      std::vector<mail::attach>{{"a", "b", 7}}));
  using row = std::tuple<std::int64_t, std::vector<mail::attach>>;
  std::vector<row> on_conn, on_pool, on_handle;
  std::string sqlstate;
  run_co(io_, [&]() -> asio::awaitable<void> {
    pg::connection_options o;
    o.types = types_;
    pg::connection c(io_.get_executor(), o);
    co_await c.async_connect(pg_dsn());
    const auto q = pg::sql("SELECT mid, parts FROM mail.msgs WHERE mid = ANY($1) ORDER BY mid",
                           std::vector<std::int64_t>{1, 2});
    co_await pg::async_request(c, q, pg::into(on_conn));
    co_await pg::async_request(p, q, pg::into(on_pool));
    {
      auto h = co_await p.async_acquire();
      co_await pg::async_request(h, q, pg::into(on_handle));
    }
    try {
      co_await pg::async_request(p, pg::sql("SELECT no_such_column FROM mail.msgs"));
    } catch (const pg::error& e) {
      sqlstate = e.diag().sqlstate;  // the server's diagnostics reach the caller
    }
    p.close();
  });
  const std::vector<row> want{{1, {{"a", "b", 7}}}, {2, {}}};
  EXPECT_EQ(on_conn, want);
  EXPECT_EQ(on_pool, want);
  EXPECT_EQ(on_handle, want);
  EXPECT_EQ(sqlstate, "42703");
  EXPECT_EQ(p.stats().total, p.stats().idle);  // every loan went back
}
