// The body-observer hook (server_config::body_observer) over loopback, against
// every I/O model and, for the async models, both receive buffers. The observer
// records what it is told; the deliver hook checks it against the body: the
// pieces, concatenated, are the body; each piece lies inside the body's own
// fragments (a view a streaming parser may keep); begin() and end() came. The
// hook answers 250 "queued as Q<n>/<pieces>/<octets>" when they agree, 554 with
// the reason otherwise, so the checks hold in the process model too, where the
// hook runs in a forked child. Counts of made / begun / ended / aborted /
// disposed observers live in one MAP_SHARED page for the same reason.
#include <inlet/smtp/server.hpp>

#include "test_client.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace smtp = inlet::smtp;
using ::testing::HasSubstr;

namespace {

using client = inlet::smtp::test::client;


// Observer events, shared with forked children (process model).
struct counts {
  std::atomic<int> made{0}, begun{0}, ended{0}, aborted{0}, disposed{0}, delivered{0};
};

class shared_counts {
 public:
  shared_counts() {
    void* p = ::mmap(nullptr, sizeof(counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    c_ = new (p) counts;
  }
  ~shared_counts() { ::munmap(c_, sizeof(counts)); }
  counts* operator->() const { return c_; }
  counts* get() const { return c_; }

 private:
  counts* c_;
};

class recorder final : public smtp::body_observer {
 public:
  explicit recorder(counts* c) : c_(c) { c_->made.fetch_add(1); }
  void begin() override {
    c_->begun.fetch_add(1);
    begun = true;
  }
  void data(std::string_view p) override {
    if (!begun || ended) misuse = true;
    pieces.push_back(p);
  }
  void end() override {
    c_->ended.fetch_add(1);
    ended = true;
  }
  void abort() noexcept override {
    c_->aborted.fetch_add(1);
    pieces.clear();
  }
  void dispose() noexcept override {
    c_->disposed.fetch_add(1);
    delete this;
  }

  std::vector<std::string_view> pieces;
  bool begun = false;
  bool ended = false;
  bool misuse = false;

 private:
  counts* c_;
};

// Empty when the observer saw exactly the body, in place; else why not.
std::string check(const smtp::received_message& m) {
  auto* r = dynamic_cast<const recorder*>(m.observer.get());
  if (!r) return "no observer";
  if (!r->begun || !r->ended || r->misuse) return "begin/data/end out of order";
  std::string joined;
  for (auto p : r->pieces) joined += p;
  if (joined != m.body.to_string()) return "pieces are not the body";
  for (auto p : r->pieces) {
    bool inside = false;
    for (auto s : m.body.spans())
      inside = inside || (p.data() >= s.data() && p.data() + p.size() <= s.data() + s.size());
    if (!inside) return "a piece lies outside the body's fragments";
  }
  return {};
}

// (model, flat receive buffer)
using param = std::tuple<smtp::io_model, bool>;

class observer_test : public ::testing::TestWithParam<param> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // As in server_test: TSan supports neither fork + threads nor Boost.Context fibers.
    auto m = std::get<0>(GetParam());
    if (m == smtp::io_model::process || m == smtp::io_model::stackful)
      GTEST_SKIP() << "not supported by TSan (see server_test.cpp)";
#endif
  }
  void start(smtp::server_config cfg = {}) {
    cfg.model = std::get<0>(GetParam());
    cfg.flat_receive_buffer = std::get<1>(GetParam());
    cfg.threads = 2;
    // The Asio models register one socket state per allowed connection when they start
    // (10,000 by default, ~0.1 s each start); no test here opens more than a few.
    cfg.max_connections = std::min<std::size_t>(cfg.max_connections, 256);
    cfg.session.hostname = "mx.test";
    counts* c = cnt.get();
    cfg.body_observer = [c] { return smtp::body_observer_ptr(new recorder(c)); };
    srv = std::make_unique<smtp::server>(cfg, [c](smtp::received_message&& m, smtp::delivery_callback cb) {
      std::string why = check(m);
      if (!why.empty()) return cb({smtp::delivery_status::rejected(554, "5.0.0", "observer: " + why), {}});
      auto* r = static_cast<const recorder*>(m.observer.get());
      int n = c->delivered.fetch_add(1) + 1;
      cb({smtp::delivery_status::accepted("Q" + std::to_string(n) + "/" + std::to_string(r->pieces.size()) +
                                          "/" + std::to_string(m.body.size())),
          {}});
    });
    ASSERT_FALSE(srv->start());
    auto eps = srv->local_endpoints();
    ASSERT_FALSE(eps.empty());
    port = eps[0].port;
    if (eps.size() > 1) lmtp_port = eps[1].port;
  }
  // Stops the server; every connection has closed when it returns.
  void finish() {
    srv->stop();
    srv->wait();
  }
  void TearDown() override {
    if (srv) finish();
    // Whatever happened, every observer made was disposed of, and each was
    // either ended (delivered) or aborted.
    EXPECT_EQ(cnt->made.load(), cnt->disposed.load());
    EXPECT_EQ(cnt->made.load(), cnt->begun.load());
    EXPECT_EQ(cnt->made.load(), cnt->ended.load() + cnt->aborted.load());
  }
  shared_counts cnt;
  std::unique_ptr<smtp::server> srv;
  std::uint16_t port = 0;
  std::uint16_t lmtp_port = 0;
};

const std::string txn = "EHLO c.test\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n";

// "Q<n>/<pieces>/<octets>" of a 250 reply; pieces -1 when absent.
long pieces_of(const std::string& reply) {
  auto q = reply.find("queued as Q");
  if (q == std::string::npos) return -1;
  auto a = reply.find('/', q);
  return a == std::string::npos ? -1 : std::stol(reply.substr(a + 1));
}

}  // namespace

TEST_P(observer_test, pieces_are_the_body_across_many_reads) {
  smtp::server_config cfg;
  cfg.read_buffer_size = 512;  // many reads for one body
  start(cfg);
  client c(port);
  c.send(txn);
  EXPECT_THAT(c.replies(5), HasSubstr("354 "));
  std::string body, stuffed;
  for (int i = 0; i < 4000; ++i) {
    std::string line = (i % 5 == 0 ? "." : "") + std::string("line ") + std::to_string(i) + "\r\n";
    body += line;
    stuffed += (line[0] == '.' ? "." : "") + line;
  }
  for (std::size_t at = 0; at < stuffed.size(); at += 7000) c.send(stuffed.substr(at, 7000));
  c.send(".\r\n");
  std::string r = c.replies(1);
  EXPECT_THAT(r, HasSubstr("250 2.0.0 Ok: queued as Q1/"));
  EXPECT_THAT(r, HasSubstr("/" + std::to_string(body.size()) + "\r\n"));
  EXPECT_GT(pieces_of(r), 10);  // at most 512 octets a read
  finish();
  EXPECT_EQ(cnt->ended.load(), 1);
  EXPECT_EQ(cnt->aborted.load(), 0);
}

TEST_P(observer_test, pipelined_messages_and_an_empty_body) {
  start();
  client c(port);
  c.send(txn + "Subject: a\r\n\r\n..one\r\n.\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n.\r\nQUIT\r\n");
  std::string r = c.replies(1 + 1 + 4 + 3 + 1 + 1);
  EXPECT_THAT(r, HasSubstr("queued as Q1/"));
  EXPECT_THAT(r, HasSubstr("/0\r\n"));  // the empty body: observed, no piece
  EXPECT_THAT(r, HasSubstr("221 2.0.0 Bye"));
  EXPECT_THAT(r, ::testing::Not(HasSubstr("554 ")));
  finish();
  EXPECT_EQ(cnt->ended.load(), 2);
}

TEST_P(observer_test, bdat_chunks) {
  start();
  client c(port);
  c.send("EHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 7\r\n.\r\nDATABDAT 3 LAST\r\nxyz");
  std::string r = c.replies(6);
  EXPECT_THAT(r, HasSubstr("250 2.0.0 7 octets received\r\n250 2.0.0 Ok: queued as Q1/"));
  EXPECT_THAT(r, HasSubstr("/10\r\n"));
  finish();
  EXPECT_EQ(cnt->ended.load(), 1);
}

// RSET between BDAT chunks drops the message without a message_aborted step:
// the chunks taken so far must neither reach the next message nor leak.
TEST_P(observer_test, rset_between_bdat_chunks_drops_the_chunks) {
  start();
  client c(port);
  c.send("EHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 5\r\nhello");
  EXPECT_THAT(c.replies(5), HasSubstr("250 2.0.0 5 octets received\r\n"));
  c.send("RSET\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 3 LAST\r\nxyz");
  std::string r = c.replies(4);
  EXPECT_THAT(r, HasSubstr("250 2.0.0 Ok: queued as Q1/1/3\r\n"));
  // Again, ending with an empty last chunk: the body is empty.
  c.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 4\r\nabcdRSET\r\n"
         "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 0 LAST\r\n");
  r = c.replies(7);
  EXPECT_THAT(r, HasSubstr("250 2.0.0 Ok: queued as Q2/0/0\r\n"));
  finish();
  EXPECT_EQ(cnt->ended.load(), 2);
  EXPECT_EQ(cnt->aborted.load(), 2);
}

TEST_P(observer_test, refused_bodies_abort_the_observer) {
  smtp::server_config cfg;
  cfg.session.max_message_size = 2000;
  start(cfg);
  client c(port);
  c.send(txn + std::string(2500, 'z') + "\r\n.\r\n");  // too big: 552
  EXPECT_THAT(c.replies(5), HasSubstr("552 5.3.4"));
  c.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\nok\r\n" + std::string(1200, 'l') +
         "\r\n.\r\n");  // a line over 1000 octets: 500 5.5.6
  EXPECT_THAT(c.replies(4), HasSubstr("500 5.5.6"));
  c.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\nfine\r\n.\r\n");
  EXPECT_THAT(c.replies(4), HasSubstr("250 2.0.0 Ok: queued as Q1/1/6\r\n"));
  finish();
  EXPECT_EQ(cnt->ended.load(), 1);
  // A refused body is observed only if a piece of it arrived before the limit
  // was crossed (that depends on how the reads fall); if so, it was aborted.
  EXPECT_LE(cnt->aborted.load(), 2);
}

TEST_P(observer_test, connection_lost_in_data_aborts_the_observer) {
  start();
  {
    client c(port);
    c.send(txn + "partial body\r\nno end");
    EXPECT_THAT(c.replies(5), HasSubstr("354 "));
  }
  client c2(port);
  c2.send(txn + "ok\r\n.\r\nQUIT\r\n");
  EXPECT_THAT(c2.replies(7), HasSubstr("queued as Q1/1/4\r\n221"));
  finish();
  EXPECT_EQ(cnt->ended.load(), 1);
  EXPECT_EQ(cnt->aborted.load(), 1);
}

TEST_P(observer_test, stop_while_in_data_aborts_the_observer) {
  smtp::server_config cfg;
  cfg.shutdown_grace = std::chrono::milliseconds(200);
  start(cfg);
  client c(port);
  c.send(txn + "half of a body\r\n");
  EXPECT_THAT(c.replies(5), HasSubstr("354 "));
  finish();  // the grace runs out: 421, closed
  EXPECT_EQ(cnt->ended.load(), 0);
  EXPECT_EQ(cnt->aborted.load(), 1);
}

TEST_P(observer_test, lmtp) {
  smtp::server_config cfg;
  cfg.listen = {smtp::listen_endpoint{"127.0.0.1", 0, false}, smtp::listen_endpoint{"127.0.0.1", 0, true}};
  start(cfg);
  ASSERT_NE(lmtp_port, 0);
  client l(lmtp_port);
  l.send("LHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nRCPT TO:<c@y.test>\r\nDATA\r\nhi\r\n.\r\n");
  std::string r = l.replies(8);
  EXPECT_THAT(r, HasSubstr("250 2.0.0 <b@y.test> Ok: queued as Q1/1/4\r\n"
                           "250 2.0.0 <c@y.test> Ok: queued as Q1/1/4\r\n"));
  finish();
  EXPECT_EQ(cnt->ended.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(
    models, observer_test,
    ::testing::Values(param{smtp::io_model::coro, false}, param{smtp::io_model::coro, true},
                      param{smtp::io_model::async_1n, false}, param{smtp::io_model::async_1n, true},
                      param{smtp::io_model::async_nn, false}, param{smtp::io_model::async_nn, true},
                      param{smtp::io_model::async_n2n, false}, param{smtp::io_model::async_n2n, true},
                      param{smtp::io_model::thread, false}, param{smtp::io_model::stackful, false},
                      param{smtp::io_model::process, false}),
    [](const auto& info) {
      std::string n(smtp::to_string(std::get<0>(info.param)));
      for (auto& ch : n)
        if (ch == '-') ch = '_';
      return n + (std::get<1>(info.param) ? "_flat" : "_segment");
    });

// Without a factory nothing is observed: received_message::observer stays null.
TEST(observer_config, no_factory_no_observer) {
  smtp::server_config cfg;
  cfg.threads = 1;
  cfg.session.hostname = "mx.test";
  std::atomic<int> seen{0}, with_observer{0};
  smtp::server srv(cfg, [&](smtp::received_message&& m, smtp::delivery_callback cb) {
    seen.fetch_add(1);
    if (m.observer) with_observer.fetch_add(1);
    cb({smtp::delivery_status::accepted("Q"), {}});
  });
  ASSERT_FALSE(srv.start());
  client c(srv.local_endpoints()[0].port);
  c.send(txn + "x\r\n.\r\nQUIT\r\n");
  EXPECT_THAT(c.replies(7), HasSubstr("221"));
  srv.stop();
  srv.wait();
  EXPECT_EQ(seen.load(), 1);
  EXPECT_EQ(with_observer.load(), 0);
}

// A coroutine-model server without an observer that keeps every body it is
// handed (the regressions below check what was delivered).
struct body_keeper {
  std::mutex mu;
  std::vector<std::string> bodies;
  smtp::server srv;
  explicit body_keeper(bool flat)
      : srv(config(flat), [this](smtp::received_message&& m, smtp::delivery_callback cb) {
          {
            std::lock_guard lk(mu);
            bodies.push_back(m.body.to_string());
          }
          cb({smtp::delivery_status::accepted("Q"), {}});
        }) {}
  static smtp::server_config config(bool flat) {
    smtp::server_config cfg;
    cfg.threads = 1;
    cfg.flat_receive_buffer = flat;
    cfg.session.hostname = "mx.test";
    return cfg;
  }
};

// The same rule without an observer: before the body collector, the chunks of a
// transaction dropped by RSET between BDAT chunks were prepended to the next
// message's body ("helloxyz" delivered for "xyz").
TEST(observer_config, rset_between_bdat_chunks_without_observer) {
  for (bool flat : {false, true}) {
    body_keeper k(flat);
    ASSERT_FALSE(k.srv.start());
    client c(k.srv.local_endpoints()[0].port);
    c.send("EHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 5\r\nhelloRSET\r\n"
           "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 3 LAST\r\nxyzQUIT\r\n");
    EXPECT_THAT(c.replies(10), HasSubstr("221"));
    k.srv.stop();
    k.srv.wait();
    std::lock_guard lk(k.mu);
    EXPECT_EQ(k.bodies, std::vector<std::string>{"xyz"}) << (flat ? "flat" : "segment");
  }
}

// BDAT chunks with a pause between them: the async models drop a connection's
// coroutine frame while it waits for the peer; the chunks received so far must
// survive that (they are part of the message), for every model and buffer.
TEST_P(observer_test, bdat_chunks_with_a_pause_between_them) {
  start();
  client c(port);
  c.send("EHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 5\r\nhello");
  EXPECT_THAT(c.replies(5), HasSubstr("250 2.0.0 5 octets received\r\n"));
  c.send("BDAT 6\r\n world");
  EXPECT_THAT(c.replies(1), HasSubstr("250 2.0.0 11 octets received\r\n"));
  c.send("BDAT 1 LAST\r\n!");
  EXPECT_THAT(c.replies(1), HasSubstr("250 2.0.0 Ok: queued as Q1/3/12\r\n"));
  finish();
  EXPECT_EQ(cnt->ended.load(), 1);
  EXPECT_EQ(cnt->aborted.load(), 0);
}

// The same pause without an observer: before, the async models lost the chunks
// received before a pause ("!" delivered for "hello!").
TEST(observer_config, bdat_pause_without_observer) {
  for (bool flat : {false, true}) {
    body_keeper k(flat);
    ASSERT_FALSE(k.srv.start());
    client c(k.srv.local_endpoints()[0].port);
    c.send("EHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 5\r\nhello");
    EXPECT_THAT(c.replies(5), HasSubstr("5 octets received"));
    c.send("BDAT 1 LAST\r\n!QUIT\r\n");
    EXPECT_THAT(c.replies(2), HasSubstr("221"));
    k.srv.stop();
    k.srv.wait();
    std::lock_guard lk(k.mu);
    EXPECT_EQ(k.bodies, std::vector<std::string>{"hello!"}) << (flat ? "flat" : "segment");
  }
}
