// worker_pool: jobs run on a worker, not the posting thread, in the order posted; the
// poster is not held while a job runs; the destructor runs what is still queued.
#include <inlet/mail/worker_pool.hpp>

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

TEST(worker_pool, runs_jobs_off_the_caller_in_order) {
  std::mutex m;
  std::vector<int> order;
  std::vector<std::thread::id> ran_on;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  {
    inlet::mail::worker_pool pool(1);
    ASSERT_EQ(pool.threads(), 1u);
    // The first job blocks until the test releases it: post() must return meanwhile.
    pool.post([&, released] {
      released.wait();
      std::lock_guard lk(m);
      order.push_back(0);
      ran_on.push_back(std::this_thread::get_id());
    });
    for (int i = 1; i <= 50; ++i) {
      auto owned = std::make_unique<int>(i);  // move-only jobs are accepted
      pool.post([&, owned = std::move(owned)] {
        std::lock_guard lk(m);
        order.push_back(*owned);
        ran_on.push_back(std::this_thread::get_id());
      });
    }
    {
      std::lock_guard lk(m);
      EXPECT_TRUE(order.empty());  // all held behind the first job
    }
    release.set_value();
  }  // the destructor runs the queue to its end
  ASSERT_EQ(order.size(), 51u);
  for (int i = 0; i <= 50; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
  for (auto id : ran_on) EXPECT_NE(id, std::this_thread::get_id());
}

TEST(worker_pool, default_has_at_least_one_worker) {
  inlet::mail::worker_pool pool;
  EXPECT_GE(pool.threads(), 1u);
  std::promise<std::thread::id> p;
  auto f = p.get_future();
  pool.post([&p] { p.set_value(std::this_thread::get_id()); });
  EXPECT_NE(f.get(), std::this_thread::get_id());
}

}  // namespace
