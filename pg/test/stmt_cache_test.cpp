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

TEST(PgStmtCache, FindLastComparesTextAndOidsWithoutHashing) {
  stmt_cache c(4);
  std::optional<std::string> ev;
  std::string oids_a("\x17\0\0\0", 4), oids_b("\x14\0\0\0", 4);
  const std::string key_a = std::string("SELECT $1") + '\0' + oids_a;
  EXPECT_EQ(c.find_last("SELECT $1", oids_a), nullptr);  // nothing found yet
  const auto& name = c.insert(key_a, ev);
  const auto* e = c.find_last("SELECT $1", oids_a);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, name);
  EXPECT_EQ(c.find_last("SELECT $1", oids_b), nullptr);   // same text, other parameter types
  EXPECT_EQ(c.find_last("SELECT $2", oids_a), nullptr);   // other text, same length
  EXPECT_EQ(c.find_last("SELECT $1 ", oids_a), nullptr);  // longer text
  // find() moves the memo; erase() drops it.
  const std::string key_b = std::string("SELECT 2") + '\0';
  c.insert(key_b, ev);
  EXPECT_EQ(c.find_last("SELECT $1", oids_a), nullptr);
  ASSERT_NE(c.find(key_a), nullptr);
  EXPECT_NE(c.find_last("SELECT $1", oids_a), nullptr);
  c.erase(key_a);
  EXPECT_EQ(c.find_last("SELECT $1", oids_a), nullptr);
  // A memo hit also marks the entry most recently used (eviction order).
  stmt_cache small(2);
  small.insert(std::string("a") + '\0', ev);
  small.insert(std::string("b") + '\0', ev);
  ASSERT_NE(small.find(std::string("a") + '\0'), nullptr);
  ASSERT_NE(small.find_last("a", ""), nullptr);
  small.insert(std::string("c") + '\0', ev);  // evicts b, the least recently used
  ASSERT_TRUE(ev);
  EXPECT_EQ(small.find(std::string("b") + '\0'), nullptr);
  EXPECT_NE(small.find(std::string("a") + '\0'), nullptr);
}

TEST(PgStmtCache, PendingEntriesAreConfirmedOrErasedByTheirOwnerOnly) {
  stmt_cache c(4);
  std::optional<std::string> ev;
  c.insert("k", ev, 7);
  EXPECT_EQ(c.find("k")->owner, 7u);
  c.confirm("k", 8);  // not the owner: stays pending
  EXPECT_EQ(c.find("k")->owner, 7u);
  c.erase_pending("k", 8);
  EXPECT_NE(c.find("k"), nullptr);
  c.confirm("k", 7);
  EXPECT_EQ(c.find("k")->owner, 0u);
  c.erase_pending("k", 7);  // confirmed entries are not pending any more
  EXPECT_NE(c.find("k"), nullptr);
  c.insert("p", ev, 9);
  c.erase_pending("p", 9);
  EXPECT_EQ(c.find("p"), nullptr);
}
