#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>

#include "inlet/outbound/bounded_queue.hpp"
#include "inlet/outbound/webhook.hpp"

using inlet::outbound::bounded_queue;

TEST(BoundedQueue, RefusesWhenFullAndKeepsOrder) {
  bounded_queue<int> q(2);
  EXPECT_TRUE(q.try_push(1));
  EXPECT_TRUE(q.try_push(2));
  EXPECT_FALSE(q.try_push(3));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.pop(), 1);
  EXPECT_TRUE(q.try_push(4));
  EXPECT_EQ(q.pop(), 2);
  EXPECT_EQ(q.pop(), 4);
  EXPECT_EQ(q.size(), 0u);
}

TEST(BoundedQueue, CloseDropsQueuedAndWakesConsumer) {
  bounded_queue<std::string> q(8);
  std::optional<std::string> got = "unset";
  std::thread consumer([&] { got = q.pop(); });
  // Whether the consumer is already waiting or not, close() must end its pop.
  EXPECT_EQ(q.close(), 0u);
  consumer.join();
  EXPECT_FALSE(got.has_value());
  EXPECT_FALSE(q.try_push("late"));

  bounded_queue<int> r(4);
  r.try_push(1);
  r.try_push(2);
  EXPECT_EQ(r.close(), 2u);
  EXPECT_FALSE(r.pop().has_value());
}

TEST(BoundedQueue, FinishKeepsQueuedItemsForTheConsumer) {
  bounded_queue<int> q(4);
  EXPECT_TRUE(q.try_push(1));
  EXPECT_TRUE(q.try_push(2));
  q.finish();
  EXPECT_FALSE(q.try_push(3));
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.pop(), 2);
  EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, ZeroCapacityMeansOne) {
  bounded_queue<int> q(0);
  EXPECT_EQ(q.capacity(), 1u);
  EXPECT_TRUE(q.try_push(1));
  EXPECT_FALSE(q.try_push(2));
}

TEST(Webhook, IntervalFromLimit) {
  using inlet::outbound::webhook_interval;
  EXPECT_EQ(webhook_interval(0).count(), 0);
  EXPECT_EQ(webhook_interval(-3).count(), 0);
  EXPECT_EQ(webhook_interval(1), std::chrono::seconds(1));
  EXPECT_EQ(webhook_interval(4), std::chrono::milliseconds(250));
}

TEST(Webhook, InternalAddresses) {
  using inlet::outbound::is_internal_url;
  EXPECT_TRUE(is_internal_url("http://127.0.0.1:8080/hook"));
  EXPECT_TRUE(is_internal_url("http://localhost/hook"));
  EXPECT_TRUE(is_internal_url("https://LOCALHOST:1/"));
  EXPECT_TRUE(is_internal_url("http://10.1.2.3/"));
  EXPECT_TRUE(is_internal_url("http://172.16.0.1/"));
  EXPECT_TRUE(is_internal_url("http://172.31.255.255/"));
  EXPECT_FALSE(is_internal_url("http://172.32.0.1/"));
  EXPECT_TRUE(is_internal_url("http://192.168.1.1/x?y"));
  EXPECT_TRUE(is_internal_url("http://169.254.169.254/latest"));
  EXPECT_TRUE(is_internal_url("http://user:pw@127.0.0.1/"));
  EXPECT_TRUE(is_internal_url("http://[::1]:80/"));
  EXPECT_TRUE(is_internal_url("http://[fd00::1]/"));
  EXPECT_TRUE(is_internal_url("http://[fe80::1]/"));
  EXPECT_TRUE(is_internal_url("http://[::ffff:10.0.0.1]/"));
  EXPECT_FALSE(is_internal_url("http://[2001:db8::1]/"));
  EXPECT_FALSE(is_internal_url("https://example.com/hook"));
  EXPECT_FALSE(is_internal_url("http://8.8.8.8/"));
}

TEST(Webhook, FullQueueCountsDropsWithoutSending) {
  // A delay longer than the test keeps the first message in the sender's hands, so the
  // queue fills without a request; stop() ends the wait and counts what was queued.
  inlet::outbound::webhook_config cfg;
  cfg.url = "http://127.0.0.1:9/never";
  cfg.delay = std::chrono::seconds(3600);
  cfg.queue_capacity = 2;
  int built = 0;
  inlet::outbound::webhook_sender s(cfg, [&](const inlet::store::stored_message&) {
    ++built;
    return std::string("{}");
  });
  auto m = std::make_shared<inlet::store::stored_message>();
  for (int i = 0; i < 10; ++i) s.enqueue(m);
  s.enqueue(nullptr);
  s.stop();
  EXPECT_EQ(built, 0);
  EXPECT_EQ(s.sent(), 0u);
  EXPECT_EQ(s.failed(), 0u);
  // 11 handed over, none sent: each counted once as dropped, whether refused by the
  // full queue, dropped from it at stop, or in the sender's hands at stop.
  EXPECT_EQ(s.dropped(), 11u);
  std::string metrics;
  s.append_metrics(metrics);
  EXPECT_NE(metrics.find("inlet_webhook_dropped_total"), std::string::npos);
  EXPECT_NE(metrics.find("inlet_webhook_queue_depth 0"), std::string::npos);
}

#include <atomic>
#include <mutex>
#include <vector>

#include "inlet/outbound/mail_sender.hpp"

namespace {

inlet::store::message_ptr stored(std::string raw, std::vector<std::string> rcpt) {
  auto m = std::make_shared<inlet::store::stored_message>();
  m->raw = std::move(raw);
  m->envelope.rcpt_to.assign(rcpt.begin(), rcpt.end());
  return m;
}

}  // namespace

TEST(MailSender, SendsWhatItWantsCountsFailuresAndStops) {
  std::mutex mu;
  std::vector<std::string> sent;
  inlet::outbound::mail_sender s(
      {"relay", 10},
      [&](const inlet::store::stored_message& m) -> std::string {
        std::lock_guard lk(mu);
        sent.push_back(m.raw);
        return m.raw == "bad" ? "relay failed: refused" : "";
      },
      [](const inlet::store::stored_message& m) { return !m.envelope.rcpt_to.empty(); });
  s.enqueue(stored("one", {"a@x"}));
  s.enqueue(stored("skipped", {}));  // not wanted: never queued, not counted
  s.enqueue(stored("bad", {"b@x"}));
  s.enqueue(nullptr);
  for (int i = 0; i < 500 && s.sent() + s.failed() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.stop();
  EXPECT_EQ(s.sent(), 1u);
  EXPECT_EQ(s.failed(), 1u);
  EXPECT_EQ(s.dropped(), 0u);
  EXPECT_EQ(sent, (std::vector<std::string>{"one", "bad"}));
  std::string metrics;
  s.append_metrics(metrics);
  EXPECT_NE(metrics.find("inlet_relay_sent_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("inlet_relay_failed_total 1\n"), std::string::npos);
}

TEST(MailSender, FullQueueDropsAndCounts) {
  std::atomic<bool> release{false};
  inlet::outbound::mail_sender s({"forward", 1}, [&](const inlet::store::stored_message&) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::string();
  });
  for (int i = 0; i < 5; ++i) s.enqueue(stored("m", {"a@x"}));  // one in hand, one queued
  release = true;
  s.stop();
  EXPECT_GE(s.dropped(), 3u);
  EXPECT_EQ(s.sent() + s.dropped(), 5u);
}

TEST(MailSender, ByteBoundDropsAndCounts) {
  std::atomic<bool> release{false}, taken{false};
  inlet::outbound::mail_sender_config cfg{"relay", 100, 10};  // 10 bytes may wait
  inlet::outbound::mail_sender s(cfg, [&](const inlet::store::stored_message&) {
    taken = true;
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::string();
  });
  s.enqueue(stored("in hand", {"a@x"}));  // the worker holds it: no longer waiting
  for (int i = 0; i < 500 && !taken.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  s.enqueue(stored("123456", {"a@x"}));
  s.enqueue(stored("123456", {"a@x"}));  // 12 bytes waiting at once: over the bound
  s.enqueue(stored("1234", {"a@x"}));    // fits beside the first
  release = true;
  for (int i = 0; i < 500 && s.sent() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.stop();
  EXPECT_EQ(s.sent(), 3u);
  EXPECT_EQ(s.dropped(), 1u);
}

TEST(MailSender, EachWorkerHasItsOwnSendFunction) {
  std::atomic<int> made{0};
  std::mutex mu;
  std::set<int> used;
  std::atomic<bool> go{false};
  inlet::outbound::mail_sender_config cfg{"relay", 100, 1 << 20, 2};
  inlet::outbound::mail_sender s(cfg, [&]() -> inlet::outbound::mail_sender::send_fn {
    int me = made++;
    return [&, me](const inlet::store::stored_message&) {
      {
        std::lock_guard lk(mu);
        used.insert(me);
      }
      // Hold the first two until both workers have one, so both are seen working.
      for (int i = 0; i < 500 && !go.load(); ++i) {
        {
          std::lock_guard lk(mu);
          if (used.size() == 2) go = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      return std::string();
    };
  });
  for (int i = 0; i < 4; ++i) s.enqueue(stored("m", {"a@x"}));
  for (int i = 0; i < 500 && s.sent() < 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.stop();
  EXPECT_EQ(made.load(), 2);
  EXPECT_EQ(s.sent(), 4u);
  EXPECT_EQ(used, (std::set<int>{0, 1}));
}

TEST(Headers, ReplacePrefixAndOverride) {
  const std::string raw =
      "From: \"Ann A.\" <ann@example.org>\r\nSubject: old\r\n and folded\r\nTo: b@x\r\n\r\n"
      "Subject: in the body\r\n";
  EXPECT_EQ(inlet::outbound::header_value(raw, "subject"), "old and folded");
  const std::string s = inlet::outbound::with_header(raw, "Subject", "new");
  EXPECT_EQ(s,
            "Subject: new\r\nFrom: \"Ann A.\" <ann@example.org>\r\nTo: b@x\r\n\r\n"
            "Subject: in the body\r\n");
  const std::string o = inlet::outbound::override_from(raw, "relay@inlet.example");
  EXPECT_EQ(inlet::outbound::header_value(o, "From"), "\"Ann A.\" <relay@inlet.example>");
  EXPECT_EQ(inlet::outbound::header_value(o, "X-Original-From"), "ann@example.org");
  EXPECT_EQ(inlet::outbound::header_value(
                inlet::outbound::override_from("To: b@x\r\n\r\nx", "r@i.example"), "From"),
            "r@i.example");
  EXPECT_EQ(inlet::outbound::header_value(
                inlet::outbound::prefix_subject(raw, "[fwd]", "old and folded"), "Subject"),
            "[fwd] old and folded");
  EXPECT_EQ(inlet::outbound::header_value(
                inlet::outbound::prefix_subject(raw, "[fwd]", "Gr\xC3\xBC\xC3\x9F" "e"),
                "Subject"),
            "=?utf-8?q?=5Bfwd=5D_Gr=C3=BC=C3=9Fe?=");
}

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inlet/outbound/smtp_relay.hpp"

namespace {

// A listening socket on 127.0.0.1 and a free port; `port` is set to it.
int listen_loopback(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(fd, 8);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  port = ntohs(a.sin_port);
  return fd;
}

// A scripted SMTP server on 127.0.0.1 for the client's driver: PIPELINING offered, each
// connection takes `per_connection` messages, then answers the next MAIL with 421 and
// closes (as servers with a per-connection message limit do).
class limited_server {
 public:
  explicit limited_server(int per_connection) : per_connection_(per_connection) {
    fd_ = listen_loopback(port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~limited_server() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }
  int messages() const { return messages_.load(); }

 private:
  void serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++connections_;
      int one = 1;  // its replies go out one by one: no Nagle delay between them
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      session(c);
      ::close(c);
    }
  }
  static void put(int c, std::string_view s) { (void)!::send(c, s.data(), s.size(), MSG_NOSIGNAL); }
  void session(int c) {
    put(c, "220 test ESMTP\r\n");
    std::string in;
    char buf[4096];
    int taken = 0;
    bool data = false, refused = false;
    for (;;) {
      const auto nl = in.find(data ? "\r\n.\r\n" : "\r\n");
      if (nl == std::string::npos) {
        const auto n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) return;
        in.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      const std::string line = in.substr(0, nl);
      in.erase(0, nl + (data ? 5 : 2));
      if (data) {
        data = false;
        ++taken;
        ++messages_;
        put(c, "250 2.0.0 queued\r\n");
      } else if (line.rfind("EHLO", 0) == 0) {
        put(c, "250-test\r\n250 PIPELINING\r\n");
      } else if (line.rfind("MAIL FROM:<bad@", 0) == 0) {
        put(c, "550 5.7.1 sender refused\r\n");
        refused = true;
      } else if (line.rfind("RCPT TO:<refused@", 0) == 0) {
        put(c, "550 5.1.1 no such user\r\n");
      } else if (refused && (line.rfind("RCPT", 0) == 0 || line == "DATA")) {
        put(c, "503 5.5.1 MAIL first\r\n");
      } else if (line == "RSET") {
        refused = false;
        put(c, "250 2.0.0 reset\r\n");
      } else if (line.rfind("MAIL", 0) == 0 && taken >= per_connection_) {
        put(c, "421 4.7.0 too many messages on one connection\r\n");
        return;
      } else if (line == "DATA") {
        put(c, "354 go on\r\n");
        data = true;
      } else if (line == "QUIT") {
        put(c, "221 bye\r\n");
        return;
      } else {
        put(c, "250 ok\r\n");
      }
    }
  }
  int fd_;
  std::uint16_t port_ = 0;
  int per_connection_;
  std::atomic<int> connections_{0}, messages_{0};
  std::thread thread_;
};

}  // namespace

TEST(SmtpClient, GoesOnOverAFreshConnectionWhenTheServerEndsOne) {
  limited_server server(3);
  inlet::outbound::smtp_relay_config cfg;
  cfg.host = "127.0.0.1";
  cfg.port = server.port();
  cfg.timeout = std::chrono::seconds(20);
  inlet::outbound::smtp_client client(cfg);
  const std::string from = "a@example.org", raw = "Subject: x\r\n\r\n.dot\r\n";
  const std::vector<std::string> rcpt = {"b@example.org"};
  std::vector<inlet::outbound::mail_item> items(8, {&from, &rcpt, &raw});
  const auto why = client.send_many(items);
  for (const auto& w : why) EXPECT_EQ(w, "");
  EXPECT_EQ(server.messages(), 8);
  EXPECT_EQ(server.connections(), 3);  // 3 + 3 + 2
  // The kept connection (2 taken) passes one more on, then the server ends it: the next
  // message goes over a fresh connection.
  EXPECT_EQ(client.send(from, rcpt, raw), "");
  EXPECT_EQ(client.send(from, rcpt, raw), "");
  EXPECT_EQ(server.messages(), 10);
  EXPECT_EQ(server.connections(), 4);
}

TEST(SmtpClient, KeepsItsConnectionAfterARefusal) {
  limited_server server(100);
  inlet::outbound::smtp_relay_config cfg;
  cfg.host = "127.0.0.1";
  cfg.port = server.port();
  inlet::outbound::smtp_client client(cfg);
  const std::string bad = "bad@example.org", good = "a@example.org", raw = "x\r\n";
  const std::vector<std::string> rcpt = {"b@example.org"};
  EXPECT_EQ(client.send(bad, rcpt, raw),
            "relay failed: MAIL FROM refused: 550 5.7.1 sender refused");
  EXPECT_EQ(client.last_reply(), "550 5.7.1 sender refused");
  EXPECT_EQ(client.send(good, rcpt, raw), "");
  EXPECT_EQ(client.last_reply(), "");
  EXPECT_EQ(client.send(bad, rcpt, raw).empty(), false);
  EXPECT_EQ(client.send(good, rcpt, raw), "");
  EXPECT_EQ(server.messages(), 2);
  EXPECT_EQ(server.connections(), 1);  // the RSET's reply read, the connection kept
  EXPECT_EQ(client.connections(), 1u);
}

TEST(SmtpClient, RefusesInternalAddressesWhenAsked) {
  limited_server server(1);
  inlet::outbound::smtp_relay_config cfg;
  cfg.host = "127.0.0.1";
  cfg.port = server.port();
  cfg.allow_internal = false;
  inlet::outbound::smtp_client client(cfg);
  const std::string from = "a@example.org", raw = "x\r\n";
  const std::string why = client.send(from, {"b@example.org"}, raw);
  EXPECT_NE(why.find("internal address refused"), std::string::npos) << why;
  EXPECT_EQ(server.connections(), 0);
}

// ---- bounds: resolution, set-up and transaction deadlines; the shared pool ----

#include <netdb.h>

#include <condition_variable>
#include <functional>
#include <mutex>

#include "inlet/outbound/client_pool.hpp"
#include "inlet/outbound/resolve.hpp"

namespace {

// A lookup that never answers until release(): a resolver that hangs, in-process.
class hanging_resolver {
 public:
  ~hanging_resolver() { release(); }
  inlet::outbound::lookup_fn fn() {
    return [this](const std::string&, const std::string&, addrinfo**) {
      std::unique_lock lk(mu_);
      ++entered_;
      cv_.wait(lk, [this] { return released_; });
      return EAI_AGAIN;
    };
  }
  void release() {
    {
      std::lock_guard lk(mu_);
      released_ = true;
    }
    cv_.notify_all();
    // The lookups given up on end once released: wait for their threads (bounded).
    for (int i = 0; i < 2000 && inlet::outbound::pending_lookups() != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int entered() {
    std::lock_guard lk(mu_);
    return entered_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  int entered_ = 0;
};

// A server on 127.0.0.1 for one connection at a time, run by `script(fd)`.
class script_server {
 public:
  explicit script_server(std::function<void(int)> script) : script_(std::move(script)) {
    fd_ = listen_loopback(port_);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        script_(c);
        ::close(c);
      }
    });
  }
  ~script_server() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  std::function<void(int)> script_;
  int fd_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

void put(int c, std::string_view s) { (void)!::send(c, s.data(), s.size(), MSG_NOSIGNAL); }

// Reads a line (or, after DATA, the body up to its final dot); false when the client left.
bool read_until(int c, std::string& in, std::string_view end) {
  char buf[4096];
  while (in.find(end) == std::string::npos) {
    const auto n = ::recv(c, buf, sizeof buf, 0);
    if (n <= 0) return false;
    in.append(buf, static_cast<std::size_t>(n));
  }
  in.erase(0, in.find(end) + end.size());
  return true;
}

// Sends `s` a byte every 100 ms until done or the client left (at most 20 s).
void trickle(int c, std::string_view s) {
  for (std::size_t i = 0; i < s.size() && i < 200; ++i) {
    if (::send(c, s.data() + i, 1, MSG_NOSIGNAL) != 1) return;
    pollfd p{c, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {  // the client wrote (QUIT) or left: it gave up
      char b[64];
      if (::recv(c, b, sizeof b, MSG_DONTWAIT) <= 0) return;
    }
  }
}

inlet::outbound::smtp_relay_config local(std::uint16_t port) {
  inlet::outbound::smtp_relay_config cfg;
  cfg.host = "127.0.0.1";
  cfg.port = port;
  cfg.timeout = std::chrono::seconds(1);
  return cfg;
}

}  // namespace

TEST(Resolve, GivesUpOnALookupThatNeverAnswers) {
  hanging_resolver r;
  auto res = inlet::outbound::resolve("relay.test", 25,
                                      std::chrono::steady_clock::now() +
                                          std::chrono::milliseconds(50),
                                      r.fn());
  EXPECT_TRUE(res.timed_out);
  EXPECT_EQ(res.addresses, nullptr);
  EXPECT_EQ(res.error, "cannot resolve relay.test: timed out");
  EXPECT_EQ(inlet::outbound::pending_lookups(), 1u);  // its thread still waits
  r.release();
  EXPECT_EQ(inlet::outbound::pending_lookups(), 0u);
}

TEST(Resolve, NumericAnswersAndFailures) {
  const auto later = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  // Numeric: converted in place, the lookup never called.
  bool called = false;
  auto numeric = inlet::outbound::resolve(
      "127.0.0.1", 2525, later, [&](const std::string&, const std::string&, addrinfo**) {
        called = true;
        return EAI_FAIL;
      });
  ASSERT_NE(numeric.addresses, nullptr);
  EXPECT_FALSE(called);
  EXPECT_EQ(ntohs(reinterpret_cast<sockaddr_in*>(numeric.addresses->ai_addr)->sin_port), 2525);
  // A name: the lookup's answer.
  auto named = inlet::outbound::resolve(
      "relay.test", 25, later, [](const std::string& host, const std::string& port, addrinfo** out) {
        EXPECT_EQ(host, "relay.test");
        addrinfo h{};
        h.ai_family = AF_INET;
        h.ai_socktype = SOCK_STREAM;
        h.ai_flags = AI_NUMERICHOST;
        return ::getaddrinfo("127.0.0.2", port.c_str(), &h, out);
      });
  ASSERT_NE(named.addresses, nullptr);
  EXPECT_EQ(ntohl(reinterpret_cast<sockaddr_in*>(named.addresses->ai_addr)->sin_addr.s_addr),
            0x7f000002u);
  auto failed = inlet::outbound::resolve(
      "nowhere.test", 25, later,
      [](const std::string&, const std::string&, addrinfo**) { return EAI_NONAME; });
  EXPECT_EQ(failed.addresses, nullptr);
  EXPECT_FALSE(failed.timed_out);
  EXPECT_EQ(failed.error.rfind("cannot resolve nowhere.test: ", 0), 0u) << failed.error;
}

TEST(Resolve, BoundsTheThreadsOfLookupsGivenUpOn) {
  hanging_resolver r;
  const auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(1); };
  for (std::size_t i = 0; i < inlet::outbound::kMaxPendingLookups; ++i)
    EXPECT_TRUE(inlet::outbound::resolve("relay.test", 25, soon(), r.fn()).timed_out);
  EXPECT_EQ(inlet::outbound::pending_lookups(), inlet::outbound::kMaxPendingLookups);
  auto refused = inlet::outbound::resolve("relay.test", 25, soon(), r.fn());
  EXPECT_FALSE(refused.timed_out);
  EXPECT_EQ(refused.error, "cannot resolve relay.test: too many lookups pending");
  r.release();
  EXPECT_EQ(inlet::outbound::pending_lookups(), 0u);
}

TEST(SmtpClient, AResolverThatNeverAnswersFailsTheSendAndIsCounted) {
  hanging_resolver r;
  auto cfg = local(25);
  cfg.host = "relay.test";
  cfg.lookup = r.fn();
  const auto before = inlet::outbound::counters();
  inlet::outbound::smtp_client client(cfg);
  const std::string from = "a@example.org", raw = "x\r\n";
  EXPECT_EQ(client.send(from, {"b@example.org"}, raw),
            "relay failed: cannot resolve relay.test: timed out");
  const auto after = inlet::outbound::counters();
  EXPECT_EQ(after.timeouts_resolve - before.timeouts_resolve, 1u);
  EXPECT_EQ(after.resolve_failures - before.resolve_failures, 1u);
  EXPECT_EQ(r.entered(), 1);
}

TEST(SmtpClient, AServerTricklingItsReplyToDataHitsTheMessageBound) {
  script_server server([](int c) {
    put(c, "220 test ESMTP\r\n");
    std::string in;
    if (!read_until(c, in, "\r\n")) return;  // EHLO
    put(c, "250 test\r\n");
    for (const char* reply : {"250 ok\r\n", "250 ok\r\n", "354 go on\r\n"}) {
      if (!read_until(c, in, "\r\n")) return;  // MAIL, RCPT, DATA
      put(c, reply);
    }
    if (!read_until(c, in, "\r\n.\r\n")) return;
    // Each byte well within the per-wait timeout (1 s), so only the whole bound ends it.
    trickle(c, "250 2.0.0 this reply comes a byte at a time and would take twenty seconds"
               " at this pace, far past any bound a sender should wait for one message to"
               " be accepted\r\n");
  });
  auto cfg = local(server.port());
  cfg.message_timeout = std::chrono::milliseconds(300);
  const auto before = inlet::outbound::counters();
  inlet::outbound::smtp_client client(cfg);
  const std::string from = "a@example.org", raw = "Subject: x\r\n\r\nbody\r\n";
  EXPECT_EQ(client.send(from, {"b@example.org"}, raw),
            "relay failed: timed out: the transaction took longer than its bound");
  const auto after = inlet::outbound::counters();
  EXPECT_EQ(after.timeouts_transaction - before.timeouts_transaction, 1u);
  EXPECT_EQ(after.timeouts_setup - before.timeouts_setup, 0u);
}

TEST(SmtpClient, AServerTricklingItsGreetingHitsTheSetUpBound) {
  script_server server([](int c) {
    trickle(c, "220 test ESMTP, greeting a byte at a time for as long as the client waits"
               " for it, which it should not do for long\r\n");
  });
  auto cfg = local(server.port());
  cfg.setup_timeout = std::chrono::milliseconds(300);
  const auto before = inlet::outbound::counters();
  inlet::outbound::smtp_client client(cfg);
  const std::string from = "a@example.org", raw = "x\r\n";
  const std::string why = client.send(from, {"b@example.org"}, raw);
  EXPECT_NE(why.find("timed out: the setup took longer than its bound"), std::string::npos)
      << why;
  const auto after = inlet::outbound::counters();
  EXPECT_EQ(after.timeouts_setup - before.timeouts_setup, 1u);
  EXPECT_EQ(after.timeouts_transaction - before.timeouts_transaction, 0u);
}

TEST(SmtpClient, ASilentServerTimesOutTheWaitInItsPhase) {
  script_server server([](int c) {
    put(c, "220 test ESMTP\r\n");
    std::string in;
    read_until(c, in, "QUIT\r\n");  // answers nothing: the EHLO wait times out
  });
  auto cfg = local(server.port());
  const auto before = inlet::outbound::counters();
  inlet::outbound::smtp_client client(cfg);
  const std::string from = "a@example.org", raw = "x\r\n";
  const std::string why = client.send(from, {"b@example.org"}, raw);
  EXPECT_NE(why.find("timed out waiting for the server (setup)"), std::string::npos) << why;
  EXPECT_EQ(inlet::outbound::counters().timeouts_setup - before.timeouts_setup, 1u);
}

TEST(ClientPool, OneKeptConnectionPerDestinationAcrossLeases) {
  limited_server server(100);
  inlet::outbound::client_pool pool(std::chrono::seconds(60), 2);
  auto cfg = local(server.port());
  const std::string from = "a@example.org", raw = "Subject: x\r\n\r\nbody\r\n";
  const auto before = inlet::outbound::counters();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(pool.acquire(cfg)->send(from, {"b@example.org"}, raw), "");
  EXPECT_EQ(server.messages(), 5);
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(pool.idle(), 1u);
  const auto after = inlet::outbound::counters();
  EXPECT_EQ(after.connections_opened - before.connections_opened, 1u);
  EXPECT_EQ(after.connections_reused - before.connections_reused, 4u);
  // Per-message settings are not the destination: another return path shares it too.
  auto other = cfg;
  other.return_path = "bounce@example.org";
  other.subject_prefix = "[x]";
  EXPECT_EQ(inlet::outbound::client_pool::destination_key(other),
            inlet::outbound::client_pool::destination_key(cfg));
  other.username = "someone";
  EXPECT_NE(inlet::outbound::client_pool::destination_key(other),
            inlet::outbound::client_pool::destination_key(cfg));
  pool.close_idle();  // QUIT: the server sees the session end
  EXPECT_EQ(pool.idle(), 0u);
  EXPECT_EQ(pool.acquire(cfg)->send(from, {"b@example.org"}, raw), "");
  EXPECT_EQ(server.connections(), 2);
}

TEST(ClientPool, IdleConnectionsAreClosedAndAClosedOneIsNoticed) {
  limited_server server(1);  // one message a connection: the next MAIL gets 421
  inlet::outbound::client_pool pool(std::chrono::milliseconds(100), 2);
  auto cfg = local(server.port());
  const std::string from = "a@example.org", raw = "x\r\n";
  EXPECT_EQ(pool.acquire(cfg)->send(from, {"b@example.org"}, raw), "");
  EXPECT_EQ(pool.acquire(cfg)->send(from, {"b@example.org"}, raw), "");  // over a new one
  EXPECT_EQ(server.connections(), 2);
  // Idle past its timeout: closed by the pool (QUIT), the next lease connects anew.
  for (int i = 0; i < 1000 && pool.idle() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(pool.idle(), 0u);
  EXPECT_EQ(pool.acquire(cfg)->send(from, {"b@example.org"}, raw), "");
  EXPECT_EQ(server.connections(), 3);
  EXPECT_EQ(server.messages(), 3);
}

TEST(ClientPool, ForwardSmtpErrorsIsEachSendsNotTheConnections) {
  limited_server server(100);
  inlet::outbound::client_pool pool(std::chrono::seconds(60), 2);
  auto strict = local(server.port());
  strict.forward_smtp_errors = true;
  auto lenient = local(server.port());
  const std::string from = "a@example.org", raw = "x\r\n";
  const std::vector<std::string> rcpt = {"refused@example.org", "b@example.org"};
  // The connection is made for a forward-smtp-errors send: one refusal fails it all.
  {
    auto c = pool.acquire(strict);
    EXPECT_NE(c->send(from, rcpt, raw, true), "");
    EXPECT_EQ(c->last_reply(), "550 5.1.1 no such user");
  }
  // The same connection lent for a default send: the refused recipient is skipped.
  EXPECT_EQ(pool.acquire(lenient)->send(from, rcpt, raw), "");
  EXPECT_EQ(server.messages(), 1);
  EXPECT_EQ(server.connections(), 1);
}
