// The _SQL builder without a server: the text (numbered placeholders, computed at
// compile time) and the parameters' OIDs and bytes as they would be sent.
#include "inlet/pg/builder.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace pg = inlet::pg;
using namespace pg::literals;

namespace {
template <class Q>
pg::detail::param_buffer bound(const Q& q) {
  pg::detail::param_buffer pb;
  std::error_code ec;
  q.bind(pb, ec);
  EXPECT_FALSE(ec);
  pb.finish();
  return pb;
}
}  // namespace

TEST(PgBuilder, TextOnly) {
  constexpr auto q = "SELECT 1"_SQL;
  static_assert(q.text() == "SELECT 1");
  static_assert(decltype(q)::size == 0);
  constexpr auto q2 = "SELECT "_SQL + "1"_SQL;
  static_assert(q2.text() == "SELECT 1");
  EXPECT_TRUE(bound(q2).types.empty());
}

TEST(PgBuilder, SeedQuery) {
  std::int64_t uid = 42;
  std::vector<std::int64_t> mids{1, 2, 3};
  const auto q = "SELECT mid, st_id, attaches"_SQL + " FROM mail.messages "_SQL +
                 "WHERE uid = "_SQL + uid + " AND mid = ANY("_SQL + mids + "::code.mids)"_SQL;
  static_assert(
      decltype(q)::text() ==
      "SELECT mid, st_id, attaches FROM mail.messages WHERE uid = $1 AND mid = ANY($2::code.mids)");
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(q.params())>,
                               std::tuple<std::int64_t, std::vector<std::int64_t>>>);
  auto pb = bound(q);
  ASSERT_EQ(pb.types.size(), 2u);
  EXPECT_EQ(pb.types[0], pg::oid::int8);
  EXPECT_EQ(pb.types[1], pg::oid::int8_array);
  EXPECT_EQ(pb.lengths[0], 8);
  // The values are copied into the query: changing uid afterwards changes nothing.
  uid = 7;
  auto pb2 = bound(q);
  EXPECT_EQ(std::string_view(pb2.values[0], 8), std::string_view(pb.values[0], 8));
  // The text never holds a value.
  EXPECT_EQ(q.text().find("42"), std::string_view::npos);
}

TEST(PgBuilder, EveryOperatorOrder) {
  const std::string s = "x";
  const auto a = "a = "_SQL + 1 + ", b = "_SQL + s;  // builder + value, builder + text
  const auto b = " AND c = "_SQL + 2.5;
  const auto ab = a + b;  // builder + builder: placeholders renumbered
  static_assert(decltype(ab)::text() == "a = $1, b = $2 AND c = $3");
  const auto t = "("_SQL + ab + ")"_SQL;  // text + builder
  static_assert(decltype(t)::text() == "(a = $1, b = $2 AND c = $3)");
  auto pb = bound(t);
  ASSERT_EQ(pb.types.size(), 3u);
  EXPECT_EQ(pb.types[0], pg::oid::int4);
  EXPECT_EQ(pb.types[1], pg::oid::text);
  EXPECT_EQ(pb.types[2], pg::oid::float8);
  // Two values in a row, and many parameters (two-digit numbers).
  const auto many = "v"_SQL + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11;
  static_assert(decltype(many)::text() == "v$1$2$3$4$5$6$7$8$9$10$11");
  EXPECT_EQ(bound(many).types.size(), 11u);
  // NULL parameters.
  const auto n = "x = "_SQL + std::optional<std::int32_t>{};
  auto pbn = bound(n);
  EXPECT_EQ(pbn.types[0], pg::oid::int4);
  EXPECT_EQ(pbn.values[0], nullptr);
}

TEST(PgBuilder, ReferencesBindAtRunTime) {
  std::int64_t uid = 1;
  const auto q = "uid = "_SQL + std::cref(uid);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<0>(q.params()))>,
                               std::reference_wrapper<const std::int64_t>>);
  auto first = bound(q);
  EXPECT_EQ(first.types[0], pg::oid::int8);
  uid = 2;
  auto second = bound(q);
  EXPECT_EQ(second.values[0][7], 2);  // the stored query reads the current value
  EXPECT_EQ(first.values[0][7], 1);
}

TEST(PgBuilder, StoredAndReused) {
  struct holder {
    decltype("SELECT "_SQL + std::int32_t{} + "::int4"_SQL) q;
  };
  holder h{"SELECT "_SQL + std::int32_t{5} + "::int4"_SQL};
  auto copy = h.q;
  EXPECT_EQ(copy.text(), "SELECT $1::int4");
  EXPECT_EQ(bound(copy).lengths[0], 4);
  static_assert(pg::is_query<decltype(copy)>::value);
}
