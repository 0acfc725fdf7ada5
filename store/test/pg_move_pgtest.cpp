// Moving buckets while the store runs (four throwaway clusters: a cluster of three
// shards, then a fourth added): nothing acknowledged is lost, nothing is listed twice,
// an interrupted move resumes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "ids.hpp"
#include "inlet/store/pg_admin.hpp"
#include "inlet/store/pg_store.hpp"
#include "pg_test_env.hpp"

using namespace std::chrono_literals;
namespace st = inlet::store;
namespace pgs = inlet::store::pgstore;
namespace adm = inlet::store::pg_admin;

namespace {

constexpr std::uint32_t buckets = 64;

std::string mailbox_in(std::uint32_t bucket, int n) {
  for (int i = 0;; ++i) {
    std::string m = "mover" + std::to_string(i) + "@example.com";
    if (pgs::bucket_of(m, buckets) == bucket && n-- == 0) return m;
  }
}

void reset_shards() {
  for (unsigned i = 0; i < pgtest::shard_dsns().size(); ++i) {
    auto c = pgtest::connect(i);
    c.execute("SET client_min_messages = warning");
    c.execute("DROP SCHEMA IF EXISTS mail CASCADE");
  }
}

std::vector<std::string> dsns(std::size_t n) {
  auto all = pgtest::shard_dsns();
  return {all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n)};
}

// Every ID in a page at most once.
bool distinct(const st::page& p) {
  std::set<std::string> seen;
  for (auto& m : p.messages)
    if (!seen.insert(m->id).second) return false;
  return true;
}

}  // namespace

class PgMove : public ::testing::Test {
 protected:
  void SetUp() override {
    if (pgtest::shard_dsns().size() < 4)
      GTEST_SKIP() << "needs INLET_PG_SHARDS with 4 shards (run via ctest)";
    reset_shards();
  }
};

TEST_F(PgMove, MovesABucketUnderLoadWithoutLossOrDoubles) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  const std::uint32_t bucket = 7;  // on shard 7 % 3 == 1
  const unsigned to = 2;
  std::vector<std::string> boxes = {mailbox_in(bucket, 0), mailbox_in(bucket, 1)};
  std::string other = mailbox_in(8, 0);  // shard 2, not moving

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<std::string> acked;
  std::atomic<int> failed{0}, pages{0}, doubled{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      std::error_code ec;
      // Half to one mailbox of the bucket, half to both it and a mailbox elsewhere.
      std::vector<std::string> rcpt = {boxes[static_cast<std::size_t>(i) % 2]};
      if (i % 2) rcpt.push_back(other);
      auto m = pgtest::put(s, pgtest::message(rcpt, "m" + std::to_string(i)), ec);
      if (ec) {
        failed.fetch_add(1);
        continue;
      }
      std::lock_guard lk(mu);
      acked.push_back(m->id);
    }
  });
  std::thread reader([&] {
    while (!stop.load()) {
      auto [ec, p] = pgtest::wait<st::page>(
          [&](auto h) { s.async_list(st::list_request(0, 500), std::move(h)); });
      if (!ec) {
        pages.fetch_add(1);
        if (!distinct(p) || p.messages.size() > p.total + 5) doubled.fetch_add(1);
      }
      st::list_request r(0, 500);
      r.mailbox = boxes[0];
      auto [mec, mp] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
      if (!mec && !distinct(mp)) doubled.fetch_add(1);
    }
  });
  std::this_thread::sleep_for(700ms);
  adm::move_result res;
  std::string msg;
  auto ec = adm::move_bucket(dsns(3), bucket, to, res, msg);
  std::this_thread::sleep_for(700ms);
  stop.store(true);
  writer.join();
  reader.join();
  ASSERT_FALSE(ec) << msg;
  EXPECT_EQ(res.from, 1u);
  EXPECT_GT(res.copied, 0u);
  EXPECT_EQ(failed.load(), 0);  // puts during the move waited, none failed
  EXPECT_EQ(doubled.load(), 0);
  EXPECT_GT(pages.load(), 0);

  // Where things are now.
  auto stat = adm::status(dsns(3));
  EXPECT_TRUE(std::find(stat[2].owned.begin(), stat[2].owned.end(), 7) != stat[2].owned.end());
  EXPECT_TRUE(std::find(stat[1].owned.begin(), stat[1].owned.end(), 7) == stat[1].owned.end());
  EXPECT_TRUE(stat[1].frozen.empty() && stat[1].gone.empty() && stat[2].incoming.empty());
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.inbox WHERE bucket = 7"), 0);
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.message WHERE buckets @> ARRAY[7]"), 0);

  // Every acknowledged message exactly once: one home copy in the cluster, readable.
  std::map<std::string, int> homes;
  for (unsigned i = 0; i < 3; ++i) {
    auto c = pgtest::connect(i);
    std::vector<std::string> ids;
    c.query(inlet::pg::sql("SELECT id FROM mail.message WHERE home"), inlet::pg::into(ids));
    for (auto& id : ids) homes[id]++;
  }
  std::lock_guard lk(mu);
  ASSERT_FALSE(acked.empty());
  for (auto& id : acked) EXPECT_EQ(homes[id], 1) << id;
  EXPECT_EQ(homes.size(), acked.size());
  // Listings agree: the moved mailbox lists all of its messages from the new shard.
  std::size_t in_box0 = 0;
  for (std::size_t i = 0; i < acked.size(); i += 2) ++in_box0;
  st::list_request r(0, 100000);
  r.mailbox = boxes[0];
  auto [lec, p] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
  ASSERT_FALSE(lec);
  EXPECT_EQ(p.total, in_box0);
  EXPECT_EQ(p.messages.size(), in_box0);
  auto [gec, g] = pgtest::wait<st::page>(
      [&](auto h) { s.async_list(st::list_request(0, 100000), std::move(h)); });
  ASSERT_FALSE(gec);
  EXPECT_EQ(g.total, acked.size());
  EXPECT_EQ(g.messages.size(), acked.size());
  EXPECT_TRUE(distinct(g));
  for (std::size_t i = 0; i < acked.size(); i += 97) {
    auto [e, m] =
        pgtest::wait<st::message_ptr>([&](auto h) { s.async_get(acked[i], std::move(h)); });
    EXPECT_FALSE(e) << acked[i];
  }
}

// Writes go on while a bucket is copied: new messages, deletes, read flags and tags made
// after the copy reach the new shard through the old shard's change notes.
TEST_F(PgMove, ChangesDuringTheCopyReachTheNewShard) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  const std::string box = mailbox_in(4, 0), box2 = mailbox_in(4, 1);  // shard 1
  const std::string there = mailbox_in(3, 0);                         // shard 0, the target
  std::vector<std::string> solo, shared;
  for (int i = 0; i < 10; ++i) {
    std::error_code ec;
    auto m = pgtest::put(s, pgtest::message({box}, "s" + std::to_string(i)), ec);
    ASSERT_FALSE(ec);
    solo.push_back(m->id);
  }
  // Copies on both shards: the new shard's copy gains the moving bucket's mailboxes.
  for (int i = 0; i < 4; ++i) {
    std::error_code ec;
    auto m = pgtest::put(s, pgtest::message({box, there}, "b" + std::to_string(i)), ec);
    ASSERT_FALSE(ec);
    shared.push_back(m->id);
  }
  auto changed = [&](std::vector<std::string> ids, auto start) {
    auto [ec, n] = pgtest::wait<std::size_t>(
        [&](auto h) { start(st::selection::of_ids(std::move(ids)), std::move(h)); });
    EXPECT_FALSE(ec) << ec.message();
    return n;
  };
  std::vector<std::string> added;
  auto after_copy = [&] {
    // The bucket is still owned by shard 1: every change is taken at once.
    for (int i = 0; i < 5; ++i) {
      std::error_code ec;
      auto m = pgtest::put(s, pgtest::message({box2}, "n" + std::to_string(i)), ec);
      EXPECT_FALSE(ec);
      if (m) added.push_back(m->id);
    }
    EXPECT_EQ(changed({solo[0], solo[1], solo[2], shared[2]},
                      [&](auto sel, auto h) { s.async_remove(std::move(sel), std::move(h)); }),
              4u);
    EXPECT_EQ(changed({solo[3], solo[4], shared[0]},
                      [&](auto sel, auto h) {
                        s.async_set_read(std::move(sel), true, std::move(h));
                      }),
              3u);
    EXPECT_EQ(changed({solo[5], shared[1]},
                      [&](auto sel, auto h) {
                        s.async_set_tags(std::move(sel), {"moved"}, std::move(h));
                      }),
              2u);
  };
  adm::move_result res;
  std::string msg;
  ASSERT_FALSE(adm::move_bucket(dsns(3), 4, 0, res, msg, after_copy)) << msg;
  EXPECT_EQ(res.from, 1u);
  EXPECT_EQ(res.copied, 14u);
  EXPECT_GE(res.caught_up, 12u);  // 5 new, 4 deleted, 3 read, 2 tagged (a change may note twice)
  std::printf("catch-up: %llu notes, writes held %.1f ms\n",
              static_cast<unsigned long long>(res.caught_up), res.frozen_ms);

  // The old shard keeps nothing of the bucket, the new one has what the bucket holds now.
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.message"), 0);
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.move_log"), 0);
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.copying"), 0);
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.inbox WHERE bucket = 4"), 7 + 3 + 5);
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.message WHERE home"), 7 + 3 + 5);
  EXPECT_EQ(pgtest::count(0, "SELECT coalesce(sum(messages), 0)::int8 FROM mail.tally"),
            7 + 3 + 5);
  EXPECT_EQ(pgtest::count(0, "SELECT coalesce(sum(unread), 0)::int8 FROM mail.tally"),
            7 + 3 + 5 - 3);

  auto listed = [&](const std::string& mb) {
    st::list_request r(0, 100);
    r.mailbox = mb;
    auto [ec, p] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
    EXPECT_FALSE(ec) << ec.message();
    return p;
  };
  // The store's map follows the move within its refresh.
  for (int i = 0; i < 100 && listed(box2).total != 5; ++i)
    std::this_thread::sleep_for(50ms);
  EXPECT_EQ(listed(box).total, 7u + 3u);
  EXPECT_EQ(listed(box2).total, 5u);
  EXPECT_EQ(listed(there).total, 3u);
  auto get = [&](const std::string& id) {
    return pgtest::wait<st::message_ptr>([&](auto h) { s.async_get(id, std::move(h)); });
  };
  for (auto& id : {solo[0], solo[1], solo[2], shared[2]}) EXPECT_TRUE(get(id).first) << id;
  for (auto& id : added) EXPECT_FALSE(get(id).first) << id;
  for (auto& id : {solo[3], solo[4], shared[0]}) {
    auto [ec, m] = get(id);
    ASSERT_FALSE(ec) << id;
    EXPECT_TRUE(m->is_read()) << id;
  }
  EXPECT_FALSE(get(solo[6]).second->is_read());
  for (auto& id : {solo[5], shared[1]}) {
    auto [ec, m] = get(id);
    ASSERT_FALSE(ec) << id;
    ASSERT_TRUE(m->tags());
    EXPECT_EQ(*m->tags(), std::vector<std::string>{"moved"}) << id;
  }
  // The shared copies on shard 0 hold both mailboxes, once.
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.message WHERE cardinality(mailboxes) = 2"),
            3);
}

TEST_F(PgMove, AnInterruptedMoveResumes) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  std::string box = mailbox_in(4, 0);  // shard 1
  {
    st::pg_store s(cfg);
    ASSERT_TRUE(s.wait_ready(20s));
    for (int i = 0; i < 20; ++i) {
      std::error_code ec;
      auto m = pgtest::message({box}, "r" + std::to_string(i));
      m.summary.totals.to = 1000 + static_cast<std::uint32_t>(i);  // a cut list's count
      m.summary.totals.attachments = 7;
      pgtest::put(s, std::move(m), ec);
      ASSERT_FALSE(ec);
    }
  }
  // The move stopped after freezing and copying part: do those steps by hand.
  {
    auto b = pgtest::connect(0);
    b.execute(inlet::pg::sql("SELECT mail.expect_bucket_v1(4)"));
    auto a = pgtest::connect(1);
    a.execute(inlet::pg::sql("SELECT mail.freeze_bucket_v1(4, '')"));
  }
  adm::move_result res;
  std::string msg;
  ASSERT_FALSE(adm::move_bucket(dsns(3), 4, 0, res, msg)) << msg;
  EXPECT_EQ(res.from, 1u);
  EXPECT_EQ(res.copied, 20u);
  // And once more: nothing left to do.
  ASSERT_FALSE(adm::move_bucket(dsns(3), 4, 0, res, msg)) << msg;
  EXPECT_TRUE(res.already_there);
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s));
  st::list_request r(0, 100);
  r.mailbox = box;
  auto [ec, p] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(p.total, 20u);
  // The copies on the new shard carry their list totals.
  ASSERT_EQ(p.messages.size(), 20u);
  for (auto& m : p.messages) {
    EXPECT_EQ(m->summary.totals.to, 1000 + std::stoul(m->summary.subject.substr(1)));
    EXPECT_EQ(m->summary.totals.attachments, 7u);
  }
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.message WHERE totals IS NOT NULL"), 20);
  EXPECT_EQ(pgtest::count(1, "SELECT count(*) FROM mail.message"), 0);
}

// A move stopped after it began noting changes (the notes pile up while writes go on)
// is finished by running it again: the copy and the notes bring everything.
TEST_F(PgMove, AMoveInterruptedDuringItsCopyResumes) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s));
  const std::string box = mailbox_in(5, 0);  // shard 2
  std::vector<std::string> ids;
  auto put = [&](const std::string& subject) {
    std::error_code ec;
    auto m = pgtest::put(s, pgtest::message({box}, subject), ec);
    EXPECT_FALSE(ec);
    if (m) ids.push_back(m->id);
  };
  for (int i = 0; i < 10; ++i) put("a" + std::to_string(i));
  {
    auto b = pgtest::connect(0);
    b.execute(inlet::pg::sql("SELECT mail.expect_bucket_v1(5)"));
    auto a = pgtest::connect(2);
    a.execute(inlet::pg::sql("SELECT mail.start_copy_v1('{5}')"));
  }
  for (int i = 0; i < 3; ++i) put("b" + std::to_string(i));
  auto [dec, deleted] = pgtest::wait<std::size_t>([&](auto h) {
    s.async_remove(st::selection::of_ids({ids[0], ids[1]}), std::move(h));
  });
  ASSERT_FALSE(dec);
  EXPECT_EQ(deleted, 2u);
  auto [rec, marked] = pgtest::wait<std::size_t>(
      [&](auto h) { s.async_set_read(st::selection::of_ids({ids[2]}), true, std::move(h)); });
  ASSERT_FALSE(rec);
  EXPECT_EQ(marked, 1u);
  EXPECT_EQ(pgtest::count(2, "SELECT count(DISTINCT id) FROM mail.move_log WHERE bucket = 5"), 6);
  EXPECT_EQ(adm::status(dsns(3))[2].copying, std::vector<std::int32_t>{5});

  adm::move_result res;
  std::string msg;
  ASSERT_FALSE(adm::move_bucket(dsns(3), 5, 0, res, msg)) << msg;
  EXPECT_EQ(res.from, 2u);
  EXPECT_EQ(res.copied, 11u);
  EXPECT_GE(res.caught_up, 6u);
  EXPECT_EQ(pgtest::count(2, "SELECT count(*) FROM mail.move_log"), 0);
  EXPECT_EQ(pgtest::count(2, "SELECT count(*) FROM mail.copying"), 0);
  EXPECT_EQ(pgtest::count(2, "SELECT count(*) FROM mail.message"), 0);
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.inbox WHERE bucket = 5"), 11);
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.message WHERE read AND primary_bucket = 5"),
            1);
  st::list_request r(0, 100);
  r.mailbox = box;
  st::page p;
  for (int i = 0; i < 100; ++i) {  // the store's map follows within its refresh
    auto [ec, got] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
    p = got;
    if (!ec && p.total == 11) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(p.total, 11u);
  EXPECT_EQ(p.unread, 10u);
}

// A move stopped after the new shard took the bucket and before the old one left it:
// both hold the bucket's copies (frozen on the old shard, owned on the new). Listings,
// searches and store_stats count them once (the new shard's) without reading again, and
// running the move again finishes it.
TEST_F(PgMove, AMoveInterruptedBetweenTakeAndLeaveCountsOnceAndResumes) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  std::string box = mailbox_in(10, 0);    // shard 1
  std::string moved = mailbox_in(9, 0);   // shard 0, moved to shard 1
  // Bucket 12 (shard 0, empty) is moved to shard 2 and stopped there too.
  {
    st::pg_store s(cfg);
    ASSERT_TRUE(s.wait_ready(20s));
    std::vector<std::string> in_moved;
    for (int i = 0; i < 5; ++i) {
      std::error_code ec;
      pgtest::put(s, pgtest::message({box}, "t" + std::to_string(i)), ec);
      ASSERT_FALSE(ec);
    }
    for (int i = 0; i < 4; ++i) {
      std::error_code ec;
      auto m = pgtest::put(s, pgtest::message({moved, box}, "moving" + std::to_string(i)), ec);
      ASSERT_FALSE(ec);
      in_moved.push_back(m->id);
    }
    auto [rec, marked] = pgtest::wait<std::size_t>([&](auto h) {
      s.async_set_read(st::selection::of_ids({in_moved[0]}), true, std::move(h));
    });
    ASSERT_FALSE(rec);
    ASSERT_EQ(marked, 1u);
  }
  adm::move_result res;
  std::string msg;
  auto stop_there = [] { return false; };
  ASSERT_EQ(adm::move_bucket(dsns(3), 9, 1, res, msg, {}, stop_there),
            std::make_error_code(std::errc::operation_canceled));
  ASSERT_EQ(adm::move_bucket(dsns(3), 12, 2, res, msg, {}, stop_there),
            std::make_error_code(std::errc::operation_canceled));
  auto mid = adm::status(dsns(3));
  EXPECT_EQ(mid[0].frozen, (std::vector<std::int32_t>{9, 12}));
  EXPECT_TRUE(std::find(mid[1].owned.begin(), mid[1].owned.end(), 9) != mid[1].owned.end());
  EXPECT_TRUE(std::find(mid[2].owned.begin(), mid[2].owned.end(), 12) != mid[2].owned.end());
  EXPECT_EQ(
      pgtest::count(0, "SELECT count(*) FROM mail.message WHERE home AND primary_bucket = 9"), 4);
  EXPECT_EQ(
      pgtest::count(1, "SELECT count(*) FROM mail.message WHERE home AND primary_bucket = 9"), 4);

  // A store started now reads every shard's buckets and tally before it is ready.
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s));
  auto stats = s.stats();
  EXPECT_EQ(stats.messages, 9u);
  EXPECT_EQ(stats.unread, 8u);
  for (int i = 0; i < 3; ++i) {
    auto [ec, p] = pgtest::wait<st::page>(
        [&](auto h) { s.async_list(st::list_request(0, 100), std::move(h)); });
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(p.total, 9u);
    EXPECT_EQ(p.unread, 8u);
    EXPECT_EQ(p.messages.size(), 9u);
    EXPECT_TRUE(distinct(p));
  }
  st::list_request q(0, 100);
  ASSERT_FALSE(st::search::parse("subject:moving", {}, q.query));
  auto [qec, qp] = pgtest::wait<st::page>([&](auto h) { s.async_list(q, std::move(h)); });
  ASSERT_FALSE(qec) << qec.message();
  EXPECT_EQ(qp.total, 9u);
  EXPECT_EQ(qp.matched, 4u);
  EXPECT_EQ(qp.matched_unread, 3u);
  EXPECT_EQ(qp.messages.size(), 4u);
  std::string metrics;
  s.append_metrics(metrics);
  EXPECT_NE(metrics.find("inlet_pg_list_rereads_total 0\n"), std::string::npos);  // not read again

  ASSERT_FALSE(adm::move_bucket(dsns(3), 9, 1, res, msg)) << msg;
  EXPECT_EQ(res.from, 0u);
  ASSERT_FALSE(adm::move_bucket(dsns(3), 12, 2, res, msg)) << msg;
  auto st3 = adm::status(dsns(3));
  EXPECT_TRUE(st3[0].frozen.empty() && st3[0].gone.empty());
  EXPECT_TRUE(std::find(st3[1].owned.begin(), st3[1].owned.end(), 9) != st3[1].owned.end());
  auto [ec, p] = pgtest::wait<st::page>(
      [&](auto h) { s.async_list(st::list_request(0, 100), std::move(h)); });
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(p.total, 9u);
  EXPECT_EQ(p.unread, 8u);
}

// For a moment in a move the map can name no owner for a bucket (rebuilt from the old
// shard's refresh after its leave, before the new shard's after its take). A mailbox
// listing and a selection by mailbox then wait for the owner instead of answering
// "unavailable". The moment is made here by hand, longer than a move makes it: the
// owner's row says `gone` for 300 ms.
TEST_F(PgMove, MailboxReadsWaitForABucketWithoutOwnerInTheMap) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  st::pg_store s(cfg);
  ASSERT_TRUE(s.wait_ready(20s));
  const std::string box = mailbox_in(7, 0);  // shard 1
  for (int i = 0; i < 3; ++i) {
    std::error_code ec;
    pgtest::put(s, pgtest::message({box}, "w" + std::to_string(i)), ec);
    ASSERT_FALSE(ec);
  }
  const auto owned_before = s.shard_stats()[1].buckets_owned;
  auto set_state = [](const char* state) {
    auto c = pgtest::connect(1);
    c.execute(inlet::pg::sql("UPDATE mail.bucket SET state = $1 WHERE bucket = 7",
                             std::string(state)));
    c.execute("NOTIFY inlet_events, '- m'");  // the instances read the buckets again
  };
  // Makes the bucket ownerless in the store's map, runs `op` while it is, and gives it
  // back its owner 300 ms later.
  auto while_ownerless = [&](auto op) {
    set_state("gone");
    for (int i = 0; i < 200 && s.shard_stats()[1].buckets_owned == owned_before; ++i)
      std::this_thread::sleep_for(10ms);
    ASSERT_EQ(s.shard_stats()[1].buckets_owned, owned_before - 1);
    std::thread back([&] {
      std::this_thread::sleep_for(300ms);
      set_state("owned");
    });
    op();
    back.join();
  };
  while_ownerless([&] {
    auto [ec, marked] = pgtest::wait<std::size_t>(
        [&](auto h) { s.async_set_read(st::selection::everything(box), true, std::move(h)); });
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(marked, 3u);
  });
  while_ownerless([&] {
    st::list_request r(0, 100);
    r.mailbox = box;
    auto [ec, p] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(p.total, 3u);
    EXPECT_EQ(p.unread, 0u);
  });
}

TEST_F(PgMove, AddsAShardAndRebalances) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  std::vector<std::string> ids;
  {
    st::pg_store s(cfg);
    ASSERT_TRUE(s.wait_ready(20s));
    for (int i = 0; i < 200; ++i) {
      std::error_code ec;
      auto m = pgtest::put(s, pgtest::message({"r" + std::to_string(i) + "@example.com"}, "x"), ec);
      ASSERT_FALSE(ec);
      ids.push_back(m->id);
    }
  }
  auto cfg4 = pgtest::config(4);
  cfg4.buckets = buckets;
  st::pg_store s(cfg4);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;
  auto before = adm::status(dsns(4));
  EXPECT_EQ(before[3].shard_index, 3);
  EXPECT_TRUE(before[3].owned.empty());
  auto plan = adm::plan_rebalance(before);
  EXPECT_EQ(plan.size(), 16u);  // 22/21/21/0 -> 16 each
  for (auto [b, to] : plan) {
    adm::move_result res;
    std::string msg;
    ASSERT_FALSE(adm::move_bucket(dsns(4), b, to, res, msg)) << msg;
  }
  auto after = adm::status(dsns(4));
  std::int64_t total = 0;
  for (auto& sh : after) {
    EXPECT_EQ(sh.owned.size(), 16u) << sh.index;
    total += sh.messages;
  }
  EXPECT_EQ(total, 200);
  EXPECT_GT(after[3].messages, 0);
  auto [ec, p] = pgtest::wait<st::page>(
      [&](auto h) { s.async_list(st::list_request(0, 1000), std::move(h)); });
  ASSERT_FALSE(ec);
  EXPECT_EQ(p.total, 200u);
  EXPECT_EQ(p.messages.size(), 200u);
  for (auto& id : ids) {
    auto [e, m] = pgtest::wait<st::message_ptr>([&](auto h) { s.async_get(id, std::move(h)); });
    EXPECT_FALSE(e) << id;
  }
}

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  return v[i];
}

}  // namespace

// A fourth shard added and the buckets rebalanced while two writers put and a reader
// lists: no put or read fails, the global total never drops below what was acknowledged
// before the listing began nor exceeds what was acknowledged (or in flight) after it,
// every acknowledged message ends with exactly one home copy. Put latency before and
// during the rebalance is printed (measured, never asserted).
TEST_F(PgMove, RebalancesUnderLoadWithoutStallOrDip) {
  auto cfg = pgtest::config(3);
  cfg.buckets = buckets;
  std::size_t seeded = 0;
  {
    st::pg_store s(cfg);
    ASSERT_TRUE(s.wait_ready(20s));
    for (int i = 0; i < 300; ++i, ++seeded) {
      std::error_code ec;
      pgtest::put(s, pgtest::message({"seed" + std::to_string(i) + "@example.com"}, "x"), ec);
      ASSERT_FALSE(ec);
    }
  }
  auto cfg4 = pgtest::config(4);
  cfg4.buckets = buckets;
  st::pg_store s(cfg4);
  ASSERT_TRUE(s.wait_ready(20s)) << s.health().detail;

  constexpr int writers = 2;
  std::atomic<bool> stop{false}, moving{false};
  std::atomic<std::size_t> acked_n{seeded};
  std::mutex mu;
  std::vector<std::string> acked;
  std::vector<double> before_ms, during_ms;
  std::string list_error;  // the first failed read, under mu
  std::atomic<int> put_failed{0}, list_failed{0}, dips{0}, over{0}, doubled{0}, lists{0};
  std::vector<std::thread> ws;
  for (int w = 0; w < writers; ++w) {
    ws.emplace_back([&, w] {
      for (int i = 0; !stop.load() && i < 200000; ++i) {
        std::vector<std::string> rcpt = {"w" + std::to_string((i * writers + w) % 200) +
                                         "@example.com"};
        if (i % 3 == 0) rcpt.push_back("v" + std::to_string(i % 97) + "@example.com");
        bool during = moving.load();
        auto t0 = std::chrono::steady_clock::now();
        std::error_code ec;
        auto m = pgtest::put(s, pgtest::message(rcpt, "l" + std::to_string(i)), ec);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count();
        if (ec) {
          put_failed.fetch_add(1);
          continue;
        }
        std::lock_guard lk(mu);
        acked.push_back(m->id);
        acked_n.fetch_add(1);
        (during ? during_ms : before_ms).push_back(ms);
      }
    });
  }
  std::thread reader([&] {
    std::size_t last_total = 0;
    for (int i = 0; !stop.load() && i < 100000; ++i) {
      auto low = acked_n.load();
      auto [ec, p] = pgtest::wait<st::page>(
          [&](auto h) { s.async_list(st::list_request(0, 20), std::move(h)); });
      auto high = acked_n.load() + writers;
      if (ec || p.partial) {
        list_failed.fetch_add(1);
        std::lock_guard lk(mu);
        if (list_error.empty()) list_error = "global: " + (ec ? ec.message() : "partial");
        continue;
      }
      lists.fetch_add(1);
      if (p.total < low || p.total < last_total) dips.fetch_add(1);
      if (p.total > high) over.fetch_add(1);
      if (!distinct(p)) doubled.fetch_add(1);
      last_total = p.total;
      st::list_request r(0, 20);
      r.mailbox = "w" + std::to_string(i % 200) + "@example.com";
      auto [mec, mp] = pgtest::wait<st::page>([&](auto h) { s.async_list(r, std::move(h)); });
      if (mec) {
        list_failed.fetch_add(1);
        std::lock_guard lk(mu);
        if (list_error.empty()) list_error = "mailbox " + r.mailbox + ": " + mec.message();
      }
    }
  });
  std::this_thread::sleep_for(1s);
  auto plan = adm::plan_rebalance(adm::status(dsns(4)));
  ASSERT_EQ(plan.size(), 16u);
  moving.store(true);
  auto t0 = std::chrono::steady_clock::now();
  adm::move_result res;
  std::string msg;
  auto ec = adm::move_buckets(dsns(4), plan, 8, res, msg);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  moving.store(false);
  std::this_thread::sleep_for(300ms);
  stop.store(true);
  for (auto& t : ws) t.join();
  reader.join();
  ASSERT_FALSE(ec) << msg;

  std::lock_guard lk(mu);
  std::printf(
      "rebalance of %zu buckets under load: %.2f s, %llu copies, %llu caught up, writes held "
      "at most %.1f ms; put p99 before %.1f ms (%zu puts), during %.1f ms (%zu puts, max %.1f); "
      "%d listings\n",
      plan.size(), took, static_cast<unsigned long long>(res.copied),
      static_cast<unsigned long long>(res.caught_up), res.frozen_ms, percentile(before_ms, 0.99),
      before_ms.size(), percentile(during_ms, 0.99), during_ms.size(),
      percentile(during_ms, 1.0), lists.load());
  EXPECT_EQ(put_failed.load(), 0);
  EXPECT_EQ(list_failed.load(), 0) << list_error;
  EXPECT_EQ(dips.load(), 0);
  EXPECT_EQ(over.load(), 0);
  EXPECT_EQ(doubled.load(), 0);
  EXPECT_GT(lists.load(), 0);
  EXPECT_FALSE(during_ms.empty());

  auto after = adm::status(dsns(4));
  for (auto& sh : after) {
    EXPECT_EQ(sh.owned.size(), 16u) << sh.index;
    EXPECT_TRUE(sh.frozen.empty() && sh.incoming.empty() && sh.gone.empty()) << sh.index;
  }
  std::map<std::string, int> homes;
  for (unsigned i = 0; i < 4; ++i) {
    auto c = pgtest::connect(i);
    std::vector<std::string> ids;
    c.query(inlet::pg::sql("SELECT id FROM mail.message WHERE home"), inlet::pg::into(ids));
    for (auto& id : ids) homes[id]++;
  }
  for (auto& id : acked) EXPECT_EQ(homes[id], 1) << id;
  EXPECT_EQ(homes.size(), acked.size() + seeded);
  auto [gec, g] = pgtest::wait<st::page>(
      [&](auto h) { s.async_list(st::list_request(0, 10), std::move(h)); });
  ASSERT_FALSE(gec);
  EXPECT_EQ(g.total, acked.size() + seeded);
}
