#include "inlet/load/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace inlet::load {

std::size_t histogram::index_of(std::uint64_t v) noexcept {
  if (v < linear_limit) return static_cast<std::size_t>(v);
  const unsigned e = static_cast<unsigned>(std::bit_width(v)) - 1;  // >= P + 1
  const std::uint64_t m = v >> (e - precision_bits);                 // in [2^P, 2^(P+1))
  return linear_limit + (e - (precision_bits + 1)) * sub_buckets + (m - sub_buckets);
}

std::uint64_t histogram::lowest_in(std::size_t index) noexcept {
  if (index < linear_limit) return index;
  const std::size_t k = index - linear_limit;
  const unsigned e = static_cast<unsigned>(k / sub_buckets) + precision_bits + 1;
  const std::uint64_t m = (k % sub_buckets) + sub_buckets;
  return m << (e - precision_bits);
}

std::uint64_t histogram::highest_in(std::size_t index) noexcept {
  if (index < linear_limit) return index;
  const std::size_t k = index - linear_limit;
  const unsigned e = static_cast<unsigned>(k / sub_buckets) + precision_bits + 1;
  return lowest_in(index) + ((std::uint64_t{1} << (e - precision_bits)) - 1);
}

void histogram::record_n(std::uint64_t v, std::uint64_t n) noexcept {
  if (n == 0) return;
  counts_[index_of(v)] += n;
  count_ += n;
  sum_ += static_cast<unsigned __int128>(v) * n;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void histogram::merge(const histogram& other) noexcept {
  for (std::size_t i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void histogram::reset() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  sum_ = 0;
  min_ = ~std::uint64_t{0};
  max_ = 0;
}

std::uint64_t histogram::percentile(double q) const noexcept {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(highest_in(i), min_, max_);
  }
  return max_;
}

}  // namespace inlet::load
