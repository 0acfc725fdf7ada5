// What the server does under load: timeouts that shrink as connection slots run out (as
// Postfix's stress mode does), and the queue of events an event-stream client has not
// taken yet, bounded in bytes and in age.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace inlet::http::detail {

/// `base` while at most half of `cap` slots are in use; past that it shrinks in
/// proportion to the free slots left, to 5 % of `base` when none is, never under `floor`
/// (nor above `base`).
inline std::chrono::milliseconds pressure_timeout(std::chrono::milliseconds base,
                                                  std::chrono::milliseconds floor, std::size_t live,
                                                  std::size_t cap) {
  if (cap == 0 || live * 2 <= cap) return base;
  const double free = live >= cap ? 0.0 : static_cast<double>(cap - live);
  const double share = std::max(0.05, free / (static_cast<double>(cap) / 2.0));
  const std::chrono::milliseconds t(
      static_cast<std::chrono::milliseconds::rep>(static_cast<double>(base.count()) * share));
  return std::min(base, std::max(t, floor));
}

/// The events one stream has not sent yet. Texts are shared with every other stream's
/// queue (an event is serialised once). The client has fallen behind, and the queue is
/// emptied and stays marked, when what it has not taken (queued plus the write in flight)
/// exceeds `max_bytes`, or the oldest of it is older than `max_lag`: a client that does
/// not read cannot pin more than that, however many events arrive.
///
/// Design: a deque of (text, time queued) plus byte totals; take() moves everything to
/// the writer, which calls written() when the write completes.
/// Thread-safety: every member may be called from any thread (one mutex).
class event_queue {
 public:
  using clock = std::chrono::steady_clock;
  using text = std::shared_ptr<const std::string>;

  void configure(std::size_t max_bytes, std::chrono::milliseconds max_lag) {
    std::lock_guard lk(mutex_);
    max_bytes_ = max_bytes;
    max_lag_ = max_lag;
  }

  /// Queues `texts`; false when the client has fallen behind (now or before). `wake` is
  /// set when the queue was empty: the writer may be asleep and must be woken; a queue
  /// that already held texts has had its wake-up, and the writer takes everything
  /// queued before it sleeps again, so one wake-up per batch is enough.
  bool push(const std::vector<text>& texts, clock::time_point now, bool* wake = nullptr) {
    std::lock_guard lk(mutex_);
    if (wake) *wake = queue_.empty();
    if (behind_) return false;
    for (const auto& t : texts) {
      queue_.push_back({t, now});
      queued_bytes_ += t->size();
    }
    auto oldest = in_flight_ ? in_flight_since_ : queue_.empty() ? now : queue_.front().at;
    if (queued_bytes_ + in_flight_bytes_ > max_bytes_ || now - oldest > max_lag_) {
      behind_ = true;
      queue_.clear();
      queued_bytes_ = 0;
      return false;
    }
    return true;
  }

  /// Moves the queued texts to `out` (the write in flight from now); true when the client
  /// has fallen behind (nothing is moved then).
  bool take(std::vector<text>& out, clock::time_point now) {
    (void)now;
    std::lock_guard lk(mutex_);
    if (behind_) return true;
    if (queue_.empty()) return false;
    in_flight_ = true;
    in_flight_since_ = queue_.front().at;
    in_flight_bytes_ = queued_bytes_;
    for (auto& q : queue_) out.push_back(std::move(q.t));
    queue_.clear();
    queued_bytes_ = 0;
    return false;
  }

  /// The write of what take() gave is over.
  void written() {
    std::lock_guard lk(mutex_);
    in_flight_ = false;
    in_flight_bytes_ = 0;
  }

  /// Bytes not taken by the client yet (queued and in flight).
  std::size_t behind_bytes() const {
    std::lock_guard lk(mutex_);
    return queued_bytes_ + in_flight_bytes_;
  }

 private:
  struct queued {
    text t;
    clock::time_point at;
  };
  mutable std::mutex mutex_;
  std::deque<queued> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t in_flight_bytes_ = 0;
  clock::time_point in_flight_since_{};
  bool in_flight_ = false;
  bool behind_ = false;
  std::size_t max_bytes_ = 4u << 20;
  std::chrono::milliseconds max_lag_{30000};
};

}  // namespace inlet::http::detail
