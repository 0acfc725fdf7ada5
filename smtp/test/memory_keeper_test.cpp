// The memory keeper (src/driver_common.hpp) on plain values: when the drivers
// give freed memory back to the system after a wave of connections.
#include <gtest/gtest.h>

#include <chrono>

#include "driver_common.hpp"

namespace d = inlet::smtp::detail;

// Memory goes back after a wave: once the open count is at half its peak (and
// a wave of at least min_wave) and has stopped falling, or has been falling
// for 5 s; not half way down, not for small ups and downs.
TEST(MemoryKeeper, ReleasesOnceAWaveIsOver) {
  using namespace std::chrono_literals;
  d::memory_keeper k(true);
  auto t = d::clock::time_point{} + 1000h;
  EXPECT_FALSE(k.tick(10, t));
  EXPECT_FALSE(k.tick(2000, t += 1s));
  EXPECT_FALSE(k.tick(1500, t += 1s));  // above half the peak
  EXPECT_FALSE(k.tick(600, t += 1s));   // low, still falling
  EXPECT_FALSE(k.tick(20, t += 1s));
  EXPECT_TRUE(k.tick(20, t += 1s));  // stopped falling: released
  EXPECT_FALSE(k.tick(20, t += 1s));
  EXPECT_FALSE(k.tick(200, t += 1s));  // a small wave
  EXPECT_FALSE(k.tick(10, t += 1s));
  EXPECT_FALSE(k.tick(10, t += 1s));
  // A long slow decline: released 5 s after it went below half.
  EXPECT_FALSE(k.tick(3000, t += 1s));
  int released_at = -1;
  for (int i = 0; i < 10 && released_at < 0; ++i)
    if (k.tick(static_cast<std::size_t>(1400 - 100 * i), t += 1s)) released_at = i;
  EXPECT_EQ(released_at, 5);

  d::memory_keeper off(false);
  EXPECT_FALSE(off.tick(5000, t += 1s));
  EXPECT_FALSE(off.tick(0, t += 1s));
  EXPECT_FALSE(off.tick(0, t += 1s));
}

// Without a wave (a few connections with large messages), spare fragments go
// back once the least spare amount over a whole window stayed above the limit;
// not while the spare list is drawn below the limit, not for small amounts.
TEST(MemoryKeeper, ReleasesSpareFragmentsNoConnectionNeeded) {
  using namespace std::chrono_literals;
  constexpr std::size_t big = d::memory_keeper::spare_bytes_max + 1;
  constexpr std::size_t small = d::memory_keeper::spare_bytes_max / 2;
  d::memory_keeper k(true);
  auto t = d::clock::time_point{} + 1000h;
  for (int i = 0; i < 12; ++i) EXPECT_FALSE(k.tick(32, small, t += 1s)) << i;
  // Large, but drawn below the limit once in each window: in use.
  for (int i = 0; i < 12; ++i) EXPECT_FALSE(k.tick(32, i % 4 == 0 ? small : 8 * big, t += 1s)) << i;
  // Above the limit for a whole window (the current one may have begun low):
  // released within two windows, once, then a new window begins.
  int released = 0;
  for (int i = 0; i < 11; ++i) released += k.tick(32, 8 * big, t += 1s) ? 1 : 0;
  EXPECT_EQ(released, 1);
  d::memory_keeper off(false);
  for (int i = 0; i < 12; ++i) EXPECT_FALSE(off.tick(32, 8 * big, t += 1s));
}
