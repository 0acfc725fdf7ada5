// The pace of a rebalance's switches (inlet-pg-admin, store/src/pg/admin.cpp).
//
// Thread-safety: a plain value, used by one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace inlet::store::pg_admin {

// How many buckets, and how many of their copies, switch together (frozen, caught up for
// the last time, taken): writes to them wait for the whole switch, whose time grows with
// the copies whose home flags the take sets and with the machine's load. Measured after
// each switch and adapted so that a switch holds writes for at most about `target_ms`:
// halved after a switch that took longer, doubled (up to --group) after a quick full one.
// It starts small (a first switch too large would overshoot before anything was
// measured) and grows while switches are quick: empty buckets reach --group within a few.
struct switch_pace {
  static constexpr double target_ms = 80;  // the bound is ~100 ms; some room for noise
  static constexpr std::size_t first_buckets = 8;
  std::size_t max_buckets;
  std::size_t buckets;
  std::uint64_t copies = 500;  // at most, unless one bucket alone holds more

  explicit switch_pace(std::size_t group = 32)
      : max_buckets(std::max<std::size_t>(1, group)),
        buckets(std::min(first_buckets, max_buckets)) {}

  void learn(std::size_t n, std::uint64_t c, double ms) {
    if (ms > target_ms) {
      buckets = std::max<std::size_t>(1, std::min(buckets, n) / 2);
      if (c > 0) copies = std::max<std::uint64_t>(1, std::min(copies, c) / 2);
    } else if (ms < target_ms / 4 && (n >= buckets || c >= copies)) {
      buckets = std::min(max_buckets, buckets * 2);
      copies = std::min<std::uint64_t>(copies * 2, std::uint64_t{1} << 24);
    }
  }
};

}  // namespace inlet::store::pg_admin
