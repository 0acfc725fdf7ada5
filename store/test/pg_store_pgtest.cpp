// The PostgreSQL store against three throwaway clusters (three shards): cluster set-up,
// routing, multi-shard messages, group commit, a shard down (at start and while
// running), reads, updates, tags, retention.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "ids.hpp"
#include "inlet/store/pg_store.hpp"
#include "params.hpp"
#include "pg_test_env.hpp"
#include "schema.hpp"
#include "search_cases.hpp"
#include "totals_cases.hpp"
#include "wire.hpp"

using namespace std::chrono_literals;
namespace st = inlet::store;
namespace pgs = inlet::store::pgstore;

namespace {

// A mailbox whose bucket lives on `shard` under the initial assignment (b % N).
std::string mailbox_on(unsigned shard, unsigned shards, std::uint32_t buckets, int n = 0) {
  for (int i = 0;; ++i) {
    std::string m = "user" + std::to_string(i) + "@example.com";
    if (pgs::bucket_of(m, buckets) % shards == shard && n-- == 0) return m;
  }
}

void reset_shards() {
  for (unsigned i = 0; i < pgtest::shard_dsns().size(); ++i) {
    auto c = pgtest::connect(i);
    c.execute("SET client_min_messages = warning");
    c.execute("DROP SCHEMA IF EXISTS mail CASCADE");
  }
}

st::list_request mailbox_req(std::string mb, std::size_t limit = 50) {
  st::list_request r(0, limit);
  r.mailbox = std::move(mb);
  return r;
}

}  // namespace

class PgStore : public ::testing::Test {
 protected:
  void SetUp() override {
    if (pgtest::shard_dsns().size() < 3)
      GTEST_SKIP() << "needs INLET_PG_SHARDS with 3 shards (run via ctest)";
    reset_shards();
  }
};

TEST_F(PgStore, SetsUpTheClusterOnceAndSplitsTheBuckets) {
  auto cfg = pgtest::config(3);
  {
    // Two instances starting at once: one set-up.
    st::pg_store a(cfg), b(cfg);
    ASSERT_TRUE(a.wait_ready(20s)) << a.health().detail;
    ASSERT_TRUE(b.wait_ready(20s)) << b.health().detail;
    EXPECT_TRUE(a.health().ready);
  }
  std::int64_t total = 0;
  for (unsigned i = 0; i < 3; ++i) {
    auto owned = pgtest::count(i, "SELECT count(*) FROM mail.bucket WHERE state = 'owned'");
    EXPECT_GE(owned, 21);
    EXPECT_EQ(pgtest::count(
                  i, "SELECT count(*) FROM mail.bucket WHERE bucket % 3 <> " + std::to_string(i)),
              0);
    EXPECT_EQ(pgtest::count(i, "SELECT value::int8 FROM mail.meta WHERE key = 'shard'"), i);
    EXPECT_EQ(pgtest::count(i, "SELECT max(version)::int8 FROM mail.migration"),
              static_cast<std::int64_t>(pgs::migrations().size()));
    total += owned;
  }
  EXPECT_EQ(total, 64);
  EXPECT_EQ(pgtest::count(0, "SELECT value::int8 FROM mail.meta WHERE key = 'initialized'"), 3);
}

TEST_F(PgStore, RefusesShardsInAnotherOrder) {
  auto cfg = pgtest::config(3);
  {
    st::pg_store a(cfg);
    ASSERT_TRUE(a.wait_ready(20s));
  }
  std::swap(cfg.shards[1], cfg.shards[2]);
  st::pg_store b(cfg);
  EXPECT_FALSE(b.wait_ready(2s));
  auto h = b.health();
  EXPECT_FALSE(h.ready);
  EXPECT_NE(h.detail.find("shard order"), std::string::npos) << h.detail;
}

TEST_F(PgStore, PutThenGetIsByteExact) {
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  auto m = pgtest::message({"Alice@Example.com"}, "first", std::string("body\0with nul\r\n", 15));
  m.summary.attachments = {{"a.pdf", "application/pdf", 1234}};
  m.summary.cc = {{"Carol", "carol@example.net"}};
  m.summary.date = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  m.summary.message_id = "abc@example.org";
  m.summary.inline_parts = 2;
  m.tags = {"Spam", "spam", "work"};
  std::string raw = m.raw;
  std::error_code ec;
  auto stored = pgtest::put(s, std::move(m), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(stored);
  auto parts = pgs::parse_id(stored->id);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->bucket, pgs::bucket_of("alice@example.com", 64));

  auto [gec, got] =
      pgtest::wait<st::message_ptr>([&](auto h) { s.async_get(stored->id, std::move(h)); });
  ASSERT_FALSE(gec) << gec.message();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->raw, raw);
  EXPECT_EQ(got->size, raw.size());
  EXPECT_EQ(got->id, stored->id);
  EXPECT_EQ(got->created, stored->created);
  EXPECT_EQ(got->envelope.rcpt_to, st::recipient_list{"Alice@Example.com"});
  EXPECT_EQ(got->envelope.remote, "127.0.0.1:40000");
  EXPECT_EQ(got->summary.from, stored->summary.from);
  EXPECT_EQ(got->summary.cc, stored->summary.cc);
  ASSERT_EQ(got->summary.attachments.size(), 1u);
  EXPECT_EQ(got->summary.attachments[0].filename, "a.pdf");
  EXPECT_EQ(got->summary.attachments[0].size, 1234u);
  EXPECT_EQ(got->summary.date, stored->summary.date);
  EXPECT_EQ(got->summary.message_id, "abc@example.org");
  EXPECT_EQ(got->summary.inline_parts, 2u);
  EXPECT_EQ(*got->tags(), (std::vector<std::string>{"Spam", "work"}));
  EXPECT_FALSE(got->is_read());

  auto [nec, none] =
      pgtest::wait<st::message_ptr>([&](auto h) { s.async_get(pgs::make_id(1, 3), std::move(h)); });
  EXPECT_EQ(nec, st::errc::not_found);
  auto [bec, bad] =
      pgtest::wait<st::message_ptr>([&](auto h) { s.async_get("not-an-id", std::move(h)); });
  EXPECT_EQ(bec, st::errc::not_found);
}

TEST_F(PgStore, AMessageForThreeShardsIsStoredOnEachAndListedOnce) {
  auto cfg = pgtest::config(3);
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  std::vector<std::string> rcpt = {mailbox_on(1, 3, 64), mailbox_on(0, 3, 64), mailbox_on(2, 3, 64),
                                   mailbox_on(1, 3, 64, 1)};
  std::error_code ec;
  auto m = pgtest::put(s, pgtest::message(rcpt, "to three shards"), ec);
  ASSERT_FALSE(ec) << ec.message();
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(
        pgtest::count(i, "SELECT count(*) FROM mail.message WHERE id = '" + m->id.str() + "'"), 1)
        << i;
    EXPECT_EQ(pgtest::count(
                  i, "SELECT count(*) FROM mail.message WHERE home AND id = '" + m->id.str() + "'"),
              i == 1 ? 1 : 0)
        << i;
  }
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.inbox WHERE id = '" + m->id.str() + "'"),
            2);
  auto [lec, p] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(0, 50), std::move(h)); });
  ASSERT_FALSE(lec);
  EXPECT_EQ(p.total, 1u);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_EQ(p.messages[0]->id, m->id);
  EXPECT_FALSE(p.partial);
  for (auto& r : rcpt) {
    auto [mec, mp] =
        pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(r), std::move(h)); });
    ASSERT_FALSE(mec) << r;
    EXPECT_EQ(mp.total, 1u) << r;
    ASSERT_EQ(mp.messages.size(), 1u) << r;
    EXPECT_EQ(mp.messages[0]->id, m->id);
  }
  // Deleting it removes every copy.
  auto [dec, n] = pgtest::wait<std::size_t>(
      [&](auto h) { s.async_remove(st::selection::of_ids({m->id}), std::move(h)); });
  ASSERT_FALSE(dec) << dec.message();
  EXPECT_EQ(n, 1u);
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(pgtest::count(i, "SELECT count(*) FROM mail.message"), 0) << i;
    EXPECT_EQ(pgtest::count(i, "SELECT count(*) FROM mail.inbox"), 0) << i;
  }
}

TEST_F(PgStore, AFailureOnOneShardLeavesNoCopyOnTheOthers) {
  auto cfg = pgtest::config(3);
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  // A fault injected on shard 2 only: its insert fails while shard 0's commits.
  {
    auto c = pgtest::connect(2);
    c.execute(
        "CREATE FUNCTION public.fail_insert() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN IF NEW.subject = 'between shards' THEN RAISE EXCEPTION 'injected'; END IF; "
        "RETURN NEW; END $$");
    c.execute(
        "CREATE TRIGGER fail_insert AFTER INSERT ON mail.message FOR EACH ROW "
        "EXECUTE FUNCTION public.fail_insert()");
  }
  std::vector<std::string> rcpt = {mailbox_on(0, 3, 64), mailbox_on(2, 3, 64)};
  const std::string count_sql =
      "SELECT count(*) FROM mail.message WHERE subject = 'between shards'";
  std::error_code ec;
  pgtest::put(s, pgtest::message(rcpt, "between shards"), ec);
  ASSERT_TRUE(ec) << "the put must fail (451) when one shard fails";
  // The copy shard 0 committed is gone before the put is answered.
  EXPECT_EQ(pgtest::count(0, count_sql), 0);
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.inbox"), 0);
  EXPECT_EQ(pgtest::count(2, count_sql), 0);
  std::string metrics;
  s.append_metrics(metrics);
  EXPECT_NE(metrics.find("inlet_pg_failed_put_cleanups_total{result=\"removed\"} 1"),
            std::string::npos)
      << metrics;
  // The client's retry, once the fault is gone, stores exactly one copy per shard.
  pgtest::connect(2).execute("DROP TRIGGER fail_insert ON mail.message");
  auto m = pgtest::put(s, pgtest::message(rcpt, "between shards"), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(pgtest::count(0, count_sql), 1);
  EXPECT_EQ(pgtest::count(2, count_sql), 1);
  for (auto& r : rcpt) {
    auto [mec, mp] =
        pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(r), std::move(h)); });
    ASSERT_FALSE(mec) << r;
    EXPECT_EQ(mp.total, 1u) << r;
  }
  auto [lec, p] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(0, 50), std::move(h)); });
  ASSERT_FALSE(lec);
  EXPECT_EQ(p.total, 1u);
}

TEST_F(PgStore, ConcurrentPutsShareTransactions) {
  auto cfg = pgtest::config(3);
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  constexpr int threads = 8, per = 250;
  std::atomic<int> ok{0}, failed{0};
  std::atomic<int> outstanding{0};
  std::vector<std::thread> ts;
  std::mutex mu;
  std::set<std::string> ids;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < per; ++i) {
        outstanding.fetch_add(1);
        s.put(pgtest::message({"u" + std::to_string(t * per + i) + "@example.com"}, "load"),
              [&](std::error_code ec, st::message_ptr m) {
                if (ec)
                  failed.fetch_add(1);
                else {
                  ok.fetch_add(1);
                  std::lock_guard lk(mu);
                  ids.insert(m->id);
                }
                outstanding.fetch_sub(1);
              });
        while (outstanding.load() > 400) std::this_thread::sleep_for(100us);
      }
    });
  }
  for (auto& t : ts) t.join();
  for (int i = 0; i < 3000 && outstanding.load() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(outstanding.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(ok.load(), threads * per);
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(threads * per));
  std::int64_t rows = 0;
  for (unsigned i = 0; i < 3; ++i) rows += pgtest::count(i, "SELECT count(*) FROM mail.message");
  EXPECT_EQ(rows, threads * per);
  std::uint64_t batches = 0, msgs = 0;
  for (auto& sh : s.shard_stats()) {
    batches += sh.batches;
    msgs += sh.batch_messages;
  }
  EXPECT_EQ(msgs, static_cast<std::uint64_t>(threads * per));
  EXPECT_LT(batches, msgs);  // some deliveries shared a transaction
  std::string metrics;
  s.append_metrics(metrics);
  EXPECT_NE(metrics.find("inlet_pg_batch_size_bucket{shard=\"2\",le=\"+Inf\"}"), std::string::npos);
}

TEST_F(PgStore, AShardDownFailsOnlyItsMailboxesAndComesBack) {
  auto cfg = pgtest::config(3);
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  auto on0 = mailbox_on(0, 3, 64), on1 = mailbox_on(1, 3, 64);
  ASSERT_EQ(pgtest::pg_ctl(1, "stop -m immediate"), 0);
  // Puts for shard 1 fail (soon: the writer's connections notice), shard 0 is fine.
  std::error_code ec;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  do {
    pgtest::put(s, pgtest::message({on1}, "to the dead shard"), ec);
  } while (!ec && std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(ec == st::errc::unavailable || ec == st::errc::timeout) << ec.message();
  auto t0 = std::chrono::steady_clock::now();
  pgtest::put(s, pgtest::message({on1}, "to the dead shard"), ec);
  EXPECT_TRUE(ec);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);  // refused at once, not after the timeout
  pgtest::put(s, pgtest::message({on0}, "to a live shard"), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_FALSE(s.health().ready);
  EXPECT_NE(s.health().detail.find("shard 1"), std::string::npos) << s.health().detail;
  // SMTP asks before RCPT is answered: only the down shard's mailboxes are refused.
  EXPECT_FALSE(s.accepts_mailbox(on1));
  EXPECT_TRUE(s.accepts_mailbox(on0));
  auto [lec, p] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(0, 50), std::move(h)); });
  EXPECT_FALSE(lec);
  EXPECT_TRUE(p.partial);
  EXPECT_EQ(p.missing, (std::vector<std::uint32_t>{1}));
  auto [mec, mp] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(on1), std::move(h)); });
  EXPECT_TRUE(mec);

  ASSERT_EQ(pgtest::pg_ctl(1, "start"), 0);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  EXPECT_TRUE(s.accepts_mailbox(on1));
  pgtest::put(s, pgtest::message({on1}, "back"), ec);
  EXPECT_FALSE(ec) << ec.message();
}

TEST_F(PgStore, ReadsAfterAShardRestartNeverFail) {
  auto cfg = pgtest::config(3);
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  auto on1 = mailbox_on(1, 3, 64);
  std::error_code ec;
  pgtest::put(s, pgtest::message({on1}, "before the restart"), ec);
  ASSERT_FALSE(ec) << ec.message();
  // Warm the read connections of every shard, then restart shard 1 under them.
  for (int i = 0; i < 4; ++i) {
    auto [lec, p] =
        pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(0, 50), std::move(h)); });
    ASSERT_FALSE(lec);
    auto [mec, mp] =
        pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(on1), std::move(h)); });
    ASSERT_FALSE(mec);
  }
  ASSERT_EQ(pgtest::pg_ctl(1, "restart -m fast"), 0);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  // Once ready, the first reads of each kind answer: a pooled connection that died with
  // the restart is not the client's failure.
  auto [lec, p] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(0, 50), std::move(h)); });
  EXPECT_FALSE(lec) << lec.message();
  EXPECT_FALSE(p.partial);
  EXPECT_EQ(p.total, 1u);
  auto [mec, mp] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(on1), std::move(h)); });
  EXPECT_FALSE(mec) << mec.message();
  EXPECT_EQ(mp.total, 1u);
  ASSERT_FALSE(p.messages.empty());
  auto [gec, got] = pgtest::wait<st::message_ptr>(
      [&](auto h) { s.async_get(std::string(p.messages[0]->id), std::move(h)); });
  EXPECT_FALSE(gec) << gec.message();
  // The connections that died were noticed by the reads themselves, and sent again.
  EXPECT_GE(s.shard_stats().at(1).read_retries, 1u);
  EXPECT_EQ(s.shard_stats().at(1).read_errors, 0u);
}

TEST_F(PgStore, RefusesAShardListShorterThanTheCluster) {
  {
    st::pg_store three(pgtest::config(3));
    ASSERT_TRUE(three.wait_ready(20s)) << three.health().detail;
    EXPECT_EQ(three.configuration_error(), "");
  }
  // The list cut to its first entry (a quoting mistake): refused, not a 1-shard cluster.
  st::pg_store one(pgtest::config(1));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(one.wait_ready(20s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);  // known at once, not at the timeout
  EXPECT_NE(one.configuration_error().find("the cluster has 3 shards"), std::string::npos)
      << one.configuration_error();
  EXPECT_NE(one.health().detail.find("missing"), std::string::npos) << one.health().detail;
  // And the operator's own count is checked before anything is written.
  auto cfg = pgtest::config(3);
  cfg.expect_shards = 4;
  EXPECT_THROW(st::pg_store bad(cfg), std::invalid_argument);
}

TEST_F(PgStore, StartsWhileAShardIsDown) {
  auto cfg = pgtest::config(3);
  {
    st::pg_store first(cfg);
    ASSERT_TRUE(first.wait_ready(20s));
  }
  ASSERT_EQ(pgtest::pg_ctl(2, "stop -m immediate"), 0);
  {
    st::pg_store s(cfg);
    EXPECT_FALSE(s.wait_ready(1500ms));
    auto h = s.health();
    EXPECT_FALSE(h.ready);
    EXPECT_NE(h.detail.find("shard 2"), std::string::npos) << h.detail;
    std::error_code ec;
    pgtest::put(s, pgtest::message({mailbox_on(0, 3, 64)}, "shard 0 works"), ec);
    EXPECT_FALSE(ec) << ec.message();
    pgtest::put(s, pgtest::message({mailbox_on(2, 3, 64)}, "shard 2 does not"), ec);
    EXPECT_EQ(ec, st::errc::unavailable);
    ASSERT_EQ(pgtest::pg_ctl(2, "start"), 0);
    ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
    pgtest::put(s, pgtest::message({mailbox_on(2, 3, 64)}, "now it does"), ec);
    EXPECT_FALSE(ec) << ec.message();
  }
}

TEST_F(PgStore, ListsPagesNewestFirstAcrossShards) {
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s));
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) {
    std::error_code ec;
    auto m = pgtest::put(
        s, pgtest::message({"p" + std::to_string(i) + "@example.com"}, "n" + std::to_string(i)),
        ec);
    ASSERT_FALSE(ec);
    ids.push_back(m->id);
  }
  std::vector<std::string> newest(ids.rbegin(), ids.rend());
  auto [ec, p] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(5, 10), std::move(h)); });
  ASSERT_FALSE(ec);
  EXPECT_EQ(p.total, 30u);
  EXPECT_EQ(p.unread, 30u);
  EXPECT_EQ(p.start, 5u);
  ASSERT_EQ(p.messages.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(p.messages[i]->id, newest[5 + i]);
  EXPECT_FALSE(p.messages[0]->has_raw);
  // Keyset: after the 12th newest.
  st::list_request k(0, 100);
  k.before_id = newest[11];
  auto [kec, kp] = pgtest::wait<st::page>([&](auto h) { s.async_list(k, std::move(h)); });
  ASSERT_FALSE(kec);
  ASSERT_EQ(kp.messages.size(), 18u);
  EXPECT_EQ(kp.messages.front()->id, newest[12]);
  EXPECT_EQ(kp.messages.back()->id, newest[29]);
  k.before_id = pgs::make_id(5, 5);
  auto [uec, up] = pgtest::wait<st::page>([&](auto h) { s.async_list(k, std::move(h)); });
  EXPECT_EQ(uec, st::errc::not_found);
}

namespace {
std::uint64_t cursor_pages(const st::pg_store& s) {
  std::string m;
  s.append_metrics(m);
  const std::string name = "inlet_pg_list_cursor_pages_total ";
  auto at = m.find("\n" + name);
  return at == std::string::npos ? ~std::uint64_t{0} : std::stoull(m.substr(at + 1 + name.size()));
}
}  // namespace

TEST_F(PgStore, DeepPagesContinueFromTheLastPageWhileNothingChanges) {
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s));
  const std::string box = mailbox_on(1, 3, pgtest::config(3).buckets);
  std::vector<std::string> ids;
  for (int i = 0; i < 60; ++i) {
    std::error_code ec;
    // Every third message also to one mailbox, so that its listing pages too.
    std::vector<std::string> to{"d" + std::to_string(i) + "@example.com"};
    if (i % 3 == 0) to.push_back(box);
    auto m = pgtest::put(s, pgtest::message(to, "deep " + std::to_string(i)), ec);
    ASSERT_FALSE(ec);
    ids.push_back(m->id);
  }
  std::vector<std::string> newest(ids.rbegin(), ids.rend());
  std::size_t total = 60;
  auto page_at = [&](st::list_request r) {
    auto [ec, p] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
    EXPECT_FALSE(ec);
    std::vector<std::string> out;
    for (auto& m : p.messages) out.push_back(m->id);
    EXPECT_EQ(p.total, r.mailbox.empty() ? total : 20u);
    EXPECT_EQ(p.start, r.start);
    return out;
  };
  const auto before = cursor_pages(s);
  // Page by page: the first by offset, each next one from its predecessor's cursor, and
  // every page exactly what the offset would give.
  for (std::size_t start = 0; start < 60; start += 7) {
    auto got = page_at(st::list_request(start, 7));
    std::vector<std::string> want(newest.begin() + static_cast<long>(start),
                                  newest.begin() + static_cast<long>(std::min<std::size_t>(start + 7, 60)));
    EXPECT_EQ(got, want) << "start " << start;
  }
  EXPECT_EQ(cursor_pages(s) - before, 8u);  // 9 pages; the first has no predecessor
  // A search pages the same way, apart from the plain listing's cursors.
  st::list_request q(0, 5);
  ASSERT_FALSE(st::search::parse("subject:deep", {}, q.query));
  auto first = page_at(q);
  q.start = 5;
  auto second = page_at(q);
  EXPECT_EQ(second, std::vector<std::string>(newest.begin() + 5, newest.begin() + 10));
  EXPECT_EQ(cursor_pages(s) - before, 9u);
  // The mailbox's own listing (one shard) too.
  auto mb = mailbox_req(box, 4);
  std::vector<std::string> in_box;
  for (std::size_t i = 0; i < newest.size(); ++i)
    if ((59 - i) % 3 == 0) in_box.push_back(newest[i]);
  for (std::size_t start = 0; start < 20; start += 4) {
    mb.start = start;
    EXPECT_EQ(page_at(mb), std::vector<std::string>(in_box.begin() + static_cast<long>(start),
                                                    in_box.begin() + static_cast<long>(start + 4)));
  }
  EXPECT_EQ(cursor_pages(s) - before, 13u);
  // A change retires every cursor: the next page is read by offset, and is right.
  ASSERT_FALSE(pgtest::wait<std::size_t>([&](auto h) {
                 s.async_remove(st::selection::of_ids({newest[3]}), std::move(h));
               }).first);
  total = 59;
  auto after_delete = page_at(st::list_request(14, 7));
  EXPECT_EQ(after_delete, std::vector<std::string>(newest.begin() + 15, newest.begin() + 22));
  EXPECT_EQ(cursor_pages(s) - before, 13u);
  // Another instance's change retires them too, once its notification is in.
  EXPECT_EQ(page_at(st::list_request(21, 7)),
            std::vector<std::string>(newest.begin() + 22, newest.begin() + 29));
  EXPECT_EQ(cursor_pages(s) - before, 14u);
  std::atomic<int> deleted{0};
  s.subscribe([&deleted](const st::store_event& e) {
    if (e.what == st::store_event::kind::deleted) ++deleted;
  });
  st::pg_store other(pgtest::config(3));
  ASSERT_TRUE(other.wait_ready(20s));
  ASSERT_FALSE(pgtest::wait<std::size_t>([&](auto h) {
                 other.async_remove(st::selection::of_ids({newest[0]}), std::move(h));
               }).first);
  for (int i = 0; i < 500 && deleted.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(deleted.load(), 1);
  total = 58;
  EXPECT_EQ(page_at(st::list_request(28, 7)),
            std::vector<std::string>(newest.begin() + 30, newest.begin() + 37));
  EXPECT_EQ(cursor_pages(s) - before, 14u);
}

TEST_F(PgStore, ReadFlagsTagsSearchAndDeletes) {
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s));
  std::string box = mailbox_on(2, 3, 64);
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    std::error_code ec;
    auto m = pgtest::put(
        s, pgtest::message({box, mailbox_on(0, 3, 64)}, i % 2 ? "Invoice" : "hello"), ec);
    ASSERT_FALSE(ec);
    ids.push_back(m->id);
  }
  auto [rec, changed] = pgtest::wait<std::size_t>([&](auto h) {
    s.async_set_read(st::selection::of_ids({ids[0], ids[1], "bogus"}), true, std::move(h));
  });
  ASSERT_FALSE(rec) << rec.message();
  EXPECT_EQ(changed, 2u);
  auto [lec, p] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(box), std::move(h)); });
  ASSERT_FALSE(lec);
  EXPECT_EQ(p.total, 6u);
  EXPECT_EQ(p.unread, 4u);
  auto [gec, got] =
      pgtest::wait<st::message_ptr>([&](auto h) { s.async_get(ids[0], std::move(h)); });
  EXPECT_TRUE(got->is_read());

  // Search: subject contains "invoice", case-insensitively.
  st::search::query q;
  st::search::term t;
  t.where = st::search::field::subject;
  t.value = "invoice";
  q.terms.push_back(t);
  st::list_request sr(0, 50);
  sr.query = q;
  auto [sec, sp] = pgtest::wait<st::page>([&](auto h) { s.async_list(sr, std::move(h)); });
  ASSERT_FALSE(sec);
  EXPECT_EQ(sp.total, 6u);
  EXPECT_EQ(sp.matched, 3u);
  EXPECT_EQ(sp.matched_unread, 2u);  // ids[1] is read
  ASSERT_EQ(sp.messages.size(), 3u);

  // Tags.
  auto [tec, tn] = pgtest::wait<std::size_t>([&](auto h) {
    s.async_set_tags(st::selection::matching(q), {"Work", "work", "todo"}, std::move(h));
  });
  ASSERT_FALSE(tec) << tec.message();
  EXPECT_EQ(tn, 3u);
  auto [ltec, tags] =
      pgtest::wait<std::vector<std::string>>([&](auto h) { s.async_list_tags(std::move(h)); });
  ASSERT_FALSE(ltec);
  EXPECT_EQ(tags, (std::vector<std::string>{"Work", "todo"}));
  auto [rnec, rn] =
      pgtest::wait<std::size_t>([&](auto h) { s.async_rename_tag("work", "job", std::move(h)); });
  ASSERT_FALSE(rnec);
  EXPECT_EQ(rn, 3u);
  auto [dtec, dn] =
      pgtest::wait<std::size_t>([&](auto h) { s.async_delete_tag("TODO", std::move(h)); });
  ASSERT_FALSE(dtec);
  EXPECT_EQ(dn, 3u);
  auto [l2, tags2] =
      pgtest::wait<std::vector<std::string>>([&](auto h) { s.async_list_tags(std::move(h)); });
  EXPECT_EQ(tags2, (std::vector<std::string>{"job"}));
  auto [g2, got2] =
      pgtest::wait<st::message_ptr>([&](auto h) { s.async_get(ids[1], std::move(h)); });
  EXPECT_EQ(*got2->tags(), std::vector<std::string>{"job"});

  // Delete by search within the mailbox, then everything.
  auto [dec, dn2] = pgtest::wait<std::size_t>(
      [&](auto h) { s.async_remove(st::selection::matching(q, box), std::move(h)); });
  ASSERT_FALSE(dec);
  EXPECT_EQ(dn2, 3u);
  auto [l3, p3] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(0, 50), std::move(h)); });
  EXPECT_EQ(p3.total, 3u);
  auto [aec, an] = pgtest::wait<std::size_t>(
      [&](auto h) { s.async_remove(st::selection::everything(), std::move(h)); });
  ASSERT_FALSE(aec) << aec.message();
  EXPECT_EQ(an, 3u);
  auto [l4, p4] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(st::list_request(0, 50), std::move(h)); });
  EXPECT_EQ(p4.total, 0u);
  EXPECT_TRUE(p4.messages.empty());
}

TEST_F(PgStore, RetentionDropsWholePartitions) {
  auto cfg = pgtest::config(3);
  cfg.retention = std::chrono::seconds(1);
  cfg.partition_interval = std::chrono::seconds(1);
  cfg.maintenance_every = std::chrono::milliseconds(200);
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  std::error_code ec;
  auto m = pgtest::put(s, pgtest::message({"old@example.com"}, "soon gone"), ec);
  ASSERT_FALSE(ec);
  auto home = static_cast<unsigned>(pgs::bucket_of("old@example.com", 64) % 3);
  EXPECT_EQ(pgtest::count(home, "SELECT count(*) FROM mail.message"), 1);
  auto parts_before = pgtest::count(home, "SELECT count(*) FROM mail.part");
  EXPECT_GE(parts_before, 3);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(100ms);
    gone = pgtest::count(home, "SELECT count(*) FROM mail.message") == 0;
  }
  EXPECT_TRUE(gone);
  // Dropped whole: no partition older than the retention is left, and the tally agrees.
  EXPECT_EQ(pgtest::count(
                home, "SELECT count(*) FROM mail.part WHERE upper <= now() - interval '2 seconds'"),
            0);
  EXPECT_EQ(pgtest::count(home, "SELECT coalesce(sum(messages), 0)::int8 FROM mail.tally"), 0);
  EXPECT_GE(s.stats().evicted_total, 1u);
}

TEST_F(PgStore, ARetriedBatchStoresNothingTwiceAndCopiesMerge) {
  {
    st::pg_store s(pgtest::config(3));
    ASSERT_TRUE(s.wait_ready(20s));
  }
  // Two mailboxes of shard 0; the message's primary bucket is the first one's.
  std::string a = mailbox_on(0, 3, 64), b = mailbox_on(0, 3, 64, 1);
  auto ba = static_cast<std::int32_t>(pgs::bucket_of(a, 64)),
       bb = static_cast<std::int32_t>(pgs::bucket_of(b, 64));
  auto c = pgtest::connect(0);
  pgs::shard_types t;
  std::vector<std::tuple<std::string, std::uint32_t, std::uint32_t>> types;
  c.query(
      inlet::pg::sql("SELECT typname::text, oid, typarray FROM pg_type WHERE typnamespace = "
                     "'mail'::regnamespace AND typname IN ('addr', 'attach', 'new_message_v2')"),
      inlet::pg::into(types));
  for (auto& [name, oid, arr] : types) {
    if (name == "addr")
      t.addr = oid, t.addr_array = arr;
    else if (name == "attach")
      t.attach = oid, t.attach_array = arr;
    else
      t.new_message = oid, t.new_message_array = arr;
  }
  ASSERT_TRUE(t.complete());
  st::stored_message m;
  std::int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  m.id = st::message_id(pgs::make_id(us, static_cast<std::uint32_t>(ba)));
  m.envelope.rcpt_to = {a, b};
  m.raw = "Subject: x\r\n\r\nbody\r\n";
  m.size = m.raw.size();
  auto put = [&](std::vector<std::string> boxes, std::vector<std::int32_t> bks, bool home) {
    pgs::copy_view v{&m, us, home, ba, &boxes, &bks, false};
    std::string rec;
    pgs::encode_copy(rec, t, v);
    pgs::array_param p;
    p.element = t.new_message;
    p.elements.push_back(rec);
    std::vector<std::int32_t> copy_of, bucket_of;
    for (auto x : bks) copy_of.push_back(1), bucket_of.push_back(x);
    auto r = c.query(inlet::pg::sql(
        "SELECT refused FROM mail.put_v2($1::mail.new_message_v2[], $2, $3, 0, '{}', '{}', '', '')",
        p, copy_of, bucket_of));
    std::vector<std::int32_t> refused{-1};
    EXPECT_FALSE(r.at(0, 0).as(refused));
    EXPECT_TRUE(refused.empty());
  };
  auto rows = [&](const std::string& sql) {
    return pgtest::count(0, sql + " WHERE id = '" + m.id.str() + "'");
  };
  put({a}, {ba}, true);
  put({a}, {ba}, true);  // the same batch again: its commit was not acknowledged
  EXPECT_EQ(rows("SELECT count(*) FROM mail.message"), 1);
  EXPECT_EQ(rows("SELECT count(*) FROM mail.inbox"), 1);
  EXPECT_EQ(pgtest::count(0, "SELECT sum(messages)::int8 FROM mail.tally"), 1);
  put({b}, {bb}, false);  // b's copy, routed separately, meets the stored one
  EXPECT_EQ(rows("SELECT count(*) FROM mail.message"), 1);
  EXPECT_EQ(rows("SELECT cardinality(mailboxes)::int8 FROM mail.message"), 2);
  EXPECT_EQ(rows("SELECT count(*) FROM mail.inbox"), 2);
  EXPECT_EQ(pgtest::count(0, "SELECT sum(messages)::int8 FROM mail.tally"), 1);
}

TEST_F(PgStore, AMailboxCapKeepsTheNewest) {
  auto cfg = pgtest::config(3);
  cfg.mailbox_cap = 5;
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s));
  std::string box = mailbox_on(1, 3, 64), other = mailbox_on(2, 3, 64);
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) {
    std::error_code ec;
    // Message 3 also goes to another mailbox (another shard), which keeps it.
    std::vector<std::string> rcpt = {box};
    if (i == 3) rcpt.push_back(other);
    auto m = pgtest::put(s, pgtest::message(rcpt, "n" + std::to_string(i)), ec);
    ASSERT_FALSE(ec);
    ids.push_back(m->id);
  }
  auto [ec, p] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(box), std::move(h)); });
  ASSERT_FALSE(ec);
  EXPECT_EQ(p.total, 5u);
  ASSERT_EQ(p.messages.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(p.messages[i]->id, ids[11 - i]);
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.message"), 5);
  EXPECT_EQ(pgtest::count(1, "SELECT sum(messages)::int8 FROM mail.tally"), 5);
  EXPECT_EQ(s.stats().evicted_total, 7u);
  auto [oec, op] =
      pgtest::wait<st::page>([&](auto h) { s.async_list(mailbox_req(other), std::move(h)); });
  ASSERT_FALSE(oec);
  ASSERT_EQ(op.messages.size(), 1u);
  EXPECT_EQ(op.messages[0]->id, ids[3]);
}

TEST_F(PgStore, PassesTheSharedSearchTable) {
  // The same queries and expectations as the memory store (store/test/search_cases.hpp):
  // search compiled to SQL means what search::matches means. Three shards, so the
  // fixture's messages are spread and the listing is merged.
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s));
  inlet::store::test::run_search_table(s);
}

TEST_F(PgStore, PassesTheSearchTableWithTheTextLeftToTheStore) {
  // put() builds the search text with the message's builder before the row is written.
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s));
  inlet::store::test::run_search_table(s, inlet::store::test::search_text_mode::deferred);
}

TEST_F(PgStore, KeepsTheListTotalsThroughEveryRead) {
  // The same case as the memory store (store/test/totals_cases.hpp): a message whose
  // lists were cut answers the same totals from either store.
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s));
  inlet::store::test::run_totals_case(s, mailbox_on(1, 3, 64));
}

namespace {

// The OIDs of shard 0's composite types, the message record of `record_type`.
pgs::shard_types load_types(inlet::pg::connection& c, const std::string& record_type) {
  pgs::shard_types t;
  std::vector<std::tuple<std::string, std::uint32_t, std::uint32_t>> types;
  c.query(inlet::pg::sql("SELECT typname::text, oid, typarray FROM pg_type WHERE typnamespace = "
                         "'mail'::regnamespace AND typname IN ('addr', 'attach', $1)",
                         record_type),
          inlet::pg::into(types));
  for (auto& [name, oid, arr] : types) {
    if (name == "addr")
      t.addr = oid, t.addr_array = arr;
    else if (name == "attach")
      t.attach = oid, t.attach_array = arr;
    else
      t.new_message = oid, t.new_message_array = arr;
  }
  return t;
}

// Stores `m` in `box` (bucket `bk`, on shard 0) as a binary of schema version 1 does:
// a mail.new_message_v1 record (this binary's record without its last column, the
// totals, which must be NULL) through mail.put_v1.
void put_v1(inlet::pg::connection& c, const st::stored_message& m, std::int64_t us, std::string box,
            std::int32_t bk) {
  auto t = load_types(c, "new_message_v1");
  ASSERT_TRUE(t.complete());
  std::vector<std::string> boxes{std::move(box)};
  std::vector<std::int32_t> bks{bk};
  pgs::copy_view v{&m, us, true, bk, &boxes, &bks, false};
  std::string rec;
  pgs::encode_copy(rec, t, v);
  ASSERT_EQ(pgs::get_i32(rec.data() + rec.size() - 4), -1);  // totals: NULL
  rec.resize(rec.size() - 8);
  std::string count;
  pgs::put_i32(count, 30);
  rec.replace(0, 4, count);
  pgs::array_param p;
  p.element = t.new_message;
  p.elements.push_back(rec);
  std::vector<std::int32_t> copy_of{1, 1}, bucket_of{bk, bk};
  auto r = c.query(inlet::pg::sql(
      "SELECT refused FROM mail.put_v1($1::mail.new_message_v1[], $2, $3, 0, '{}', '{}', '', '')",
      p, copy_of, bucket_of));
  std::vector<std::int32_t> refused{-1};
  EXPECT_FALSE(r.at(0, 0).as(refused));
  EXPECT_TRUE(refused.empty());
}

void old_message(st::stored_message& m, std::int64_t us, std::uint32_t bucket,
                 const std::string& box) {
  m.id = st::message_id(pgs::make_id(us, bucket));
  m.envelope.rcpt_to = {box};
  m.summary.from = {"Old", "old@example.org"};
  m.summary.to = {{"", box}};
  m.summary.subject = "oldrow";
  m.summary.search_text = "oldrow";
  m.raw = "Subject: oldrow\r\n\r\nbody\r\n";
  m.size = m.raw.size();
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_F(PgStore, ADatabaseOfSchemaVersion1UpgradesAndItsRowsReadTotalsZero) {
  {
    st::pg_store s(pgtest::config(3));
    ASSERT_TRUE(s.wait_ready(20s));
  }
  // Back to schema version 1 on every shard: what migrations 2 and 3 add is removed, and
  // the functions they replaced are restored from migration 1.
  std::vector<std::string> restore_v1;
  for (auto stmt : pgs::split_sql(pgs::migrations().at(0).sql)) {
    std::string text(stmt);
    for (const char* f : {"CREATE FUNCTION mail.store_copies(", "CREATE FUNCTION mail.writable(",
                          "CREATE FUNCTION mail.clear_v1("}) {
      auto at = text.find(f);
      if (at != std::string::npos)
        restore_v1.push_back(text.replace(at, 15, "CREATE OR REPLACE FUNCTION"));
    }
  }
  ASSERT_EQ(restore_v1.size(), 3u);
  for (unsigned i = 0; i < 3; ++i) {
    auto c = pgtest::connect(i);
    c.execute("SET client_min_messages = warning");
    c.execute("DROP TYPE mail.new_message_v2 CASCADE");
    c.execute("ALTER TABLE mail.message DROP COLUMN totals");
    c.execute("DROP FUNCTION mail.log_moving_rows() CASCADE");
    c.execute("DROP TABLE mail.copying, mail.move_log");
    c.execute("DROP INDEX mail.message_primary_bucket");
    c.execute(
        "DROP FUNCTION mail.expect_buckets_v1, mail.start_copy_v1, mail.freeze_buckets_v1, "
        "mail.take_buckets_v1, mail.leave_buckets_v2, mail.release_buckets_v1");
    for (auto& f : restore_v1) c.execute(f);
    c.execute("DELETE FROM mail.migration WHERE version > 1");
    EXPECT_EQ(pgtest::count(i, "SELECT max(version)::int8 FROM mail.migration"), 1);
  }
  // A row written by a binary of version 1.
  std::string box = mailbox_on(0, 3, 64);
  auto bk = pgs::bucket_of(box, 64);
  auto us = now_us();
  st::stored_message old;
  old_message(old, us, bk, box);
  {
    auto c = pgtest::connect(0);
    put_v1(c, old, us, box, static_cast<std::int32_t>(bk));
  }
  ASSERT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.message"), 1);

  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  for (unsigned i = 0; i < 3; ++i)
    EXPECT_EQ(pgtest::count(i, "SELECT max(version)::int8 FROM mail.migration"),
              pgs::migrations().back().version);
  const st::summary::list_totals zero{};
  auto got = inlet::store::test::get_sync(s, old.id);
  ASSERT_FALSE(got.ec) << got.ec.message();
  inlet::store::test::expect_totals(got.value, zero, "get of an old row");
  EXPECT_EQ(got.value->summary.subject, "oldrow");

  // A new message with cut lists beside it, and one more from a binary of version 1
  // (still running beside this one): each reads its own totals.
  auto cut = inlet::store::test::totals_message(box, "newrow");
  cut.summary.to = {{"", box}};
  cut.summary.totals.to = 80'000;
  cut.summary.totals.attachments = 9;
  std::error_code ec;
  auto stored = s.put_sync(std::move(cut), ec);
  ASSERT_FALSE(ec) << ec.message();
  auto us2 = now_us();
  st::stored_message later;
  old_message(later, us2, bk, box);
  {
    auto c = pgtest::connect(0);
    put_v1(c, later, us2, box, static_cast<std::int32_t>(bk));
  }
  st::summary::list_totals want{};
  want.to = 80'000;
  want.attachments = 9;
  auto p = inlet::store::test::list_all(s, 0, 10, box);
  ASSERT_EQ(p.messages.size(), 3u);
  inlet::store::test::expect_totals(p.messages[0], zero, "list: version 1 row");
  inlet::store::test::expect_totals(p.messages[1], want, "list: new row");
  inlet::store::test::expect_totals(p.messages[2], zero, "list: old row");
  EXPECT_EQ(p.messages[2]->id, old.id);
  st::list_request r(0, 10);
  ASSERT_FALSE(st::search::parse("subject:oldrow", "", r.query));
  auto found = inlet::store::test::list_sync(s, r);
  ASSERT_FALSE(found.ec);
  ASSERT_EQ(found.value.messages.size(), 2u);
  inlet::store::test::expect_totals(found.value.messages[1], zero, "search: old row");
}

TEST_F(PgStore, EventsReachEveryInstance) {
  auto cfg = pgtest::config(3);
  st::pg_store a(cfg), b(cfg);
  ASSERT_TRUE(a.wait_ready(20s));
  ASSERT_TRUE(b.wait_ready(20s));
  struct seen_t {
    std::mutex mu;
    std::vector<st::store_event> events;
    std::size_t count(st::store_event::kind k) {
      std::lock_guard lk(mu);
      return static_cast<std::size_t>(
          std::count_if(events.begin(), events.end(), [k](auto& e) { return e.what == k; }));
    }
  };
  auto on_a = std::make_shared<seen_t>(), on_b = std::make_shared<seen_t>();
  a.subscribe([on_a](const st::store_event& e) {
    std::lock_guard lk(on_a->mu);
    on_a->events.push_back(e);
  });
  b.subscribe([on_b](const st::store_event& e) {
    std::lock_guard lk(on_b->mu);
    on_b->events.push_back(e);
  });
  auto wait_for = [](seen_t& s, st::store_event::kind k, std::size_t n) {
    for (int i = 0; i < 500 && s.count(k) < n; ++i) std::this_thread::sleep_for(10ms);
    return s.count(k);
  };
  std::error_code ec;
  // A message on three shards is announced once on each instance.
  auto m = pgtest::put(
      a, pgtest::message({mailbox_on(0, 3, 64), mailbox_on(1, 3, 64), mailbox_on(2, 3, 64)}, "hi"),
      ec);
  ASSERT_FALSE(ec);
  using k = st::store_event::kind;
  EXPECT_EQ(wait_for(*on_b, k::created, 1), 1u);
  EXPECT_EQ(wait_for(*on_a, k::created, 1), 1u);
  {
    std::lock_guard lk(on_b->mu);
    auto it = std::find_if(on_b->events.begin(), on_b->events.end(),
                           [](auto& e) { return e.what == k::created; });
    ASSERT_NE(it, on_b->events.end());
    ASSERT_TRUE(it->message);
    EXPECT_EQ(it->message->id, m->id);
    EXPECT_EQ(it->message->summary.subject, "hi");
  }
  auto [rec, n] = pgtest::wait<std::size_t>(
      [&](auto h) { a.async_set_read(st::selection::of_ids({m->id}), true, std::move(h)); });
  ASSERT_FALSE(rec);
  EXPECT_EQ(wait_for(*on_b, k::read_changed, 1), 1u);
  auto [dec, dn] = pgtest::wait<std::size_t>(
      [&](auto h) { b.async_remove(st::selection::of_ids({m->id}), std::move(h)); });
  ASSERT_FALSE(dec);
  EXPECT_EQ(wait_for(*on_a, k::deleted, 1), 1u);
  std::this_thread::sleep_for(300ms);  // nothing more arrives: no instance hears itself twice
  EXPECT_EQ(on_a->count(k::created), 1u);
  EXPECT_EQ(on_b->count(k::created), 1u);
  EXPECT_EQ(on_b->count(k::deleted), 1u);
  EXPECT_EQ(on_a->count(k::read_changed), 1u);
}

// Migration 3's index on primary_bucket is declared on the parent only; inletd builds it
// partition by partition with CREATE INDEX CONCURRENTLY in the background, so writes go
// on while it builds. Here the build is held at its end by a reader's open snapshot
// (a concurrent build waits for older snapshots; a plain one would hold writes until it
// finished): meanwhile puts and listings answer; once the reader ends, the index is
// complete and valid.
TEST_F(PgStore, Migration3BuildsItsIndexWithoutHoldingWrites) {
  const std::string box = mailbox_on(0, 3, 64);
  {
    st::pg_store s(pgtest::config(3));
    ASSERT_TRUE(s.wait_ready(20s));
    for (int i = 0; i < 5; ++i) {
      std::error_code ec;
      pgtest::put(s, pgtest::message({box}, "before" + std::to_string(i)), ec);
      ASSERT_FALSE(ec);
    }
  }
  std::string declare;
  for (auto stmt : pgs::split_sql(pgs::migrations().at(2).sql))
    if (std::string(stmt).find("INDEX message_primary_bucket") != std::string::npos)
      declare = std::string(stmt);
  ASSERT_NE(declare.find("ON ONLY mail.message"), std::string::npos) << declare;
  const std::string attached =
      "SELECT count(*) FROM pg_inherits WHERE inhparent = 'mail.message_primary_bucket'::regclass";
  const std::string parts =
      "SELECT count(*) FROM pg_inherits WHERE inhparent = 'mail.message'::regclass";
  const std::string valid =
      "SELECT count(*) FROM pg_index WHERE indexrelid = 'mail.message_primary_bucket'::regclass "
      "AND indisvalid";
  // A new database gets the index whole: its partitions are made after the migration
  // and take the parent's indexes.
  EXPECT_EQ(pgtest::count(0, valid), 1);
  EXPECT_EQ(pgtest::count(0, attached), pgtest::count(0, parts));
  // Shard 0 as migration 3 leaves a database that had rows: the index declared, not built.
  {
    auto c = pgtest::connect(0);
    c.execute("DROP INDEX mail.message_primary_bucket");
    c.execute(declare);
  }
  ASSERT_GT(pgtest::count(0, parts), 0);
  EXPECT_EQ(pgtest::count(0, attached), 0);
  EXPECT_EQ(pgtest::count(0, valid), 0);

  auto reader = pgtest::connect(0);
  reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ");
  reader.execute("SELECT count(*) FROM mail.message");
  st::pg_store s(pgtest::config(3));
  ASSERT_TRUE(s.wait_ready(20s));
  const std::string waiting =
      "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' "
      "AND wait_event_type = 'Lock'";
  for (int i = 0; i < 500 && pgtest::count(0, waiting) == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(pgtest::count(0, waiting), 1);  // the build is under way, held by the reader
  for (int i = 0; i < 5; ++i) {
    std::error_code ec;
    pgtest::put(s, pgtest::message({box}, "during" + std::to_string(i)), ec);
    EXPECT_FALSE(ec) << ec.message();
  }
  st::list_request r(0, 100);
  r.mailbox = box;
  auto [lec, p] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
  ASSERT_FALSE(lec) << lec.message();
  EXPECT_EQ(p.total, 10u);
  EXPECT_EQ(pgtest::count(0, valid), 0);  // not finished: the writes did not wait for it

  reader.execute("COMMIT");
  for (int i = 0; i < 500 && pgtest::count(0, valid) == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(pgtest::count(0, valid), 1);
  EXPECT_EQ(pgtest::count(0, attached), pgtest::count(0, parts));
  EXPECT_EQ(pgtest::count(0,
                          "SELECT count(*) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                          "WHERE i.relnamespace = 'mail'::regnamespace AND NOT x.indisvalid"),
            0);
}
