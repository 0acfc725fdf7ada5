// Driver tests over loopback (127.0.0.1, port 0) with a raw socket client.
// The same conformance cases run against every I/O model. The process model
// runs the deliver hook in a forked child: there the test's hook hands each
// message to the test process over a Unix socket (`mail_drop`), so the same
// assertions on received messages hold.
//
// Built twice: against inlet::smtp (epoll) and inlet::smtp_uring (Asio on
// io_uring, smtp_server_uring_test), which skips when the kernel refuses
// io_uring_setup.
#include <inlet/smtp/server.hpp>

#include "test_client.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef BOOST_ASIO_HAS_IO_URING
#include <linux/io_uring.h>
#include <sys/syscall.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace smtp = inlet::smtp;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

namespace {

using client = inlet::smtp::test::client;


// Why io_uring cannot be used here, or "" when it can (io_uring build only).
std::string io_uring_refused() {
#ifdef BOOST_ASIO_HAS_IO_URING
  io_uring_params p{};
  long fd = ::syscall(__NR_io_uring_setup, 4, &p);
  if (fd < 0) return std::string("io_uring_setup failed: ") + std::strerror(errno);
  ::close(static_cast<int>(fd));
#endif
  return {};
}

#define SKIP_WITHOUT_IO_URING()                                                  \
  do {                                                                           \
    if (auto why = io_uring_refused(); !why.empty())                             \
      GTEST_SKIP() << "io_uring build, but the kernel refuses io_uring: " << why; \
  } while (0)

// Hook calls counted across processes (one MAP_SHARED page): the queue ids
// Q1, Q2, ... stay global when the hook runs in forked children.
struct shared_seq {
  std::atomic<int>* n;
  shared_seq() {
    void* p = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    n = new (p) std::atomic<int>(0);
  }
  ~shared_seq() { ::munmap(n, sizeof(std::atomic<int>)); }
};

struct mailbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<smtp::received_message> messages;
  shared_seq seq;  // hook calls that completed (incremented after add/send)
  void add(smtp::received_message&& m) {
    std::lock_guard lk(mu);
    messages.push_back(std::move(m));
    cv.notify_all();
  }
  // Messages received. Waits (at most 10 s) until every message the hook
  // took has arrived: with the process model they come over a socket.
  std::size_t size() {
    std::unique_lock lk(mu);
    cv.wait_for(lk, 10s, [&] { return messages.size() >= static_cast<std::size_t>(seq.n->load()); });
    return messages.size();
  }
};

// Messages from forked children to the test process: each child's hook
// connects to an abstract Unix socket, sends one record and closes; a thread
// here accepts, decodes and adds to the mailbox. (The child closes every
// inherited descriptor, so it must connect afresh.)
class mail_drop {
 public:
  explicit mail_drop(mailbox& box) : box_(box) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::string name = "inlet-server-test-" + std::to_string(::getpid()) + "-" +
                       std::to_string(reinterpret_cast<std::uintptr_t>(this));
    addr_.sun_family = AF_UNIX;
    std::memcpy(addr_.sun_path + 1, name.data(), name.size());  // abstract namespace
    len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr_), len_) == 0 && ::listen(fd_, 64) == 0;
    thread_ = std::thread([this] { serve(); });
  }
  ~mail_drop() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  bool ok() const { return ok_; }
  // In the child: sends one message; false on failure.
  bool send(const smtp::received_message& m) const {
    std::string rec;
    auto put = [&rec](std::string_view v) {
      std::uint32_t n = static_cast<std::uint32_t>(v.size());
      rec.append(reinterpret_cast<const char*>(&n), sizeof n);
      rec.append(v);
    };
    put(std::string(1, static_cast<char>(m.envelope.proto)));
    put(m.envelope.remote_address);
    put(m.envelope.mail_from);
    put(m.body.to_string());
    for (const auto& r : m.envelope.rcpt_to) put(r);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), len_) != 0) {
      ::close(fd);
      return false;
    }
    std::string_view out = rec;
    while (!out.empty()) {
      ssize_t k = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (k <= 0) break;
      out.remove_prefix(static_cast<std::size_t>(k));
    }
    ::close(fd);
    return out.empty();
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string rec;
      char buf[65536];
      for (;;) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 10000) <= 0) break;
        ssize_t k = ::recv(c, buf, sizeof buf, 0);
        if (k <= 0) break;
        rec.append(buf, static_cast<std::size_t>(k));
      }
      ::close(c);
      decode(rec);
    }
  }
  void decode(std::string_view rec) {
    std::vector<std::string> f;
    while (rec.size() >= 4) {
      std::uint32_t n;
      std::memcpy(&n, rec.data(), 4);
      if (rec.size() < 4 + n) break;
      f.emplace_back(rec.substr(4, n));
      rec.remove_prefix(4 + n);
    }
    if (f.size() < 4) return;
    smtp::received_message m;
    m.envelope.proto = static_cast<smtp::protocol>(f[0][0]);
    m.envelope.remote_address = f[1];
    m.envelope.mail_from = f[2];
    m.body = inlet::buffer::segment::copy_of(f[3]);
    m.envelope.rcpt_to.assign(f.begin() + 4, f.end());
    box_.add(std::move(m));
  }
  mailbox& box_;
  int fd_ = -1;
  sockaddr_un addr_{};
  socklen_t len_ = 0;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class server_test : public ::testing::TestWithParam<smtp::io_model> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_IO_URING();
#if defined(__SANITIZE_THREAD__)
    // TSan covers the multi-threaded models. The process model's child is
    // single-threaded, and under TSan a child that starts a thread after a
    // multi-threaded fork dies (die_after_fork), and signal handlers run
    // deferred, at TSan's next safe point, so the child's SIGTERM arrives late.
    if (GetParam() == smtp::io_model::process)
      GTEST_SKIP() << "process model: fork + threads and deferred signals are not supported by TSan";
    // Stackful: TSan's unwinder follows frame pointers off the top of a
    // Boost.Context fiber stack into its guard page and crashes inside TSan
    // (SEGV in the stack depot, seen here); Debian's Boost 1.81 is not built
    // with TSan fiber annotations, so TSan cannot follow the switches anyway.
    if (GetParam() == smtp::io_model::stackful)
      GTEST_SKIP() << "stackful model: TSan cannot unwind or track Boost.Context fiber stacks";
#endif
  }
  void start(smtp::server_config cfg = {}, smtp::deliver_fn fn = {}) {
    cfg.model = GetParam();
    cfg.threads = 2;
    // The Asio models register one socket state per allowed connection when they start
    // (10,000 by default, ~0.1 s each start); no test here opens more than a few.
    cfg.max_connections = std::min<std::size_t>(cfg.max_connections, 256);
    // ctest runs the suite a second time with the flat (copying) receive buffer.
    if (const char* f = std::getenv("INLET_TEST_FLAT_RECEIVE"); f != nullptr && *f == '1')
      cfg.flat_receive_buffer = true;
    cfg.session.hostname = "mx.test";
    if (!fn && GetParam() == smtp::io_model::process) {
      drop = std::make_unique<mail_drop>(box);
      ASSERT_TRUE(drop->ok());
      fn = [this](smtp::received_message&& m, smtp::delivery_callback cb) {
        if (!drop->send(m)) return cb({smtp::delivery_status::rejected(451, "4.3.0", "drop failed"), {}});
        int n = box.seq.n->fetch_add(1) + 1;
        cb({smtp::delivery_status::accepted("Q" + std::to_string(n)), {}});
      };
    }
    if (!fn)
      fn = [this](smtp::received_message&& m, smtp::delivery_callback cb) {
        box.add(std::move(m));
        int n = box.seq.n->fetch_add(1) + 1;
        cb({smtp::delivery_status::accepted("Q" + std::to_string(n)), {}});
      };
    srv = std::make_unique<smtp::server>(cfg, std::move(fn));
    ASSERT_FALSE(srv->start());
    auto eps = srv->local_endpoints();
    ASSERT_FALSE(eps.empty());
    port = eps[0].port;
    ASSERT_NE(port, 0);
  }
  void TearDown() override {
    if (srv) {
      srv->stop();
      srv->wait();
    }
  }
  mailbox box;
  std::unique_ptr<mail_drop> drop;  // process model: messages from the children
  std::unique_ptr<smtp::server> srv;
  std::uint16_t port = 0;
};

const std::string txn =
    "EHLO c.test\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n";

}  // namespace

TEST_P(server_test, transaction_body_exact_with_dot_lines) {
  start();
  client c(port);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.replies(1), "220 mx.test ESMTP inlet\r\n");
  c.send("EHLO c.test\r\n");
  EXPECT_THAT(c.replies(1), HasSubstr("250-PIPELINING\r\n"));
  c.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n");  // pipelined
  EXPECT_EQ(c.replies(3), "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n354 End data with <CR><LF>.<CR><LF>\r\n");
  c.send("Subject: t\r\n\r\n..dot\r\n..\r\nline\r\n.");
  c.send("\r\n");
  EXPECT_EQ(c.replies(1), "250 2.0.0 Ok: queued as Q1\r\n");
  c.send("QUIT\r\n");
  EXPECT_EQ(c.replies(1), "221 2.0.0 Bye\r\n");
  EXPECT_TRUE(c.closed_by_peer());
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(box.messages[0].body.to_string(), "Subject: t\r\n\r\n.dot\r\n.\r\nline\r\n");
  EXPECT_EQ(box.messages[0].envelope.remote_address, "127.0.0.1");
  EXPECT_EQ(box.messages[0].envelope.rcpt_to, inlet::smtp::recipient_list{"b@y.test"});
}

TEST_P(server_test, whole_session_pipelined_in_one_write) {
  start();
  client c(port);
  std::string all;
  for (int i = 0; i < 3; ++i) all += txn.substr(i ? 13 : 0) + "msg " + std::to_string(i) + "\r\n.\r\n";
  c.send(all + "QUIT\r\n");
  std::string r = c.replies(1 + 1 + 3 * 4 + 1);
  EXPECT_THAT(r, HasSubstr("queued as Q3\r\n221 2.0.0 Bye\r\n"));
  ASSERT_EQ(box.size(), 3u);
  EXPECT_EQ(box.messages[2].body.to_string(), "msg 2\r\n");
}

TEST_P(server_test, large_message_across_many_reads) {
  start();
  client c(port);
  c.send(txn);
  c.replies(5);
  std::string body;
  for (int i = 0; i < 20000; ++i) body += (i % 7 == 0 ? "." : "") + std::string("line ") + std::to_string(i) + "\r\n";
  std::string stuffed;
  for (std::size_t p = 0; p < body.size();) {
    std::size_t e = body.find("\r\n", p) + 2;
    if (body[p] == '.') stuffed += '.';
    stuffed += body.substr(p, e - p);
    p = e;
  }
  c.send(stuffed + ".\r\n");
  EXPECT_EQ(c.replies(1), "250 2.0.0 Ok: queued as Q1\r\n");
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(box.messages[0].body.to_string(), body);
}

TEST_P(server_test, bad_input_answered_while_others_are_served) {
  smtp::server_config cfg;
  cfg.session.max_message_size = 1000;
  start(cfg);
  client bad(port), good(port);
  bad.replies(1);
  good.replies(1);
  bad.send("EHLO b\r\nNOOP " + std::string(2000, 'x') + "\r\n");
  EXPECT_THAT(bad.replies(2), HasSubstr("500 5.5.6 Error: line too long\r\n"));
  bad.send("MAIL FROM:<a@x.test> SIZE=5000\r\n");
  EXPECT_EQ(bad.replies(1), "552 5.3.4 Error: message size exceeds fixed maximum message size\r\n");
  bad.send("RCPT TO:<b@y.test>\r\nXYZZY\r\n");
  EXPECT_EQ(bad.replies(2), "503 5.5.1 Error: need MAIL command\r\n500 5.5.2 Error: command not recognized\r\n");
  good.send(txn + "caf\xC3\xA9\r\n.\r\n");
  EXPECT_THAT(good.replies(5), HasSubstr("250 2.0.0 Ok: queued as Q1\r\n"));
  bad.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n" + std::string(1500, 'z') + "\r\n.\r\n");
  EXPECT_THAT(bad.replies(4), HasSubstr("552 5.3.4"));
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(box.messages[0].body.to_string(), "caf\xC3\xA9\r\n");
}

// Regression: stop() used to release the io_contexts' work guards before it
// posted its 421 handlers to the connections. A context whose connections had
// all just ended could return from run() in between; the handler stayed queued
// there holding its connection, the reaper waited for that connection, and
// wait() never returned (seen with async-n2n under load, epoll and io_uring).
// Each round ends its connections and stops the server at the same moment; a
// hang fails by ctest's timeout. The race is a timing one: a pass is evidence,
// not proof, and the rounds make a hit likely only under load.
TEST_P(server_test, stop_while_connections_are_ending) {
  for (int round = 0; round < 20; ++round) {
    start();
    std::vector<std::unique_ptr<client>> cs;
    for (int i = 0; i < 4; ++i) {
      cs.push_back(std::make_unique<client>(port));
      EXPECT_THAT(cs.back()->replies(1), HasSubstr("220 "));
    }
    for (auto& c : cs) c->send("QUIT\r\n");
    cs[0].reset();
    srv->stop();
    cs.clear();
    srv->wait();
    srv.reset();
  }
}

// A client that pipelines and never reads our replies must not hold a
// connection forever: once the server's reply writes stall, they have the
// command timeout, then the connection is closed (every model). The client
// sends non-blocking, bounded in bytes and time, until the server is gone.
TEST_P(server_test, a_client_that_never_reads_replies_is_closed) {
#if defined(__SANITIZE_ADDRESS__)
  // Failed once in a full ASan run (io_uring build, process model: the
  // connection stayed open for the whole 60 s) and passed alone; most likely
  // the ASan-runtime fork deadlock of many_concurrent_clients (a child stuck
  // before its first read). Not yet proven; the release suite runs it.
  if (GetParam() == smtp::io_model::process)
    GTEST_SKIP() << "ASan runtime is not fork-safe (see many_concurrent_clients)";
#endif
  smtp::server_config cfg;
  cfg.command_timeout = 300ms;
  start(cfg);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string noops;
  for (int i = 0; i < 4096; ++i) noops += "NOOP\r\n";
  bool closed = false;
  std::size_t sent = 0;
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!closed && sent < (std::size_t{256} << 20) && std::chrono::steady_clock::now() < until) {
    ssize_t n = ::send(fd, noops.data(), noops.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);  // the server stopped reading: wait for it to give up
    } else {
      closed = true;  // EPIPE / ECONNRESET: the server closed the connection
    }
  }
  ::close(fd);
  EXPECT_TRUE(closed) << "sent " << sent << " bytes and the connection stayed open";
}

TEST_P(server_test, disconnect_in_the_middle_of_data_stores_nothing) {
  start();
  {
    client c(port);
    c.send(txn + "partial body\r\nno end");
    c.replies(5);
  }
  client c2(port);
  c2.send(txn + "ok\r\n.\r\nQUIT\r\n");
  EXPECT_THAT(c2.replies(7), HasSubstr("221 2.0.0 Bye"));
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(box.messages[0].body.to_string(), "ok\r\n");
}

TEST_P(server_test, asynchronous_delivery_from_another_thread) {
  std::vector<std::thread> workers;
  std::mutex wm;
  start({}, [&](smtp::received_message&& m, smtp::delivery_callback cb) {
    std::lock_guard lk(wm);
    bool bad = m.body.find("spam") != inlet::buffer::segment::npos;
    workers.emplace_back([cb, bad] {
      std::this_thread::sleep_for(20ms);
      cb(bad ? smtp::delivery_result{smtp::delivery_status::rejected(550, "5.7.1", "rejected by filter"), {}}
             : smtp::delivery_result{smtp::delivery_status::accepted("T1"), {}});
    });
  });
  client c(port);
  c.send(txn + "spam\r\n.\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n");
  std::string r = c.replies(9);
  EXPECT_THAT(r, HasSubstr("550 5.7.1 rejected by filter\r\n250 2.1.0 Ok\r\n"));
  c.send("ham\r\n.\r\n");
  EXPECT_EQ(c.replies(1), "250 2.0.0 Ok: queued as T1\r\n");
  srv->stop();
  srv->wait();
  for (auto& t : workers) t.join();  // callbacks must have returned before the server dies
  srv.reset();
  EXPECT_EQ(box.size(), 0u);
}

// The first call of a callback counts: a copy kept and called again, even
// while the connection delivers its next message, answers nothing.
TEST_P(server_test, stale_delivery_callback_is_ignored) {
  std::mutex km;
  std::optional<smtp::delivery_callback> kept;
  int n = 0;
  start({}, [&](smtp::received_message&&, smtp::delivery_callback cb) {
    std::optional<smtp::delivery_callback> old;
    int k = 0;
    {
      std::lock_guard lk(km);
      old = kept;
      kept = cb;
      k = ++n;
    }
    if (old) (*old)({smtp::delivery_status::rejected(554, "5.0.0", "stale"), {}});
    smtp::delivery_result ok{smtp::delivery_status::accepted("S" + std::to_string(k)), {}};
    cb(ok);
    cb({smtp::delivery_status::rejected(554, "5.0.0", "twice"), {}});
  });
  client c(port);
  c.send(txn + "one\r\n.\r\n");
  EXPECT_THAT(c.replies(5), HasSubstr("250 2.0.0 Ok: queued as S1\r\n"));
  c.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\ntwo\r\n.\r\n");
  EXPECT_EQ(c.replies(4),
            "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n354 End data with <CR><LF>.<CR><LF>\r\n"
            "250 2.0.0 Ok: queued as S2\r\n");
  srv->stop();
  srv->wait();
  srv.reset();
}

TEST_P(server_test, bdat_and_lmtp_listener) {
  smtp::server_config cfg;
  cfg.listen = {smtp::listen_endpoint{"127.0.0.1", 0, false}, smtp::listen_endpoint{"127.0.0.1", 0, true}};
  start(cfg);
  auto eps = srv->local_endpoints();
  ASSERT_EQ(eps.size(), 2u);
  EXPECT_TRUE(eps[1].lmtp);
  client c(port);
  c.send("EHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 7\r\n.\r\nDATABDAT 3 LAST\r\nxyz");
  EXPECT_THAT(c.replies(6), HasSubstr("250 2.0.0 7 octets received\r\n250 2.0.0 Ok: queued as Q1\r\n"));
  client l(eps[1].port);
  EXPECT_EQ(l.replies(1), "220 mx.test LMTP inlet\r\n");
  l.send("LHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nRCPT TO:<c@y.test>\r\nDATA\r\nhi\r\n.\r\n");
  EXPECT_THAT(l.replies(7), HasSubstr("250 2.0.0 <b@y.test> Ok: queued as Q2\r\n250 2.0.0 <c@y.test> Ok: queued as Q2\r\n"));
  ASSERT_EQ(box.size(), 2u);
  EXPECT_EQ(box.messages[0].body.to_string(), ".\r\nDATAxyz");
  EXPECT_EQ(box.messages[1].envelope.proto, smtp::protocol::lmtp);
}

TEST_P(server_test, graceful_stop) {
  start();
  client idle(port), busy(port);
  idle.send("EHLO i\r\n");
  idle.replies(2);
  busy.send(txn + "first part\r\n");
  busy.replies(5);
  srv->stop();
  EXPECT_EQ(idle.replies(1), "421 4.3.2 mx.test Service shutting down\r\n");
  EXPECT_TRUE(idle.closed_by_peer());
  // No command after the data: with the process model the parent signals the
  // children one by one, so on a loaded machine the busy child may see its
  // SIGTERM only after this transaction; a pipelined NOOP would then be
  // answered 250 (correctly: it came before the stop reached that session).
  // The 421 must follow the transaction either way.
  busy.send("second part\r\n.\r\n");
  EXPECT_EQ(busy.replies(2), "250 2.0.0 Ok: queued as Q1\r\n421 4.3.2 mx.test Service shutting down\r\n");
  EXPECT_TRUE(busy.closed_by_peer());
  srv->wait();
  // No child left, not even a zombie (the process model reaps all of them).
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(box.messages[0].body.to_string(), "first part\r\nsecond part\r\n");
  client late(port);  // nothing listens any more
  EXPECT_FALSE(late.ok());
}

// Connections that arrive together are taken several per listener wake-up
// (accepts_per_event; the thread and process models accept one at a time and
// must give the same answers): each is served, and the limits still hold for
// the ones taken in a burst.
TEST_P(server_test, accepts_per_event_takes_a_burst_within_the_limits) {
  smtp::server_config cfg;
  cfg.accepts_per_event = 8;
  cfg.max_connections_per_ip = 6;
  start(cfg);
  std::vector<std::unique_ptr<client>> burst;
  for (int i = 0; i < 9; ++i) burst.push_back(std::make_unique<client>(port));  // queue up at once
  int refused = 0;
  std::vector<client*> greeted;
  for (auto& c : burst) {
    std::string r = c->replies(1);
    if (r.starts_with("220 ")) greeted.push_back(c.get());
    if (r == "421 4.7.0 mx.test Error: too many connections\r\n") ++refused;
  }
  EXPECT_EQ(greeted.size(), 6u);
  EXPECT_EQ(refused, 3);
  int served = 0;
  for (client* c : greeted) {
    c->send(txn + "burst\r\n.\r\nQUIT\r\n");
    if (c->replies(6).find("221 ") != std::string::npos) ++served;
  }
  EXPECT_EQ(served, 6);
  EXPECT_EQ(box.size(), 6u);
}

TEST_P(server_test, connection_limit_per_ip) {
  smtp::server_config cfg;
  cfg.max_connections_per_ip = 2;
  start(cfg);
  client a(port), b(port);
  EXPECT_THAT(a.replies(1), HasSubstr("220 "));
  EXPECT_THAT(b.replies(1), HasSubstr("220 "));
  client c(port);
  EXPECT_EQ(c.replies(1), "421 4.7.0 mx.test Error: too many connections\r\n");
  EXPECT_TRUE(c.closed_by_peer());
  a.send("QUIT\r\n");
  a.replies(1);
  EXPECT_TRUE(a.closed_by_peer());
  // the slot is released once the server has closed its side; retry briefly
  bool admitted = false;
  for (int i = 0; i < 50 && !admitted; ++i) {
    client d(port);
    admitted = d.replies(1).starts_with("220 ");
    if (!admitted) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(admitted);
}

TEST_P(server_test, idle_client_times_out_with_421) {
  smtp::server_config cfg;
  cfg.command_timeout = 300ms;
  cfg.greeting_timeout = 300ms;
  start(cfg);
  client c(port);
  c.send("EHLO c\r\n");
  c.replies(2);
  c.send("NO");  // a partial line does not extend the deadline
  EXPECT_EQ(c.replies(1), "421 4.4.2 mx.test Error: timeout exceeded\r\n");
  EXPECT_TRUE(c.closed_by_peer());
}

// A connection that says nothing after EHLO is idle (async models: no
// coroutine, only a readiness wait); the deadline still fires, and a second
// connection idle as long but then speaking is served normally.
TEST_P(server_test, silent_after_ehlo_times_out_while_a_talker_is_served) {
  smtp::server_config cfg;
  cfg.command_timeout = 600ms;
  cfg.greeting_timeout = 600ms;
  start(cfg);
  client silent(port), talker(port);
  silent.send("EHLO s\r\n");
  talker.send("EHLO t\r\n");
  EXPECT_THAT(silent.replies(2), HasSubstr("250 "));
  EXPECT_THAT(talker.replies(2), HasSubstr("250 "));
  std::this_thread::sleep_for(100ms);  // both idle, well inside the deadline
  talker.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\nhello\r\n.\r\nQUIT\r\n");
  EXPECT_THAT(talker.replies(5), HasSubstr("221 "));
  EXPECT_EQ(silent.replies(1), "421 4.4.2 mx.test Error: timeout exceeded\r\n");
  EXPECT_TRUE(silent.closed_by_peer());
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(box.messages[0].body.to_string(), "hello\r\n");
}

TEST_P(server_test, many_concurrent_clients) {
#if defined(__SANITIZE_ADDRESS__)
  // GCC 12's libasan does not intercept fork(): a child forked while another
  // thread holds a lock of ASan's allocator deadlocks in its first malloc
  // (seen once here: a child stuck until SIGKILL). glibc's own malloc is
  // fork-safe, so this is a property of the ASan runtime, not of the model;
  // eight client threads allocating while the server forks make it likely.
  if (GetParam() == smtp::io_model::process)
    GTEST_SKIP() << "ASan runtime is not fork-safe with concurrent allocations (see comment)";
#endif
  start();
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      client c(port);
      std::string all = "EHLO c\r\n";
      for (int i = 0; i < 10; ++i)
        all += "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\nfrom " + std::to_string(t) + "\r\n.\r\n";
      c.send(all + "QUIT\r\n");
      if (c.replies(2 + 40 + 1).find("221 2.0.0 Bye") != std::string::npos) ++ok;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(box.size(), 80u);
  EXPECT_EQ(srv->stats().messages_delivered, 80u);
}

TEST_P(server_test, text_line_limit_refuses_the_message) {
  smtp::server_config cfg;
  cfg.session.max_text_line = 100;
  start(cfg);
  client c(port);
  c.send(txn + std::string(200, 'x') + "\r\n.\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n" +
         std::string(98, 'y') + "\r\n.\r\n");
  std::string r = c.replies(10);
  EXPECT_THAT(r, HasSubstr("354 End data with <CR><LF>.<CR><LF>\r\n500 5.5.6 Error: line too long in message data\r\n250 2.1.0 Ok\r\n"));
  EXPECT_THAT(r, HasSubstr("250 2.0.0 Ok: queued as Q1\r\n"));
  ASSERT_EQ(box.size(), 1u);
  EXPECT_EQ(box.messages[0].body.to_string(), std::string(98, 'y') + "\r\n");
}

// A client stalled inside DATA would hold a graceful stop for data_timeout
// (3 min); after shutdown_grace it gets 421 4.3.2 and is closed.
TEST_P(server_test, shutdown_grace_closes_a_client_stalled_in_data) {
  smtp::server_config cfg;
  cfg.shutdown_grace = 300ms;
  start(cfg);
  client stalled(port), idle(port);
  stalled.send(txn + "half of a body\r\n");
  EXPECT_THAT(stalled.replies(5), HasSubstr("354 "));
  idle.send("EHLO i\r\n");
  idle.replies(2);
  srv->stop();
  EXPECT_EQ(idle.replies(1), "421 4.3.2 mx.test Service shutting down\r\n");
  EXPECT_EQ(stalled.replies(1), "421 4.3.2 mx.test Service shutting down\r\n");
  EXPECT_TRUE(stalled.closed_by_peer());
  srv->wait();
  EXPECT_EQ(box.size(), 0u);
  EXPECT_EQ(srv->stats().active_connections, 0u);
}

// Memory a message holds must follow the bytes the client sent, however it
// splits them: reads of a few bytes each inside DATA, reads of a few hundred,
// and lines that each begin with a stuffed dot. Measured through the buffer's
// own accounting (segment::footprint: every fragment the body keeps alive,
// whole, plus its slice storage) in the deliver hook, so it also holds in the
// process model's child (the figures travel in a shared page).
TEST_P(server_test, body_memory_follows_the_bytes_sent_however_split) {
  struct figures {
    std::atomic<int> n{0};
    std::atomic<std::size_t> size[3], footprint[3];
  };
  void* page = ::mmap(nullptr, sizeof(figures), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                      -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* fig = new (page) figures{};
  start({}, [fig](smtp::received_message&& m, smtp::delivery_callback cb) {
    int i = fig->n.load();
    if (i < 3) {
      fig->size[i] = m.body.size();
      fig->footprint[i] = m.body.footprint();
      fig->n = i + 1;
    }
    cb({smtp::delivery_status::accepted("Q"), {}});
  });
  client c(port);
  c.no_delay();
  c.send(txn);
  EXPECT_THAT(c.replies(5), HasSubstr("354 "));
  for (int i = 0; i < 150; ++i) {  // 5 octets a write
    c.send("abc\r\n");
    std::this_thread::sleep_for(1ms);
  }
  c.send(".\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n");
  EXPECT_THAT(c.replies(4), HasSubstr("354 "));
  const std::string line = std::string(298, 'm') + "\r\n";
  for (int i = 0; i < 30; ++i) {  // 300 octets a write
    c.send(line);
    std::this_thread::sleep_for(1ms);
  }
  c.send(".\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n");
  EXPECT_THAT(c.replies(4), HasSubstr("354 "));
  std::string dots;
  for (int i = 0; i < 8000; ++i) dots += "..\r\n";  // a piece of 3 octets per line
  c.send(dots + ".\r\nQUIT\r\n");
  EXPECT_THAT(c.replies(2), HasSubstr("221 "));
  ASSERT_TRUE(c.closed_by_peer());
  ASSERT_EQ(fig->n.load(), 3);
  EXPECT_EQ(fig->size[0].load(), 150u * 5);
  EXPECT_EQ(fig->size[1].load(), 30u * 300);
  EXPECT_EQ(fig->size[2].load(), 8000u * 3);
  // At most twice the body (a fragment referenced, and small pieces of it
  // copied) plus a few fragments (the one being filled, the last read's).
  constexpr std::size_t fragment = 8192 + 64;
  for (int i = 0; i < 3; ++i)
    EXPECT_LE(fig->footprint[i].load(), 2 * fig->size[i].load() + 4 * fragment) << "message " << i;
  ::munmap(page, sizeof(figures));
}

// Slot exhaustion by trickling clients: hostile clients from a few addresses
// open connections and dribble a command line. Once slots are scarce
// (pressure), an address at its share is refused while others are served;
// when every slot is taken anyway (clients from yet more addresses), a new
// client within its share takes the slot of the slowest connection, which is
// told 421 4.7.0 (not in the process model: its connections live in children
// the parent cannot reach). Timeouts are an hour here, so that only
// admission defends. Before slot pressure existed, the good client got 421.
TEST_P(server_test, trickling_clients_cannot_take_every_slot) {
  smtp::server_config cfg;
  cfg.max_connections = 12;
  cfg.max_connections_per_ip = 100;
  cfg.max_connections_per_subnet = 0;
  cfg.pressure_percent = 75;  // from 9 open connections
  cfg.pressure_per_ip = 3;
  cfg.pressure_per_subnet = 100;
  cfg.greeting_timeout = cfg.command_timeout = cfg.pressure_timeout = std::chrono::hours(1);
  start(cfg);
  std::vector<std::unique_ptr<client>> hostile;
  int refused = 0;
  auto trickle_from = [&](const std::string& ip) {
    auto c = std::make_unique<client>(port, ip.c_str());
    std::string r = c->replies(1);
    if (r.starts_with("421 4.7.0")) {
      ++refused;
      return;
    }
    ASSERT_TRUE(r.starts_with("220 ")) << r;
    c->send("E");  // a command line that never ends
    hostile.push_back(std::move(c));
  };
  for (int round = 0; round < 5; ++round)  // three addresses, five tries each, in turn
    for (const char* ip : {"127.0.1.1", "127.0.2.1", "127.0.3.1"}) trickle_from(ip);
  EXPECT_EQ(hostile.size(), 9u);
  EXPECT_EQ(refused, 6);
  EXPECT_TRUE(srv->stats().under_pressure);
  auto serve_good_client = [&] {
    for (int attempt = 0; attempt < 50; ++attempt) {  // an eviction takes a moment to land
      client good(port, "127.0.0.1");
      if (!good.replies(1).starts_with("220 ")) {
        std::this_thread::sleep_for(50ms);
        continue;
      }
      good.send(txn + "good\r\n.\r\nQUIT\r\n");
      return good.replies(6).find("250 2.0.0 Ok: queued") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(serve_good_client());
  if (GetParam() == smtp::io_model::process) return;
  // The good client's slot is released once its thread or handler has seen
  // the close: until then a fourth hostile address would evict already.
  for (int i = 0; i < 200 && srv->stats().active_connections > 9; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(srv->stats().active_connections, 9u);
  for (int i = 0; i < 3; ++i) trickle_from("127.0.4.1");  // every slot taken now
  ASSERT_EQ(hostile.size(), 12u);
  EXPECT_TRUE(serve_good_client());
  int told = 0;
  for (int i = 0; i < 100 && told == 0; ++i) {  // the victim's 421 is on its way: at most 5 s
    for (auto& c : hostile)
      if (c->replies_now() ==
          "421 4.7.0 mx.test Error: too many connections, closing a slow one\r\n")
        ++told;
    if (told == 0) std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(told, 1);
  EXPECT_GE(srv->stats().connections_evicted, 1u);
  EXPECT_EQ(box.size(), 2u);
}

// Under slot pressure an idle connection's command timeout and a trickled
// body's data timeout are cut to pressure_timeout, also for waits that were
// pending before the pressure began.
TEST_P(server_test, pressure_shortens_the_timeouts) {
  smtp::server_config cfg;
  cfg.max_connections = 4;
  cfg.pressure_percent = 50;  // from 2 open connections until none is left
  cfg.greeting_timeout = cfg.command_timeout = cfg.data_timeout = std::chrono::hours(1);
  cfg.pressure_timeout = 300ms;
  start(cfg);
  client idle(port);
  idle.send("EHLO i\r\n");
  EXPECT_THAT(idle.replies(2), HasSubstr("250 "));
  EXPECT_FALSE(srv->stats().under_pressure);
  client in_body(port);  // the pressure begins
  in_body.send(txn + "a line\r\n");
  EXPECT_THAT(in_body.replies(5), HasSubstr("354 "));
  EXPECT_EQ(idle.replies(1), "421 4.4.2 mx.test Error: timeout exceeded\r\n");
  EXPECT_EQ(in_body.replies(1), "421 4.4.2 mx.test Error: timeout exceeded\r\n");
  EXPECT_TRUE(idle.closed_by_peer());
  EXPECT_TRUE(in_body.closed_by_peer());
  EXPECT_EQ(box.size(), 0u);
}

// A body trickled below min_data_rate runs out of time after about
// data_timeout, although every read comes well within it.
TEST_P(server_test, a_body_below_the_minimum_rate_times_out) {
  smtp::server_config cfg;
  cfg.data_timeout = 400ms;
  cfg.min_data_rate = 500;
  start(cfg);
  client c(port);
  c.no_delay();
  c.send(txn);
  EXPECT_THAT(c.replies(5), HasSubstr("354 "));
  std::string r;
  for (int i = 0; i < 100 && r.empty(); ++i) {  // 1 octet every 50 ms, for at most 5 s
    c.send("x");
    std::this_thread::sleep_for(50ms);
    r = c.replies_now();
  }
  EXPECT_EQ(r, "421 4.4.2 mx.test Error: timeout exceeded\r\n");
  EXPECT_EQ(box.size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(models, server_test,
                         ::testing::Values(smtp::io_model::coro, smtp::io_model::async_1n,
                                           smtp::io_model::async_nn, smtp::io_model::async_n2n,
                                           smtp::io_model::thread, smtp::io_model::stackful,
                                           smtp::io_model::process),
                         [](const auto& info) {
                           std::string n(smtp::to_string(info.param));
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(server_config, reads_per_event_and_io_model_names) {
  smtp::io_model m;
  EXPECT_TRUE(smtp::parse_io_model("async-n2n", m));
  EXPECT_EQ(m, smtp::io_model::async_n2n);
  EXPECT_FALSE(smtp::parse_io_model("fork", m));
  EXPECT_TRUE(smtp::parse_io_model("stackful", m));
  EXPECT_EQ(m, smtp::io_model::stackful);
  EXPECT_TRUE(smtp::parse_io_model("process", m));
  EXPECT_EQ(smtp::to_string(m), "process");
  SKIP_WITHOUT_IO_URING();
  smtp::server_config cfg;
  cfg.reads_per_event = std::getenv("RPE") ? 1 : 8;
  cfg.threads = std::getenv("THR") ? 2 : 1;
  mailbox box;
  smtp::server srv(cfg, [&](smtp::received_message&& msg, smtp::delivery_callback cb) {
    box.add(std::move(msg));
    cb({smtp::delivery_status::accepted("R"), {}});
  });
  ASSERT_FALSE(srv.start());
  client c(srv.local_endpoints()[0].port);
  std::string all = "EHLO c\r\n";
  for (int i = 0; i < 50; ++i) all += "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\nm\r\n.\r\n";
  c.send(all + "QUIT\r\n");
  EXPECT_THAT(c.replies(2 + 200 + 1), HasSubstr("221 2.0.0 Bye"));
  EXPECT_EQ(box.size(), 50u);
}

TEST(server_config, bind_failure_is_reported) {
  smtp::server_config cfg;
  cfg.listen = {smtp::listen_endpoint{"not-an-ip", 0, false}};
  smtp::server srv(cfg, {});
  EXPECT_TRUE(srv.start());
}
