#include "inlet/load/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

using inlet::load::histogram;

TEST(Histogram, EmptyReportsZero) {
  histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(0.5), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.min(), 0u);
}

TEST(Histogram, SmallValuesAreExact) {
  histogram h;
  for (std::uint64_t v = 0; v < histogram::linear_limit; ++v) h.record(v);
  EXPECT_EQ(h.count(), histogram::linear_limit);
  EXPECT_EQ(h.percentile(0.5), 63u);  // rank 64 of 0..127
  EXPECT_EQ(h.percentile(1.0), 127u);
  EXPECT_EQ(h.min(), 0u);
}

TEST(Histogram, BucketsTileTheRangeWithoutGaps) {
  for (std::size_t i = 0; i + 1 < histogram::bucket_count; ++i) {
    ASSERT_EQ(histogram::highest_in(i) + 1, histogram::lowest_in(i + 1)) << i;
    ASSERT_EQ(histogram::index_of(histogram::lowest_in(i)), i);
    ASSERT_EQ(histogram::index_of(histogram::highest_in(i)), i);
  }
  EXPECT_EQ(histogram::highest_in(histogram::bucket_count - 1), ~std::uint64_t{0});
  EXPECT_EQ(histogram::index_of(~std::uint64_t{0}), histogram::bucket_count - 1);
}

TEST(Histogram, RelativeErrorBounded) {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 100000; ++k) {
    const std::uint64_t v = rng() >> (rng() % 64);
    const auto i = histogram::index_of(v);
    ASSERT_LE(histogram::lowest_in(i), v);
    ASSERT_GE(histogram::highest_in(i), v);
    const double width = static_cast<double>(histogram::highest_in(i) - histogram::lowest_in(i));
    ASSERT_LE(width, static_cast<double>(v) / histogram::sub_buckets + 1.0) << v;
  }
}

TEST(Histogram, PercentilesMatchSortedSampleWithinPrecision) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> d(11.0, 1.2);  // ~60 us median in ns
  std::vector<std::uint64_t> values;
  histogram h;
  for (int k = 0; k < 50000; ++k) {
    const auto v = static_cast<std::uint64_t>(d(rng));
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (const double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * values.size()));
    const double exact = static_cast<double>(values[rank - 1]);
    const double got = static_cast<double>(h.percentile(q));
    EXPECT_GE(got, exact) << q;  // never under-states
    EXPECT_LE(got, exact * (1.0 + 1.0 / histogram::sub_buckets) + 1) << q;
  }
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.percentile(1.0), values.back());
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  histogram a, b, all;
  for (std::uint64_t v = 1; v < 200000; v += 37) {
    (v % 2 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (std::size_t i = 0; i < histogram::bucket_count; ++i) ASSERT_EQ(a.count_at(i), all.count_at(i));
  a.reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.percentile(0.99), 0u);
}

TEST(Histogram, RecordNCountsWeight) {
  histogram h;
  h.record_n(1000, 99);
  h.record_n(1000000, 1);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_LE(h.percentile(0.99), 1000u + 1000u / histogram::sub_buckets);
  EXPECT_EQ(h.percentile(1.0), 1000000u);
}
