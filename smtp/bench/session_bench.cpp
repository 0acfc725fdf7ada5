// Micro-benchmark of the sans-io session's hot path: one 9 KB message (the
// seed load shape) through consume(), against the limit reference of
// benchmarking.md, a memchr scan for LF over the same bytes. Both also run
// under callgrind for exact instruction counts (docs/benchmarks/smtp.md).
#include <inlet/smtp/server_session.hpp>

#include <benchmark/benchmark.h>

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

void BM_session_transaction(benchmark::State& st) {
  const std::string& in = script();
  inlet::smtp::session_config cfg;
  std::size_t body = 0;
  for (auto _ : st) {
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
    s.clear_output();
  }
  benchmark::DoNotOptimize(body);
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * in.size()));
}
BENCHMARK(BM_session_transaction);

void BM_memchr_lines(benchmark::State& st) {  // the reference: find every LF, nothing else
  const std::string& in = script();
  std::size_t lines = 0;
  for (auto _ : st) {
    const char* p = in.data();
    const char* e = p + in.size();
    while (const void* hit = std::memchr(p, '\n', static_cast<std::size_t>(e - p))) {
      ++lines;
      p = static_cast<const char*>(hit) + 1;
    }
    benchmark::DoNotOptimize(p);
  }
  benchmark::DoNotOptimize(lines);
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * in.size()));
}
BENCHMARK(BM_memchr_lines);

}  // namespace

BENCHMARK_MAIN();
