// False sharing vs padding, and relaxed vs seq_cst atomics: per-thread counters as
// inlet-load's live counters and inletd's statistics are.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>

namespace {

constexpr int n_adds = 1 << 12;

struct packed_counters { std::atomic<std::uint64_t> c[8]; };                  // one cache line
struct padded_slot { alignas(64) std::atomic<std::uint64_t> c{0}; };
struct padded_counters { padded_slot s[8]; };                                    // a line each

packed_counters g_packed;
padded_counters g_padded;

void BM_counters_false_sharing(benchmark::State& state) {
  auto& c = g_packed.c[state.thread_index()];
  for (auto _ : state)
    for (int i = 0; i < n_adds; ++i) c.fetch_add(1, std::memory_order_relaxed);
  state.SetItemsProcessed(state.iterations() * n_adds);
}
BENCHMARK(BM_counters_false_sharing)->Threads(1)->Threads(2)->UseRealTime();

void BM_counters_padded(benchmark::State& state) {
  auto& c = g_padded.s[state.thread_index()].c;
  for (auto _ : state)
    for (int i = 0; i < n_adds; ++i) c.fetch_add(1, std::memory_order_relaxed);
  state.SetItemsProcessed(state.iterations() * n_adds);
}
BENCHMARK(BM_counters_padded)->Threads(1)->Threads(2)->UseRealTime();

// A counter owned by one thread and read by others needs no read-modify-write at all: a
// relaxed load + store. seq_cst stores are a full fence (xchg on x86); fetch_add is the
// same locked instruction for every ordering on x86, so it is measured as a control.
std::atomic<std::uint64_t> g_owned{0};

void BM_store_seq_cst(benchmark::State& state) {
  for (auto _ : state)
    for (int i = 0; i < n_adds; ++i) g_owned.store(g_owned.load(std::memory_order_relaxed) + 1);
  state.SetItemsProcessed(state.iterations() * n_adds);
}
BENCHMARK(BM_store_seq_cst);

void BM_store_relaxed(benchmark::State& state) {
  for (auto _ : state)
    for (int i = 0; i < n_adds; ++i)
      g_owned.store(g_owned.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  state.SetItemsProcessed(state.iterations() * n_adds);
}
BENCHMARK(BM_store_relaxed);

void BM_fetch_add_seq_cst(benchmark::State& state) {
  for (auto _ : state)
    for (int i = 0; i < n_adds; ++i) g_owned.fetch_add(1);
  state.SetItemsProcessed(state.iterations() * n_adds);
}
BENCHMARK(BM_fetch_add_seq_cst);

void BM_fetch_add_relaxed(benchmark::State& state) {
  for (auto _ : state)
    for (int i = 0; i < n_adds; ++i) g_owned.fetch_add(1, std::memory_order_relaxed);
  state.SetItemsProcessed(state.iterations() * n_adds);
}
BENCHMARK(BM_fetch_add_relaxed);

}  // namespace
