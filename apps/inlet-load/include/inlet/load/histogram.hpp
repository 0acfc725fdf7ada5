#pragma once
// A log-linear histogram of non-negative integer values (inlet-load records nanoseconds).
//
// Values below 2^(P+1) have one bucket each (exact); above, every power-of-two range
// [2^e, 2^(e+1)) is split into 2^P equal buckets, so a value is known to within
// 1/2^P = 1.6 % (P = 6). 3,776 buckets of 8 bytes cover the whole uint64 range; record()
// is a few shifts and one increment, with no allocation after construction.
//
// Thread-safety: none. Each thread records into its own histogram; merge() them afterwards.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace inlet::load {

class histogram {
 public:
  static constexpr unsigned precision_bits = 6;                        // P
  static constexpr std::uint64_t linear_limit = 1ull << (precision_bits + 1);  // 128
  static constexpr std::size_t sub_buckets = 1u << precision_bits;     // 64 per octave
  static constexpr std::size_t bucket_count =
      linear_limit + (64 - (precision_bits + 1)) * sub_buckets;

  histogram() : counts_(bucket_count, 0) {}

  void record(std::uint64_t v) noexcept { record_n(v, 1); }
  void record_n(std::uint64_t v, std::uint64_t n) noexcept;
  void merge(const histogram& other) noexcept;
  void reset() noexcept;

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  std::uint64_t max() const noexcept { return max_; }
  double mean() const noexcept { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }

  // The smallest recorded bucket bound v such that at least q (0..1] of the values are <= v.
  // Reported as the bucket's highest value, clamped to the recorded max (never under-states).
  std::uint64_t percentile(double q) const noexcept;

  // Bucket arithmetic, public for tests and for exporting the distribution.
  static std::size_t index_of(std::uint64_t v) noexcept;
  static std::uint64_t lowest_in(std::size_t index) noexcept;
  static std::uint64_t highest_in(std::size_t index) noexcept;
  std::uint64_t count_at(std::size_t index) const noexcept { return counts_[index]; }

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
  unsigned __int128 sum_ = 0;
};

}  // namespace inlet::load
