#include "rate_limit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace inlet::http::detail {

rate_limiter::rate_limiter(double rate, double burst, std::size_t max_clients)
    : rate_(rate),
      burst_(std::max(1.0, burst)),
      per_shard_(std::max<std::size_t>(1, max_clients / 16)) {}

void rate_limiter::make_room(shard& s, clock::time_point now) {
  // Full buckets first (they carry nothing), then the least recently used.
  for (auto it = s.order.begin(); it != s.order.end() && s.buckets.size() >= per_shard_;) {
    auto b = s.buckets.find(*it);
    const double elapsed = std::chrono::duration<double>(now - b->second.last).count();
    if (b->second.tokens + elapsed * rate_ >= burst_) {
      s.buckets.erase(b);
      it = s.order.erase(it);
    } else {
      ++it;
    }
  }
  while (s.buckets.size() >= per_shard_ && !s.order.empty()) {
    s.buckets.erase(s.order.front());
    s.order.pop_front();
  }
}

bool rate_limiter::take(std::string_view key, clock::time_point now, unsigned& retry_after) {
  shard& s = shards_[std::hash<std::string_view>{}(key) % shards_.size()];
  std::lock_guard lk(s.mutex);
  auto it = s.buckets.find(std::string(key));
  if (it == s.buckets.end()) {
    if (s.buckets.size() >= per_shard_) make_room(s, now);
    s.order.emplace_back(key);
    it = s.buckets.emplace(std::string(key), bucket{burst_, now, std::prev(s.order.end())}).first;
  } else {
    s.order.splice(s.order.end(), s.order, it->second.lru);
  }
  bucket& b = it->second;
  const double elapsed = std::chrono::duration<double>(now - b.last).count();
  if (elapsed > 0) {
    b.tokens = std::min(burst_, b.tokens + elapsed * rate_);
    b.last = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  const double wait = rate_ > 0 ? (1 - b.tokens) / rate_ : 3600;
  retry_after = static_cast<unsigned>(std::clamp(std::ceil(wait), 1.0, 86400.0));
  return false;
}

std::size_t rate_limiter::size() const {
  std::size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard lk(s.mutex);
    n += s.buckets.size();
  }
  return n;
}

}  // namespace inlet::http::detail
