// Concurrent writers, readers and deleters on one memory store (run under TSan: label tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "inlet/store/memory_store.hpp"
#include "inlet/store/search.hpp"
#include "sync_ops.hpp"

namespace st = inlet::store;
using namespace inlet::store::test;

TEST(MemoryStoreConcurrency, WritersReadersDeleters) {
  constexpr int writers = 4, per_writer = 2000;
  st::memory_store s({.max_messages = 500, .max_bytes = 1 << 20});
  std::atomic<int> observed{0};
  s.subscribe([&](const st::store_event& e) {
    if (e.what == st::store_event::kind::created) observed.fetch_add(1, std::memory_order_relaxed);
  });
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < per_writer; ++i) {
        st::new_message m;
        m.envelope.rcpt_to = {"box" + std::to_string(i % 7) + "@x"};
        m.summary.subject = std::to_string(w) + ":" + std::to_string(i);
        // An empty header, then a body of one letter.
        const std::string body(50 + i % 200, 'a' + static_cast<char>(w));
        m.raw = "\r\n" + body;
        // Half given, half left to the store: two searchers race to derive those.
        if (i % 2 == 0)
          m.summary.search_text = st::search::build_search_text(m.summary, body, 8192);
        s.put(std::move(m), [&](std::error_code ec, st::message_ptr p) {
          if (ec || !p) bad.fetch_add(1);
        });
      }
    });
  }
  auto reader = [&] {
    while (!stop.load()) {
      auto p = list_all(s, 0, 50);
      if (p.messages.size() > 50 || p.total > 500) bad.fetch_add(1);
      for (std::size_t i = 1; i < p.messages.size(); ++i)
        if (p.messages[i - 1]->seq <= p.messages[i]->seq) bad.fetch_add(1);
      for (auto& m : p.messages) {
        // Reading the record after the lock was released must be safe even if evicted.
        char c = m->raw.empty() ? 'a' : m->raw.back();
        if (!m->raw.starts_with("\r\n") || m->raw.find_first_not_of(c, 2) != std::string::npos)
          bad.fetch_add(1);
        if (auto g = get_sync(s, m->id).value; g && g != m) bad.fetch_add(1);
      }
      auto mb = list_all(s, 0, 20, "BOX3@x");
      for (auto& m : mb.messages)
        if (m->envelope.rcpt_to[0] != "box3@x") bad.fetch_add(1);
      auto stats = s.stats();
      if (stats.messages > 500 || stats.bytes > (1u << 20)) bad.fetch_add(1);
    }
  };
  std::thread r1(reader), r2(reader);
  std::thread marker([&] {  // flips read flags while others put, evict and delete
    bool flag = true;
    while (!stop.load()) {
      auto p = list_all(s, 0, 20);
      std::vector<std::string> ids;
      for (auto& m : p.messages) ids.push_back(m->id);
      set_read_sync(s, st::selection::of_ids(ids), flag);
      flag = !flag;
    }
  });
  std::thread deleter([&] {
    while (!stop.load()) {
      auto p = list_all(s, 10, 3);
      std::vector<std::string> ids;
      for (auto& m : p.messages) ids.push_back(m->id);
      remove_sync(s, st::selection::of_ids(ids));
    }
  });
  std::thread searcher([&] {  // searches, and tags what it finds
    st::search::query q;
    if (st::search::parse("subject:1 -is:read", "", q)) bad.fetch_add(1);
    for (int n = 0; !stop.load(); ++n) {
      st::list_request r(0, 20);
      r.query = q;
      auto p = list_sync(s, std::move(r)).value;
      if (p.matched < p.messages.size()) bad.fetch_add(1);
      for (auto& m : p.messages)
        if (m->summary.subject.find('1') == std::string::npos) bad.fetch_add(1);
      set_tags_sync(s, st::selection::matching(q), {"t" + std::to_string(n % 3)});
      if (list_tags_sync(s).value.size() > 3) bad.fetch_add(1);
    }
  });
  auto text_searcher = [&] {  // free text: builds the deferred texts, racing the other one
    st::search::query q;
    if (st::search::parse("bbbbbbbbbb", "", q)) bad.fetch_add(1);
    while (!stop.load()) {
      st::list_request r(0, 20);
      r.query = q;
      auto p = list_sync(s, std::move(r)).value;
      for (auto& m : p.messages)
        if (m->raw.empty() || m->raw.back() != 'b') bad.fetch_add(1);
      // Room for the writers: the shared lock prefers readers, and two more spinning
      // readers can starve them for seconds on a loaded machine.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  };
  std::thread t1(text_searcher), t2(text_searcher);
  for (auto& t : threads) t.join();
  stop.store(true);
  t1.join();
  t2.join();
  searcher.join();
  r1.join();
  r2.join();
  marker.join();
  deleter.join();

  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(observed.load(), writers * per_writer);
  auto stats = s.stats();
  EXPECT_EQ(stats.stored_total, static_cast<std::uint64_t>(writers * per_writer));
  EXPECT_EQ(stats.stored_total, stats.messages + stats.evicted_total + stats.deleted_total);
  EXPECT_LE(stats.messages, 500u);
  // Every mailbox list agrees with the main list.
  std::size_t in_boxes = 0;
  for (int b = 0; b < 7; ++b) in_boxes += list_all(s, 0, 0, "box" + std::to_string(b) + "@x").total;
  EXPECT_EQ(in_boxes, stats.messages);
  EXPECT_EQ(list_all(s, 0, 0).total, stats.messages);
  // The unread counts (store and per mailbox) agree with the flags.
  auto all = list_all(s, 0, 1000);
  std::size_t unread = 0;
  for (auto& m : all.messages) unread += !m->is_read();
  EXPECT_EQ(stats.unread, unread);
  std::size_t box_unread = 0;
  for (int b = 0; b < 7; ++b)
    box_unread += list_all(s, 0, 0, "box" + std::to_string(b) + "@x").unread;
  EXPECT_EQ(box_unread, unread);
  // A message left to the store after the race: found by the words of its body.
  {
    st::new_message m;
    m.envelope.rcpt_to = {"box0@x"};
    m.raw = "Subject: last\r\n\r\nzebra crossing\r\n";
    std::error_code ec;
    ASSERT_TRUE(s.put_sync(std::move(m), ec));
    st::list_request r(0, 5);
    ASSERT_FALSE(st::search::parse("\"zebra crossing\"", "", r.query));
    EXPECT_EQ(list_sync(s, std::move(r)).value.matched, 1u);
  }
}
