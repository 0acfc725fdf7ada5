// Every supported type through a real server and back (binary both ways), plus values
// the server produces from text literals (so our encoding is checked against its own).
#include <cmath>
#include <random>

#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using namespace std::chrono;

namespace {
class PgTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (pg_dsn().empty()) GTEST_SKIP() << "INLET_PG_DSN not set";
    c_.connect(pg_dsn());
    c_.execute("SET TIME ZONE 'UTC'");
  }
  template <class T>
  T echo(const T& v, const char* cast) {
    std::string q = std::string("SELECT $1::") + cast;
    std::vector<std::tuple<T>> rows;
    std::error_code ec;
    c_.query(pg::sql(q, v), pg::into(rows), ec);
    EXPECT_FALSE(ec) << cast << ": " << ec.message() << " " << c_.last_diagnostics().to_string();
    return rows.empty() ? T{} : std::get<0>(rows[0]);
  }
  template <class T>
  void expect_echo(const T& v, const char* cast) {
    EXPECT_EQ(echo(v, cast), v) << cast;
  }
  template <class T>
  T literal(const std::string& sql) {
    std::vector<std::tuple<T>> rows;
    std::error_code ec;
    c_.query(pg::sql(sql), pg::into(rows), ec);
    EXPECT_FALSE(ec) << sql << ": " << ec.message() << " " << c_.last_diagnostics().to_string();
    return rows.empty() ? T{} : std::get<0>(rows[0]);
  }
  asio::io_context io_;
  pg::connection c_{io_.get_executor()};
};
}  // namespace

TEST_F(PgTypes, Scalars) {
  expect_echo(true, "bool");
  expect_echo(std::int16_t{-32768}, "int2");
  expect_echo(std::numeric_limits<std::int32_t>::max(), "int4");
  expect_echo(std::numeric_limits<std::int64_t>::min(), "int8");
  expect_echo(1.5f, "float4");
  expect_echo(-1e300, "float8");
  expect_echo(std::numeric_limits<double>::infinity(), "float8");
  EXPECT_TRUE(std::isnan(echo(std::numeric_limits<double>::quiet_NaN(), "float8")));
  EXPECT_TRUE(std::isnan(literal<double>("SELECT 'NaN'::float8")));
  EXPECT_EQ(literal<float>("SELECT '-Infinity'::float4"), -std::numeric_limits<float>::infinity());
  expect_echo(std::string("héllo wörld"), "text");
  expect_echo(std::string("v"), "varchar");
  EXPECT_EQ(literal<std::string>("SELECT 'ab'::char(4)"), "ab  ");
  EXPECT_EQ(literal<std::string>("SELECT 'pg_type'::name"), "pg_type");
  EXPECT_EQ(literal<std::uint32_t>("SELECT 'pg_type'::regclass::oid"), 1247u);
}

TEST_F(PgTypes, Bytea) {
  std::vector<std::byte> b;
  for (int i = 0; i < 1000; ++i) b.push_back(static_cast<std::byte>(i * 7));
  expect_echo(b, "bytea");
  expect_echo(std::vector<std::byte>{}, "bytea");
  EXPECT_EQ(literal<std::vector<std::byte>>("SELECT '\\x00ff10'::bytea"),
            (std::vector<std::byte>{std::byte{0}, std::byte{0xff}, std::byte{0x10}}));
}

TEST_F(PgTypes, Numeric) {
  for (const char* s : {"0", "-1.5", "12345678901234567890.000000000000000000001", "NaN", "Infinity",
                        "-Infinity", "0.0000", "100000000"})
    EXPECT_EQ(echo(pg::numeric{s}, "numeric").text, s);
  EXPECT_EQ(literal<pg::numeric>("SELECT 1.10::numeric(10,4)").text, "1.1000");
  EXPECT_EQ(literal<pg::numeric>("SELECT (2::numeric ^ 200)::numeric").text.substr(0, 10), "1606938044");
  // Our binary decoding agrees with the server's own text output.
  for (const char* e : {"round(1/3::numeric, 40)", "(-1)::numeric / 7", "sqrt(2::numeric)", "1e-30::numeric",
                        "123456789.987654321::numeric * 1000000007", "0.00001000::numeric"}) {
    std::vector<std::tuple<pg::numeric, std::string>> rows;
    c_.query(pg::sql(std::string("SELECT x, x::text FROM (SELECT ") + e + " AS x) s"), pg::into(rows));
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(std::get<0>(rows[0]).text, std::get<1>(rows[0])) << e;
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) {
    std::string s = std::to_string(rng() % 1000000) + "." + std::to_string(1000 + rng() % 9000);
    EXPECT_EQ(echo(pg::numeric{s}, "numeric").text, s);
  }
}

TEST_F(PgTypes, DatesTimesIntervals) {
  pg::date d{sys_days{2024y / 2 / 29}};
  expect_echo(d, "date");
  EXPECT_EQ(literal<pg::date>("SELECT '1999-12-31'::date"), pg::date{sys_days{1999y / 12 / 31}});
  EXPECT_EQ(literal<pg::date>("SELECT 'infinity'::date"), pg::date::max());
  EXPECT_EQ(literal<pg::date>("SELECT '-infinity'::date"), pg::date::min());
  pg::timestamptz ts{sys_days{2021y / 6 / 1} + hours(12) + microseconds(123456)};
  expect_echo(ts, "timestamptz");
  EXPECT_EQ(literal<pg::timestamptz>("SELECT '2021-06-01 12:00:00.123456+00'::timestamptz"), ts);
  EXPECT_EQ(literal<pg::timestamptz>("SELECT 'infinity'::timestamptz"), pg::timestamptz::max());
  pg::timestamp lts{local_days{1970y / 1 / 1} + seconds(1)};
  expect_echo(lts, "timestamp");
  EXPECT_EQ(literal<pg::timestamp>("SELECT '1970-01-01 00:00:01'::timestamp"), lts);
  pg::time_of_day t{hours(23) + minutes(59) + microseconds(1)};
  expect_echo(t, "time");
  EXPECT_EQ(literal<pg::time_of_day>("SELECT '01:02:03'::time").since_midnight, hours(1) + minutes(2) + seconds(3));
  pg::interval iv{3'600'000'000LL, 2, 14};
  expect_echo(iv, "interval");
  EXPECT_EQ(literal<pg::interval>("SELECT '1 year 2 mons 3 days 00:00:01'::interval"),
            (pg::interval{1'000'000, 3, 14}));
}

TEST_F(PgTypes, UuidJsonInet) {
  auto u = *pg::uuid::parse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  expect_echo(u, "uuid");
  EXPECT_EQ(literal<pg::uuid>("SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid"), u);
  expect_echo(pg::json{R"({"k": [1, 2, "x"]})"}, "json");
  EXPECT_EQ(literal<pg::jsonb>(R"(SELECT '{"b": 1,  "a": 2}'::jsonb)").text, R"({"a": 2, "b": 1})");
  expect_echo(pg::jsonb{R"({"a": 2, "b": 1})"}, "jsonb");
  pg::inet v4{pg::inet::family_t::v4, 32, false, {192, 168, 0, 1}};
  expect_echo(v4, "inet");
  EXPECT_EQ(literal<pg::inet>("SELECT '192.168.0.1'::inet"), v4);
  auto c = literal<pg::inet>("SELECT '10.0.0.0/8'::cidr");
  EXPECT_TRUE(c.is_cidr);
  EXPECT_EQ(c.to_string(), "10.0.0.0/8");
  EXPECT_EQ(literal<pg::inet>("SELECT '2001:db8::1/64'::inet").to_string(), "2001:db8::1/64");
}

TEST_F(PgTypes, ArraysAndNulls) {
  expect_echo(std::vector<std::int32_t>{1, 2, 3}, "int4[]");
  expect_echo(std::vector<std::int32_t>{}, "int4[]");
  expect_echo(std::vector<std::optional<std::string>>{"a", std::nullopt, ""}, "text[]");
  expect_echo(std::vector<std::vector<std::int64_t>>{{1, 2}, {3, 4}, {5, 6}}, "int8[]");
  expect_echo(std::vector<pg::numeric>{{"1.5"}, {"-2"}}, "numeric[]");
  expect_echo(std::vector<pg::uuid>{pg::uuid{}}, "uuid[]");
  expect_echo(std::vector<bool>{true, false}, "bool[]");
  expect_echo(std::vector<double>{0.5, -0.25}, "float8[]");
  expect_echo(std::vector<pg::date>{pg::date{sys_days{2000y / 1 / 1}}}, "date[]");
  expect_echo(std::vector<pg::timestamptz>{pg::timestamptz{}}, "timestamptz[]");
  expect_echo(std::vector<pg::jsonb>{{"[]"}}, "jsonb[]");
  expect_echo(std::vector<std::vector<std::byte>>{{std::byte{1}}, {}}, "bytea[]");
  EXPECT_EQ(literal<std::vector<std::vector<std::int32_t>>>("SELECT '{{1,2},{3,4}}'::int4[]"),
            (std::vector<std::vector<std::int32_t>>{{1, 2}, {3, 4}}));
  EXPECT_EQ(literal<std::vector<std::string>>("SELECT ARRAY['x','y']::varchar[]"),
            (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(literal<std::vector<std::int32_t>>("SELECT '{}'::int4[]"), std::vector<std::int32_t>{});
  // Non-1 lower bounds are read by position.
  EXPECT_EQ(literal<std::vector<std::int32_t>>("SELECT '[0:1]={7,8}'::int4[]"), (std::vector<std::int32_t>{7, 8}));
  expect_echo(std::optional<std::int32_t>{}, "int4");
  expect_echo(std::optional<std::vector<std::int32_t>>{}, "int4[]");
  EXPECT_FALSE(literal<std::optional<pg::numeric>>("SELECT NULL::numeric").has_value());
}

TEST_F(PgTypes, ParametersAreNeverSpliced) {
  std::string evil = "'; DROP TABLE pg_type; --";
  EXPECT_EQ(echo(evil, "text"), evil);
  EXPECT_EQ(literal<std::int64_t>("SELECT count(*) FROM pg_type") > 100, true);
}
