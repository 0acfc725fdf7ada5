// Opening one message of a file store of N messages (default 100,000), in process:
//  - get:       file_store::async_get by ID, waited for (reader thread hop included), vs
//               the memory store's get at the same N in the same run;
//  - statements: the SQL of a get on one read-only connection of the same file, prepared
//               for every call (sqlite3_prepare_v2 + step + finalize, three statements:
//               BEGIN, the row, COMMIT) vs prepared once and reset (what the store's
//               readers do): the price of parsing per call.
//   file_store_bench [--messages N] [google benchmark flags]
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "inlet/store/file_store.hpp"
#include "inlet/store/memory_store.hpp"

namespace st = inlet::store;
namespace fs = std::filesystem;

namespace {

std::size_t message_count = 100000;

st::new_message make(std::size_t i) {
  st::new_message m;
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to = {"box" + std::to_string(i % 100) + "@example.com"};
  m.summary.subject = "subject " + std::to_string(i);
  m.summary.search_text = "subject " + std::to_string(i);
  std::string body = "Subject: subject " + std::to_string(i) + "\r\n\r\n";
  std::mt19937 r(static_cast<unsigned>(i));
  while (body.size() < 9 * 1024) body += static_cast<char>('a' + r() % 26);  // 9 KB
  m.raw = std::move(body);
  return m;
}

struct fixture {
  fs::path dir;
  std::unique_ptr<st::file_store> file;
  std::unique_ptr<st::memory_store> memory;
  std::vector<std::string> ids;
  fixture() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/inlet-file-bench-XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    dir = tmpl;
    st::file_store_config cfg;
    cfg.path = (dir / "bench.db").string();
    file = std::make_unique<st::file_store>(cfg);
    memory = std::make_unique<st::memory_store>(
        st::memory_store_config{.max_messages = message_count, .max_bytes = std::size_t{1} << 40});
    // Puts in flight together, so the writer commits them in large batches.
    constexpr std::size_t window = 256;
    for (std::size_t i = 0; i < message_count; i += window) {
      std::vector<std::future<std::string>> pending;
      for (std::size_t k = i; k < std::min(message_count, i + window); ++k) {
        auto p = std::make_shared<std::promise<std::string>>();
        pending.push_back(p->get_future());
        file->put(make(k), [p](std::error_code ec, st::message_ptr m) {
          p->set_value(ec ? std::string() : m->id.str());
        });
        std::error_code ec;
        memory->put_sync(make(k), ec);
      }
      for (auto& f : pending) ids.push_back(f.get());
    }
  }
  ~fixture() {
    file.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::unique_ptr<fixture> g_data;
fixture& data() {
  if (!g_data) g_data = std::make_unique<fixture>();
  return *g_data;
}

st::message_ptr get_sync(st::store& s, std::string id) {
  std::promise<st::message_ptr> p;
  auto f = p.get_future();
  s.async_get(std::move(id), [&p](std::error_code ec, st::message_ptr m) {
    p.set_value(ec ? nullptr : std::move(m));
  });
  return f.get();
}

void get_loop(benchmark::State& state, st::store& s, const std::vector<std::string>& ids) {
  std::size_t i = 0;
  for (auto _ : state) {
    auto m = get_sync(s, ids[(i++ * 7919) % ids.size()]);
    if (!m) state.SkipWithError("get failed");
    benchmark::DoNotOptimize(m);
  }
  state.counters["messages"] = static_cast<double>(message_count);
}

void BM_get_file_store(benchmark::State& state) {
  auto& d = data();
  get_loop(state, *d.file, d.ids);
}

void BM_get_memory_store(benchmark::State& state) {
  auto& d = data();
  std::vector<std::string> ids;
  // The memory store's IDs (its own); listed once.
  std::promise<st::page> p;
  auto f = p.get_future();
  d.memory->async_list(st::list_request(0, 1000),
                       [&p](std::error_code, st::page pg) { p.set_value(std::move(pg)); });
  for (const auto& m : f.get().messages) ids.push_back(m->id.str());
  get_loop(state, *d.memory, ids);
}

const char* const get_sql =
    "SELECT m.seq, m.id, m.created, m.size, m.read, m.tags, m.meta, r.codec, r.data FROM "
    "inlet_messages m JOIN inlet_raw r ON r.seq=m.seq WHERE m.id=?";

void run_one(sqlite3_stmt* st, const std::string& id) {
  sqlite3_bind_text(st, 1, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
  while (sqlite3_step(st) == SQLITE_ROW) benchmark::DoNotOptimize(sqlite3_column_blob(st, 8));
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

sqlite3* open_reader() {
  sqlite3* db = nullptr;
  sqlite3_open_v2((data().dir / "bench.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_exec(db, "PRAGMA mmap_size=2147418112; PRAGMA cache_size=-32768", nullptr, nullptr, nullptr);
  return db;
}

void BM_statements_prepared_per_call(benchmark::State& state) {
  auto& d = data();
  sqlite3* db = open_reader();
  std::size_t i = 0;
  for (auto _ : state) {
    for (const char* sql : {"BEGIN", get_sql, "COMMIT"}) {
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
      run_one(st, d.ids[(i * 7919) % d.ids.size()]);
      sqlite3_finalize(st);
    }
    ++i;
  }
  sqlite3_close_v2(db);
}

void BM_statements_cached(benchmark::State& state) {
  auto& d = data();
  sqlite3* db = open_reader();
  std::vector<sqlite3_stmt*> sts;
  for (const char* sql : {"BEGIN", get_sql, "COMMIT"}) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr);
    sts.push_back(st);
  }
  std::size_t i = 0;
  for (auto _ : state) {
    for (auto* st : sts) run_one(st, d.ids[(i * 7919) % d.ids.size()]);
    ++i;
  }
  for (auto* st : sts) sqlite3_finalize(st);
  sqlite3_close_v2(db);
}

BENCHMARK(BM_get_file_store)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_get_memory_store)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_statements_prepared_per_call)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_statements_cached)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--messages") == 0) {
      message_count = std::stoul(argv[i + 1]);
      for (int k = i; k + 2 <= argc; ++k) argv[k] = argv[k + 2];
      argc -= 2;
      break;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_data.reset();  // the store's threads end before static destruction
  return 0;
}
