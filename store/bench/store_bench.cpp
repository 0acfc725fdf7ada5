// Memory store micro-benchmarks (Google Benchmark). Each scenario is paired with a
// reference in the same run:
//  - put:  memory_store::put vs `reference_put` (one mutex, a deque of shared_ptr, no ID,
//          no ID map, no mailbox index) — the price of the indexes and bounds.
//  - list: a 50-message page at N = 1k vs 100k stored messages — the page must cost the
//          same whatever N (nothing but the page is copied).
//  - get:  by ID at N = 1k vs 100k.
//  - put under contention: 1, 2, 4 writer threads (the single lock's cost).
#include <benchmark/benchmark.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/store/memory_store.hpp"

namespace st = inlet::store;

namespace {

const std::string& body() {
  static const std::string b(9 * 1024, 'x');  // 9 KB, the project's mean message size
  return b;
}

st::new_message make(std::size_t i) {
  st::new_message m;
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to = {"box" + std::to_string(i % 100) + "@example.com"};
  m.summary.subject = "subject";
  m.raw = body();  // the copy the SMTP layer would hand over; made in both scenarios
  return m;
}

void BM_put_memory_store(benchmark::State& state) {
  st::memory_store s({.max_messages = 10000, .max_bytes = std::size_t{1} << 34});
  std::size_t i = 0;
  for (auto _ : state) {
    s.put(make(i++), [](std::error_code, st::message_ptr p) { benchmark::DoNotOptimize(p); });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_put_memory_store);

void BM_put_reference(benchmark::State& state) {
  std::mutex m;
  std::deque<std::shared_ptr<const st::stored_message>> q;
  std::size_t i = 0;
  for (auto _ : state) {
    auto nm = make(i++);
    auto rec = std::make_shared<st::stored_message>();
    rec->envelope = std::move(nm.envelope);
    rec->summary = std::move(nm.summary);
    rec->raw = std::move(nm.raw);
    std::lock_guard lk(m);
    q.push_back(std::move(rec));
    if (q.size() > 10000) q.pop_front();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_put_reference);

// The memory store completes inline: a callback token gets the result at once.
st::page list_now(st::store& s, std::size_t start, std::size_t limit, std::string mailbox = {}) {
  st::list_request r(start, limit);
  r.mailbox = std::move(mailbox);
  st::page out;
  s.async_list(std::move(r), [&](std::error_code, st::page p) { out = std::move(p); });
  return out;
}

st::message_ptr get_now(st::store& s, const std::string& id) {
  st::message_ptr out;
  s.async_get(id, [&](std::error_code, st::message_ptr m) { out = std::move(m); });
  return out;
}

st::memory_store& filled(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<st::memory_store>> stores;
  auto& p = stores[n];
  if (!p) {
    p = std::make_unique<st::memory_store>(
        st::memory_store_config{.max_messages = n, .max_bytes = std::size_t{1} << 40});
    for (std::size_t i = 0; i < n; ++i) {
      auto m = make(i);
      m.raw = "small";  // keep memory modest: the page cost does not depend on raw size
      // 10 mailboxes: box7 holds >= 100 messages at N = 1k, so every page has 50.
      m.envelope.rcpt_to = {"box" + std::to_string(i % 10) + "@example.com"};
      p->put(std::move(m), {});
    }
  }
  return *p;
}

void BM_list_page50(benchmark::State& state) {
  auto& s = filled(static_cast<std::size_t>(state.range(0)));
  std::size_t start = 0;
  for (auto _ : state) {
    auto p = list_now(s, start, 50);
    benchmark::DoNotOptimize(p);
    start = (start + 50) % 1000;
  }
}
BENCHMARK(BM_list_page50)->Arg(1000)->Arg(100000);

void BM_list_mailbox_page50(benchmark::State& state) {
  auto& s = filled(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    auto p = list_now(s, 0, 50, "box7@example.com");
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_list_mailbox_page50)->Arg(1000)->Arg(100000);

void BM_get(benchmark::State& state) {
  auto& s = filled(static_cast<std::size_t>(state.range(0)));
  std::vector<std::string> ids;
  for (auto& m : list_now(s, 0, 1000).messages) ids.push_back(m->id);
  std::size_t i = 0;
  for (auto _ : state) {
    auto m = get_now(s, ids[i++ % ids.size()]);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_get)->Arg(1000)->Arg(100000);

void BM_put_contended(benchmark::State& state) {
  static st::memory_store* s = nullptr;
  if (state.thread_index() == 0)
    s = new st::memory_store({.max_messages = 10000, .max_bytes = std::size_t{1} << 34});
  std::size_t i = static_cast<std::size_t>(state.thread_index()) << 32;
  for (auto _ : state) s->put(make(i++), {});
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  if (state.thread_index() == 0) {
    delete s;
    s = nullptr;
  }
}
BENCHMARK(BM_put_contended)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// --callgrind N: N puts into a store already at its 10k-message bound (so each put also
// evicts), once through memory_store and once through the reference, in separate
// non-inlined functions: `callgrind_annotate --inclusive=yes` then gives exact
// instructions per put for each (divide by N).
struct reference_store {
  std::mutex m;
  std::deque<std::shared_ptr<const st::stored_message>> q;
  void put(st::new_message nm) {
    auto rec = std::make_shared<st::stored_message>();
    rec->envelope = std::move(nm.envelope);
    rec->summary = std::move(nm.summary);
    rec->raw = std::move(nm.raw);
    std::shared_ptr<const st::stored_message> victim;
    std::lock_guard lk(m);
    q.push_back(std::move(rec));
    if (q.size() > 10000) {
      victim = std::move(q.front());
      q.pop_front();
    }
  }
};

__attribute__((noinline)) void cg_fill(st::memory_store& s, reference_store& r) {
  for (std::size_t i = 0; i < 10000; ++i) {
    s.put(make(i), {});
    r.put(make(i));
  }
}
__attribute__((noinline)) void cg_put_memory_store(st::memory_store& s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) s.put(make(i), {});
}
__attribute__((noinline)) void cg_put_reference(reference_store& r, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) r.put(make(i));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--callgrind") {
    std::size_t n = std::stoul(argv[2]);
    st::memory_store s({.max_messages = 10000, .max_bytes = std::size_t{1} << 34});
    reference_store r;
    cg_fill(s, r);
    cg_put_memory_store(s, n);
    cg_put_reference(r, n);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
