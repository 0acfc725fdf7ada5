// Loopback tests of the runner against an in-process SMTP sink (label "net"; also run
// under TSan: the runner's workers are threads). Every run is bounded by count and time.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <map>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "inlet/load/runner.hpp"

using namespace inlet::load;

namespace {

// A blocking, thread-per-connection SMTP sink: enough protocol for the client, pipelining
// tolerated, every `reject_every`-th RCPT refused with 550.
class test_sink {
 public:
  explicit test_sink(int reject_every = 0) : reject_every_(reject_every) {
    lfd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd_, 128) != 0 ||
        ::getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      std::abort();
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~test_sink() {
    ::shutdown(lfd_, SHUT_RDWR);
    ::close(lfd_);
    acceptor_.join();
    std::lock_guard lk(m_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : conns_) t.join();
    for (int fd : fds_) ::close(fd);
  }
  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  void accept_loop() {
    for (;;) {
      const int fd = ::accept(lfd_, nullptr, nullptr);
      if (fd < 0) return;
      ++accepted_;
      std::lock_guard lk(m_);
      fds_.push_back(fd);
      conns_.emplace_back([this, fd] { serve(fd); });
    }
  }
  static bool send_all(int fd, std::string_view s) {
    while (!s.empty()) {
      const ssize_t w = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      s.remove_prefix(static_cast<std::size_t>(w));
    }
    return true;
  }
  void serve(int fd) {
    std::string in, out;
    if (!send_all(fd, "220 test sink\r\n")) return;
    enum { cmd, data, bdat } mode = cmd;
    std::size_t need = 0;
    char buf[16384];
    for (;;) {
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r <= 0) return;
      in.append(buf, static_cast<std::size_t>(r));
      for (bool progress = true; progress;) {
        progress = false;
        if (mode == data) {
          const auto end = in.find("\r\n.\r\n");
          if (end == std::string::npos) break;
          in.erase(0, end + 5);
          out += "250 queued\r\n";
          mode = cmd;
          progress = true;
        } else if (mode == bdat) {
          if (in.size() < need) break;
          in.erase(0, need);
          out += "250 queued\r\n";
          mode = cmd;
          progress = true;
        } else {
          const auto nl = in.find("\r\n");
          if (nl == std::string::npos) break;
          const std::string line = in.substr(0, nl);
          in.erase(0, nl + 2);
          progress = true;
          if (line.starts_with("RCPT")) {
            std::lock_guard lk(m_);
            ++mailboxes_[line.substr(9, line.find('>') - 9)];
          }
          if (line.starts_with("EHLO")) out += "250-sink\r\n250-PIPELINING\r\n250 CHUNKING\r\n";
          else if (line.starts_with("RCPT") && reject_every_ && ++rcpts_ % reject_every_ == 0)
            out += "550 no such user\r\n";
          else if (line.starts_with("DATA")) {
            out += "354 go\r\n";
            in.insert(0, "\r\n");  // the DATA line's CRLF begins the first body line
            mode = data;
          } else if (line.starts_with("BDAT")) {
            need = std::strtoull(line.c_str() + 5, nullptr, 10);
            mode = bdat;
          } else if (line.starts_with("QUIT")) {
            send_all(fd, out + "221 bye\r\n");
            return;
          } else out += "250 ok\r\n";
        }
      }
      if (!out.empty() && !send_all(fd, out)) return;
      out.clear();
    }
  }

  int reject_every_;
  std::atomic<int> rcpts_{0}, accepted_{0};

 public:
  std::map<std::string, int> mailboxes() {
    std::lock_guard lk(m_);
    return mailboxes_;
  }

 private:
  std::map<std::string, int> mailboxes_;  // guarded by m_
  int lfd_ = -1;
  std::uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex m_;
  std::vector<int> fds_;
  std::vector<std::thread> conns_;
};

prepared_corpus small_corpus() {
  synthetic_params p;
  p.count = 8;
  p.mean_bytes = 3000;
  return prepared_corpus(synthesize(p));
}

run_result run_against(const test_sink& sink, run_config cfg, const prepared_corpus& corpus) {
  cfg.host = "127.0.0.1";
  cfg.port = sink.port();
  cfg.sources = 1;
  cfg.duration_s = 30;  // bound; the count ends the run long before
  runner r(cfg, corpus);
  r.start();
  return r.wait();
}
}  // namespace

TEST(RunnerNet, PipelinedTwoThreadsDeliversExactlyCount) {
  test_sink sink;
  const auto corpus = small_corpus();
  run_config cfg;
  cfg.threads = 2;
  cfg.connections = 4;
  cfg.count = 101;
  const auto res = run_against(sink, cfg, corpus);
  EXPECT_EQ(res.messages_ok, 101u);
  EXPECT_EQ(res.messages_failed, 0u);
  EXPECT_TRUE(res.errors.empty());
  EXPECT_EQ(res.latency.count(), 101u);
  EXPECT_EQ(res.connects, 4u);
  EXPECT_EQ(res.pipelining_fallbacks, 0u);
  EXPECT_GT(res.bytes_ok, 101u * 400u);
}

TEST(RunnerNet, BdatWithReconnects) {
  test_sink sink;
  const auto corpus = small_corpus();
  run_config cfg;
  cfg.threads = 2;
  cfg.connections = 3;
  cfg.count = 30;
  cfg.session.bdat = true;
  cfg.session.messages_per_connection = 4;
  const auto res = run_against(sink, cfg, corpus);
  EXPECT_EQ(res.messages_ok, 30u);
  EXPECT_TRUE(res.errors.empty());
  EXPECT_GE(res.connects, 30u / 4u);  // a new connection every 4 messages
  EXPECT_GE(sink.accepted(), 8);
}

TEST(RunnerNet, RejectedRecipientsCountedByCode) {
  test_sink sink(/*reject_every=*/5);
  const auto corpus = small_corpus();
  run_config cfg;
  cfg.connections = 2;
  cfg.count = 50;
  cfg.session.pipelining = false;
  const auto res = run_against(sink, cfg, corpus);
  EXPECT_EQ(res.messages_ok + res.messages_failed, 50u);
  EXPECT_EQ(res.messages_failed, 10u);
  ASSERT_EQ(res.errors.count("550"), 1u);
  EXPECT_EQ(res.errors.at("550"), 10u);
}

TEST(RunnerNet, OpenLoopCompletesCount) {
  test_sink sink;
  const auto corpus = small_corpus();
  run_config cfg;
  cfg.threads = 2;
  cfg.connections = 4;
  cfg.count = 40;
  cfg.rate = 2000;
  const auto res = run_against(sink, cfg, corpus);
  EXPECT_EQ(res.messages_ok, 40u);
  EXPECT_EQ(res.latency.count(), 40u);
  EXPECT_EQ(res.service.count(), 40u);
}

TEST(RunnerNet, RefusedConnectionsAreCountedAndTheRunStillEnds) {
  // A port nobody listens on: connect errors until the duration bound.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);  // bound then closed: the port refuses connections
  const auto corpus = small_corpus();
  run_config cfg;
  cfg.port = ntohs(a.sin_port);
  cfg.duration_s = 0.3;
  cfg.connections = 2;
  runner r(cfg, corpus);
  r.start();
  const auto res = r.wait();
  EXPECT_EQ(res.messages_ok, 0u);
  EXPECT_GT(res.connect_errors, 0u);
}

TEST(RunnerNet, RecipientsSpreadOverMailboxes) {
  test_sink sink;
  const auto corpus = small_corpus();
  run_config cfg;
  cfg.connections = 3;
  cfg.count = 60;
  cfg.to = "box{n}@shard.test";
  cfg.to_count = 10;
  cfg.rcpts_per_message = 3;
  const auto res = run_against(sink, cfg, corpus);
  EXPECT_EQ(res.messages_ok, 60u);
  const auto boxes = sink.mailboxes();
  EXPECT_EQ(boxes.size(), 10u);  // every mailbox got mail
  int total = 0;
  for (const auto& [box, n] : boxes) {
    EXPECT_TRUE(box.starts_with("box") && box.ends_with("@shard.test")) << box;
    total += n;
  }
  EXPECT_EQ(total, 180);  // 3 recipients a message
}

TEST(RunnerNet, MailboxPatterns) {
  EXPECT_EQ(mailbox_of("u{n}@x", 7), "u7@x");
  EXPECT_EQ(mailbox_of("rcpt@inlet.test", 12), "rcpt12@inlet.test");
  run_config cfg;
  cfg.to_count = 4;
  cfg.rcpts_per_message = 2;
  auto envs = make_envelopes(cfg);
  ASSERT_EQ(envs.size(), 4u);
  EXPECT_EQ(envs[3]->rcpt, "RCPT TO:<rcpt3@inlet.test>\r\nRCPT TO:<rcpt0@inlet.test>\r\n");
}
