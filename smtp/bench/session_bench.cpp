// Micro-benchmark of the sans-io session's hot path: one 9 KB message (the
// benchmark load shape) through consume(), against the limit reference of
// benchmarking.md, a memchr scan for LF over the same bytes. Both also run
// under callgrind for exact instruction counts (docs/benchmarks/smtp.md).
#include <inlet/smtp/server_session.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::string make_body(std::size_t size) {
  std::string b = "From: a@x.test\r\nTo: b@y.test\r\nSubject: bench\r\n\r\n";
  std::size_t i = 0;
  while (b.size() < size) {
    b += (i % 50 == 0 ? ".." : "") + std::string("Lorem ipsum dolor sit amet, consectetur adipiscing elit ") +
         std::to_string(i) + "\r\n";
    ++i;
  }
  return b;
}

const std::string& script() {
  static const std::string s = "EHLO c.test\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n" +
                               make_body(9000) + ".\r\nQUIT\r\n";
  return s;
}

// One SMTP transaction (EHLO .. 9 KB DATA .. QUIT) through a fresh session.
__attribute__((noinline)) std::size_t run_session_once(const std::string& in) {
  inlet::smtp::session_config cfg;
  std::size_t body = 0;
  inlet::smtp::server_session s(cfg);
  s.start();
  std::string_view rest = in;
  for (;;) {
    auto r = s.consume(rest);
    rest.remove_prefix(r.consumed);
    if (r.kind == inlet::smtp::step_kind::body_data) body += r.data.size();
    else if (r.kind == inlet::smtp::step_kind::message_complete)
      s.delivery_done({inlet::smtp::delivery_status::accepted("X"), {}});
    else if (r.kind == inlet::smtp::step_kind::close || r.kind == inlet::smtp::step_kind::need_more)
      break;
  }
  return body;
}

// The reference: find every LF of the same bytes, nothing else.
__attribute__((noinline)) std::size_t run_memchr_once(const std::string& in) {
  std::size_t lines = 0;
  const char* p = in.data();
  const char* e = p + in.size();
  while (const void* hit = std::memchr(p, '\n', static_cast<std::size_t>(e - p))) {
    ++lines;
    p = static_cast<const char*>(hit) + 1;
  }
  return lines;
}

void BM_session_transaction(benchmark::State& st) {
  const std::string& in = script();
  for (auto _ : st) benchmark::DoNotOptimize(run_session_once(in));
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * in.size()));
}
BENCHMARK(BM_session_transaction);

void BM_memchr_lines(benchmark::State& st) {
  const std::string& in = script();
  for (auto _ : st) benchmark::DoNotOptimize(run_memchr_once(in));
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * in.size()));
}
BENCHMARK(BM_memchr_lines);

}  // namespace

// `--count N`: run each N times without Google Benchmark, for callgrind
// (inclusive Ir of run_session_once / run_memchr_once divided by N).
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--count") {
    long n = std::atol(argv[2]);
    std::size_t sink = 0;
    for (long i = 0; i < n; ++i) sink += run_session_once(script()) + run_memchr_once(script());
    std::printf("%zu\n", sink);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
