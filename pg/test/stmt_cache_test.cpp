#include <gtest/gtest.h>

#include "stmt_cache.hpp"

using inlet::pg::detail::stmt_cache;

TEST(PgStmtCache, LruEviction) {
  stmt_cache c(2);
  std::optional<std::string> ev;
  auto a = c.insert("a", ev);
  EXPECT_FALSE(ev);
  auto b = c.insert("b", ev);
  EXPECT_FALSE(ev);
  EXPECT_NE(a, b);
  ASSERT_TRUE(c.find("a"));  // a is now most recent
  c.insert("c", ev);
  ASSERT_TRUE(ev);
  EXPECT_EQ(*ev, b);
  EXPECT_FALSE(c.find("b"));
  EXPECT_TRUE(c.find("a"));
  EXPECT_TRUE(c.find("c"));
  EXPECT_EQ(c.size(), 2u);
  c.erase("a");
  EXPECT_FALSE(c.find("a"));
  EXPECT_EQ(c.size(), 1u);
}

TEST(PgStmtCache, NamesAreUniqueOverTime) {
  stmt_cache c(1);
  std::set<std::string> names;
  std::optional<std::string> ev;
  for (int i = 0; i < 100; ++i) names.insert(c.insert(std::to_string(i), ev));
  EXPECT_EQ(names.size(), 100u);
}
