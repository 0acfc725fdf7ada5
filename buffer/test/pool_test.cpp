#include <inlet/buffer/pool.hpp>
#include <inlet/buffer/segment.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace inlet::buffer {
namespace {

TEST(Pool, SizeClassesAreFourEightSixteenKiB) {
  EXPECT_EQ(pool::get(1).fragment_size(), 4096u);
  EXPECT_EQ(pool::get(4096).fragment_size(), 4096u);
  EXPECT_EQ(pool::get(4097).fragment_size(), 8192u);
  EXPECT_EQ(pool::get().fragment_size(), 8192u);
  EXPECT_EQ(pool::get(16384).fragment_size(), 16384u);
  EXPECT_EQ(pool::get(1 << 20).fragment_size(), 16384u);
  EXPECT_EQ(&pool::get(8000), &pool::get(8192));
}

TEST(Pool, ReleasedFragmentIsReusedFromTheThreadCache) {
  pool& p = pool::get(16384);
  detail::fragment* a = p.acquire();
  EXPECT_EQ(a->capacity, 16384u);
  EXPECT_EQ(a->refs.load(), 1u);
  a->data[0] = 'x';
  a->data[16383] = 'y';  // the whole capacity is usable
  auto s0 = p.stats();
  detail::unref(a);
  detail::fragment* b = p.acquire();
  EXPECT_EQ(b, a);  // LIFO thread cache
  auto s1 = p.stats();
  EXPECT_EQ(s1.heap_allocations, s0.heap_allocations);
  EXPECT_EQ(s1.acquires - s0.acquires, 1u);
  EXPECT_EQ(s1.releases - s0.releases, 1u);
  detail::unref(b);
}

TEST(Pool, OverflowMigratesBatchesToGlobalAndBack) {
  pool& p = pool::get(4096);
  pool::flush_thread_cache();
  pool_limits old = p.limits();
  p.set_limits({8, 4, 1000});
  auto s0 = p.stats();
  std::vector<detail::fragment*> v;
  for (int i = 0; i < 20; ++i) v.push_back(p.acquire());
  for (auto* f : v) detail::unref(f);
  auto s1 = p.stats();
  // 20 released with a cache of 8 and batches of 4: the 9th, 13th, 17th
  // release each spill a batch.
  EXPECT_EQ(s1.batches_to_global - s0.batches_to_global, 3u);
  EXPECT_GE(s1.global_cached, 12u);
  v.clear();
  for (int i = 0; i < 20; ++i) v.push_back(p.acquire());
  auto s2 = p.stats();
  EXPECT_EQ(s2.heap_allocations, s1.heap_allocations);  // all came back from caches
  EXPECT_EQ(s2.batches_from_global - s1.batches_from_global, 3u);
  for (auto* f : v) detail::unref(f);
  p.set_limits(old);
}

TEST(Pool, ThreadExitFlushesItsCacheToTheGlobalList) {
  pool& p = pool::get(4096);
  auto s0 = p.stats();
  std::thread([&p] {
    std::vector<detail::fragment*> v;
    for (int i = 0; i < 5; ++i) v.push_back(p.acquire());
    for (auto* f : v) detail::unref(f);
  }).join();
  auto s1 = p.stats();
  EXPECT_EQ(s1.acquires - s0.acquires, 5u);
  EXPECT_EQ(s1.releases - s0.releases, 5u);
  EXPECT_GE(s1.global_cached, 5u);
}

TEST(Pool, ReleaseAfterTheThreadCacheIsGoneGoesToTheGlobalList) {
  pool& p = pool::get(16384);
  pool::flush_thread_cache();
  p.trim();  // the thread's fragment then comes from the heap, not the global list
  auto s0 = p.stats();
  std::thread([&p] {
    // Constructed before the pool's per-thread guard, so destroyed after it:
    // its fragment is released when the thread cache has already been flushed.
    static thread_local segment late;
    late = segment::copy_of("outlives the thread cache", p);
  }).join();
  auto s1 = p.stats();
  EXPECT_EQ(s1.acquires - s0.acquires, 1u);
  EXPECT_EQ(s1.releases - s0.releases, 1u);
  EXPECT_EQ(s1.heap_allocations - s0.heap_allocations, 1u);
  EXPECT_EQ(s1.global_cached, 1u);
}

TEST(Pool, TrimFreesTheGlobalList) {
  pool& p = pool::get(4096);
  { segment s = segment::copy_of(std::string(20000, 'a'), p); }
  pool::flush_thread_cache();
  auto s0 = p.stats();
  ASSERT_GT(s0.global_cached, 0u);
  std::size_t n = p.trim();
  auto s1 = p.stats();
  EXPECT_EQ(n, s0.global_cached);
  EXPECT_EQ(s1.global_cached, 0u);
  EXPECT_EQ(s1.heap_frees - s0.heap_frees, n);
}

TEST(Pool, GlobalLimitSendsSurplusToTheHeap) {
  pool& p = pool::get(16384);
  pool::flush_thread_cache();
  p.trim();
  pool_limits old = p.limits();
  p.set_limits({1, 1, 2});
  auto s0 = p.stats();
  std::vector<detail::fragment*> v;
  for (int i = 0; i < 6; ++i) v.push_back(p.acquire());
  for (auto* f : v) detail::unref(f);
  pool::flush_thread_cache();
  auto s1 = p.stats();
  EXPECT_LE(s1.global_cached, 2u);
  EXPECT_GE(s1.heap_frees - s0.heap_frees, 3u);
  p.set_limits(old);
}

}  // namespace
}  // namespace inlet::buffer
