// Internal: the fragment header and the slice that points into a fragment.
// Public headers name these types; users never touch them directly.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace inlet::buffer::detail {

// A fragment is one heap block: this 64-byte header, then `capacity` data bytes
// (pooled fragments), or a header alone whose `data` points at external memory
// (wrapped fragments, `destroy` set). The reference count counts slices and
// streambuf pieces that point into the fragment.
struct alignas(64) fragment {
  std::atomic<std::uint32_t> refs{1};
  std::uint32_t capacity = 0;      // data bytes (pooled); 0 for external
  std::uint32_t size_class = 0;    // index of the owning pool (pooled)
  std::uint32_t batch_count = 0;   // length of the batch this heads (free lists only)
  char* data = nullptr;            // first data byte
  fragment* next = nullptr;        // free-list link while the fragment is free
  fragment* next_batch = nullptr;  // global pool: next batch
  void (*destroy)(fragment*) noexcept = nullptr;  // external fragments only
};
static_assert(sizeof(fragment) == 64);

// Called when the last reference goes away: back to the pool, or the external
// releaser runs.
void release_fragment(fragment* f) noexcept;

inline void add_ref(fragment* f) noexcept {
  if (f != nullptr) f->refs.fetch_add(1, std::memory_order_relaxed);
}

inline void unref(fragment* f) noexcept {
  if (f == nullptr) return;
  // Sole owner: nobody else can add a reference, so skip the RMW (as folly does).
  if (f->refs.load(std::memory_order_acquire) == 1 ||
      f->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    release_fragment(f);
  }
}

inline bool sole_owner(const fragment* f, std::uint32_t expected) noexcept {
  return f != nullptr && f->refs.load(std::memory_order_acquire) == expected;
}

// A contiguous run of bytes inside one fragment. `f == nullptr` means memory
// that needs no release (string literals, static tables).
struct slice {
  fragment* f;
  const char* p;
  std::size_t n;
};

}  // namespace inlet::buffer::detail
