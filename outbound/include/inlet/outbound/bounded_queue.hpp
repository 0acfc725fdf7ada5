// A bounded multi-producer, single-consumer queue: producers never wait (a full queue
// refuses, and the caller counts a drop), so a receiver that is down costs at most
// `capacity` queued items and never delays the thread that hands work over.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace inlet::outbound {

template <class T>
class bounded_queue {
 public:
  explicit bounded_queue(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// False (and `item` untouched in meaning) when full or closed.
  bool try_push(T item) {
    {
      std::lock_guard lock(mutex_);
      if (closed_ || items_.size() >= capacity_) return false;
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
    return true;
  }

  /// The oldest item; nullopt once closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  /// Waits for one item, then takes up to `max` of those queued (a sender's batch);
  /// empty once closed and drained.
  std::vector<T> pop_some(std::size_t max) {
    std::vector<T> out;
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    while (!items_.empty() && out.size() < (max == 0 ? 1 : max)) {
      out.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    return out;
  }

  /// Waits until `deadline` unless closed first; true when closed.
  template <class Clock, class Duration>
  bool wait_closed_until(std::chrono::time_point<Clock, Duration> deadline) {
    std::unique_lock lock(mutex_);
    return ready_.wait_until(lock, deadline, [&] { return closed_; });
  }

  /// Refuses new items and wakes the consumer; items already queued are dropped.
  std::size_t close() {
    std::size_t dropped;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      dropped = items_.size();
      items_.clear();
    }
    ready_.notify_all();
    return dropped;
  }

  /// Refuses new items and wakes the consumer; items already queued are still popped.
  void finish() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace inlet::outbound
