#include "inlet/store/memory_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "search_cases.hpp"
#include "store_helpers.hpp"
#include "sync_ops.hpp"
#include "totals_cases.hpp"

namespace st = inlet::store;
namespace asio = boost::asio;
using namespace inlet::store::test;

namespace {

std::size_t remove_ids(st::store& s, std::vector<std::string> ids) {
  return remove_sync(s, st::selection::of_ids(std::move(ids))).value;
}

std::size_t set_read_ids(st::store& s, std::vector<std::string> ids, bool read) {
  return set_read_sync(s, st::selection::of_ids(std::move(ids)), read).value;
}

st::selection matching(std::string_view q, std::string mailbox = {}) {
  st::search::query parsed;
  EXPECT_FALSE(st::search::parse(q, "", parsed));
  return st::selection::matching(std::move(parsed), std::move(mailbox));
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

TEST(MessageId, InlineValue) {
  const st::message_id none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.view(), "");
  const std::string chars = "0123456789ABCDEFabcdef";  // id_length characters
  const st::message_id a(chars);
  EXPECT_EQ(a.size(), st::id_length);
  EXPECT_EQ(std::string_view(a), chars);
  EXPECT_EQ(a.str(), chars);
  EXPECT_EQ(a, st::message_id(chars));
  EXPECT_EQ(a, std::string_view(chars));
  EXPECT_NE(a, st::message_id("0123456789ABCDEFabcdeg"));
  EXPECT_LT(a, st::message_id("0123456789ABCDEFabcdeg"));
  EXPECT_EQ(std::hash<st::message_id>{}(a), std::hash<std::string_view>{}(chars));
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), chars);
  EXPECT_THROW(st::message_id(chars + "x"), std::length_error);
  st::message_id b = a;  // a copy owns its characters
  EXPECT_EQ(b.view(), chars);
  EXPECT_NE(b.data(), a.data());
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
    EXPECT_EQ(m->size, raw.size());
    EXPECT_TRUE(m->has_raw);
    EXPECT_EQ(m->id.size(), st::id_length);
    EXPECT_EQ(m->envelope.mail_from, "sender@example.org");
  });
  ASSERT_TRUE(called);
  auto p = list(s, 0, 10);
  ASSERT_EQ(p.messages.size(), 1u);
  auto g = get_sync(s, p.messages[0]->id);
  ASSERT_FALSE(g.ec);
  ASSERT_TRUE(g.value);
  EXPECT_EQ(g.value->raw, raw);
  auto missing = get_sync(s, "nope");
  EXPECT_EQ(missing.ec, st::errc::not_found);
  EXPECT_EQ(missing.value, nullptr);
  auto stats = s.stats();
  EXPECT_EQ(stats.messages, 1u);
  EXPECT_GT(stats.bytes, raw.size());  // summary and overhead count too
  EXPECT_EQ(stats.stored_total, 1u);
}

TEST(MemoryStore, CreatedTimeKeptWhenGiven) {
  st::memory_store s;
  auto m = make("x");
  m.created = at(2020, 5, 17, 8, 30);
  EXPECT_EQ(put(s, std::move(m))->created, at(2020, 5, 17, 8, 30));
  auto before = std::chrono::system_clock::now();
  EXPECT_GE(put(s, make("y"))->created, before);
}

TEST(MemoryStore, ListIsNewestFirstWithPagingEdges) {
  st::memory_store s;
  for (int i = 0; i < 5; ++i) put(s, make("m", {"a@x"}, std::to_string(i)));
  auto all = list(s, 0, 100);
  EXPECT_EQ(all.total, 5u);
  EXPECT_EQ(all.matched, 5u);
  EXPECT_EQ(subjects(all), (std::vector<std::string>{"4", "3", "2", "1", "0"}));
  EXPECT_EQ(subjects(list(s, 1, 2)), (std::vector<std::string>{"3", "2"}));
  EXPECT_EQ(subjects(list(s, 4, 2)), (std::vector<std::string>{"0"}));
  auto past = list(s, 5, 2);
  EXPECT_TRUE(past.messages.empty());
  EXPECT_EQ(past.total, 5u);
  EXPECT_EQ(past.start, 5u);
  EXPECT_TRUE(list(s, 1000, 10).messages.empty());
  EXPECT_TRUE(list(s, 0, 0).messages.empty());
  EXPECT_EQ(list(s, 0, 0).total, 5u);
  for (std::size_t i = 1; i < all.messages.size(); ++i)
    EXPECT_GT(all.messages[i - 1]->seq, all.messages[i]->seq);
}

TEST(MemoryStore, BeforeIdPagesByKey) {
  st::memory_store s;
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(put(s, make("m", {"a@x"}, std::to_string(i)))->id);
  set_read_ids(s, {ids[0]}, true);
  st::list_request r(0, 2);
  r.before_id = ids[4];  // older than "4": 3, 2, 1, 0
  auto p = list_sync(s, r);
  ASSERT_FALSE(p.ec);
  EXPECT_EQ(subjects(p.value), (std::vector<std::string>{"3", "2"}));
  EXPECT_EQ(p.value.total, 6u);
  EXPECT_EQ(p.value.matched, 4u);
  EXPECT_EQ(p.value.matched_unread, 3u);
  r.start = 3;
  EXPECT_EQ(subjects(list_sync(s, r).value), (std::vector<std::string>{"0"}));
  // with a search and a mailbox
  st::list_request q(0, 10);
  q.before_id = ids[3];
  q.mailbox = "A@X";
  ASSERT_FALSE(st::search::parse("-subject:1", "", q.query));
  EXPECT_EQ(subjects(list_sync(s, q).value), (std::vector<std::string>{"2", "0"}));
  // an unknown key
  st::list_request bad(0, 10);
  bad.before_id = "0000000000000000000000";
  auto b = list_sync(s, bad);
  EXPECT_EQ(b.ec, st::errc::not_found);
  EXPECT_TRUE(b.value.messages.empty());
}

TEST(MemoryStore, SearchWithPagingCountsEveryMatch) {
  st::memory_store s;
  for (int i = 0; i < 10; ++i)
    put(s, make("m", {"a@x"}, (i % 2 ? "odd " : "even ") + std::to_string(i)));
  auto p = search(s, "subject:odd", 1, 2);
  EXPECT_EQ(subjects(p), (std::vector<std::string>{"odd 7", "odd 5"}));
  EXPECT_EQ(p.matched, 5u);
  EXPECT_EQ(p.matched_unread, 5u);
  EXPECT_EQ(p.total, 10u);
  EXPECT_EQ(p.unread, 10u);
  EXPECT_EQ(p.start, 1u);
}

TEST(MemoryStore, SearchTable) {
  st::memory_store s;
  run_search_table(s);
}

TEST(MemoryStore, SearchTableWithTheTextLeftToTheStore) {
  st::memory_store s;
  run_search_table(s, st::test::search_text_mode::deferred);
}

TEST(MemoryStore, KeepsTheListTotalsThroughEveryRead) {
  st::memory_store s;
  run_totals_case(s, "box@example.com");
}

TEST(MemoryStore, DerivedSearchTextIsBuiltOnceByTheFirstSearchThatNeedsIt) {
  st::memory_store s;
  for (int i = 0; i < 3; ++i) {
    // No search text given: the store derives it from the body (an empty header first).
    auto m = make(i == 1 ? "\r\nLorem Ipsum" : "\r\ndolor sit", {"a@x"}, "s" + std::to_string(i));
    put(s, std::move(m));
  }
  const auto bytes = s.stats().bytes;
  EXPECT_EQ(subjects(search(s, "subject:s1")), (std::vector<std::string>{"s1"}));
  const auto with_fields = s.stats().bytes;
  EXPECT_GT(with_fields, bytes);  // the folded fields now count; no text yet
  EXPECT_EQ(subjects(search(s, "ipsum")), (std::vector<std::string>{"s1"}));
  const auto with_texts = s.stats().bytes;
  EXPECT_GT(with_texts, with_fields);  // the three texts, derived by that search
  EXPECT_EQ(subjects(search(s, "dolor")), (std::vector<std::string>{"s2", "s0"}));
  EXPECT_EQ(s.stats().bytes, with_texts);  // kept, not derived again
  EXPECT_EQ(get(s, list(s, 0, 1).messages[0]->id)->summary.search_text, "");
  remove_sync(s, st::selection::everything());
  EXPECT_EQ(s.stats().bytes, 0u);  // the built parts are given back too
}

TEST(MemoryStore, AGivenSearchTextIsKeptAsItIs) {
  st::memory_store s;
  auto m = make("\r\nbody words", {"a@x"}, "given");
  m.summary.search_text = "given words";
  put(s, std::move(m));
  EXPECT_EQ(subjects(search(s, "given words")), (std::vector<std::string>{"given"}));
  EXPECT_TRUE(subjects(search(s, "body")).empty());
}

TEST(MemoryStore, TheDerivedSearchTextReadsTheBodyAsMime) {
  st::memory_store s;
  auto m = make(
      "Content-Type: multipart/alternative; boundary=b\r\n\r\n"
      "--b\r\nContent-Type: text/html\r\n\r\n<p>html&amp;only</p>\r\n"
      "--b\r\nContent-Type: text/plain; charset=iso-8859-1\r\n"
      "Content-Transfer-Encoding: quoted-printable\r\n\r\nCaf=E9  Cr=E8me\r\n--b--\r\n",
      {"a@x"}, "mime");
  m.summary.attachments = {{"Report.PDF", "application/pdf", 10}};
  put(s, std::move(m));
  EXPECT_EQ(subjects(search(s, "caf\xC3\xA9 cr\xC3\xA8me")), (std::vector<std::string>{"mime"}));
  EXPECT_EQ(subjects(search(s, "report.pdf")), (std::vector<std::string>{"mime"}));
  EXPECT_TRUE(subjects(search(s, "only")).empty());  // the plain part wins over the HTML
  EXPECT_TRUE(subjects(search(s, "quoted")).empty());  // headers are not body text
}

TEST(MemoryStore, EvictsOldestByCount) {
  st::memory_store s({.max_messages = 3, .max_bytes = 1 << 20});
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(put(s, make("m", {"a@x"}, std::to_string(i)))->id);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"4", "3", "2"}));
  EXPECT_EQ(get(s, ids[0]), nullptr);
  EXPECT_EQ(get(s, ids[1]), nullptr);
  EXPECT_NE(get(s, ids[2]), nullptr);
  EXPECT_EQ(s.stats().evicted_total, 2u);
  EXPECT_EQ(s.stats().messages, 3u);
  EXPECT_EQ(list(s, 0, 10, "a@x").total, 3u);
}

TEST(MemoryStore, BytesCountSummaryAndTagsNotOnlyRaw) {
  // One message: raw 10 bytes, a 40 KB search text. Two such messages exceed 64 KB.
  auto heavy = [](std::string subject) {
    auto m = make("0123456789", {"a@x"}, std::move(subject));
    m.summary.search_text.assign(40000, 'w');
    return m;
  };
  st::memory_store s({.max_messages = 100, .max_bytes = 64 * 1024});
  auto first = put(s, heavy("0"));
  EXPECT_GT(s.stats().bytes, 40000u);
  put(s, heavy("1"));
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"1"}));
  EXPECT_EQ(s.stats().evicted_total, 1u);
  EXPECT_EQ(get(s, first->id), nullptr);
  // Tags count: a long tag grows the byte count; removing it gives the bytes back.
  const auto before = s.stats().bytes;
  auto id = list(s, 0, 1).messages[0]->id;
  EXPECT_EQ(set_tags_sync(s, st::selection::of_ids({id}), {std::string(5000, 't')}).value, 1u);
  EXPECT_GE(s.stats().bytes, before + 5000);
  EXPECT_EQ(set_tags_sync(s, st::selection::of_ids({id}), {}).value, 1u);
  EXPECT_EQ(s.stats().bytes, before);
  // Deleting everything gives every byte back.
  remove_sync(s, st::selection::everything());
  EXPECT_EQ(s.stats().bytes, 0u);
}

TEST(MemoryStore, EvictsOldestByBytes) {
  // Measure a message's footprint through the store itself, then bound at 2.5 of it.
  st::memory_store probe;
  put(probe, make(std::string(1000, 'a'), {"a@x"}, "0"));
  const auto f = probe.stats().bytes;
  st::memory_store s({.max_messages = 100, .max_bytes = f * 5 / 2});
  put(s, make(std::string(1000, 'a'), {"a@x"}, "0"));
  put(s, make(std::string(1000, 'b'), {"b@x"}, "1"));
  EXPECT_EQ(s.stats().bytes, 2 * f);
  put(s, make(std::string(1000, 'c'), {"a@x"}, "2"));  // 3f > 2.5f: "0" goes
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"2", "1"}));
  EXPECT_EQ(s.stats().bytes, 2 * f);
  EXPECT_EQ(s.stats().evicted_total, 1u);
  EXPECT_EQ(list(s, 0, 10, "a@x").total, 1u);
}

TEST(MemoryStore, RefusesMessageOverByteBound) {
  st::memory_store s({.max_messages = 100, .max_bytes = 4096});
  put(s, make("keep", {"a@x"}, "keep"));
  std::error_code ec;
  auto m = s.put_sync(make(std::string(4097, 'x')), ec);
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
  EXPECT_EQ(subjects(list(s, 0, 10, "ANN@example.com")), (std::vector<std::string>{"1"}));
  EXPECT_EQ(subjects(list(s, 0, 10, "bob@example.com")), (std::vector<std::string>{"2", "1"}));
  EXPECT_EQ(subjects(list(s, 1, 10, "bob@example.com")), (std::vector<std::string>{"1"}));
  EXPECT_EQ(list(s, 0, 10, "nobody@example.com").total, 0u);
}

TEST(MemoryStore, ManyRecipientsIndexedUnreadCountedAndUnlinked) {
  // 300 recipients, long enough that no string fits inline, each given twice in other
  // spellings: every distinct one indexed once, counted unread, and unlinked on delete.
  st::memory_store s;
  std::vector<std::string> rcpt;
  for (int i = 0; i < 300; ++i) {
    std::string a = "Recipient-Number-" + std::to_string(i) + "@Example.Org";
    rcpt.push_back(" <" + a + "> ");
    rcpt.push_back(a);
  }
  rcpt.push_back("");  // empty: not a mailbox
  auto keep = put(s, make("k", {"other@example.org"}, "keep"));
  auto m = put(s, make("m", rcpt, "many"));
  ASSERT_TRUE(m);
  for (int i : {0, 1, 150, 299}) {
    auto p = list(s, 0, 10, "recipient-number-" + std::to_string(i) + "@example.org");
    EXPECT_EQ(subjects(p), (std::vector<std::string>{"many"})) << i;
    EXPECT_EQ(p.unread, 1u) << i;
  }
  EXPECT_EQ(set_read_sync(s, st::selection::of_ids({m->id}), true).value, 1u);
  EXPECT_EQ(list(s, 0, 10, "recipient-number-7@example.org").unread, 0u);
  EXPECT_EQ(list(s, 0, 10, "recipient-number-7@example.org").total, 1u);
  EXPECT_EQ(remove_sync(s, st::selection::of_ids({m->id})).value, 1u);
  EXPECT_EQ(list(s, 0, 10, "recipient-number-7@example.org").total, 0u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"keep"}));
  // The record outlives its deletion with its envelope intact.
  EXPECT_EQ(m->envelope.rcpt_to.size(), rcpt.size());
  EXPECT_EQ(m->summary.subject, "many");
}

TEST(MemoryStore, BigAddressListCountsAgainstTheByteBound) {
  // A summary with 100 To and 100 Cc addresses counts their bytes, not only the raw bytes.
  auto with_list = [](std::size_t n) {
    auto m = make("x", {"a@x"}, "s");
    for (std::size_t i = 0; i < n; ++i) {
      m.summary.to.push_back(
          {"Name " + std::to_string(i), "to" + std::to_string(i) + "@example.org"});
      m.summary.cc.push_back({"", "cc" + std::to_string(i) + "@example.org"});
    }
    return m;
  };
  st::memory_store plain, big;
  auto pm = put(plain, with_list(0));
  auto m = put(big, with_list(100));
  ASSERT_TRUE(m);
  std::size_t list_bytes = 0;
  for (auto l : {std::span<const st::address>(m->summary.to.data(), m->summary.to.size()),
                 std::span<const st::address>(m->summary.cc)})
    for (const auto& a : l) list_bytes += a.name.size() + a.address.size();
  EXPECT_GE(big.stats().bytes, plain.stats().bytes + list_bytes);
  EXPECT_EQ(big.stats().bytes - plain.stats().bytes,
            st::memory_store::footprint_of(*m) - st::memory_store::footprint_of(*pm));
  // And a store bounded below that refuses it.
  st::memory_store tight({.max_messages = 10, .max_bytes = plain.stats().bytes + list_bytes / 2});
  std::error_code ec;
  EXPECT_EQ(tight.put_sync(with_list(100), ec), nullptr);
  EXPECT_EQ(ec, st::errc::too_large);
  EXPECT_TRUE(put(tight, with_list(0)));
}

TEST(MemoryStore, RemoveBySelection) {
  st::memory_store s;
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(put(s, make("xy", {"a@x"}, std::to_string(i)))->id);
  EXPECT_EQ(remove_ids(s, {ids[1], "unknown", ids[1], ids[3]}), 2u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(subjects(list(s, 0, 10, "a@x")), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(get(s, ids[1]), nullptr);
  EXPECT_EQ(s.stats().deleted_total, 2u);
  // An empty ID list selects nothing (never "all").
  EXPECT_EQ(remove_ids(s, {}), 0u);
  EXPECT_EQ(s.stats().messages, 2u);
  // A search within a mailbox.
  put(s, make("xy", {"b@x"}, "2"));
  EXPECT_EQ(remove_sync(s, matching("subject:2", "a@x")).value, 1u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(list(s, 0, 10, "b@x").total, 1u);
  // Everything of one mailbox, then everything.
  EXPECT_EQ(remove_sync(s, st::selection::everything("B@X")).value, 1u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"0"}));
  EXPECT_EQ(remove_sync(s, st::selection::everything()).value, 1u);
  EXPECT_EQ(list(s, 0, 10).total, 0u);
  EXPECT_EQ(list(s, 0, 10, "a@x").total, 0u);
  EXPECT_EQ(s.stats().bytes, 0u);
  EXPECT_EQ(s.stats().messages, 0u);
  put(s, make("z", {"a@x"}, "z"));  // usable after
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"z"}));
}

TEST(MemoryStore, BatchRemoveKeepsEveryIndexAndCount) {
  st::memory_store s;
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i)
    ids.push_back(put(s, make("x", {"box" + std::to_string(i % 3) + "@x"}, std::to_string(i)))->id);
  set_read_ids(s, {ids[0], ids[3], ids[6]}, true);
  // 20 even subjects... remove the multiples of 3 below 30 by search would be awkward; by IDs:
  std::vector<std::string> victims;
  for (int i = 0; i < 30; i += 3) victims.push_back(ids[static_cast<std::size_t>(i)]);
  EXPECT_EQ(remove_ids(s, victims), 10u);
  EXPECT_EQ(s.stats().messages, 30u);
  EXPECT_EQ(list(s, 0, 100, "box0@x").total, 4u);  // 30, 33, 36, 39
  EXPECT_EQ(list(s, 0, 100, "box0@x").unread, 4u);
  EXPECT_EQ(list(s, 0, 100, "box1@x").total, 13u);
  EXPECT_EQ(s.stats().unread, 30u);
  for (const auto& v : victims) EXPECT_EQ(get(s, v), nullptr);
}

TEST(MemoryStore, ReadFlagsAndUnreadCounts) {
  st::memory_store s({.max_messages = 4, .max_bytes = 1 << 20});
  auto a = put(s, make("a", {"x@e", "y@e"}, "a"));
  auto b = put(s, make("b", {"x@e"}, "b"));
  auto c = put(s, make("c", {"y@e"}, "c"));
  EXPECT_EQ(s.stats().unread, 3u);
  EXPECT_EQ(list(s, 0, 1).unread, 3u);  // the whole store, not the page
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 2u);
  EXPECT_EQ(list(s, 0, 10, "Y@E").unread, 2u);

  EXPECT_EQ(set_read_ids(s, {a->id, b->id, "unknown"}, true), 2u);
  EXPECT_EQ(set_read_ids(s, {a->id, b->id}, true), 0u);  // already read: nothing changes
  EXPECT_TRUE(a->is_read());
  EXPECT_FALSE(c->is_read());
  EXPECT_EQ(s.stats().unread, 1u);
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 0u);
  EXPECT_EQ(list(s, 0, 10, "y@e").unread, 1u);
  // An empty ID list changes nothing.
  EXPECT_EQ(set_read_ids(s, {}, false), 0u);

  // By search: only what matches.
  EXPECT_EQ(set_read_sync(s, matching("subject:c"), true).value, 1u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(set_read_sync(s, matching("subject:a"), false).value, 1u);
  EXPECT_EQ(s.stats().unread, 1u);
  EXPECT_EQ(set_read_sync(s, matching("is:unread"), true).value, 1u);

  // Removing read and unread messages keeps every count right.
  set_read_ids(s, {c->id}, false);
  EXPECT_EQ(remove_ids(s, {a->id, c->id}), 2u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 0u);

  // Eviction of an unread message (bound 4).
  for (int i = 0; i < 4; ++i) put(s, make("n", {"x@e"}, "n"));
  EXPECT_EQ(s.stats().messages, 4u);
  EXPECT_EQ(s.stats().unread, 4u);  // b (read) was the oldest and went first
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 4u);

  // Everything, in one mailbox, and back.
  EXPECT_EQ(set_read_sync(s, st::selection::everything(), true).value, 4u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(set_read_sync(s, st::selection::everything("x@e"), false).value, 4u);
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 4u);
  EXPECT_EQ(list(s, 0, 10).unread, 4u);
  remove_sync(s, st::selection::everything());
  EXPECT_EQ(s.stats().unread, 0u);
}

TEST(MemoryStore, TagsSetListRenameDelete) {
  st::memory_store s;
  auto t1 = make("1", {"a@x"}, "1");
  t1.tags = {"Work", "work", "", "urgent"};  // duplicates (any case) and empties dropped
  auto a = put(s, std::move(t1));
  EXPECT_EQ(*a->tags(), (std::vector<std::string>{"Work", "urgent"}));
  auto t2 = make("2", {"a@x"}, "2");
  t2.tags = {"WORK"};  // spelled as the store knows it
  auto b = put(s, std::move(t2));
  EXPECT_EQ(*b->tags(), (std::vector<std::string>{"Work"}));
  auto c = put(s, make("3", {"a@x"}, "3"));
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"urgent", "Work"}));

  EXPECT_EQ(set_tags_sync(s, st::selection::of_ids({c->id}), {"zeta", "Alpha"}).value, 1u);
  EXPECT_EQ(set_tags_sync(s, st::selection::of_ids({c->id}), {"zeta", "Alpha"}).value, 0u);
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"Alpha", "urgent", "Work", "zeta"}));
  EXPECT_EQ(search(s, "tag:alpha").messages.size(), 1u);

  // Rename merges into an existing tag, in the new spelling.
  // (b changes too: its "Work" is now spelled "work").
  EXPECT_EQ(rename_tag_sync(s, "urgent", "work").value, 2u);
  EXPECT_EQ(*a->tags(), (std::vector<std::string>{"work"}));
  EXPECT_EQ(*b->tags(), (std::vector<std::string>{"work"}));
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"Alpha", "work", "zeta"}));
  EXPECT_EQ(search(s, "tag:WORK").messages.size(), 2u);
  EXPECT_EQ(rename_tag_sync(s, "missing", "x").value, 0u);
  EXPECT_EQ(rename_tag_sync(s, "zeta", "").ec, st::errc::invalid_argument);

  EXPECT_EQ(delete_tag_sync(s, "WORK").value, 2u);
  EXPECT_TRUE(a->tags()->empty());
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"Alpha", "zeta"}));
  // Tags by search; removing a message drops tags nobody carries any more.
  EXPECT_EQ(set_tags_sync(s, matching("subject:1"), {"one"}).value, 1u);
  remove_ids(s, {c->id});
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"one"}));
}

TEST(MemoryStore, EventsForEveryChange) {
  st::memory_store s({.max_messages = 3, .max_bytes = 1 << 20});
  std::vector<st::store_event> seen;
  auto h = s.subscribe([&](const st::store_event& e) { seen.push_back(e); });
  auto a = put(s, make("a", {"x@e"}, "a"));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].what, st::store_event::kind::created);
  EXPECT_EQ(seen[0].message, a);
  auto b = put(s, make("b", {"x@e"}, "b"));
  set_read_ids(s, {a->id, b->id}, true);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2].what, st::store_event::kind::read_changed);
  EXPECT_EQ(seen[2].ids, (std::vector<std::string>{a->id, b->id}));
  EXPECT_TRUE(seen[2].read);
  set_tags_sync(s, st::selection::of_ids({b->id}), {"t"});
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3].what, st::store_event::kind::tags_changed);
  EXPECT_EQ(seen[3].message, b);
  remove_ids(s, {a->id});
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[4].what, st::store_event::kind::deleted);
  EXPECT_EQ(seen[4].ids, (std::vector<std::string>{a->id}));
  // Eviction is a deletion too, announced before the new message.
  put(s, make("c", {"x@e"}, "c"));
  put(s, make("d", {"x@e"}, "d"));
  seen.clear();
  put(s, make("e", {"x@e"}, "e"));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].what, st::store_event::kind::deleted);
  EXPECT_EQ(seen[0].ids, (std::vector<std::string>{b->id}));
  EXPECT_EQ(seen[1].what, st::store_event::kind::created);
  remove_sync(s, st::selection::everything());
  EXPECT_EQ(seen.back().what, st::store_event::kind::cleared);
  // Nothing changed: no event. Unsubscribed: no event.
  seen.clear();
  set_read_ids(s, {"nope"}, true);
  EXPECT_TRUE(seen.empty());
  s.unsubscribe(h);
  put(s, make("f", {"x@e"}, "f"));
  EXPECT_TRUE(seen.empty());
}

TEST(MemoryStore, HandlerRunsOnItsAssociatedExecutor) {
  st::memory_store s;
  put(s, make("x", {"a@x"}, "x"));
  asio::io_context io;
  bool done = false;
  std::thread::id ran_on;
  st::list_request req(0, 10);
  s.async_list(req, asio::bind_executor(io.get_executor(), [&](std::error_code ec, st::page p) {
                 EXPECT_FALSE(ec);
                 EXPECT_EQ(p.messages.size(), 1u);
                 ran_on = std::this_thread::get_id();
                 done = true;
               }));
  EXPECT_FALSE(done);  // dispatched to the io_context, which is not running yet
  std::thread t([&] { io.run(); });
  t.join();
  EXPECT_TRUE(done);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(MemoryStore, CoAwaitGivesTuples) {
  st::memory_store s;
  auto id = put(s, make("x", {"a@x"}, "x"))->id;
  asio::io_context io;
  auto f = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<std::string> {
        st::list_request req(0, 10);
        auto [ec, page] = co_await s.async_list(std::move(req));
        if (ec || page.messages.size() != 1) co_return "list";
        auto [ec2, m] = co_await s.async_get(id);
        if (ec2 || !m || m->id != id) co_return "get";
        std::string unknown = "none";
        auto [ec3, none] = co_await s.async_get(std::move(unknown));
        if (ec3 != st::errc::not_found || none) co_return "not_found";
        co_return "ok";
      },
      asio::use_future);
  io.run();
  EXPECT_EQ(f.get(), "ok");
}

TEST(MemoryStore, RecordOutlivesEviction) {
  st::memory_store s({.max_messages = 1, .max_bytes = 1 << 20});
  auto first = put(s, make("first bytes"));
  put(s, make("second"));
  EXPECT_EQ(get(s, first->id), nullptr);
  EXPECT_EQ(first->raw, "first bytes");  // still readable through the held pointer
}

TEST(MemoryStore, ZeroMessageBoundRefusesAll) {
  st::memory_store s({.max_messages = 0, .max_bytes = 100});
  std::error_code ec;
  EXPECT_EQ(s.put_sync(make("x"), ec), nullptr);
  EXPECT_EQ(ec, st::errc::too_large);
}

TEST(MemoryStore, HealthIsReady) {
  st::memory_store s;
  EXPECT_TRUE(s.health().ready);
}

TEST(StoreErrc, Category) {
  std::error_code ec = st::errc::not_found;
  EXPECT_STREQ(ec.category().name(), "inlet.store");
  EXPECT_EQ(ec.message(), "no such message");
}
