// Token buckets per client (the API's rate limit).
//
// Design: a bucket per client key holds `tokens` (at most `burst`) and when it was last
// filled; a request takes one token after adding `rate` tokens per second elapsed. The
// buckets live in 16 shards (hash of the key), each a mutex and a hash map, so requests
// from different clients rarely contend. A full bucket says nothing a new one would not,
// so when a shard reaches its share of `max_clients` it drops its full buckets, and if
// none is full, the least recently used ones: memory is bounded whatever the number of
// addresses a client uses.
//
// Thread-safety: take() may be called from any number of threads at once.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace inlet::http::detail {

class rate_limiter {
 public:
  using clock = std::chrono::steady_clock;

  rate_limiter(double rate, double burst, std::size_t max_clients = 65536);

  /// Takes a token for `key`. False when the bucket is empty; `retry_after` then holds the
  /// whole seconds (at least 1) until a token will be there.
  bool take(std::string_view key, clock::time_point now, unsigned& retry_after);

  /// Buckets held now (for tests).
  std::size_t size() const;

 private:
  struct bucket {
    double tokens;
    clock::time_point last;
    std::list<std::string>::iterator lru;  // position in the shard's use order
  };
  struct shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, bucket> buckets;
    std::list<std::string> order;  // least recently used first
  };
  void make_room(shard& s, clock::time_point now);

  double rate_;
  double burst_;
  std::size_t per_shard_;
  std::array<shard, 16> shards_;
};

}  // namespace inlet::http::detail
