// The file store (SQLite): the memory store's cases that apply to a durable store, the
// shared search and totals tables, restart, compression, tenants, group commit, and the
// files it must refuse (not SQLite, truncated, damaged, another application's).
#include "inlet/store/file_store.hpp"
#include "file/sqlite.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <zstd.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "search_cases.hpp"
#include "store_helpers.hpp"
#include "sync_ops.hpp"
#include "totals_cases.hpp"

namespace st = inlet::store;
namespace fs = std::filesystem;
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

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const fs::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs SQL on a file with the sqlite3 library directly (fixtures of other applications).
void sql(const fs::path& p, const char* text) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, text, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

class FileStore : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/inlet-file-store-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  st::file_store_config config(std::string name = "mail.db") const {
    st::file_store_config c;
    c.path = (dir_ / name).string();
    return c;
  }
  fs::path path(std::string name = "mail.db") const { return dir_ / name; }

  // Opening `cfg` must fail with `code`, leaving the file's bytes as they were.
  void expect_refused(const st::file_store_config& cfg, st::errc code, std::string_view words) {
    const auto before = slurp(cfg.path);
    try {
      st::file_store s(cfg);
      ADD_FAILURE() << "opened " << cfg.path;
    } catch (const st::file_store_error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(cfg.path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_EQ(slurp(cfg.path), before) << "the refused file was changed";
  }

  fs::path dir_;
};

}  // namespace

TEST_F(FileStore, PutThenGetGivesEveryFieldBack) {
  st::file_store s(config());
  auto m = make(std::string("Subject: x\r\n\r\nbody\r\n.\r\n\0\xff", 26), {"A@Example.com", "b@x"},
                "x");
  m.envelope.auth_user = "user";
  m.summary.from = {"Ann", "ann@example.com"};
  m.summary.to = {{"Bob", "bob@example.org"}, {"", "c@x"}};
  m.summary.cc = {{"Carol", "carol@x"}};
  m.summary.bcc = {{"", "d@x"}};
  m.summary.reply_to = {{"R", "r@x"}};
  m.summary.date = at(2025, 12, 24, 18, 30);
  m.summary.message_id = "id@x";
  m.summary.snippet = "body";
  m.summary.attachments = {{"a.pdf", "application/pdf", 1234}};
  m.summary.inline_parts = 2;
  m.tags = {"Work", "work", "", "urgent"};
  const auto raw = m.raw;
  bool called = false;
  std::mutex mu;
  std::condition_variable cv;
  st::message_ptr got;
  s.put(std::move(m), [&](std::error_code ec, st::message_ptr p) {
    EXPECT_FALSE(ec);
    std::lock_guard lk(mu);
    got = std::move(p);
    called = true;
    cv.notify_all();
  });
  {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return called; });
  }
  ASSERT_TRUE(got);
  EXPECT_EQ(got->raw, raw);
  EXPECT_EQ(*got->tags(), (std::vector<std::string>{"Work", "urgent"}));
  auto g = get_sync(s, got->id);
  ASSERT_FALSE(g.ec) << g.ec.message();
  const auto& r = *g.value;
  EXPECT_EQ(r.raw, raw);
  EXPECT_TRUE(r.has_raw);
  EXPECT_EQ(r.size, raw.size());
  EXPECT_EQ(r.id, got->id);
  EXPECT_EQ(r.seq, got->seq);
  EXPECT_EQ(r.created, got->created);
  EXPECT_EQ(r.envelope.helo, "client.example");
  EXPECT_EQ(r.envelope.rcpt_to.size(), 2u);
  EXPECT_EQ(r.envelope.rcpt_to[0], "A@Example.com");
  EXPECT_EQ(r.envelope.auth_user, "user");
  EXPECT_EQ(r.summary.from, (st::address{"Ann", "ann@example.com"}));
  EXPECT_EQ(r.summary.to.size(), 2u);
  EXPECT_EQ(r.summary.to[0], (st::address{"Bob", "bob@example.org"}));
  EXPECT_EQ(r.summary.cc, got->summary.cc);
  EXPECT_EQ(r.summary.bcc, got->summary.bcc);
  EXPECT_EQ(r.summary.reply_to, got->summary.reply_to);
  EXPECT_EQ(r.summary.date, at(2025, 12, 24, 18, 30));
  EXPECT_EQ(r.summary.message_id, "id@x");
  EXPECT_EQ(r.summary.snippet, "body");
  ASSERT_EQ(r.summary.attachments.size(), 1u);
  EXPECT_EQ(r.summary.attachments[0].filename, "a.pdf");
  EXPECT_EQ(r.summary.attachments[0].size, 1234u);
  EXPECT_EQ(r.summary.inline_parts, 2u);
  EXPECT_EQ(*r.tags(), (std::vector<std::string>{"Work", "urgent"}));
  EXPECT_FALSE(r.is_read());
  // A listing hands out the same record without the raw bytes.
  auto p = list(s, 0, 10);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_FALSE(p.messages[0]->has_raw);
  EXPECT_EQ(p.messages[0]->summary.subject, "x");
  EXPECT_EQ(list(s, 0, 10, "a@example.com").total, 1u);
  auto missing = get_sync(s, "nope");
  EXPECT_EQ(missing.ec, st::errc::not_found);
  EXPECT_EQ(missing.value, nullptr);
  auto stats = s.stats();
  EXPECT_EQ(stats.messages, 1u);
  EXPECT_EQ(stats.unread, 1u);
  EXPECT_EQ(stats.bytes, raw.size());
  EXPECT_EQ(stats.stored_total, 1u);
}

TEST_F(FileStore, CreatedTimeKeptWhenGiven) {
  st::file_store s(config());
  auto m = make("x");
  m.created = at(2020, 5, 17, 8, 30);
  auto p = put(s, std::move(m));
  EXPECT_EQ(p->created, at(2020, 5, 17, 8, 30));
  EXPECT_EQ(get(s, p->id)->created, at(2020, 5, 17, 8, 30));
  auto before = std::chrono::system_clock::now();
  EXPECT_GE(put(s, make("y"))->created, before);
}

TEST_F(FileStore, ListIsNewestFirstWithPagingEdges) {
  st::file_store s(config());
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

TEST_F(FileStore, BeforeIdPagesByKey) {
  st::file_store s(config());
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(put(s, make("m", {"a@x"}, std::to_string(i)))->id);
  set_read_ids(s, {ids[0]}, true);
  st::list_request r(0, 2);
  r.before_id = ids[4];
  auto p = list_sync(s, r);
  ASSERT_FALSE(p.ec);
  EXPECT_EQ(subjects(p.value), (std::vector<std::string>{"3", "2"}));
  EXPECT_EQ(p.value.total, 6u);
  EXPECT_EQ(p.value.matched, 4u);
  EXPECT_EQ(p.value.matched_unread, 3u);
  r.start = 3;
  EXPECT_EQ(subjects(list_sync(s, r).value), (std::vector<std::string>{"0"}));
  st::list_request q(0, 10);
  q.before_id = ids[3];
  q.mailbox = "A@X";
  ASSERT_FALSE(st::search::parse("-subject:1", "", q.query));
  EXPECT_EQ(subjects(list_sync(s, q).value), (std::vector<std::string>{"2", "0"}));
  st::list_request bad(0, 10);
  bad.before_id = "0000000000000000000000";
  auto b = list_sync(s, bad);
  EXPECT_EQ(b.ec, st::errc::not_found);
  EXPECT_TRUE(b.value.messages.empty());
}

TEST_F(FileStore, SearchWithPagingCountsEveryMatch) {
  st::file_store s(config());
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

TEST_F(FileStore, SearchTable) {
  st::file_store s(config());
  run_search_table(s);
}

TEST_F(FileStore, SearchTableWithTheTextLeftToTheStore) {
  st::file_store s(config());
  run_search_table(s, search_text_mode::deferred);
}

TEST_F(FileStore, SearchTableAfterReopening) {
  // The folded columns written by one process serve the searches of the next.
  {
    st::file_store s(config());
    load_search_fixture(s);
  }
  st::file_store s(config());
  st::search::query q;
  ASSERT_FALSE(st::search::parse("subject:\xC3\xA4pfel is:unread", "", q));
  st::list_request r(0, 10);
  r.query = q;
  auto p = list_sync(s, r);
  ASSERT_FALSE(p.ec);
  EXPECT_EQ(subjects(p.value).size(), 1u);
  EXPECT_EQ(search(s, "tag:work").matched, 1u);
  EXPECT_EQ(search(s, "is:read").matched, 2u);
}

TEST_F(FileStore, KeepsTheListTotalsThroughEveryRead) {
  st::file_store s(config());
  run_totals_case(s, "box@example.com");
}

TEST_F(FileStore, EvictsOldestByCount) {
  auto cfg = config();
  cfg.max_messages = 3;
  st::file_store s(cfg);
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

TEST_F(FileStore, ExpireDeletesByReceivedTime) {
  st::file_store s(config());
  auto old = make("o", {"a@x"}, "old");
  old.created = at(2020, 1, 1);
  put(s, std::move(old));
  auto recent = make("r", {"a@x"}, "recent");
  recent.created = at(2030, 1, 1);
  put(s, std::move(recent));
  put(s, make("n", {"b@x"}, "now"));
  std::vector<st::store_event> seen;
  std::mutex mu;
  s.subscribe([&](const st::store_event& e) {
    std::lock_guard lk(mu);
    seen.push_back(e);
  });
  EXPECT_EQ(s.expire(at(2025, 1, 1)), 1u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"now", "recent"}));
  EXPECT_EQ(s.expire(at(2025, 1, 1)), 0u);
  EXPECT_EQ(s.stats().deleted_total, 1u);
  std::lock_guard lk(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].what, st::store_event::kind::deleted);
}

TEST_F(FileStore, MaxAgeSweepRunsOnTheWriter) {
  auto cfg = config();
  cfg.max_age = std::chrono::seconds(1);
  st::file_store s(cfg);
  auto old = make("o", {"a@x"}, "old");
  old.created = at(2020, 1, 1);
  put(s, std::move(old));
  auto future = make("f", {"a@x"}, "future");
  future.created = std::chrono::system_clock::now() + std::chrono::hours(1);
  put(s, std::move(future));
  // The sweep runs every second; wait (bounded) until it did.
  for (int i = 0; i < 100 && s.stats().messages != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"future"}));
}

TEST_F(FileStore, MailboxIndexIsCaseInsensitiveAndDeduplicated) {
  st::file_store s(config());
  put(s, make("1", {"Ann@Example.com", "ann@example.com", "bob@example.com"}, "1"));
  put(s, make("2", {"<bob@EXAMPLE.com>"}, "2"));
  put(s, make("3", {"carl@example.com"}, "3"));
  EXPECT_EQ(subjects(list(s, 0, 10, "ANN@example.com")), (std::vector<std::string>{"1"}));
  EXPECT_EQ(subjects(list(s, 0, 10, "bob@example.com")), (std::vector<std::string>{"2", "1"}));
  EXPECT_EQ(subjects(list(s, 1, 10, "bob@example.com")), (std::vector<std::string>{"1"}));
  EXPECT_EQ(list(s, 0, 10, "nobody@example.com").total, 0u);
}

TEST_F(FileStore, ManyRecipientsIndexedUnreadCountedAndUnlinked) {
  st::file_store s(config());
  std::vector<std::string> rcpt;
  for (int i = 0; i < 300; ++i) {
    std::string a = "Recipient-Number-" + std::to_string(i) + "@Example.Org";
    rcpt.push_back(" <" + a + "> ");
    rcpt.push_back(a);
  }
  rcpt.push_back("");
  put(s, make("k", {"other@example.org"}, "keep"));
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
  EXPECT_EQ(m->envelope.rcpt_to.size(), rcpt.size());
}

TEST_F(FileStore, RemoveBySelection) {
  st::file_store s(config());
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(put(s, make("xy", {"a@x"}, std::to_string(i)))->id);
  EXPECT_EQ(remove_ids(s, {ids[1], "unknown", ids[1], ids[3]}), 2u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(subjects(list(s, 0, 10, "a@x")), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(get(s, ids[1]), nullptr);
  EXPECT_EQ(s.stats().deleted_total, 2u);
  EXPECT_EQ(remove_ids(s, {}), 0u);
  EXPECT_EQ(s.stats().messages, 2u);
  put(s, make("xy", {"b@x"}, "2"));
  EXPECT_EQ(remove_sync(s, matching("subject:2", "a@x")).value, 1u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"2", "0"}));
  EXPECT_EQ(list(s, 0, 10, "b@x").total, 1u);
  EXPECT_EQ(remove_sync(s, st::selection::everything("B@X")).value, 1u);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"0"}));
  EXPECT_EQ(remove_sync(s, st::selection::everything()).value, 1u);
  EXPECT_EQ(list(s, 0, 10).total, 0u);
  EXPECT_EQ(list(s, 0, 10, "a@x").total, 0u);
  EXPECT_EQ(s.stats().bytes, 0u);
  EXPECT_EQ(s.stats().messages, 0u);
  put(s, make("z", {"a@x"}, "z"));
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"z"}));
}

TEST_F(FileStore, BatchRemoveKeepsEveryIndexAndCount) {
  st::file_store s(config());
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i)
    ids.push_back(put(s, make("x", {"box" + std::to_string(i % 3) + "@x"}, std::to_string(i)))->id);
  set_read_ids(s, {ids[0], ids[3], ids[6]}, true);
  std::vector<std::string> victims;
  for (int i = 0; i < 30; i += 3) victims.push_back(ids[static_cast<std::size_t>(i)]);
  EXPECT_EQ(remove_ids(s, victims), 10u);
  EXPECT_EQ(s.stats().messages, 30u);
  EXPECT_EQ(list(s, 0, 100, "box0@x").total, 4u);
  EXPECT_EQ(list(s, 0, 100, "box0@x").unread, 4u);
  EXPECT_EQ(list(s, 0, 100, "box1@x").total, 13u);
  EXPECT_EQ(s.stats().unread, 30u);
  for (const auto& v : victims) EXPECT_EQ(get(s, v), nullptr);
}

TEST_F(FileStore, ReadFlagsAndUnreadCounts) {
  auto cfg = config();
  cfg.max_messages = 4;
  st::file_store s(cfg);
  auto a = put(s, make("a", {"x@e", "y@e"}, "a"));
  auto b = put(s, make("b", {"x@e"}, "b"));
  auto c = put(s, make("c", {"y@e"}, "c"));
  EXPECT_EQ(s.stats().unread, 3u);
  EXPECT_EQ(list(s, 0, 1).unread, 3u);
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 2u);
  EXPECT_EQ(list(s, 0, 10, "Y@E").unread, 2u);
  EXPECT_EQ(set_read_ids(s, {a->id, b->id, "unknown"}, true), 2u);
  EXPECT_EQ(set_read_ids(s, {a->id, b->id}, true), 0u);
  EXPECT_TRUE(get(s, a->id)->is_read());
  EXPECT_FALSE(get(s, c->id)->is_read());
  EXPECT_EQ(s.stats().unread, 1u);
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 0u);
  EXPECT_EQ(list(s, 0, 10, "y@e").unread, 1u);
  EXPECT_EQ(set_read_ids(s, {}, false), 0u);
  EXPECT_EQ(set_read_sync(s, matching("subject:c"), true).value, 1u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(set_read_sync(s, matching("subject:a"), false).value, 1u);
  EXPECT_EQ(s.stats().unread, 1u);
  EXPECT_EQ(set_read_sync(s, matching("is:unread"), true).value, 1u);
  set_read_ids(s, {c->id}, false);
  EXPECT_EQ(remove_ids(s, {a->id, c->id}), 2u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 0u);
  for (int i = 0; i < 4; ++i) put(s, make("n", {"x@e"}, "n"));
  EXPECT_EQ(s.stats().messages, 4u);
  EXPECT_EQ(s.stats().unread, 4u);  // b (read) was the oldest and went first
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 4u);
  EXPECT_EQ(set_read_sync(s, st::selection::everything(), true).value, 4u);
  EXPECT_EQ(s.stats().unread, 0u);
  EXPECT_EQ(set_read_sync(s, st::selection::everything("x@e"), false).value, 4u);
  EXPECT_EQ(list(s, 0, 10, "x@e").unread, 4u);
  EXPECT_EQ(list(s, 0, 10).unread, 4u);
  remove_sync(s, st::selection::everything());
  EXPECT_EQ(s.stats().unread, 0u);
}

TEST_F(FileStore, TagsSetListRenameDelete) {
  st::file_store s(config());
  auto t1 = make("1", {"a@x"}, "1");
  t1.tags = {"Work", "work", "", "urgent"};
  auto a = put(s, std::move(t1));
  EXPECT_EQ(*a->tags(), (std::vector<std::string>{"Work", "urgent"}));
  auto t2 = make("2", {"a@x"}, "2");
  t2.tags = {"WORK"};
  auto b = put(s, std::move(t2));
  EXPECT_EQ(*b->tags(), (std::vector<std::string>{"Work"}));
  auto c = put(s, make("3", {"a@x"}, "3"));
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"urgent", "Work"}));
  EXPECT_EQ(set_tags_sync(s, st::selection::of_ids({c->id}), {"zeta", "Alpha"}).value, 1u);
  EXPECT_EQ(set_tags_sync(s, st::selection::of_ids({c->id}), {"zeta", "Alpha"}).value, 0u);
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"Alpha", "urgent", "Work", "zeta"}));
  EXPECT_EQ(search(s, "tag:alpha").messages.size(), 1u);
  EXPECT_EQ(rename_tag_sync(s, "urgent", "work").value, 2u);
  EXPECT_EQ(*get(s, a->id)->tags(), (std::vector<std::string>{"work"}));
  EXPECT_EQ(*get(s, b->id)->tags(), (std::vector<std::string>{"work"}));
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"Alpha", "work", "zeta"}));
  EXPECT_EQ(search(s, "tag:WORK").messages.size(), 2u);
  EXPECT_EQ(rename_tag_sync(s, "missing", "x").value, 0u);
  EXPECT_EQ(rename_tag_sync(s, "zeta", "").ec, st::errc::invalid_argument);
  EXPECT_EQ(delete_tag_sync(s, "WORK").value, 2u);
  EXPECT_TRUE(get(s, a->id)->tags()->empty());
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"Alpha", "zeta"}));
  EXPECT_EQ(set_tags_sync(s, matching("subject:1"), {"one"}).value, 1u);
  remove_ids(s, {c->id});
  EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"one"}));
}

TEST_F(FileStore, EventsForEveryChange) {
  auto cfg = config();
  cfg.max_messages = 3;
  st::file_store s(cfg);
  std::mutex mu;
  std::vector<st::store_event> seen;
  auto events = [&] {
    std::lock_guard lk(mu);
    return seen;
  };
  auto h = s.subscribe([&](const st::store_event& e) {
    std::lock_guard lk(mu);
    seen.push_back(e);
  });
  auto a = put(s, make("a", {"x@e"}, "a"));
  ASSERT_EQ(events().size(), 1u);  // announced before the put completed
  EXPECT_EQ(events()[0].what, st::store_event::kind::created);
  EXPECT_EQ(events()[0].message, a);
  auto b = put(s, make("b", {"x@e"}, "b"));
  set_read_ids(s, {a->id, b->id}, true);
  ASSERT_EQ(events().size(), 3u);
  EXPECT_EQ(events()[2].what, st::store_event::kind::read_changed);
  EXPECT_EQ(events()[2].ids, (std::vector<std::string>{a->id, b->id}));
  EXPECT_TRUE(events()[2].read);
  set_tags_sync(s, st::selection::of_ids({b->id}), {"t"});
  ASSERT_EQ(events().size(), 4u);
  EXPECT_EQ(events()[3].what, st::store_event::kind::tags_changed);
  EXPECT_EQ(events()[3].message->id, b->id);
  EXPECT_EQ(*events()[3].message->tags(), (std::vector<std::string>{"t"}));
  remove_ids(s, {a->id});
  ASSERT_EQ(events().size(), 5u);
  EXPECT_EQ(events()[4].what, st::store_event::kind::deleted);
  EXPECT_EQ(events()[4].ids, (std::vector<std::string>{a->id}));
  put(s, make("c", {"x@e"}, "c"));
  put(s, make("d", {"x@e"}, "d"));
  {
    std::lock_guard lk(mu);
    seen.clear();
  }
  put(s, make("e", {"x@e"}, "e"));
  ASSERT_EQ(events().size(), 2u);
  EXPECT_EQ(events()[0].what, st::store_event::kind::deleted);
  EXPECT_EQ(events()[0].ids, (std::vector<std::string>{b->id}));
  EXPECT_EQ(events()[1].what, st::store_event::kind::created);
  remove_sync(s, st::selection::everything());
  EXPECT_EQ(events().back().what, st::store_event::kind::cleared);
  {
    std::lock_guard lk(mu);
    seen.clear();
  }
  set_read_ids(s, {"nope"}, true);
  EXPECT_TRUE(events().empty());
  s.unsubscribe(h);
  put(s, make("f", {"x@e"}, "f"));
  EXPECT_TRUE(events().empty());
}

TEST_F(FileStore, HandlerRunsOnItsAssociatedExecutor) {
  st::file_store s(config());
  put(s, make("x", {"a@x"}, "x"));
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::atomic<bool> done{false};
  std::thread::id ran_on;
  st::list_request req(0, 10);
  s.async_list(req, asio::bind_executor(io.get_executor(), [&](std::error_code ec, st::page p) {
                 EXPECT_FALSE(ec);
                 EXPECT_EQ(p.messages.size(), 1u);
                 ran_on = std::this_thread::get_id();
                 done = true;
                 work.reset();
               }));
  io.run();  // returns once the handler ran here
  EXPECT_TRUE(done);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST_F(FileStore, CoAwaitGivesTuples) {
  st::file_store s(config());
  auto id = put(s, make("x", {"a@x"}, "x"))->id;
  asio::io_context io;
  auto f = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<std::string> {
        st::list_request req(0, 10);
        auto [ec, page] = co_await s.async_list(std::move(req));
        if (ec || page.messages.size() != 1) co_return "list";
        auto [ec2, m] = co_await s.async_get(id);
        if (ec2 || !m || m->id != id || m->raw != "x") co_return "get";
        std::string unknown = "none";
        auto [ec3, none] = co_await s.async_get(std::move(unknown));
        if (ec3 != st::errc::not_found || none) co_return "not_found";
        co_return "ok";
      },
      asio::use_future);
  io.run();
  EXPECT_EQ(f.get(), "ok");
}

TEST_F(FileStore, RestartKeepsEverything) {
  std::vector<std::string> ids;
  std::vector<std::string> want_subjects;
  {
    st::file_store s(config());
    for (int i = 0; i < 20; ++i) {
      auto m = make("raw " + std::to_string(i) + std::string(3000, 'z'),
                    {"box" + std::to_string(i % 4) + "@x"}, "s" + std::to_string(i));
      if (i % 5 == 0) m.tags = {"Tag" + std::to_string(i % 3)};
      ids.push_back(put(s, std::move(m))->id);
    }
    set_read_ids(s, {ids[1], ids[2], ids[3]}, true);
    set_tags_sync(s, st::selection::of_ids({ids[7]}), {"Later", "two"});
    remove_ids(s, {ids[19]});
    want_subjects = subjects(list(s, 0, 100));
  }
  st::file_store s(config());
  auto p = list(s, 0, 100);
  EXPECT_EQ(subjects(p), want_subjects);
  EXPECT_EQ(p.total, 19u);
  EXPECT_EQ(p.unread, 16u);
  EXPECT_EQ(s.stats().messages, 19u);
  EXPECT_EQ(s.stats().unread, 16u);
  EXPECT_EQ(list(s, 0, 100, "box1@x").total, 5u);
  EXPECT_EQ(list(s, 0, 100, "box3@x").total, 4u);  // 19 went
  EXPECT_TRUE(get(s, ids[2])->is_read());
  EXPECT_FALSE(get(s, ids[4])->is_read());
  EXPECT_EQ(*get(s, ids[7])->tags(), (std::vector<std::string>{"Later", "two"}));
  EXPECT_EQ(*get(s, ids[5])->tags(), (std::vector<std::string>{"Tag2"}));
  EXPECT_EQ(list_tags_sync(s).value,
            (std::vector<std::string>{"Later", "Tag0", "Tag1", "Tag2", "two"}));
  EXPECT_EQ(get(s, ids[11])->raw, "raw 11" + std::string(3000, 'z'));
  EXPECT_EQ(get(s, ids[19]), nullptr);
  // New messages keep arriving after the old ones.
  put(s, make("new", {"box0@x"}, "new"));
  EXPECT_EQ(subjects(list(s, 0, 1)), (std::vector<std::string>{"new"}));
}

TEST_F(FileStore, EveryCompressionLevelReadsBackAndLevelsMix) {
  const std::string text = [] {
    std::string t;
    for (int i = 0; i < 400; ++i) t += "Line " + std::to_string(i % 17) + " of a compressible body\r\n";
    return t;
  }();
  std::vector<std::string> ids;
  for (int level = 0; level <= 3; ++level) {
    auto cfg = config();
    cfg.compression = level;
    st::file_store s(cfg);
    ids.push_back(put(s, make(text + std::to_string(level), {"a@x"}, std::to_string(level)))->id);
    for (std::size_t k = 0; k < ids.size(); ++k)
      EXPECT_EQ(get(s, ids[k])->raw, text + std::to_string(k)) << "level " << level;
  }
  auto cfg = config();
  cfg.compression = 4;
  EXPECT_THROW(st::file_store{cfg}, std::invalid_argument);
}

TEST_F(FileStore, CompressionMakesTheFileSmaller) {
  const std::string body = [] {
    std::string t;
    for (int i = 0; i < 200; ++i) t += "Dear customer, your order " + std::to_string(i) + " shipped.\r\n";
    return t;
  }();
  auto size_at = [&](int level, const std::string& name) {
    auto cfg = config(name);
    cfg.compression = level;
    cfg.wal = false;  // everything in the main file at close
    {
      st::file_store s(cfg);
      for (int i = 0; i < 50; ++i) {
        auto m = make(body, {"a@x"}, std::to_string(i));
        m.summary.search_text = "given";  // not derived: only the raw bytes are compressed
        put(s, std::move(m));
      }
    }
    return fs::file_size(path(name));
  };
  const auto none = size_at(0, "none.db");
  const auto zstd = size_at(1, "zstd.db");
  EXPECT_LT(zstd * 2, none) << none << " vs " << zstd;
}

TEST_F(FileStore, WithoutWalUsesARollbackJournal) {
  auto cfg = config();
  cfg.wal = false;
  {
    st::file_store s(cfg);
    put(s, make("x", {"a@x"}, "x"));
    EXPECT_FALSE(fs::exists(path().string() + "-wal"));
    EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"x"}));
  }
  // And a WAL file opened without WAL is turned back into a rollback-journal file.
  {
    st::file_store s(config("w.db"));
    put(s, make("y", {"a@x"}, "y"));
  }
  auto w = config("w.db");
  w.wal = false;
  st::file_store s(w);
  EXPECT_EQ(subjects(list(s, 0, 10)), (std::vector<std::string>{"y"}));
}

TEST_F(FileStore, TenantsShareAFileApart) {
  auto a_cfg = config();
  a_cfg.tenant_id = "Team-A";
  auto b_cfg = config();
  b_cfg.tenant_id = "team_b";
  {
    st::file_store a(a_cfg);
    st::file_store b(b_cfg);
    st::file_store none(config());
    put(a, make("a", {"x@x"}, "for a"));
    put(b, make("b", {"x@x"}, "for b"));
    put(b, make("b", {"x@x"}, "for b too"));
    EXPECT_EQ(subjects(list(a, 0, 10)), (std::vector<std::string>{"for a"}));
    EXPECT_EQ(list(b, 0, 10).total, 2u);
    EXPECT_EQ(list(none, 0, 10).total, 0u);
  }
  // Another spelling of the same tenant, as Mailpit derives table names ("Team A" and
  // "team-a" are both "team_a_").
  auto again = config();
  again.tenant_id = "  Team A ";
  st::file_store a(again);
  EXPECT_EQ(subjects(list(a, 0, 10)), (std::vector<std::string>{"for a"}));
}

TEST_F(FileStore, ConcurrentPutsShareCommits) {
  st::file_store s(config());
  // Many puts in flight at once: each acknowledged once, after its commit, and fewer
  // transactions than messages.
  constexpr int threads = 8, each = 40;
  std::atomic<int> ok{0}, calls{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      std::mutex mu;
      std::condition_variable cv;
      int pending = each;
      for (int i = 0; i < each; ++i)
        s.put(make("m", {"box" + std::to_string(t) + "@x"}, std::to_string(t)),
              [&](std::error_code ec, st::message_ptr m) {
                calls.fetch_add(1);
                if (!ec && m) ok.fetch_add(1);
                std::lock_guard lk(mu);
                if (--pending == 0) cv.notify_all();
              });
      std::unique_lock lk(mu);
      cv.wait(lk, [&] { return pending == 0; });
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), threads * each);
  EXPECT_EQ(calls.load(), threads * each);
  EXPECT_EQ(s.stats().messages, static_cast<std::uint64_t>(threads * each));
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(list(s, 0, 1, "box" + std::to_string(t) + "@x").total, static_cast<std::size_t>(each));
  const auto b = s.batches();
  EXPECT_EQ(b.jobs, static_cast<std::uint64_t>(threads * each));
  EXPECT_LT(b.batches, b.jobs);
  EXPECT_GT(b.max_jobs, 1u);
  EXPECT_LE(b.max_jobs, s.config().max_batch_messages);
  EXPECT_GT(b.syncs, 0u);
  EXPECT_LE(b.syncs, b.batches);  // one sync covers every batch committed before it
}

TEST_F(FileStore, ReadsWhileWriting) {
  st::file_store s(config());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!stop) {
      auto p = list(s, 0, 5);
      if (p.messages.size() > p.total) bad.fetch_add(1);
      ++reads;
    }
  });
  for (int i = 0; i < 200; ++i) put(s, make("m", {"a@x"}, std::to_string(i)));
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(list(s, 0, 1).total, 200u);
}

// ---------------------------------------------------------------- files refused

TEST_F(FileStore, RefusesAFileThatIsNotSqlite) {
  spit(path(), "From: someone\r\nSubject: this is a mail, not a database\r\n\r\n" +
                   std::string(5000, 'x'));
  expect_refused(config(), st::errc::foreign_file, "not a SQLite database");
  EXPECT_FALSE(fs::exists(path().string() + "-wal"));
}

TEST_F(FileStore, RefusesAShortFile) {
  spit(path(), "SQLite format 3");
  expect_refused(config(), st::errc::corrupt, "truncated");
}

TEST_F(FileStore, RefusesATruncatedStore) {
  auto cfg = config();
  cfg.wal = false;
  cfg.compression = 0;
  {
    st::file_store s(cfg);
    for (int i = 0; i < 50; ++i) put(s, make(std::string(4000, 'a' + i % 26), {"a@x"}, "m"));
  }
  const auto full = slurp(path());
  ASSERT_GT(full.size(), 100000u);
  spit(path(), full.substr(0, full.size() / 2));
  expect_refused(cfg, st::errc::corrupt, "truncated");
  cfg.wal = true;
  expect_refused(cfg, st::errc::corrupt, "truncated");
}

TEST_F(FileStore, RefusesADamagedStore) {
  auto cfg = config();
  cfg.wal = false;
  cfg.compression = 0;
  {
    st::file_store s(cfg);
    for (int i = 0; i < 50; ++i) put(s, make(std::string(4000, 'a' + i % 26), {"a@x"}, "m"));
  }
  auto bytes = slurp(path());
  // Overwrite pages 2-4 (the tables' roots and first leaves) with noise.
  const std::size_t page = 4096;
  ASSERT_GT(bytes.size(), 5 * page);
  for (std::size_t i = page; i < 4 * page; ++i) bytes[i] = static_cast<char>((i * 131) ^ 0x5a);
  spit(path(), bytes);
  expect_refused(cfg, st::errc::corrupt, "damaged");
}

TEST_F(FileStore, RefusesAnotherApplicationsDatabase) {
  sql(path(), "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT);"
              "INSERT INTO customers(name) VALUES('ann');");
  expect_refused(config(), st::errc::foreign_file, "customers");
}

namespace {
std::string zstd_frame(const std::string& raw) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 1));
  return out;
}

// Inserts a Mailpit message row and its data with bound values.
void mailpit_row(const fs::path& p, const std::string& prefix, const std::string& id,
                 std::int64_t created_ms, int read, const std::string& subject,
                 const std::string& metadata, const std::string& raw, bool compressed,
                 bool with_compressed_column = true) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  std::string sql = "INSERT INTO " + prefix +
                    "mailbox(Created, ID, MessageID, Subject, Metadata, Size, Inline, Attachments,"
                    " Read, SearchText, Snippet) VALUES(?,?,'mid@x',?,?,?,0,1,?,?,'snip')";
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_bind_int64(st, 1, created_ms);
  sqlite3_bind_text(st, 2, id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, subject.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, metadata.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 5, static_cast<std::int64_t>(raw.size()));
  sqlite3_bind_int(st, 6, read);
  sqlite3_bind_text(st, 7, ("mailpit words " + subject).c_str(), -1, SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db);
  sqlite3_finalize(st);
  const std::string data = compressed ? zstd_frame(raw) : raw;
  sql = with_compressed_column
            ? "INSERT INTO " + prefix + "mailbox_data(ID, Email, Compressed) VALUES(?,?,?)"
            : "INSERT INTO " + prefix + "mailbox_data(ID, Email) VALUES(?,?)";
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_bind_text(st, 1, id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_blob(st, 2, data.data(), static_cast<int>(data.size()), SQLITE_TRANSIENT);
  if (with_compressed_column) sqlite3_bind_int(st, 3, compressed ? 1 : 0);
  EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

// Mailpit 1.33's tables (its schemas 1.0.0 to 1.32.0 applied), with a tenant prefix.
std::string mailpit_schema(const std::string& p) {
  return "CREATE TABLE " + p +
         "mailbox(Created INTEGER NOT NULL, ID TEXT NOT NULL, MessageID TEXT NOT NULL,"
         " Subject TEXT NOT NULL, Metadata TEXT, Size INTEGER NOT NULL, Inline INTEGER NOT NULL,"
         " Attachments INTEGER NOT NULL, Read INTEGER, SearchText TEXT,"
         " Snippet TEXT NOT NULL DEFAULT '');"
         "CREATE TABLE " + p + "mailbox_data(ID TEXT KEY NOT NULL, Email BLOB,"
         " Compressed INTEGER NOT NULL DEFAULT '0');"
         "CREATE TABLE " + p + "tags(ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,"
         " Name TEXT COLLATE NOCASE);"
         "CREATE TABLE " + p + "message_tags(Key INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,"
         " ID TEXT NOT NULL, TagID INTEGER NOT NULL);"
         "CREATE TABLE " + p + "settings(Key TEXT, Value TEXT);"
         "CREATE TABLE " + p + "schemas(Version TEXT PRIMARY KEY NOT NULL);";
}

std::string mail(const std::string& subject) {
  return "From: Ann <ann@example.com>\r\nTo: bob@example.org\r\nSubject: " + subject +
         "\r\n\r\nHello " + subject + "\r\n";
}
}  // namespace

TEST_F(FileStore, ImportsAMailpitDatabaseOnce) {
  sql(path(), mailpit_schema("").c_str());
  const std::string meta =
      R"({"From":{"Name":"Ann","Address":"ann@example.com"},"To":[{"Name":"","Address":"bob@example.org"}],"Cc":[{"Name":"Carol","Address":"carol@example.net"}]})";
  mailpit_row(path(), "", "Aaaaaaaaaaaaaaaaaaaaa1", 1767225600000, 1, "first", meta, mail("first"), true);
  mailpit_row(path(), "", "Aaaaaaaaaaaaaaaaaaaaa2", 1767225660000, 0, "second", meta, mail("second"), false);
  mailpit_row(path(), "", "0e4d2c4a-1111-2222-3333-444455556666", 1767225720000, 0, "third", meta,
              mail("third"), true);
  sql(path(), "INSERT INTO tags(Name) VALUES('Important'), ('later');"
              "INSERT INTO message_tags(ID, TagID) VALUES('Aaaaaaaaaaaaaaaaaaaaa1', 1),"
              " ('Aaaaaaaaaaaaaaaaaaaaa1', 2), ('Aaaaaaaaaaaaaaaaaaaaa2', 2);");
  std::vector<std::string> third_id;
  {
    st::file_store s(config());
    auto p = list(s, 0, 10);
    EXPECT_EQ(subjects(p), (std::vector<std::string>{"third", "second", "first"}));
    EXPECT_EQ(p.unread, 2u);
    auto first = get(s, "Aaaaaaaaaaaaaaaaaaaaa1");
    ASSERT_TRUE(first);
    EXPECT_EQ(first->raw, mail("first"));
    EXPECT_TRUE(first->is_read());
    EXPECT_EQ(first->created, at(2026, 1, 1));
    EXPECT_EQ(*first->tags(), (std::vector<std::string>{"Important", "later"}));
    EXPECT_EQ(first->summary.from, (st::address{"Ann", "ann@example.com"}));
    EXPECT_EQ(first->summary.cc.size(), 1u);
    EXPECT_EQ(first->summary.snippet, "snip");
    EXPECT_EQ(first->summary.totals.attachments, 1u);
    auto second = get(s, "Aaaaaaaaaaaaaaaaaaaaa2");
    ASSERT_TRUE(second);
    EXPECT_EQ(second->raw, mail("second"));
    EXPECT_EQ(second->created, at(2026, 1, 1, 0, 1));
    // A 36-character UUID of an old Mailpit got an inlet ID; the message is there.
    EXPECT_EQ(p.messages[0]->id.size(), st::id_length);
    EXPECT_EQ(get(s, p.messages[0]->id)->raw, mail("third"));
    EXPECT_EQ(list_tags_sync(s).value, (std::vector<std::string>{"Important", "later"}));
    EXPECT_EQ(search(s, "tag:later").matched, 2u);
    EXPECT_EQ(search(s, "cc:carol is:unread").matched, 2u);
    EXPECT_EQ(search(s, "words second").matched, 1u);  // Mailpit's search text
    EXPECT_EQ(list(s, 0, 10, "bob@example.org").total, 3u);
    // Changes after the import are inlet's; Mailpit's tables are left as they were.
    remove_ids(s, {"Aaaaaaaaaaaaaaaaaaaaa2"});
  }
  st::file_store s(config());  // not imported again
  EXPECT_EQ(list(s, 0, 10).total, 2u);
  EXPECT_EQ(get(s, "Aaaaaaaaaaaaaaaaaaaaa2"), nullptr);
}

TEST_F(FileStore, ImportsAnOlderMailpitLayoutAndATenant) {
  // Before 1.10 tags were a JSON column; before 1.21 every Email was compressed and had no
  // Compressed column. Tenant "Dev Team" is Mailpit's prefix "Dev_Team_".
  sql(path(), "CREATE TABLE Dev_Team_mailbox(Created INTEGER NOT NULL, ID TEXT NOT NULL,"
              " MessageID TEXT NOT NULL, Subject TEXT NOT NULL, Metadata TEXT, Size INTEGER NOT NULL,"
              " Inline INTEGER NOT NULL, Attachments INTEGER NOT NULL, Read INTEGER, Tags TEXT,"
              " SearchText TEXT);"
              "CREATE TABLE Dev_Team_mailbox_data(ID TEXT KEY NOT NULL, Email BLOB);");
  sql(path(), "ALTER TABLE Dev_Team_mailbox ADD COLUMN Snippet TEXT NOT NULL DEFAULT ''");
  mailpit_row(path(), "Dev_Team_", "Bbbbbbbbbbbbbbbbbbbbb1", 1767225600000, 0, "old", "{}",
              mail("old"), true, false);
  sql(path(), "UPDATE Dev_Team_mailbox SET Tags='[\"Legacy\"]'");
  auto cfg = config();
  cfg.tenant_id = "Dev Team";
  st::file_store s(cfg);
  auto m = get(s, "Bbbbbbbbbbbbbbbbbbbbb1");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->raw, mail("old"));
  EXPECT_EQ(*m->tags(), (std::vector<std::string>{"Legacy"}));
  // The same file without the tenant: none of it.
  st::file_store other(config());
  EXPECT_EQ(list(other, 0, 10).total, 0u);
}

TEST_F(FileStore, ImportUsesTheGivenSummaryAndDerivesTheSearchText) {
  sql(path(), mailpit_schema("").c_str());
  mailpit_row(path(), "", "Ccccccccccccccccccccc1", 1767225600000, 0, "x", "{}", mail("x"), true);
  auto cfg = config();
  cfg.summarize = [](std::string_view raw, st::summary& out) {
    out.subject = "summarized " + std::to_string(raw.size());
    out.attachments = {{"f.txt", "text/plain", 3}};
  };
  st::file_store s(cfg);
  auto m = get(s, "Ccccccccccccccccccccc1");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->summary.subject, "summarized " + std::to_string(mail("x").size()));
  // The search text: the given summary's words and the raw message's body.
  EXPECT_EQ(search(s, "\"summarized\" f.txt has:attachment").matched, 1u);
  EXPECT_EQ(search(s, "\"hello x\"").matched, 1u);
}

TEST_F(FileStore, AMailpitRowThatDoesNotDecompressStopsTheImport) {
  sql(path(), mailpit_schema("").c_str());
  mailpit_row(path(), "", "Ddddddddddddddddddddd1", 1767225600000, 0, "x", "{}", mail("x"), false);
  sql(path(), "UPDATE mailbox_data SET Compressed=1");  // plain bytes marked compressed
  try {
    st::file_store s(config());
    ADD_FAILURE() << "opened";
  } catch (const st::file_store_error& e) {
    EXPECT_EQ(e.code(), st::errc::corrupt) << e.what();
    EXPECT_NE(std::string(e.what()).find("Ddddddddddddddddddddd1"), std::string::npos) << e.what();
  }
}

TEST_F(FileStore, AnEmptyFileBecomesAStore) {
  spit(path(), "");
  st::file_store s(config());
  put(s, make("x", {"a@x"}, "x"));
  EXPECT_EQ(list(s, 0, 10).total, 1u);
}

TEST_F(FileStore, RefusesAMissingDirectory) {
  auto cfg = config();
  cfg.path = (dir_ / "no" / "such" / "dir" / "mail.db").string();
  try {
    st::file_store s(cfg);
    ADD_FAILURE() << "opened";
  } catch (const st::file_store_error& e) {
    EXPECT_EQ(e.code(), st::errc::unavailable);
    EXPECT_NE(std::string(e.what()).find("mail.db"), std::string::npos);
  }
}

namespace {
// A summarizer for reindex tests: the subject is the raw message's "Subject: " line.
void subject_of_raw(std::string_view raw, const st::envelope&, st::summary& out) {
  auto at = raw.find("Subject: ");
  if (at == std::string_view::npos) return;
  auto end = raw.find('\r', at);
  out.subject = std::string(raw.substr(at + 9, end - at - 9));
  out.from = st::address{"Ann", "ann@example.com"};
}
}  // namespace

TEST_F(FileStore, ReindexRebuildsDerivedColumnsInBatchesAndKeepsState) {
  std::vector<std::string> ids;
  {
    st::file_store s(config());
    for (int i = 0; i < 7; ++i) {
      const auto n = std::to_string(i);
      ids.push_back(put(s, make(mail("pear " + n), {"Bob@Example.org"}, "pear " + n))->id);
    }
    set_read_ids(s, {ids[1], ids[4]}, true);
    ASSERT_EQ(set_tags_sync(s, st::selection::of_ids({ids[2], ids[3]}), {"Keep", "x"}).value, 2u);
  }
  // Clear the derived columns, damage one summary and one size, as a broken write would.
  sql(path(), "UPDATE inlet_messages SET search_text=x'', f_subject=x'', f_from=x'', tags_f=x'';"
              "UPDATE inlet_messages SET meta=x'ff' WHERE seq=3;"
              "UPDATE inlet_messages SET size=5 WHERE seq=5;");
  st::file_store s(config());
  EXPECT_EQ(search(s, "subject:pear").matched, 0u);
  EXPECT_EQ(search(s, "tag:keep").matched, 0u);
  st::file_store::reindex_options opt;
  opt.summarize = &subject_of_raw;
  opt.batch_messages = 3;
  std::vector<std::size_t> progress;
  opt.progress = [&](std::size_t n) {
    progress.push_back(n);
    if (progress.size() == 1) put(s, make(mail("late"), {"c@example.org"}, "late"));  // between batches
  };
  auto r = s.reindex(opt);
  EXPECT_EQ(r.reindexed, 8u);  // the message put between batches came later in seq order
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(progress, (std::vector<std::size_t>{3, 6, 8}));
  EXPECT_EQ(search(s, "subject:pear").matched, 7u);
  EXPECT_EQ(search(s, "from:ann@example.com").matched, 8u);
  EXPECT_EQ(search(s, "tag:keep").matched, 2u);
  EXPECT_EQ(search(s, "is:read").matched, 2u);
  EXPECT_EQ(search(s, "\"hello pear 3\"").matched, 1u);  // the search text, from the body
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto m = get(s, ids[i]);
    ASSERT_TRUE(m) << i;
    EXPECT_EQ(m->raw, mail("pear " + std::to_string(i)));
    EXPECT_EQ(m->size, m->raw.size());
    EXPECT_EQ(m->summary.subject, "pear " + std::to_string(i));
    EXPECT_EQ(m->is_read(), i == 1 || i == 4);
    const std::vector<std::string> tags = m->tags() ? *m->tags() : std::vector<std::string>{};
    EXPECT_EQ(tags.size(), (i == 2 || i == 3) ? 2u : 0u) << i;
    if (!tags.empty()) {
      EXPECT_EQ(tags, (std::vector<std::string>{"Keep", "x"}));
    }
    // Envelopes are kept; the damaged summary's (seq 3) came back from the mailbox column.
    EXPECT_EQ(m->envelope.rcpt_to,
              (st::recipient_list{i == 2 ? "bob@example.org" : "Bob@Example.org"})) << i;
  }
  EXPECT_EQ(list(s, 0, 10, "bob@example.org").total, 7u);
  const auto stats = s.stats();
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) bytes += mail("pear " + std::to_string(i)).size();
  EXPECT_EQ(stats.bytes, bytes + mail("late").size());
  EXPECT_THROW(s.reindex({}), std::invalid_argument);
}

TEST_F(FileStore, ReadRawMessagesFromInletsOrMailpitsTables) {
  // inlet's tables: every message's ID and bytes, the file unchanged.
  std::vector<std::pair<std::string, std::string>> want;
  {
    st::file_store s(config());
    for (int i = 0; i < 3; ++i) {
      auto raw = mail("fig " + std::to_string(i)) + std::string(i * 5000, 'z');
      want.emplace_back(put(s, make(raw))->id, raw);
    }
  }
  auto read_all = [](const st::file_store_config& cfg) {
    std::vector<std::pair<std::string, std::string>> got;
    st::read_raw_messages(cfg, [&](std::string_view id, std::string_view raw) {
      got.emplace_back(std::string(id), std::string(raw));
    });
    return got;
  };
  const auto before = slurp(path());
  EXPECT_EQ(read_all(config()), want);
  EXPECT_EQ(slurp(path()), before);
  // Mailpit's tables, never imported: read as Mailpit left them.
  sql(path("mp.db"), mailpit_schema("").c_str());
  mailpit_row(path("mp.db"), "", "Aaaaaaaaaaaaaaaaaaaaa1", 1767225600000, 1, "a", "{}", mail("a"), true);
  mailpit_row(path("mp.db"), "", "Aaaaaaaaaaaaaaaaaaaaa2", 1767225660000, 0, "b", "{}", mail("b"), false);
  const auto mp_before = slurp(path("mp.db"));
  EXPECT_EQ(read_all(config("mp.db")),
            (std::vector<std::pair<std::string, std::string>>{{"Aaaaaaaaaaaaaaaaaaaaa1", mail("a")},
                                                              {"Aaaaaaaaaaaaaaaaaaaaa2", mail("b")}}));
  EXPECT_EQ(slurp(path("mp.db")), mp_before);
  // Not a database, another application's, missing: file_store_error.
  spit(path("junk.db"), std::string(4096, 'j'));
  EXPECT_THROW(read_all(config("junk.db")), st::file_store_error);
  sql(path("other.db"), "CREATE TABLE t(x)");
  EXPECT_THROW(read_all(config("other.db")), st::file_store_error);
  EXPECT_THROW(read_all(config("missing.db")), st::file_store_error);
  EXPECT_FALSE(fs::exists(path("missing.db")));
}

TEST_F(FileStore, StatementCacheReusesResetsAndNeverHandsOneOutTwice) {
  namespace f = inlet::store::file;
  f::connection c(path("cache.db").string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  c.exec("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2), (3)");
  const std::string q = "SELECT x FROM t WHERE x>? ORDER BY x";
  f::statement* first = nullptr;
  {
    auto a = c.cached(q);
    first = &*a;
    a->bind(1, 0);
    ASSERT_TRUE(a->step());
    EXPECT_EQ(a->int64(0), 1);
    auto b = c.cached(q);  // the same SQL while `a` is mid-rows: a statement of its own
    EXPECT_NE(&*b, first);
    b->bind(1, 2);
    ASSERT_TRUE(b->step());
    EXPECT_EQ(b->int64(0), 3);
    ASSERT_TRUE(a->step());
    EXPECT_EQ(a->int64(0), 2);
  }
  {
    auto a = c.cached(q);
    EXPECT_EQ(&*a, first);  // prepared once
    EXPECT_FALSE(a->step());  // reset, bindings cleared: x > NULL matches nothing
  }
  // Past max_cached statements the cache starts over; a handle held meanwhile still works.
  auto held = c.cached(q);
  held->bind(1, 2);
  for (std::size_t i = 0; i < f::connection::max_cached + 5; ++i) {
    auto s = c.cached("SELECT " + std::to_string(i));
    ASSERT_TRUE(s->step());
    EXPECT_EQ(s->int64(0), static_cast<std::int64_t>(i));
  }
  ASSERT_TRUE(held->step());
  EXPECT_EQ(held->int64(0), 3);
}
