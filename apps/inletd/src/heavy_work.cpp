#include "heavy_work.hpp"

#include <algorithm>

namespace inletd {

heavy_work::heavy_work(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency()) - 1;
  threads = std::max(1u, threads);
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

heavy_work::~heavy_work() {
  {
    std::lock_guard lk(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void heavy_work::push(std::unique_ptr<job> j) {
  {
    std::lock_guard lk(m_);
    queue_.push_back(std::move(j));
  }
  cv_.notify_one();
}

void heavy_work::work() {
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

}  // namespace inletd
