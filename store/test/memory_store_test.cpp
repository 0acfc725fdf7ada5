#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "inlet/store/memory_store.hpp"

namespace st = inlet::store;

namespace {

st::new_message make(std::string raw, std::vector<std::string> rcpt = {"a@example.com"},
                     std::string subject = {}) {
  st::new_message m;
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to = std::move(rcpt);
  m.envelope.remote = "127.0.0.1:4000";
  m.envelope.protocol = "ESMTP";
  m.summary.subject = std::move(subject);
  m.raw = std::move(raw);
  return m;
}

st::message_ptr put(st::store& s, st::new_message m) {
  std::error_code ec;
  auto p = s.put_sync(std::move(m), ec);
  EXPECT_FALSE(ec) << ec.message();
  return p;
}

std::vector<std::string> subjects(const st::page& p) {
  std::vector<std::string> out;
  for (auto& m : p.messages) out.push_back(m->summary.subject);
  return out;
}

}  // namespace

TEST(MessageId, ShapeAndUniqueness) {
  std::set<std::string> seen;
  for (int i = 0; i < 20000; ++i) {
    auto id = st::make_message_id();
    ASSERT_EQ(id.size(), st::id_length);
    for (char c : id) ASSERT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << id;
    ASSERT_TRUE(seen.insert(id).second) << "duplicate " << id;
  }
}

TEST(NormalizeMailbox, TrimsBracketsAndCase) {
  EXPECT_EQ(st::normalize_mailbox("  <Ann@Example.COM> "), "ann@example.com");
  EXPECT_EQ(st::normalize_mailbox("bob@x"), "bob@x");
  EXPECT_EQ(st::normalize_mailbox(""), "");
  EXPECT_EQ(st::normalize_mailbox("<>"), "");
}

TEST(MemoryStore, PutCompletesInlineAndGetReturnsRecord) {
  st::memory_store s;
  bool called = false;
  std::string raw("Subject: x\r\n\r\nbody\r\n.\r\n\0\xff", 26);
  s.put(make(raw, {"a@example.com"}, "x"), [&](std::error_code ec, st::message_ptr m) {
    called = true;
    ASSERT_FALSE(ec);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->raw, raw);
    EXPECT_EQ(m->size(), raw.size());
    EXPECT_EQ(m->id.size(), st::id_length);
    EXPECT_EQ(m->envelope.mail_from, "sender@example.org");
  });
  ASSERT_TRUE(called);
  auto p = s.list(0, 10);
  ASSERT_EQ(p.messages.size(), 1u);
  auto g = s.get(p.messages[0]->id);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->raw, raw);
  EXPECT_EQ(s.get("nope"), nullptr);
  auto stats = s.stats();
  EXPECT_EQ(stats.messages, 1u);
  EXPECT_EQ(stats.bytes, raw.size());
  EXPECT_EQ(stats.stored_total, 1u);
}

TEST(MemoryStore, ListIsNewestFirstWithPagingEdges) {
  st::memory_store s;
  for (int i = 0; i < 5; ++i) put(s, make("m", {"a@x"}, std::to_string(i)));
  auto all = s.list(0, 100);
  EXPECT_EQ(all.total, 5u);
  EXPECT_EQ(subjects(all), (std::vector<std::string>{"4", "3", "2", "1", "0"}));
  EXPECT_EQ(subjects(s.list(1, 2)), (std::vector<std::string>{"3", "2"}));
  EXPECT_EQ(subjects(s.list(4, 2)), (std::vector<std::string>{"0"}));
  auto past = s.list(5, 2);
  EXPECT_TRUE(past.messages.empty());
  EXPECT_EQ(past.total, 5u);
  EXPECT_EQ(past.start, 5u);
  EXPECT_TRUE(s.list(1000, 10).messages.empty());
  EXPECT_TRUE(s.list(0, 0).messages.empty());
  EXPECT_EQ(s.list(0, 0).total, 5u);
  // seq strictly increases with arrival
  for (std::size_t i = 1; i < all.messages.size(); ++i)
    EXPECT_GT(all.messages[i - 1]->seq, all.messages[i]->seq);
}

TEST(MemoryStore, EvictsOldestByCount) {
  st::memory_store s({.max_messages = 3, .max_bytes = 1 << 20});
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(put(s, make("m", {"a@x"}, std::to_string(i)))->id);
  EXPECT_EQ(subjects(s.list(0, 10)), (std::vector<std::string>{"4", "3", "2"}));
  EXPECT_EQ(s.get(ids[0]), nullptr);
  EXPECT_EQ(s.get(ids[1]), nullptr);
  EXPECT_NE(s.get(ids[2]), nullptr);
  EXPECT_EQ(s.stats().evicted_total, 2u);
  EXPECT_EQ(s.stats().messages, 3u);
  EXPECT_EQ(s.list_mailbox("a@x", 0, 10).total, 3u);
}

TEST(MemoryStore, EvictsOldestByBytes) {
  st::memory_store s({.max_messages = 100, .max_bytes = 10});
  put(s, make(std::string(4, 'a'), {"a@x"}, "0"));
  put(s, make(std::string(4, 'b'), {"b@x"}, "1"));
  EXPECT_EQ(s.stats().bytes, 8u);
  put(s, make(std::string(3, 'c'), {"a@x"}, "2"));  // 11 > 10: "0" goes
  EXPECT_EQ(subjects(s.list(0, 10)), (std::vector<std::string>{"2", "1"}));
  EXPECT_EQ(s.stats().bytes, 7u);
  put(s, make(std::string(10, 'd'), {"c@x"}, "3"));  // exactly the bound: all others go
  EXPECT_EQ(subjects(s.list(0, 10)), (std::vector<std::string>{"3"}));
  EXPECT_EQ(s.stats().bytes, 10u);
  EXPECT_EQ(s.stats().evicted_total, 3u);
  EXPECT_EQ(s.list_mailbox("a@x", 0, 10).total, 0u);
  EXPECT_EQ(s.list_mailbox("b@x", 0, 10).total, 0u);
}

TEST(MemoryStore, RefusesMessageOverByteBound) {
  st::memory_store s({.max_messages = 100, .max_bytes = 10});
  put(s, make("keep", {"a@x"}, "keep"));
  std::error_code ec;
  auto m = s.put_sync(make(std::string(11, 'x')), ec);
  EXPECT_EQ(ec, st::errc::too_large);
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(s.stats().messages, 1u);  // nothing evicted for a refused message
  EXPECT_EQ(s.stats().rejected_total, 1u);
}

TEST(MemoryStore, MailboxIndexIsCaseInsensitiveAndDeduplicated) {
  st::memory_store s;
  put(s, make("1", {"Ann@Example.com", "ann@example.com", "bob@example.com"}, "1"));
  put(s, make("2", {"<bob@EXAMPLE.com>"}, "2"));
  put(s, make("3", {"carl@example.com"}, "3"));
  auto ann = s.list_mailbox("ANN@example.com", 0, 10);
  EXPECT_EQ(subjects(ann), (std::vector<std::string>{"1"}));
  auto bob = s.list_mailbox("bob@example.com", 0, 10);
  EXPECT_EQ(subjects(bob), (std::vector<std::string>{"2", "1"}));
  EXPECT_EQ(subjects(s.list_mailbox("bob@example.com", 1, 10)), (std::vector<std::string>{"1"}));
  EXPECT_EQ(s.list_mailbox("nobody@example.com", 0, 10).total, 0u);
}

TEST(MemoryStore, RemoveByIdsAndClear) {
  st::memory_store s;
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(put(s, make("xy", {"a@x"}, std::to_string(i)))->id);
  std::vector<std::string> del{ids[1], "unknown", ids[1], ids[3]};
  EXPECT_EQ(s.remove(del), 2u);
  EXPECT_EQ(subjects(s.list(0, 10)), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(subjects(s.list_mailbox("a@x", 0, 10)), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(s.get(ids[1]), nullptr);
  EXPECT_EQ(s.stats().bytes, 4u);
  EXPECT_EQ(s.stats().deleted_total, 2u);
  EXPECT_EQ(s.remove(std::vector<std::string>{}), 0u);
  EXPECT_EQ(s.clear(), 2u);
  EXPECT_EQ(s.list(0, 10).total, 0u);
  EXPECT_EQ(s.list_mailbox("a@x", 0, 10).total, 0u);
  EXPECT_EQ(s.stats().bytes, 0u);
  EXPECT_EQ(s.stats().messages, 0u);
  // usable after clear
  put(s, make("z", {"a@x"}, "z"));
  EXPECT_EQ(subjects(s.list(0, 10)), (std::vector<std::string>{"z"}));
}

TEST(MemoryStore, ReadFlagsAndUnreadCounts) {
  st::memory_store s({.max_messages = 4, .max_bytes = 1 << 20});
  auto a = put(s, make("a", {"x@e", "y@e"}));
  auto b = put(s, make("b", {"x@e"}));
  auto c = put(s, make("c", {"y@e"}));
  EXPECT_EQ(s.stats().unread, 3u);
  EXPECT_EQ(s.list(0, 1).unread, 3u);  // the whole store, not the page
  EXPECT_EQ(s.list_mailbox("x@e", 0, 10).unread, 2u);
  EXPECT_EQ(s.list_mailbox("Y@E", 0, 10).unread, 2u);

  std::vector<std::string> ab{a->id, b->id, "unknown"};
  EXPECT_EQ(s.set_read(ab, true), 2u);
  EXPECT_EQ(s.set_read(ab, true), 0u);  // already read: nothing changes
  EXPECT_TRUE(a->read.load());
  EXPECT_FALSE(c->read.load());
  EXPECT_EQ(s.stats().unread, 1u);
  EXPECT_EQ(s.list_mailbox("x@e", 0, 10).unread, 0u);
  EXPECT_EQ(s.list_mailbox("y@e", 0, 10).unread, 1u);

  // Removing a read and an unread message keeps every count right.
  EXPECT_EQ(s.remove(std::vector<std::string>{a->id, c->id}), 2u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(s.list_mailbox("x@e", 0, 10).unread, 0u);

  // Eviction of an unread message (bound 4).
  for (int i = 0; i < 4; ++i) put(s, make("n", {"x@e"}));
  EXPECT_EQ(s.stats().messages, 4u);
  EXPECT_EQ(s.stats().unread, 4u);  // b (read) was the oldest and went first
  EXPECT_EQ(s.list_mailbox("x@e", 0, 10).unread, 4u);

  // No IDs: every message; and back to unread.
  EXPECT_EQ(s.set_read({}, true), 4u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(s.set_read({}, false), 4u);
  EXPECT_EQ(s.list_mailbox("x@e", 0, 10).unread, 4u);
  EXPECT_EQ(s.list(0, 10).unread, 4u);
  s.clear();
  EXPECT_EQ(s.stats().unread, 0u);
}

TEST(MemoryStore, RecordOutlivesEviction) {
  st::memory_store s({.max_messages = 1, .max_bytes = 100});
  auto first = put(s, make("first bytes"));
  put(s, make("second"));
  EXPECT_EQ(s.get(first->id), nullptr);
  EXPECT_EQ(first->raw, "first bytes");  // still readable through the held pointer
}

TEST(MemoryStore, ObserversSeeEveryPutUntilUnsubscribed) {
  st::memory_store s;
  std::vector<std::string> seen;
  auto h = s.subscribe([&](const st::message_ptr& m) {
    seen.push_back(m->summary.subject);
    EXPECT_NE(s.get(m->id), nullptr);  // visible to readers when observed
  });
  put(s, make("1", {"a@x"}, "1"));
  put(s, make("2", {"a@x"}, "2"));
  s.unsubscribe(h);
  put(s, make("3", {"a@x"}, "3"));
  EXPECT_EQ(seen, (std::vector<std::string>{"1", "2"}));
}

TEST(MemoryStore, ZeroMessageBoundRefusesAll) {
  st::memory_store s({.max_messages = 0, .max_bytes = 100});
  std::error_code ec;
  EXPECT_EQ(s.put_sync(make("x"), ec), nullptr);
  EXPECT_EQ(ec, st::errc::too_large);
}

TEST(StoreErrc, Category) {
  std::error_code ec = st::errc::not_found;
  EXPECT_STREQ(ec.category().name(), "inlet.store");
  EXPECT_EQ(ec.message(), "no such message");
}
