// The API's defences, without sockets: the Host header, public mode, the per-client rate
// limit, bounded listings; and the server's load helpers (pressure timeouts, the event
// queue's bounds).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "api_test_util.hpp"
#include "pressure.hpp"
#include "rate_limit.hpp"

namespace {

using namespace inlet::http;
using namespace inlet::http::test;
using namespace std::chrono_literals;

response run_as(const api& a, request r, client_info who) {
  boost::asio::io_context io;
  auto f =
      boost::asio::co_spawn(io, a.handle(std::move(r), std::move(who)), boost::asio::use_future);
  io.run();
  return f.get();
}

request with_host(bh::verb v, std::string target, std::string host, std::string body = {}) {
  auto r = req(v, std::move(target), std::move(body));
  r.set(bh::field::host, host);
  return r;
}

std::string put(st::memory_store& s, std::string subject,
                std::vector<std::string> rcpt = {"box@example.com"}) {
  std::error_code ec;
  auto m =
      s.put_sync(message(std::move(subject), "Subject: x\r\n\r\nbody\r\n", std::move(rcpt)), ec);
  EXPECT_FALSE(ec);
  return m ? m->id : std::string{};
}

TEST(HostHeader, OnlyNamesOfThisServer) {
  st::memory_store store;
  put(store, "one");
  api a(store, api_config{});
  for (const char* ok : {"localhost", "localhost:8025", "LOCALHOST.", "app.localhost:1",
                         "127.0.0.1", "127.0.0.1:8025", "[::1]:8025", "[::1]", "192.0.2.7:80"})
    EXPECT_EQ(run(a, with_host(bh::verb::get, "/api/v1/messages", ok)).result_int(), 200u) << ok;
  EXPECT_EQ(run(a, req(bh::verb::get, "/api/v1/messages")).result_int(), 200u);  // no Host
  for (const char* bad : {"evil.example", "evil.example:8025", "localhost.evil.example",
                          "127.0.0.1.evil.example", "[::1", "localhost:80x", ":8025"})
    EXPECT_EQ(run(a, with_host(bh::verb::get, "/api/v1/messages", bad)).result_int(), 403u) << bad;
  // A rebound page cannot delete: the store keeps its message.
  auto del = run(a, with_host(bh::verb::delete_, "/api/v1/messages", "rebound.example"));
  EXPECT_EQ(del.result_int(), 403u);
  EXPECT_NE(std::string(del.body()).find("Host"), std::string::npos);  // says why
  EXPECT_EQ(store.stats().messages, 1u);
}

TEST(HostHeader, AllowedHostsFlag) {
  st::memory_store store;
  api_config cfg;
  cfg.allowed_hosts = {"Mail.Example", ".corp.example"};
  api a(store, cfg);
  for (const char* ok : {"mail.example", "MAIL.example:8025", "corp.example", "x.corp.example"})
    EXPECT_EQ(run(a, with_host(bh::verb::get, "/api/v1/messages", ok)).result_int(), 200u) << ok;
  for (const char* bad : {"xcorp.example", "mail.example.evil", "other.example"})
    EXPECT_EQ(run(a, with_host(bh::verb::get, "/api/v1/messages", bad)).result_int(), 403u) << bad;
  cfg.allowed_hosts = {"*"};
  api any(store, cfg);
  EXPECT_EQ(run(any, with_host(bh::verb::get, "/api/v1/messages", "anything.example")).result_int(),
            200u);
}

TEST(HostHeader, ASingleLabelServiceNameIsAnsweredAsInMailpit) {
  st::memory_store store;
  api_config cfg;
  api a(store, cfg);
  for (const char* ok : {"mailpit", "mailpit:8025", "inlet:1080"})
    EXPECT_EQ(run(a, with_host(bh::verb::get, "/api/v1/messages", ok)).result_int(), 200u) << ok;
  // Mailpit's --allowed-hosts makes its list the only names (IP literals and loopback
  // names stay answered).
  cfg.allowed_hosts = {"mailpit"};
  cfg.only_allowed_hosts = true;
  api strict(store, cfg);
  EXPECT_EQ(run(strict, with_host(bh::verb::get, "/api/v1/messages", "mailpit:8025")).result_int(),
            200u);
  EXPECT_EQ(run(strict, with_host(bh::verb::get, "/api/v1/messages", "other:8025")).result_int(),
            403u);
  EXPECT_EQ(run(strict, with_host(bh::verb::get, "/api/v1/messages", "127.0.0.1")).result_int(),
            200u);
}

TEST(Cors, AListEchoesTheMatchingOriginAndPreflightIsAnswered) {
  st::memory_store store;
  api_config cfg;
  api plain(store, cfg);
  // Without --api-cors a preflight is still answered (no CORS headers: the browser
  // refuses the cross-origin request itself).
  auto pre = run(plain, req(bh::verb::options, "/api/v1/messages"));
  EXPECT_EQ(pre.result_int(), 204u);
  EXPECT_TRUE(pre["Access-Control-Allow-Origin"].empty());
  cfg.cors_origin = "a.example, https://b.example";
  api a(store, cfg);
  auto get = [&](const char* origin) {
    auto r = req(bh::verb::get, "/api/v1/messages");
    r.set(bh::field::origin, origin);
    return run(a, r);
  };
  EXPECT_EQ(get("https://a.example")["Access-Control-Allow-Origin"], "https://a.example");
  EXPECT_EQ(get("http://a.example:8080")["Access-Control-Allow-Origin"], "http://a.example:8080");
  EXPECT_EQ(get("https://b.example")["Access-Control-Allow-Origin"], "https://b.example");
  EXPECT_TRUE(get("https://c.example")["Access-Control-Allow-Origin"].empty());
  EXPECT_TRUE(get("https://xa.example")["Access-Control-Allow-Origin"].empty());
  auto r = req(bh::verb::options, "/api/v1/send");
  r.set(bh::field::origin, "https://a.example");
  r.set("Access-Control-Request-Headers", "content-type");
  auto p = run(a, r);
  EXPECT_EQ(p.result_int(), 204u);
  EXPECT_EQ(p["Access-Control-Allow-Origin"], "https://a.example");
  EXPECT_EQ(p["Access-Control-Allow-Headers"], "content-type");
}

TEST(PublicMode, OnlyMailboxScopedReads) {
  st::memory_store store;
  auto mine = put(store, "mine", {"me@example.com"});
  put(store, "theirs", {"them@example.com"});
  api_config cfg;
  cfg.public_mode = true;
  api a(store, cfg);
  auto code = [&](bh::verb v, std::string t, std::string body = {}) {
    return run(a, req(v, std::move(t), std::move(body))).result_int();
  };
  EXPECT_EQ(code(bh::verb::get, "/api/v1/messages"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/search?query=theirs"), 403u);
  EXPECT_EQ(code(bh::verb::delete_, "/api/v1/messages"), 403u);
  EXPECT_EQ(code(bh::verb::delete_, "/api/v1/search?query=theirs"), 403u);
  EXPECT_EQ(code(bh::verb::put, "/api/v1/messages", R"({"Read":true})"), 403u);
  EXPECT_EQ(code(bh::verb::put, "/api/v1/tags", R"({"IDs":[],"Tags":["x"]})"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/message/latest"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/message/" + mine + "/link-check"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/message/" + mine + "/sa-check"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/message/" + mine + "/rspamd-check"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/tags"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/info"), 403u);
  EXPECT_EQ(code(bh::verb::get, "/metrics"), 403u);
  EXPECT_EQ(code(bh::verb::post, "/api/v1/send", "{}"), 403u);
  EXPECT_EQ(store.stats().messages, 2u);

  auto box = run(a, req(bh::verb::get, "/api/v1/mailbox/me@example.com"));
  ASSERT_EQ(box.result_int(), 200u) << box.body();
  auto o = body_json(box);
  ASSERT_EQ(o["messages"].as_array().size(), 1u);
  EXPECT_EQ(o["messages"].as_array()[0].as_object().at("ID").as_string(), mine);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/message/" + mine), 200u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/message/" + mine + "/raw"), 200u);
  EXPECT_EQ(code(bh::verb::get, "/view/" + mine + ".txt"), 200u);
  EXPECT_EQ(code(bh::verb::get, "/api/v1/webui"), 200u);
  EXPECT_EQ(code(bh::verb::get, "/livez"), 200u);
  EXPECT_EQ(code(bh::verb::get, "/"), 200u);
}

TEST(RateLimit, PerClientWithRetryAfter) {
  st::memory_store store;
  api_config cfg;
  cfg.rate_limit = 0.5;  // one token every 2 s: none comes back during the test
  cfg.rate_burst = 3;
  api a(store, cfg);
  const client_info one("192.0.2.1"), two("192.0.2.2");
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(run_as(a, req(bh::verb::get, "/api/v1/messages"), one).result_int(), 200u) << i;
  auto r = run_as(a, req(bh::verb::get, "/api/v1/messages"), one);
  EXPECT_EQ(r.result_int(), 429u);
  auto retry = std::string(r[bh::field::retry_after]);
  ASSERT_FALSE(retry.empty());
  EXPECT_GE(std::stoi(retry), 1);
  EXPECT_EQ(run_as(a, req(bh::verb::get, "/api/v1/messages"), two).result_int(), 200u);
  // The page's own files are not counted; in-process callers (no key) are never limited.
  EXPECT_EQ(run_as(a, req(bh::verb::get, "/"), one).result_int(), 200u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(run(a, req(bh::verb::get, "/api/v1/messages")).result_int(), 200u);
  EXPECT_NE(a.metrics_text().find("inlet_http_requests_total{code=\"429\"} 1\n"),
            std::string::npos);
}

TEST(RateLimit, BucketsAreBoundedInNumber) {
  detail::rate_limiter l(1, 2, 160);
  unsigned retry = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) l.take("10.0." + std::to_string(i), t0, retry);
  EXPECT_LE(l.size(), 160u);
  EXPECT_TRUE(l.take("a", t0, retry));
  EXPECT_TRUE(l.take("a", t0, retry));
  EXPECT_FALSE(l.take("a", t0, retry));
  EXPECT_EQ(retry, 1u);
  EXPECT_TRUE(l.take("a", t0 + 1s, retry));
}

// Messages with huge address lists: a listing's answer is bounded in bytes, however many
// messages it names and whatever their summaries hold.
TEST(BoundedListing, LargeSummariesDoNotMakeLargeAnswers) {
  st::memory_store store;
  const std::string name(900, 'n');
  for (int i = 0; i < 20; ++i) {
    auto m = message("big " + std::to_string(i), "Subject: x\r\n\r\nbody\r\n");
    for (int k = 0; k < 100; ++k)
      m.summary.to.push_back(
          {name, "to" + std::to_string(k) + "-" + std::string(900, 'a') + "@example.com"});
    std::error_code ec;
    store.put_sync(std::move(m), ec);
    ASSERT_FALSE(ec);
  }
  api_config cfg;
  cfg.max_list_bytes = 1u << 20;
  api a(store, cfg);
  auto r = run(a, req(bh::verb::get, "/api/v1/messages?limit=1000"));
  ASSERT_EQ(r.result_int(), 200u);
  // One summary is ~190 KB: 20 of them would be ~3.8 MB.
  EXPECT_LT(r.body().size(), (1u << 20) + (256u << 10));
  auto o = body_json(r);
  const auto n = o["messages"].as_array().size();
  EXPECT_EQ(o["count"].as_int64(), static_cast<std::int64_t>(n));
  EXPECT_GE(n, 1u);
  EXPECT_LT(n, 20u);
  EXPECT_EQ(o["messages_count"].as_int64(), 20);
  // The next page starts where this one stopped.
  auto next = body_json(
      run(a, req(bh::verb::get, "/api/v1/messages?limit=1000&start=" + std::to_string(n))));
  EXPECT_GE(next["count"].as_int64(), 1);
}

// A summary whose lists keep only their first entries says so: `Totals` gives every
// count, `Attachments` the whole number; a whole summary has no `Totals` (Mailpit's shape).
TEST(BoundedListing, CutListsCarryTheirTotals) {
  st::memory_store store;
  auto m = message("cut", "Subject: x\r\n\r\nbody\r\n");
  for (int k = 0; k < 100; ++k) m.summary.to.push_back({"", "to" + std::to_string(k) + "@x.test"});
  m.summary.totals.to = 80000;
  m.summary.attachments.push_back({"a.pdf", "application/pdf", 10});
  m.summary.totals.attachments = 250;
  std::error_code ec;
  store.put_sync(std::move(m), ec);
  ASSERT_FALSE(ec);
  put(store, "whole");
  api a(store, api_config{});
  auto o = body_json(run(a, req(bh::verb::get, "/api/v1/messages")));
  auto& msgs = o["messages"].as_array();
  ASSERT_EQ(msgs.size(), 2u);
  auto& whole = msgs[0].as_object();  // newest first
  auto& cut = msgs[1].as_object();
  EXPECT_FALSE(whole.contains("Totals"));
  EXPECT_EQ(whole.at("Attachments").as_int64(), 0);
  ASSERT_TRUE(cut.contains("Totals"));
  EXPECT_EQ(cut.at("To").as_array().size(), 100u);
  EXPECT_EQ(json::serialize(cut.at("Totals")),
            R"({"To":80000,"Cc":0,"Bcc":0,"ReplyTo":0,"Attachments":250})");
  EXPECT_EQ(cut.at("Attachments").as_int64(), 250);
}

reply run_streamed(const api& a, request r) {
  boost::asio::io_context io;
  auto f = boost::asio::co_spawn(io, a.handle_streamed(std::move(r)), boost::asio::use_future);
  io.run();
  return f.get();
}

// A listing larger than the whole-answer threshold comes as a body source whose pieces
// are each about one window: what the server holds for it is a window, not the answer.
// Collected, the pieces are exactly handle()'s answer, and HEAD tells its length.
TEST(StreamedListing, PiecesAreBoundedAndMakeTheSameAnswer) {
  st::memory_store store;
  const std::string name(300, 'n');
  for (int i = 0; i < 60; ++i) {
    auto m = message("big " + std::to_string(i), "Subject: x\r\n\r\nbody\r\n");
    for (int k = 0; k < 100; ++k)
      m.summary.to.push_back({name, "to" + std::to_string(k) + "@example.com"});
    std::error_code ec;
    store.put_sync(std::move(m), ec);
    ASSERT_FALSE(ec);
  }
  api a(store, api_config{});
  const auto whole = run(a, req(bh::verb::get, "/api/v1/messages?limit=1000"));
  ASSERT_EQ(whole.result_int(), 200u);
  ASSERT_GT(whole.body().size(), 1u << 20);  // ~34 KB a summary
  auto rep = run_streamed(a, req(bh::verb::get, "/api/v1/messages?limit=1000"));
  ASSERT_EQ(rep.res.result_int(), 200u);
  ASSERT_TRUE(rep.body);
  EXPECT_TRUE(rep.res.body().empty());
  EXPECT_EQ(rep.res[bh::field::content_type], "application/json");
  constexpr std::size_t window = 64 * 1024;
  std::string all, piece;
  std::size_t pieces = 0, largest = 0;
  while (rep.body->next(piece, window)) {
    largest = std::max(largest, piece.size());
    all += piece;
    piece.clear();
    ++pieces;
  }
  EXPECT_FALSE(rep.body->next(piece, window));
  EXPECT_TRUE(all == whole.body());
  EXPECT_GT(pieces, 20u);
  EXPECT_LT(largest, window + 40 * 1024);  // a window, plus at most one summary
  auto head = run(a, req(bh::verb::head, "/api/v1/messages?limit=1000"));
  EXPECT_TRUE(head.body().empty());
  EXPECT_EQ(head[bh::field::content_length], std::to_string(whole.body().size()));
  // A small page is answered whole, as before.
  auto small = run_streamed(a, req(bh::verb::get, "/api/v1/messages?limit=2"));
  EXPECT_FALSE(small.body);
  EXPECT_GT(small.res.body().size(), 0u);
}

// A large raw message is written from the stored record in windows, with its length.
TEST(StreamedListing, LargeRawMessageIsAWindowedSourceWithItsLength) {
  st::memory_store store;
  std::string raw = "Subject: x\r\n\r\n";
  while (raw.size() < (3u << 20)) raw += "0123456789abcdef0123456789abcdef0123456789abcdef\r\n";
  std::error_code ec;
  auto m = store.put_sync(message("big", raw), ec);
  ASSERT_FALSE(ec);
  api a(store, api_config{});
  auto rep = run_streamed(a, req(bh::verb::get, "/api/v1/message/" + m->id.str() + "/raw"));
  ASSERT_EQ(rep.res.result_int(), 200u);
  ASSERT_TRUE(rep.body);
  ASSERT_TRUE(rep.body->size());
  EXPECT_EQ(*rep.body->size(), raw.size());
  std::string all, piece;
  while (rep.body->next(piece, 64 * 1024)) {
    EXPECT_LE(piece.size(), 64u * 1024);
    all += piece;
    piece.clear();
  }
  EXPECT_TRUE(all == raw);
  auto whole = run(a, req(bh::verb::get, "/api/v1/message/" + m->id.str() + "/raw"));
  EXPECT_TRUE(whole.body() == raw);
  EXPECT_EQ(whole[bh::field::content_length], std::to_string(raw.size()));
}

TEST(PressureTimeout, ShrinksPastHalfTheSlots) {
  using detail::pressure_timeout;
  EXPECT_EQ(pressure_timeout(30s, 1s, 0, 100), 30s);
  EXPECT_EQ(pressure_timeout(30s, 1s, 50, 100), 30s);
  EXPECT_EQ(pressure_timeout(30s, 1s, 75, 100), 15s);
  EXPECT_EQ(pressure_timeout(30s, 1s, 99, 100), 1500ms);  // 5 % floor
  EXPECT_EQ(pressure_timeout(30s, 1s, 100, 100), 1500ms);
  EXPECT_EQ(pressure_timeout(30s, 2s, 100, 100), 2s);       // never under the floor
  EXPECT_EQ(pressure_timeout(500ms, 1s, 100, 100), 500ms);  // nor above the base
}

// A new message wakes a stream's writer only when its queue was empty: a client that
// does not read (a write in flight, texts piling up) costs no wake-up per message.
TEST(EventQueue, WakesTheWriterOncePerBatch) {
  using detail::event_queue;
  auto text = std::make_shared<const std::string>(10, 'e');
  const auto t0 = event_queue::clock::now();
  event_queue q;
  q.configure(1u << 20, 60s);
  bool wake = false;
  EXPECT_TRUE(q.push({text}, t0, &wake));
  EXPECT_TRUE(wake);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(q.push({text}, t0, &wake));
    EXPECT_FALSE(wake);
  }
  std::vector<event_queue::text> out;
  EXPECT_FALSE(q.take(out, t0));
  EXPECT_EQ(out.size(), 6u);
  EXPECT_TRUE(q.push({text}, t0, &wake));  // taken: the writer may sleep again
  EXPECT_TRUE(wake);
}

TEST(EventQueue, DropsAClientBehindByBytesOrAge) {
  using detail::event_queue;
  auto text = [](std::size_t n) { return std::make_shared<const std::string>(n, 'e'); };
  const auto t0 = event_queue::clock::now();
  {
    event_queue q;
    q.configure(10000, 60s);
    for (int i = 0; i < 9; ++i) EXPECT_TRUE(q.push({text(1000)}, t0));
    std::vector<event_queue::text> out;
    EXPECT_FALSE(q.take(out, t0));
    EXPECT_EQ(out.size(), 9u);
    EXPECT_TRUE(q.push({text(1000)}, t0));   // 9000 in flight + 1000 queued
    EXPECT_FALSE(q.push({text(1000)}, t0));  // 11000: behind
    EXPECT_FALSE(q.push({text(1)}, t0));     // and stays so
    EXPECT_TRUE(q.take(out, t0));
    EXPECT_EQ(q.behind_bytes(), 9000u);  // the write in flight holds its texts; the queue none
  }
  {
    event_queue q;
    q.configure(1u << 20, 5s);
    EXPECT_TRUE(q.push({text(10)}, t0));
    std::vector<event_queue::text> out;
    EXPECT_FALSE(q.take(out, t0));
    q.written();
    EXPECT_TRUE(q.push({text(10)}, t0 + 10s));  // nothing older waits
    EXPECT_FALSE(q.take(out, t0 + 10s));        // a write that does not finish...
    EXPECT_TRUE(q.push({text(10)}, t0 + 14s));
    EXPECT_FALSE(q.push({text(10)}, t0 + 16s));  // ...makes its oldest event late
  }
}

}  // namespace
