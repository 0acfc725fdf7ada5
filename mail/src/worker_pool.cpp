#include "inlet/mail/worker_pool.hpp"

#include <algorithm>

namespace inlet::mail {

worker_pool::worker_pool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency()) - 1;
  threads = std::max(1u, threads);
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

worker_pool::~worker_pool() {
  {
    std::lock_guard lk(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void worker_pool::push(std::unique_ptr<job> j) {
  {
    std::lock_guard lk(m_);
    queue_.push_back(std::move(j));
  }
  cv_.notify_one();
}

void worker_pool::work() {
  for (;;) {
    std::unique_ptr<job> j;
    {
      std::unique_lock lk(m_);
      cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued job has run
      j = std::move(queue_.front());
      queue_.pop_front();
    }
    j->run();
  }
}

}  // namespace inlet::mail
