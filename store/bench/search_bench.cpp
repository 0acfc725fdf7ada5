// Search over a memory store of N messages (default 100,000): a subject: query, a free
// word, a combined query, each counting every match (as the API answers) and returning the
// first page; beside them the floor for a free word: memmem over the same search texts laid
// end to end in one buffer (what any scan of that text must read).
//
//   search_bench [--messages N] [--deferred-text] [google benchmark flags]
//
// --deferred-text: messages are put as inletd puts them, the search text left to the store,
// which derives it from the raw bytes (search::search_text_of: a MIME parse of a text/plain
// message holding the body); the time of the first searches, which build the text and the
// folded fields of every message, is printed before the benchmarks.
//
// Messages are synthetic and reproducible (fixed seed): subjects from a few templates, a
// sender from 200, bodies of 2-8 KB of words (so search_text is 2-8 KB, as inletd's 8 KiB
// bound leaves a typical text message), a tenth with an attachment, sizes 1-60 KB.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "inlet/store/memory_store.hpp"
#include "inlet/store/search.hpp"

namespace st = inlet::store;

namespace {

std::size_t message_count = 100000;
bool deferred_text = false;

const char* const words[] = {
    "the",     "report",  "meeting",  "customer", "order",      "shipping", "account",  "password",
    "update",  "please",  "review",   "attached", "invoice",    "payment",  "delivery", "support",
    "ticket",  "release", "server",   "database", "backup",     "schedule", "project",  "deadline",
    "budget",  "team",    "manager",  "welcome",  "newsletter", "offer",    "discount", "product",
    "feature", "version", "security", "alert",    "login",      "verify",   "address",  "thanks",
    "regards", "friday",  "monday",   "quarter",  "numbers"};
constexpr std::size_t word_count = sizeof(words) / sizeof(words[0]);

struct corpus {
  std::unique_ptr<st::memory_store> store;
  std::string all_text;  // every search_text, end to end (the reference's input)
};

corpus& data() {
  static corpus c = [] {
    corpus out;
    out.store = std::make_unique<st::memory_store>(
        st::memory_store_config{.max_messages = message_count, .max_bytes = std::size_t{1} << 40});
    std::mt19937_64 gen(42);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(gen() % n); };
    const char* subjects[] = {
        "Invoice %",      "Meeting notes for %", "Your order % has shipped", "Weekly report %",
        "Password reset", "Welcome to the team", "Quarterly numbers %",      "Re: project %"};
    for (std::size_t i = 0; i < message_count; ++i) {
      st::new_message m;
      std::string subject = subjects[pick(8)];
      if (auto p = subject.find('%'); p != std::string::npos)
        subject.replace(p, 1, std::to_string(pick(100000)));
      const std::size_t sender = pick(200);
      m.summary.from = {"Sender " + std::to_string(sender),
                        "sender" + std::to_string(sender) + "@example.com"};
      m.summary.to = {{"", "box" + std::to_string(pick(1000)) + "@inbox.example"}};
      m.summary.subject = subject;
      m.envelope.rcpt_to = {m.summary.to[0].address};
      std::string body;
      const std::size_t target = 2048 + pick(6144);
      while (body.size() < target) {
        body += words[pick(word_count)];
        body += pick(12) == 0 ? "\r\n" : " ";
      }
      if (pick(1000) == 0) body += " zanzibar";  // a rare word: about 0.1 % of messages
      if (pick(10) == 0) m.summary.attachments = {{"file.pdf", "application/pdf", 1000}};
      m.summary.search_text = st::search::build_search_text(m.summary, body, 8192);
      out.all_text += m.summary.search_text;
      out.all_text += '\n';
      m.raw.assign(1024 + pick(60 * 1024), 'x');  // sizes for larger:/smaller:; content unused
      if (deferred_text) {
        m.summary.search_text.clear();
        m.raw = "From: " + m.summary.from.address + "\r\nSubject: " + subject +
                "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body;
      }
      std::error_code ec;
      out.store->put_sync(std::move(m), ec);
    }
    return out;
  }();
  return c;
}

void run_query(benchmark::State& state, const char* text) {
  auto& c = data();
  st::search::query q;
  if (st::search::parse(text, "", q)) {
    state.SkipWithError("query does not parse");
    return;
  }
  std::size_t matched = 0;
  for (auto _ : state) {
    st::list_request r(0, 50);
    r.query = q;
    c.store->async_list(std::move(r), [&](std::error_code, st::page p) {
      matched = p.matched;
      benchmark::DoNotOptimize(p);
    });
  }
  state.counters["matched"] = static_cast<double>(matched);
  state.counters["messages"] = static_cast<double>(message_count);
}

void BM_search_subject(benchmark::State& s) {
  run_query(s, "subject:invoice");
}
void BM_search_word(benchmark::State& s) {
  run_query(s, "zanzibar");
}
void BM_search_phrase(benchmark::State& s) {
  run_query(s, "\"quarter numbers\"");
}
void BM_search_combined(benchmark::State& s) {
  run_query(s, "from:sender7@ subject:report -is:read larger:10K has:attachment budget");
}
void BM_list_first_page(benchmark::State& s) {
  run_query(s, "");
}

// The floor for a free word: one memmem over all the search texts laid end to end.
void BM_reference_memmem_word(benchmark::State& state) {
  auto& c = data();
  const std::string needle = "zanzibar";
  std::size_t hits = 0;
  for (auto _ : state) {
    hits = 0;
    const char* p = c.all_text.data();
    const char* e = p + c.all_text.size();
    while (const void* f =
               ::memmem(p, static_cast<std::size_t>(e - p), needle.data(), needle.size())) {
      ++hits;
      p = static_cast<const char*>(f) + needle.size();
    }
    benchmark::DoNotOptimize(hits);
  }
  state.counters["matched"] = static_cast<double>(hits);
  state.counters["text_MB"] = static_cast<double>(c.all_text.size()) / 1e6;
}

BENCHMARK(BM_search_subject)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_search_word)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_search_phrase)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_search_combined)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_list_first_page)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_reference_memmem_word)->Unit(benchmark::kMillisecond);

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
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--deferred-text") == 0) {
      deferred_text = true;
      for (int k = i; k + 1 <= argc; ++k) argv[k] = argv[k + 1];
      --argc;
      break;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (deferred_text) {
    auto& c = data();
    for (const char* text : {"zanzibar", "subject:invoice", "zanzibar"}) {
      st::search::query q;
      if (st::search::parse(text, "", q)) return 1;
      st::list_request r(0, 50);
      r.query = q;
      auto t0 = std::chrono::steady_clock::now();
      std::size_t matched = 0;
      c.store->async_list(std::move(r), [&](std::error_code, st::page p) { matched = p.matched; });
      auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0);
      std::printf("deferred text, %zu messages: '%s' %.1f ms (%zu matched)\n", message_count, text,
                  ms.count(), matched);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
