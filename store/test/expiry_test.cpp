// memory_store's max_age: expire() on given times, and the sweep thread it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "inlet/store/memory_store.hpp"
#include "search_cases.hpp"
#include "sync_ops.hpp"

namespace st = inlet::store;
using namespace inlet::store::test;
using namespace std::chrono_literals;

namespace {

st::message_ptr put_at(st::store& s, std::string subject, std::string rcpt, st::time_point t) {
  st::new_message m;
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to = {std::move(rcpt)};
  m.summary.subject = std::move(subject);
  m.raw = "Subject: x\r\n\r\nbody\r\n";
  m.created = t;
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

TEST(MemoryStoreExpiry, DeletesWhatIsOlderWhateverTheArrivalOrder) {
  st::memory_store s;
  const auto t0 = at(2026, 3, 1, 12);
  put_at(s, "old", "a@x.example", t0);
  put_at(s, "new", "a@x.example", t0 + 10min);
  auto imported = put_at(s, "imported old", "b@x.example", t0 - 1h);  // arrives last, oldest
  put_at(s, "edge", "b@x.example", t0 + 5min);                        // exactly at the cutoff
  std::vector<st::store_event> seen;
  s.subscribe([&](const st::store_event& e) { seen.push_back(e); });

  EXPECT_EQ(s.expire(t0 + 5min), 2u);
  EXPECT_EQ(subjects(list_all(s)), (std::vector<std::string>{"edge", "new"}));
  EXPECT_EQ(subjects(list_all(s, 0, 100, "b@x.example")), (std::vector<std::string>{"edge"}));
  auto stats = s.stats();
  EXPECT_EQ(stats.messages, 2u);
  EXPECT_EQ(stats.unread, 2u);
  EXPECT_EQ(stats.deleted_total, 2u);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].what, st::store_event::kind::deleted);
  EXPECT_EQ(seen[0].ids.size(), 2u);
  EXPECT_NE(std::find(seen[0].ids.begin(), seen[0].ids.end(), imported->id), seen[0].ids.end());
  EXPECT_FALSE(get_sync(s, imported->id).value);

  // Nothing old enough: nothing happens, no event.
  EXPECT_EQ(s.expire(t0), 0u);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(s.stats().messages, 2u);
  // Everything.
  EXPECT_EQ(s.expire(t0 + 1h), 2u);
  EXPECT_EQ(s.stats().messages, 0u);
  EXPECT_EQ(s.stats().bytes, 0u);
}

TEST(MemoryStoreExpiry, SweepThreadDeletesOldMessagesAndStopsWithTheStore) {
  st::memory_store s({.max_messages = 100, .max_bytes = 1 << 20, .max_age = 1s});
  const auto now = std::chrono::system_clock::now();
  put_at(s, "a day old", "a@x.example", now - 24h);
  put_at(s, "fresh", "a@x.example", now + 1h);  // not old enough for the next hour
  // The sweep runs every second; give it a generous bound.
  for (int i = 0; i < 200 && s.stats().messages != 1; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(subjects(list_all(s)), (std::vector<std::string>{"fresh"}));
  EXPECT_EQ(s.stats().deleted_total, 1u);
}  // the destructor wakes and joins the sweep thread
