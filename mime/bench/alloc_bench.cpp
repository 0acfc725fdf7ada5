// Heap allocations per message: a global operator new counter around parsing each
// message of the corpus with one reused parser (cold first pass, then warm passes), and
// around summarize() for comparison (which builds owned strings by design).
//
// usage: mime_alloc_bench [--json-out FILE] DIR_OR_FILE...
#include "corpus.hpp"

#include <inlet/mime/message.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::size_t> g_allocs{0};
}

void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace inlet::mime;

int main(int argc, char** argv) {
  std::string json_out;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json-out" && i + 1 < argc) json_out = argv[++i];
    else paths.push_back(a);
  }
  auto msgs = bench::load_corpus(paths);
  if (msgs.empty()) return 1;
  parser p;
  std::size_t cold = 0, warm = 0, warm_nonzero = 0, summary_allocs = 0;
  for (auto& m : msgs) {
    std::size_t before = g_allocs.load();
    p.parse(std::string_view(m));
    cold += g_allocs.load() - before;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& m : msgs) {
      std::size_t before = g_allocs.load();
      p.parse(std::string_view(m));
      std::size_t d = g_allocs.load() - before;
      if (pass == 1) {
        warm += d;
        warm_nonzero += d != 0;
      }
    }
  }
  for (auto& m : msgs) {
    const parsed_message& pm = p.parse(std::string_view(m));
    std::size_t before = g_allocs.load();
    summary s = summarize(pm);
    summary_allocs += g_allocs.load() - before;
  }
  double n = static_cast<double>(msgs.size());
  std::printf("messages: %zu\n", msgs.size());
  std::printf("parse, reused parser, first pass (tables growing): %.3f allocations/message\n", cold / n);
  std::printf("parse, reused parser, warm pass:                   %.3f allocations/message (%zu messages > 0)\n",
              warm / n, warm_nonzero);
  std::printf("summarize() (owned strings, for comparison):       %.1f allocations/message\n", summary_allocs / n);
  if (!json_out.empty())
    if (FILE* f = std::fopen(json_out.c_str(), "w")) {
      std::fprintf(f, "{\"messages\":%zu,\"cold_per_msg\":%.4f,\"warm_per_msg\":%.4f,\"warm_nonzero\":%zu,\"summarize_per_msg\":%.2f}\n",
                   msgs.size(), cold / n, warm / n, warm_nonzero, summary_allocs / n);
      std::fclose(f);
    }
  return warm == 0 ? 0 : 2;
}
