// Moving buckets while the store runs (four throwaway clusters: a cluster of three
// shards, then a fourth added): nothing acknowledged is lost, nothing is listed twice,
// an interrupted move resumes.
#include <atomic>
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
