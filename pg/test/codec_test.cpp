// Codec round-trips without a server: property tests over random values plus the edges.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "inlet/pg/codec.hpp"

namespace pg = inlet::pg;
using namespace std::chrono;

namespace {

std::mt19937_64 rng(12345);

template <class T>
T round_trip(const T& v) {
  std::string buf;
  std::error_code ec;
  bool not_null = pg::encode_value(v, buf, ec);
  EXPECT_FALSE(ec) << ec.message();
  T out{};
  auto dec = pg::decode_value(buf.data(), not_null ? static_cast<int>(buf.size()) : -1, out);
  EXPECT_FALSE(dec) << dec.message();
  return out;
}

template <class T>
void expect_rt(const T& v) {
  EXPECT_EQ(round_trip(v), v);
}

std::string random_text(std::size_t max) {
  std::string s(rng() % (max + 1), '\0');
  for (auto& c : s) c = static_cast<char>(1 + rng() % 255);  // no NUL (server rejects it)
  return s;
}

}  // namespace

TEST(PgCodec, IntegersRandomAndEdges) {
  for (auto v : {std::numeric_limits<std::int16_t>::min(), std::int16_t{-1}, std::int16_t{0},
                 std::numeric_limits<std::int16_t>::max()})
    expect_rt(v);
  for (auto v : {std::numeric_limits<std::int32_t>::min(), 0, std::numeric_limits<std::int32_t>::max()})
    expect_rt(v);
  for (auto v : {std::numeric_limits<std::int64_t>::min(), std::int64_t{0}, std::numeric_limits<std::int64_t>::max()})
    expect_rt(v);
  for (int i = 0; i < 1000; ++i) {
    expect_rt(static_cast<std::int16_t>(rng()));
    expect_rt(static_cast<std::int32_t>(rng()));
    expect_rt(static_cast<std::int64_t>(rng()));
  }
}

TEST(PgCodec, IntegersAreBigEndian) {
  std::string buf;
  std::error_code ec;
  pg::encode_value(std::int32_t{0x01020304}, buf, ec);
  EXPECT_EQ(buf, std::string("\x01\x02\x03\x04", 4));
}

TEST(PgCodec, FloatsIncludingNanAndInfinities) {
  for (double v : {0.0, -0.0, 1.5, -1e308, std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min(),
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()})
    expect_rt(v);
  EXPECT_TRUE(std::isnan(round_trip(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_trip(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::signbit(round_trip(-0.0)));
  for (int i = 0; i < 1000; ++i) {
    auto bits = rng();
    double d = std::bit_cast<double>(bits);
    float f = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    if (!std::isnan(d)) expect_rt(d);
    if (!std::isnan(f)) expect_rt(f);
  }
}

TEST(PgCodec, BoolTextBytea) {
  expect_rt(true);
  expect_rt(false);
  expect_rt(std::string());
  for (int i = 0; i < 200; ++i) expect_rt(random_text(300));
  std::vector<std::byte> b;
  expect_rt(b);
  for (int i = 0; i < 256; ++i) b.push_back(static_cast<std::byte>(i));
  expect_rt(b);
}

TEST(PgCodec, NumericExactText) {
  for (const char* s : {"0", "1", "-1", "12.3400", "0.0001", "-0.00001", "10000", "9999.9999",
                        "123456789012345678901234567890.123456789012345678901234567890", "NaN",
                        "Infinity", "-Infinity", "0.000000000000000000000000000001", "100000000",
                        "1.0", "0.10"}) {
    EXPECT_EQ(round_trip(pg::numeric{s}).text, s) << s;
  }
  // Large scale and random decimals in canonical form.
  for (int i = 0; i < 500; ++i) {
    std::string s;
    if (rng() % 2) s += '-';
    std::size_t ni = 1 + rng() % 40, nf = rng() % 60;
    s += static_cast<char>('1' + rng() % 9);
    for (std::size_t k = 1; k < ni; ++k) s += static_cast<char>('0' + rng() % 10);
    if (nf) {
      s += '.';
      for (std::size_t k = 0; k < nf; ++k) s += static_cast<char>('0' + rng() % 10);
    }
    EXPECT_EQ(round_trip(pg::numeric{s}).text, s);
  }
  // Non-canonical input decodes canonically.
  EXPECT_EQ(round_trip(pg::numeric{"007.50"}).text, "7.50");
  EXPECT_EQ(round_trip(pg::numeric{"-0.000"}).text, "0.000");
  EXPECT_EQ(round_trip(pg::numeric{".5"}).text, "0.5");
}

TEST(PgCodec, NumericRejectsGarbage) {
  for (const char* s : {"", "-", "1e5", "abc", "1.2.3", " 1"}) {
    std::string buf;
    std::error_code ec;
    pg::encode_value(pg::numeric{s}, buf, ec);
    EXPECT_EQ(ec, pg::errc::invalid_value) << s;
  }
}

TEST(PgCodec, NumericKnownWireBytes) {
  // 12.34 -> ndigits 2, weight 0, sign +, dscale 2, digits 12 3400.
  std::string buf;
  std::error_code ec;
  pg::encode_value(pg::numeric{"12.34"}, buf, ec);
  EXPECT_EQ(buf, std::string("\x00\x02\x00\x00\x00\x00\x00\x02\x00\x0c\x0d\x48", 12));
}

TEST(PgCodec, DatesAndTimes) {
  expect_rt(pg::date{sys_days{2000y / 1 / 1}});
  expect_rt(pg::date{sys_days{1970y / 1 / 1}});
  expect_rt(pg::date{sys_days{-4713y / 11 / 24}});
  expect_rt(pg::date::max());
  expect_rt(pg::date::min());
  expect_rt(pg::timestamptz::max());
  expect_rt(pg::timestamptz::min());
  expect_rt(pg::timestamp::max());
  for (int i = 0; i < 1000; ++i) {
    auto us = static_cast<std::int64_t>(rng() % 20'000'000'000'000'000ULL) - 10'000'000'000'000'000LL;
    expect_rt(pg::timestamptz{microseconds{us}});
    expect_rt(pg::timestamp{microseconds{us}});
    expect_rt(pg::date{days{static_cast<int>(rng() % 2'000'000) - 1'000'000}});
    expect_rt(pg::time_of_day{microseconds{static_cast<std::int64_t>(rng() % 86'400'000'000ULL)}});
    expect_rt(pg::interval{static_cast<std::int64_t>(rng()), static_cast<std::int32_t>(rng()),
                           static_cast<std::int32_t>(rng())});
  }
  // 2000-01-01 is zero on the wire.
  std::string buf;
  std::error_code ec;
  pg::encode_value(pg::timestamptz{sys_days{2000y / 1 / 1}}, buf, ec);
  EXPECT_EQ(buf, std::string(8, '\0'));
}

TEST(PgCodec, UuidJsonInet) {
  for (int i = 0; i < 100; ++i) {
    pg::uuid u;
    for (auto& b : u.bytes) b = static_cast<std::uint8_t>(rng());
    expect_rt(u);
    EXPECT_EQ(pg::uuid::parse(u.to_string()), u);
  }
  EXPECT_FALSE(pg::uuid::parse("not-a-uuid"));
  expect_rt(pg::json{R"({"a": [1, 2]})"});
  expect_rt(pg::jsonb{R"({"a": [1, 2]})"});
  expect_rt(pg::jsonb{""});
  pg::inet v4{pg::inet::family_t::v4, 24, false, {10, 1, 2, 0}};
  expect_rt(v4);
  EXPECT_EQ(v4.to_string(), "10.1.2.0/24");
  pg::inet v6{pg::inet::family_t::v6, 128, true, {}};
  v6.addr[15] = 1;
  expect_rt(v6);
  EXPECT_EQ(v6.to_string(), "::1/128");
}

TEST(PgCodec, OptionalIsNull) {
  std::string buf;
  std::error_code ec;
  EXPECT_FALSE(pg::encode_value(std::optional<std::int32_t>{}, buf, ec));
  EXPECT_TRUE(buf.empty());
  std::optional<std::int32_t> o = 5;
  EXPECT_FALSE(pg::decode_value(nullptr, -1, o));
  EXPECT_FALSE(o.has_value());
  std::int32_t plain = 0;
  EXPECT_EQ(pg::decode_value(nullptr, -1, plain), pg::errc::unexpected_null);
  expect_rt(std::optional<std::string>("x"));
}

TEST(PgCodec, ArraysOneAndNDimensional) {
  expect_rt(std::vector<std::int32_t>{});
  expect_rt(std::vector<std::int32_t>{1, -2, 3});
  expect_rt(std::vector<std::string>{"a", "", "ccc"});
  expect_rt(std::vector<std::optional<std::int64_t>>{1, std::nullopt, 3});
  expect_rt(std::vector<bool>{true, false, true});
  expect_rt(std::vector<double>{std::numeric_limits<double>::infinity(), -0.5});
  expect_rt(std::vector<std::vector<std::int16_t>>{{1, 2, 3}, {4, 5, 6}});
  expect_rt(std::vector<std::vector<std::vector<std::int32_t>>>{{{1}, {2}}, {{3}, {4}}});
  expect_rt(std::vector<pg::numeric>{{"1.5"}, {"NaN"}});
  expect_rt(std::vector<std::vector<std::byte>>{{std::byte{1}}, {}});
  for (int i = 0; i < 200; ++i) {
    std::vector<std::optional<std::int32_t>> v(rng() % 50);
    for (auto& e : v)
      if (rng() % 4) e = static_cast<std::int32_t>(rng());
    expect_rt(v);
    std::size_t r = 1 + rng() % 5, c = 1 + rng() % 5;
    std::vector<std::vector<std::string>> m(r, std::vector<std::string>(c));
    for (auto& row : m)
      for (auto& e : row) e = random_text(10);
    expect_rt(m);
  }
}

TEST(PgCodec, ArrayHeaderAndRaggedRejected) {
  std::string buf;
  std::error_code ec;
  pg::encode_value(std::vector<std::vector<std::int32_t>>{{1, 2}, {3}}, buf, ec);
  EXPECT_EQ(ec, pg::errc::invalid_value);
  // Element OID of an int4[] is checked on decode.
  buf.clear();
  ec = {};
  pg::encode_value(std::vector<std::int32_t>{1}, buf, ec);
  std::vector<std::int64_t> wrong;
  EXPECT_EQ(pg::decode_value(buf.data(), static_cast<int>(buf.size()), wrong), pg::errc::type_mismatch);
  // A 1-D array does not decode into a 2-D vector.
  std::vector<std::vector<std::int32_t>> two;
  EXPECT_EQ(pg::decode_value(buf.data(), static_cast<int>(buf.size()), two), pg::errc::invalid_value);
}

// Malformed input never crashes: every truncation of valid encodings, and random bytes.
TEST(PgCodec, TruncatedAndRandomInputFailsCleanly) {
  std::string buf;
  std::error_code ec;
  pg::encode_value(std::vector<std::vector<std::string>>{{"ab", "c"}, {"d", "ef"}}, buf, ec);
  for (std::size_t n = 0; n < buf.size(); ++n) {
    std::vector<std::vector<std::string>> out;
    EXPECT_TRUE(pg::decode_value(buf.data(), static_cast<int>(n), out)) << n;
  }
  std::string num;
  pg::encode_value(pg::numeric{"123.456"}, num, ec);
  for (std::size_t n = 0; n < num.size(); ++n) {
    pg::numeric out;
    EXPECT_TRUE(pg::decode_value(num.data(), static_cast<int>(n), out));
  }
  for (int i = 0; i < 5000; ++i) {
    std::string r(rng() % 64, '\0');
    for (auto& c : r) c = static_cast<char>(rng());
    std::vector<std::optional<std::int32_t>> a;
    pg::numeric n;
    pg::inet in;
    pg::jsonb j;
    (void)pg::decode_value(r.data(), static_cast<int>(r.size()), a);
    (void)pg::decode_value(r.data(), static_cast<int>(r.size()), n);
    (void)pg::decode_value(r.data(), static_cast<int>(r.size()), in);
    (void)pg::decode_value(r.data(), static_cast<int>(r.size()), j);
  }
}

TEST(PgCodec, OidsAndErrorConditions) {
  static_assert(pg::value_traits<std::vector<std::int32_t>>::type_oid() == pg::oid::int4_array);
  static_assert(pg::value_traits<std::optional<std::string>>::accepts(pg::oid::varchar));
  static_assert(!pg::value_traits<std::int64_t>::accepts(pg::oid::int4));
  EXPECT_EQ(pg::make_sqlstate_error("23505"), pg::condition::unique_violation);
  EXPECT_EQ(pg::make_sqlstate_error("23505"), pg::condition::integrity_violation);
  EXPECT_EQ(pg::make_sqlstate_error("25006"), pg::condition::database_readonly);
  EXPECT_EQ(pg::make_sqlstate_error("40001"), pg::condition::serialization_failure);
  EXPECT_EQ(pg::make_sqlstate_error("08006"), pg::condition::connection_error);
  EXPECT_EQ(std::error_code(pg::errc::timeout), pg::condition::timeout);
  EXPECT_EQ(std::error_code(pg::errc::type_mismatch), pg::condition::type_mismatch);
  EXPECT_NE(std::error_code(pg::errc::type_mismatch), pg::condition::server_error);
  EXPECT_EQ(pg::sqlstate_to_string(pg::sqlstate_to_int("40P01")), "40P01");
}
