// The fragment pool: fixed-capacity fragments, a free list per thread, batch
// migration to and from one global free list per size class.
//
// Thread-safety: every member is safe to call from any thread. A fragment may
// be released on a thread other than the one that acquired it: it joins the
// releasing thread's cache and travels back to the global list in a batch.
// Statistics are relaxed counters: exact for the calling thread, other
// threads' fast-path counts arrive when they migrate a batch or exit.
#pragma once

#include <inlet/buffer/detail/fragment.hpp>

#include <cstddef>
#include <cstdint>

namespace inlet::buffer {

struct pool_stats {
  std::uint64_t heap_allocations = 0;     // fragments obtained from operator new
  std::uint64_t heap_frees = 0;           // fragments given back to operator delete
  std::uint64_t acquires = 0;             // fragments handed out
  std::uint64_t releases = 0;             // fragments returned
  std::uint64_t batches_from_global = 0;  // thread cache refills from the global list
  std::uint64_t batches_to_global = 0;    // thread cache overflows to the global list
  std::uint64_t global_cached = 0;        // fragments in the global free list right now
  std::uint64_t outstanding() const noexcept { return acquires - releases; }
};

struct pool_limits {
  std::uint32_t thread_cache_max = 64;  // fragments a thread keeps before spilling a batch
  std::uint32_t batch = 16;             // fragments moved per migration
  std::uint32_t global_max = 4096;      // fragments the global list keeps; beyond: heap
};

class pool {
 public:
  static constexpr std::size_t min_fragment_size = 4096;
  static constexpr std::size_t max_fragment_size = 16384;
  static constexpr std::size_t default_fragment_size = 8192;

  // The process-wide pool for a size class: 4096, 8192 or 16384 data bytes
  // (other sizes are rounded up, clamped to 4-16 KiB). Pools live forever.
  static pool& get(std::size_t fragment_size = default_fragment_size) noexcept;

  std::size_t fragment_size() const noexcept { return fragment_size_; }

  // A fragment with refs == 1; throws std::bad_alloc when the heap is exhausted.
  detail::fragment* acquire();
  // Returns a fragment whose last reference went away (detail::unref calls this).
  void release(detail::fragment* f) noexcept;

  pool_stats stats() const noexcept;
  // Frees every fragment in the global free list; returns how many.
  std::size_t trim() noexcept;
  void set_limits(const pool_limits& l) noexcept;
  pool_limits limits() const noexcept;

  // Moves the calling thread's cached fragments (all size classes) to the
  // global lists. Runs automatically when a thread exits.
  static void flush_thread_cache() noexcept;

  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  struct impl;  // opaque: global free list, counters, limits

 private:
  explicit pool(std::size_t fragment_size, std::uint32_t cls) noexcept;
  ~pool() = default;
  friend struct pool_access;

  std::size_t fragment_size_;
  std::uint32_t cls_;
  impl* impl_;
};

}  // namespace inlet::buffer
