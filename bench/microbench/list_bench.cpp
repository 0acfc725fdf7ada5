// Intrusive list (boost::intrusive, no allocation per push) vs std::list<T*> (a node per
// push): a FIFO of existing objects, as a connection queue or a pending-write queue is.
#include <benchmark/benchmark.h>

#include <boost/intrusive/list.hpp>
#include <list>
#include <utility>
#include <vector>

namespace {

struct item : boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>> {
  int payload[14] = {};
};

constexpr int n_items = 1024;

void BM_std_list_of_pointers(benchmark::State& state) {
  std::vector<item> items(n_items);
  std::list<item*> q;
  for (auto _ : state) {
    for (auto& it : items) q.push_back(&it);
    while (!q.empty()) {
      benchmark::DoNotOptimize(std::as_const(q.front()->payload[0]));
      q.pop_front();
    }
  }
  state.SetItemsProcessed(state.iterations() * n_items);
}
BENCHMARK(BM_std_list_of_pointers);

void BM_intrusive_list(benchmark::State& state) {
  std::vector<item> items(n_items);
  boost::intrusive::list<item> q;
  for (auto _ : state) {
    for (auto& it : items) q.push_back(it);
    while (!q.empty()) {
      benchmark::DoNotOptimize(std::as_const(q.front().payload[0]));
      q.pop_front();
    }
  }
  state.SetItemsProcessed(state.iterations() * n_items);
}
BENCHMARK(BM_intrusive_list);

}  // namespace
