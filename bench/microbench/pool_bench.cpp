// Thread-local object pool with batch migration to a global pool, vs malloc/free.
// The pattern inlet uses for buffer fragments: a thread allocates a burst of fixed-size
// objects and frees them, sometimes on another thread (batch migration handles that).
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <mutex>
#include <utility>
#include <span>
#include <vector>

namespace {

constexpr std::size_t object_size = 2048;  // a request / fragment sized object
constexpr std::size_t batch = 64;          // objects moved to/from the global pool at once
constexpr std::size_t max_burst = 256;     // objects live at once per iteration (Arg)

struct node { node* next; };

// Global pool of batches of free objects (each batch a linked list of `batch` nodes).
void free_list(node* n) {
  while (n) {
    node* next = n->next;
    std::free(n);
    n = next;
  }
}

class global_pool {
 public:
  ~global_pool() {
    for (node* b : batches_) free_list(b);
  }
  void put(node* list) {
    std::lock_guard lk(m_);
    batches_.push_back(list);
  }
  node* take() {
    std::lock_guard lk(m_);
    if (batches_.empty()) return nullptr;
    node* b = batches_.back();
    batches_.pop_back();
    return b;
  }

 private:
  std::mutex m_;
  std::vector<node*> batches_;
};

global_pool g_pool;

// Thread-local front: a free list; overflow goes to the global pool a batch at a time.
class local_pool {
 public:
  local_pool() = default;
  local_pool(const local_pool&) = delete;
  local_pool& operator=(const local_pool&) = delete;
  ~local_pool() { free_list(head_); }  // thread exit: the objects go back to the heap
  void* get() {
    if (!head_) refill();
    node* n = head_;
    head_ = n->next;
    --count_;
    return n;
  }
  void put(void* p) {
    node* n = static_cast<node*>(p);
    n->next = head_;
    head_ = n;
    if (++count_ >= 2 * batch) spill();
  }

 private:
  void refill() {
    if (node* b = g_pool.take()) {
      head_ = b;
      count_ = batch;
      return;
    }
    for (std::size_t i = 0; i < batch; ++i) {  // first use: from the heap, kept forever
      node* n = static_cast<node*>(std::malloc(object_size));
      n->next = head_;
      head_ = n;
    }
    count_ = batch;
  }
  void spill() {
    node* first = head_;
    node* last = head_;
    for (std::size_t i = 1; i < batch; ++i) last = last->next;
    head_ = last->next;
    last->next = nullptr;
    count_ -= batch;
    g_pool.put(first);
  }
  node* head_ = nullptr;
  std::size_t count_ = 0;
};

thread_local local_pool t_pool;

// DoNotOptimize is always given a const lvalue here: the read-write form ("+m,r") of Google
// Benchmark 1.7 is miscompiled by GCC 12 under -fsanitize=address,undefined (the pointer
// reads back as null after the asm).

void BM_malloc_free(benchmark::State& state) {
  std::array<void*, max_burst> storage{};
  const auto burst = static_cast<std::size_t>(state.range(0));
  std::span<void*> live(storage.data(), burst);
  for (auto _ : state) {
    for (auto& p : live) {
      p = std::malloc(object_size);
      benchmark::DoNotOptimize(std::as_const(p));
      static_cast<char*>(p)[0] = 1;
    }
    for (auto* p : live) std::free(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * burst));
}
// 16 x 2 KB stays under glibc's trim threshold; 256 x 2 KB (512 KB) crosses it, and free()
// then returns memory to the kernel each round: both are real patterns.
BENCHMARK(BM_malloc_free)->Arg(16)->Arg(256)->ThreadRange(1, 2)->UseRealTime();

void BM_thread_local_pool(benchmark::State& state) {
  std::array<void*, max_burst> storage{};
  const auto burst = static_cast<std::size_t>(state.range(0));
  std::span<void*> live(storage.data(), burst);
  for (auto _ : state) {
    for (auto& p : live) {
      p = t_pool.get();
      benchmark::DoNotOptimize(std::as_const(p));
      static_cast<char*>(p)[0] = 1;
    }
    for (auto* p : live) t_pool.put(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * burst));
}
BENCHMARK(BM_thread_local_pool)->Arg(16)->Arg(256)->ThreadRange(1, 2)->UseRealTime();

}  // namespace
