// Fragments acquired on one thread and freed on others (run under TSan).
#include <inlet/buffer/pool.hpp>
#include <inlet/buffer/streambuf.hpp>

#include <boost/asio/buffer.hpp>

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace inlet::buffer {
namespace {

template <class T>
class queue {
 public:
  void push(T v) {
    {
      std::lock_guard lk(mu_);
      q_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  bool pop(T& out) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !q_.empty() || closed_; });
    if (q_.empty()) return false;
    out = std::move(q_.front());
    q_.pop_front();
    return true;
  }
  void close() {
    {
      std::lock_guard lk(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> q_;
  bool closed_ = false;
};

TEST(Threads, SegmentsFreedOnOtherThreadsComeHome) {
  pool& p = pool::get(4096);
  pool_limits old = p.limits();
  p.set_limits({8, 4, 100000});
  constexpr int producers = 2, consumers = 2, messages = 2000;
  queue<segment> q;
  std::vector<std::thread> ts;
  std::atomic<std::size_t> bytes{0};
  for (int c = 0; c < consumers; ++c) {
    ts.emplace_back([&] {
      segment s;
      while (q.pop(s)) {
        // Share the segment again within this thread, then drop it.
        segment copy = s.sub(1);
        bytes.fetch_add(copy.size() + 1, std::memory_order_relaxed);
        ASSERT_EQ(s.find("\r\n.\r\n"), s.size() - 5);
        s.clear();
      }
    });
  }
  std::vector<std::thread> ps;
  for (int w = 0; w < producers; ++w) {
    ps.emplace_back([&, w] {
      streambuf sb(p);
      std::string msg(5000 + 100 * static_cast<std::size_t>(w), 'm');
      msg += "\r\n.\r\n";
      for (int i = 0; i < messages; ++i) {
        auto b = sb.prepare(msg.size());
        boost::asio::buffer_copy(b, boost::asio::buffer(msg));
        sb.commit(msg.size());
        std::size_t end = sb.find("\r\n.\r\n");
        segment m = sb.detach(end + 5);
        // One copy goes to a consumer, one shared copy is dropped here.
        segment keep = m;
        q.push(std::move(m));
      }
    });
  }
  for (auto& t : ps) t.join();
  q.close();
  for (auto& t : ts) t.join();
  EXPECT_EQ(bytes.load(), std::size_t(messages) * (5005 + 5105));
  pool::flush_thread_cache();
  auto s = p.stats();
  // All threads have exited and flushed: every fragment handed out came back.
  EXPECT_EQ(s.acquires, s.releases);
  EXPECT_GT(s.batches_to_global, 0u);
  p.set_limits(old);
}

TEST(Threads, ConcurrentCopiesOfOneSegment) {
  segment shared = segment::copy_of(std::string(20000, 's'), pool::get(4096));
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&shared] {
      for (int i = 0; i < 2000; ++i) {
        segment c = shared;  // concurrent add_ref / unref on the same fragments
        segment d = c.sub(static_cast<std::size_t>(i), 100);
        ASSERT_EQ(d.size(), 100u);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(shared.size(), 20000u);
  EXPECT_EQ(shared.find('x'), segment::npos);
}

}  // namespace
}  // namespace inlet::buffer
