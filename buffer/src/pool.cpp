// Fragment pool: see ../DESIGN.md ("Pool").
#include <inlet/buffer/pool.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>

namespace inlet::buffer {

using detail::fragment;

namespace {

constexpr std::uint32_t n_classes = 3;
constexpr std::size_t class_size[n_classes] = {4096, 8192, 16384};

// Per-thread state, on its own cache lines. Trivially destructible so that its
// storage outlives every other thread_local of the thread; `guard` flushes it.
struct alignas(64) thread_cache {
  fragment* head[n_classes];
  std::uint32_t count[n_classes];
  std::uint64_t acquires[n_classes];  // not yet added to the pool's counters
  std::uint64_t releases[n_classes];
  bool registered;
  bool dead;
  void* guard;
};

thread_local thread_cache tls{};

struct cache_guard {
  ~cache_guard();
};
thread_local cache_guard tls_guard;

}  // namespace

struct pool::impl {
  alignas(64) std::mutex mu;
  fragment* batches = nullptr;  // guarded by mu
  std::uint64_t cached = 0;     // guarded by mu
  alignas(64) std::atomic<std::uint64_t> cached_mirror{0};
  std::atomic<std::uint64_t> heap_allocations{0};
  std::atomic<std::uint64_t> heap_frees{0};
  std::atomic<std::uint64_t> acquires{0};
  std::atomic<std::uint64_t> releases{0};
  std::atomic<std::uint64_t> batches_from{0};
  std::atomic<std::uint64_t> batches_to{0};
  std::atomic<std::uint32_t> cache_max{64};
  std::atomic<std::uint32_t> batch{16};
  std::atomic<std::uint32_t> global_max{4096};
};

struct pool_access {
  static pool* make(std::size_t size, std::uint32_t cls) { return new pool(size, cls); }
  static pool::impl& impl(pool& p) { return *p.impl_; }
  static std::uint32_t cls(const pool& p) { return p.cls_; }
};

namespace {

pool* const* all_pools() noexcept {
  static pool* const pools[n_classes] = {pool_access::make(class_size[0], 0),
                                         pool_access::make(class_size[1], 1),
                                         pool_access::make(class_size[2], 2)};
  return pools;
}

void free_to_heap(fragment* f) noexcept {
  f->~fragment();
  ::operator delete(static_cast<void*>(f), std::align_val_t{64});
}

// Frees a list linked by `next`; returns how many.
std::uint64_t free_list(fragment* f) noexcept {
  std::uint64_t n = 0;
  while (f != nullptr) {
    fragment* nx = f->next;
    free_to_heap(f);
    f = nx;
    ++n;
  }
  return n;
}

void flush_counters(thread_cache& c, std::uint32_t cls, pool::impl& im) noexcept {
  if (c.acquires[cls] != 0) im.acquires.fetch_add(c.acquires[cls], std::memory_order_relaxed);
  if (c.releases[cls] != 0) im.releases.fetch_add(c.releases[cls], std::memory_order_relaxed);
  c.acquires[cls] = 0;
  c.releases[cls] = 0;
}

// Puts a list of `count` fragments linked by `next` on the global list (or
// frees it when the global list is full).
void push_global(pool::impl& im, fragment* head, std::uint32_t count) noexcept {
  if (head == nullptr) return;
  {
    std::lock_guard lk(im.mu);
    if (im.cached + count <= im.global_max.load(std::memory_order_relaxed)) {
      head->batch_count = count;
      head->next_batch = im.batches;
      im.batches = head;
      im.cached += count;
      im.cached_mirror.store(im.cached, std::memory_order_relaxed);
      im.batches_to.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  im.heap_frees.fetch_add(free_list(head), std::memory_order_relaxed);
}

// Takes one batch from the global list: its head, count in *count.
fragment* pop_global(pool::impl& im, std::uint32_t* count) noexcept {
  std::lock_guard lk(im.mu);
  fragment* b = im.batches;
  if (b == nullptr) return nullptr;
  im.batches = b->next_batch;
  *count = b->batch_count;
  im.cached -= b->batch_count;
  im.cached_mirror.store(im.cached, std::memory_order_relaxed);
  im.batches_from.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void flush_class(thread_cache& c, std::uint32_t cls) noexcept {
  pool::impl& im = pool_access::impl(*all_pools()[cls]);
  flush_counters(c, cls, im);
  push_global(im, c.head[cls], c.count[cls]);
  c.head[cls] = nullptr;
  c.count[cls] = 0;
}

cache_guard::~cache_guard() {
  for (std::uint32_t cls = 0; cls < n_classes; ++cls) flush_class(tls, cls);
  tls.dead = true;
}

inline void ensure_registered(thread_cache& c) noexcept {
  if (!c.registered) {
    c.registered = true;
    c.guard = &tls_guard;  // odr-use: constructs the guard, registers its destructor
  }
}

}  // namespace

pool::pool(std::size_t fragment_size, std::uint32_t cls) noexcept
    : fragment_size_(fragment_size), cls_(cls), impl_(new impl) {}

pool& pool::get(std::size_t fragment_size) noexcept {
  std::uint32_t cls = 0;
  while (cls + 1 < n_classes && class_size[cls] < fragment_size) ++cls;
  return *all_pools()[cls];
}

fragment* pool::acquire() {
  thread_cache& c = tls;
  if (!c.dead) {
    ensure_registered(c);
    if (c.head[cls_] == nullptr) {
      flush_counters(c, cls_, *impl_);
      std::uint32_t n = 0;
      if (fragment* b = pop_global(*impl_, &n)) {
        c.head[cls_] = b;
        c.count[cls_] = n;
      }
    }
    if (fragment* f = c.head[cls_]) {
      c.head[cls_] = f->next;
      --c.count[cls_];
      ++c.acquires[cls_];
      f->next = nullptr;
      f->refs.store(1, std::memory_order_relaxed);
      return f;
    }
  } else {
    std::uint32_t n = 0;
    if (fragment* b = pop_global(*impl_, &n)) {
      if (n > 1) push_global(*impl_, b->next, n - 1);
      impl_->acquires.fetch_add(1, std::memory_order_relaxed);
      b->next = nullptr;
      b->refs.store(1, std::memory_order_relaxed);
      return b;
    }
  }
  void* mem = ::operator new(sizeof(fragment) + fragment_size_, std::align_val_t{64});
  auto* f = new (mem) fragment;
  f->capacity = static_cast<std::uint32_t>(fragment_size_);
  f->size_class = cls_;
  f->data = reinterpret_cast<char*>(f) + sizeof(fragment);
  impl_->heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (c.dead) impl_->acquires.fetch_add(1, std::memory_order_relaxed);
  else ++c.acquires[cls_];
  return f;
}

void pool::release(fragment* f) noexcept {
  thread_cache& c = tls;
  if (c.dead) {
    impl_->releases.fetch_add(1, std::memory_order_relaxed);
    f->next = nullptr;
    push_global(*impl_, f, 1);
    return;
  }
  ensure_registered(c);
  f->next = c.head[cls_];
  c.head[cls_] = f;
  ++c.count[cls_];
  ++c.releases[cls_];
  if (c.count[cls_] > impl_->cache_max.load(std::memory_order_relaxed)) {
    // Spill one batch: the fragments at the head of the list (walks `batch`
    // links, never the whole cache).
    std::uint32_t want = std::min(impl_->batch.load(std::memory_order_relaxed), c.count[cls_]);
    fragment* spill = c.head[cls_];
    fragment* last = spill;
    for (std::uint32_t i = 1; i < want; ++i) last = last->next;
    c.head[cls_] = last->next;
    last->next = nullptr;
    c.count[cls_] -= want;
    flush_counters(c, cls_, *impl_);
    push_global(*impl_, spill, want);
  }
}

pool_stats pool::stats() const noexcept {
  pool_stats s;
  s.heap_allocations = impl_->heap_allocations.load(std::memory_order_relaxed);
  s.heap_frees = impl_->heap_frees.load(std::memory_order_relaxed);
  s.acquires = impl_->acquires.load(std::memory_order_relaxed);
  s.releases = impl_->releases.load(std::memory_order_relaxed);
  if (!tls.dead) {
    s.acquires += tls.acquires[cls_];
    s.releases += tls.releases[cls_];
  }
  s.batches_from_global = impl_->batches_from.load(std::memory_order_relaxed);
  s.batches_to_global = impl_->batches_to.load(std::memory_order_relaxed);
  s.global_cached = impl_->cached_mirror.load(std::memory_order_relaxed);
  return s;
}

std::size_t pool::trim() noexcept {
  fragment* b;
  {
    std::lock_guard lk(impl_->mu);
    b = impl_->batches;
    impl_->batches = nullptr;
    impl_->cached = 0;
    impl_->cached_mirror.store(0, std::memory_order_relaxed);
  }
  std::uint64_t n = 0;
  while (b != nullptr) {
    fragment* nb = b->next_batch;
    n += free_list(b);
    b = nb;
  }
  impl_->heap_frees.fetch_add(n, std::memory_order_relaxed);
  return static_cast<std::size_t>(n);
}

void pool::set_limits(const pool_limits& l) noexcept {
  impl_->cache_max.store(std::max<std::uint32_t>(l.thread_cache_max, 1), std::memory_order_relaxed);
  impl_->batch.store(std::max<std::uint32_t>(l.batch, 1), std::memory_order_relaxed);
  impl_->global_max.store(l.global_max, std::memory_order_relaxed);
}

pool_limits pool::limits() const noexcept {
  return {impl_->cache_max.load(std::memory_order_relaxed), impl_->batch.load(std::memory_order_relaxed),
          impl_->global_max.load(std::memory_order_relaxed)};
}

void pool::flush_thread_cache() noexcept {
  if (tls.dead) return;
  for (std::uint32_t cls = 0; cls < n_classes; ++cls) flush_class(tls, cls);
}

namespace detail {
void release_fragment(fragment* f) noexcept {
  if (f->destroy != nullptr) {
    f->destroy(f);
    return;
  }
  all_pools()[f->size_class]->release(f);
}
}  // namespace detail

}  // namespace inlet::buffer
