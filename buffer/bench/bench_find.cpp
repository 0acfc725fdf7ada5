// Search speed for CRLF.CRLF over a ~9 KB message (Google Benchmark):
//   memchr_lf       : memchr for '\n' over the flat bytes, counting hits (the
//                     parser's lower bound: one pass, one byte class)
//   memmem_flat     : glibc memmem over the flat bytes
//   find_in_flat    : inlet::buffer::find_in over the flat bytes
//   segment_find/F  : segment::find over the same bytes in F-byte fragments
//   finder_reads/R  : streambuf prepare + copy + commit + finder::next per
//                     R-byte read (the receive loop without the hand-off)
#include <inlet/buffer/find.hpp>
#include <inlet/buffer/pool.hpp>
#include <inlet/buffer/segment.hpp>
#include <inlet/buffer/streambuf.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/buffer.hpp>

#include <cstring>
#include <string>

namespace {

const std::string& message() {
  static const std::string m = [] {
    std::string s;
    int line = 0;
    while (s.size() < 9000) {
      std::string l = "line " + std::to_string(line++) + " of a mail body, with some words. ";
      while (l.size() < 76) l.push_back('x');
      s += l + "\r\n";
    }
    return s + ".\r\n";
  }();
  return m;
}

void memchr_lf(benchmark::State& st) {
  const std::string& m = message();
  for (auto _ : st) {
    std::size_t hits = 0;
    const char* p = m.data();
    const char* e = p + m.size();
    while (const void* c = std::memchr(p, '\n', static_cast<std::size_t>(e - p))) {
      ++hits;
      p = static_cast<const char*>(c) + 1;
    }
    benchmark::DoNotOptimize(hits);
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * m.size()));
}

void memmem_flat(benchmark::State& st) {
  const std::string& m = message();
  for (auto _ : st) benchmark::DoNotOptimize(::memmem(m.data(), m.size(), "\r\n.\r\n", 5));
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * m.size()));
}

void find_in_flat(benchmark::State& st) {
  const std::string& m = message();
  for (auto _ : st) benchmark::DoNotOptimize(inlet::buffer::find_in(m, "\r\n.\r\n"));
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * m.size()));
}

void segment_find(benchmark::State& st) {
  const std::string& m = message();
  auto frag = static_cast<std::size_t>(st.range(0));
  inlet::buffer::segment s;
  for (std::size_t off = 0; off < m.size(); off += frag)
    s.append(inlet::buffer::segment::copy_of(std::string_view(m).substr(off, frag)));
  for (auto _ : st) benchmark::DoNotOptimize(s.find("\r\n.\r\n"));
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * m.size()));
}

void finder_reads(benchmark::State& st) {
  const std::string& m = message();
  auto chunk = static_cast<std::size_t>(st.range(0));
  inlet::buffer::streambuf sb;
  for (auto _ : st) {
    inlet::buffer::finder f("\r\n.\r\n");
    std::size_t at = inlet::buffer::finder::npos;
    for (std::size_t off = 0; off < m.size() && at == inlet::buffer::finder::npos; off += chunk) {
      std::size_t n = std::min(chunk, m.size() - off);
      boost::asio::buffer_copy(sb.prepare(n), boost::asio::buffer(m.data() + off, n));
      sb.commit(n);
      at = f.next(sb);
    }
    benchmark::DoNotOptimize(at);
    sb.consume(sb.size());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * m.size()));
}

}  // namespace

BENCHMARK(memchr_lf);
BENCHMARK(memmem_flat);
BENCHMARK(find_in_flat);
BENCHMARK(segment_find)->Arg(4096)->Arg(8192)->Arg(1460)->Arg(64);
BENCHMARK(finder_reads)->Arg(16384)->Arg(1460)->Arg(512);
BENCHMARK_MAIN();
