// filter_bench: the content filter over messages as they arrive, against references
// measured in the same run (alternating modes every round):
//   hs_block      raw Hyperscan block mode, one hs_scan per message over the text
//                 pre-decoded and flat (the reference that is the limit)
//   scan_pieces   inlet::filter scan (Hyperscan streaming) over the same decoded text,
//                 in the pieces the streaming decoder produced from the fragments
//   pipeline_hs   raw fragments -> bench mini_mime (QP/base64/charset decode) -> scan
//   pipeline_hs_lit  the same with the literal terms only (what Aho-Corasick can take)
//   pipeline_ac   the same with the Aho-Corasick engine (literal terms only)
//   decode_only   raw fragments -> mini_mime -> nothing (the decoding share)
//   hs_block_mime raw Hyperscan block mode over the text inlet::mime decodes, flat
//   pipeline_mime raw fragments -> inlet::mime::parse (over the pieces) -> scan_parsed
//   mime_only     the same with an empty term list (the parse + decode share)
// Prints a table and writes JSON (--json FILE). Usage:
//   filter_bench --corpus DIR --terms FILE [--terms FILE ...] [--rounds 7] [--json out.json]
//   filter_bench --synthetic 200 --synthetic-terms 300 --rounds 1        (CI smoke)
#include <hs.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engines.hpp"
#include "inlet/filter/filter.hpp"
#include "inlet/filter/mime_scan.hpp"
#include "inlet/mime/message.hpp"
#include "mini_mime.hpp"

namespace fs = std::filesystem;
namespace f = inlet::filter;
using clk = std::chrono::steady_clock;

namespace {

struct message {
  std::string raw;
  std::vector<std::size_t> frags;  // fragment lengths, as they "arrive"
  struct stream {
    f::stream_kind kind;
    std::vector<std::string> pieces;
  };
  std::vector<stream> streams;     // decoded once, pieces as the decoder produced them
  std::string flat;                // the decoded streams joined with '\n'
  std::string flat_mime;           // the same for the text inlet::mime decodes
};

std::vector<std::string_view> fragments(const message& m) {
  std::vector<std::string_view> v;
  std::size_t off = 0;
  for (std::size_t n : m.frags) {
    v.push_back(std::string_view(m.raw).substr(off, n));
    off += n;
  }
  return v;
}

class flat_visitor final : public f::text_visitor {
 public:
  explicit flat_visitor(std::string& out) : out_(out) {}
  void begin(f::stream_kind) override {}
  void piece(std::string_view b) override { out_ += b; }
  void end() override { out_ += '\n'; }
 private:
  std::string& out_;
};

// Records decoded streams (preparation only).
class record_sink final : public f::bench::text_sink {
 public:
  explicit record_sink(message& m) : m_(m) {}
  void begin(f::stream_kind k) override { m_.streams.push_back({k, {}}); }
  void piece(std::string_view b) override { m_.streams.back().pieces.emplace_back(b); }
  void end() override {
    for (const auto& p : m_.streams.back().pieces) m_.flat += p;
    m_.flat += '\n';
  }
 private:
  message& m_;
};

class scan_sink final : public f::bench::text_sink {
 public:
  explicit scan_sink(f::scan& s) : s_(s) {}
  void begin(f::stream_kind k) override { s_.begin_stream(k); }
  void piece(std::string_view b) override { s_.feed(b); }
  void end() override { s_.end_stream(); }
 private:
  f::scan& s_;
};

class null_sink final : public f::bench::text_sink {
 public:
  std::size_t bytes = 0;
  void begin(f::stream_kind) override {}
  void piece(std::string_view b) override { bytes += b.size(); }
  void end() override {}
};

struct options {
  std::string corpus;
  std::vector<std::string> terms;
  int synthetic = 0, synthetic_terms = 0, rounds = 7, compile_reps = 3, every = 1;
  std::size_t min_frag = 512, max_frag = 4096;
  std::string json;
  std::string only;  // run just this mode (for profilers)
};

std::vector<std::string> synthetic_vocab() {
  std::vector<std::string> v;
  std::mt19937 rng(42);
  for (int i = 0; i < 3000; ++i) {
    std::string w;
    int len = 3 + static_cast<int>(rng() % 9);
    for (int k = 0; k < len; ++k) w.push_back(static_cast<char>('a' + rng() % 26));
    v.push_back(w);
  }
  return v;
}

std::string synthetic_message(std::mt19937& rng, const std::vector<std::string>& vocab) {
  auto words = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) {
      s += vocab[rng() % vocab.size()];
      s += (i % 12 == 11) ? "\r\n" : " ";
    }
    return s + "\r\n";
  };
  std::string m = "From: a@example.com\r\nSubject: " + words(6) +
                  "MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n"
                  "preamble\r\n--b1\r\nContent-Type: text/plain; charset=iso-8859-1\r\n"
                  "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
  std::string body = words(200);
  std::size_t col = 0;
  for (char c : body) {  // QP-encode with soft breaks
    if (col >= 70 && c != '\r' && c != '\n') { m += "=\r\n"; col = 0; }
    m += c;
    col = (c == '\n') ? 0 : col + 1;
  }
  m += "\r\n--b1\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: base64\r\n\r\n";
  std::string html = "<html><body>" + words(150) + "</body></html>";
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i + 2 < html.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(html[i]) << 16) |
                 (static_cast<unsigned char>(html[i + 1]) << 8) | static_cast<unsigned char>(html[i + 2]);
    m += tbl[(v >> 18) & 63]; m += tbl[(v >> 12) & 63]; m += tbl[(v >> 6) & 63]; m += tbl[v & 63];
    if ((i / 3) % 19 == 18) m += "\r\n";
  }
  m += "\r\n--b1--\r\n";
  return m;
}

std::vector<message> load_messages(const options& o) {
  std::vector<message> msgs;
  if (!o.corpus.empty()) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(o.corpus))
      if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (std::size_t i = 0; i < files.size(); i += static_cast<std::size_t>(o.every)) {
      const auto& p = files[i];
      std::ifstream in(p, std::ios::binary);
      msgs.push_back({std::string(std::istreambuf_iterator<char>(in), {}), {}, {}, {}, {}});
    }
  } else {
    auto vocab = synthetic_vocab();
    std::mt19937 rng(7);
    for (int i = 0; i < o.synthetic; ++i) msgs.push_back({synthetic_message(rng, vocab), {}, {}, {}, {}});
  }
  std::mt19937 rng(1234);
  for (auto& m : msgs) {
    for (std::size_t left = m.raw.size(); left > 0;) {
      std::size_t n = o.min_frag + rng() % (o.max_frag - o.min_frag + 1);
      n = std::min(n, left);
      m.frags.push_back(n);
      left -= n;
    }
    record_sink rs(m);
    f::bench::mini_mime mm(rs);
    std::size_t off = 0;
    for (std::size_t n : m.frags) {
      mm.feed(std::string_view(m.raw).substr(off, n));
      off += n;
    }
    mm.finish();
    auto pieces = fragments(m);
    inlet::mime::parsed_message pm = inlet::mime::parse(std::span<const std::string_view>(pieces));
    flat_visitor fv(m.flat_mime);
    f::visit_text(pm, fv);
  }
  return msgs;
}

f::term_list synthetic_terms(int n) {
  auto vocab = synthetic_vocab();
  std::mt19937 rng(99);
  f::term_list l;
  for (int i = 0; i < n; ++i) {
    f::term t;
    t.pattern = vocab[rng() % vocab.size()];
    if (i % 5 == 0) t.pattern += " " + vocab[rng() % vocab.size()];
    if (i % 50 == 0) {
      t.kind = f::term_kind::regex;
      t.pattern = vocab[rng() % vocab.size()] + "\\s+" + vocab[rng() % vocab.size()];
    }
    t.line = static_cast<std::size_t>(i + 1);
    l.terms.push_back(std::move(t));
  }
  return l;
}

f::term_list literal_only(const f::term_list& l) {
  f::term_list out;
  for (const auto& t : l.terms)
    if (t.kind == f::term_kind::literal) out.terms.push_back(t);
  return out;
}

struct hs_block_ref {
  hs_database_t* db = nullptr;
  hs_scratch_t* scratch = nullptr;
  ~hs_block_ref() {
    if (scratch) hs_free_scratch(scratch);
    if (db) hs_free_database(db);
  }
};

bool compile_block(const f::term_list& l, hs_block_ref& ref, double& ms) {
  std::vector<std::string> exprs;
  std::vector<const char*> ptrs;
  std::vector<unsigned> flags, ids;
  for (std::size_t i = 0; i < l.size(); ++i) {
    exprs.push_back(f::detail::hyperscan_expression(l.terms[i]));
    flags.push_back(f::detail::hyperscan_flags(l.terms[i]));
    ids.push_back(static_cast<unsigned>(i));
  }
  for (auto& e : exprs) ptrs.push_back(e.c_str());
  hs_compile_error_t* err = nullptr;
  auto t0 = clk::now();
  if (hs_compile_multi(ptrs.data(), flags.data(), ids.data(), static_cast<unsigned>(ptrs.size()),
                       HS_MODE_BLOCK, nullptr, &ref.db, &err) != HS_SUCCESS) {
    std::fprintf(stderr, "hs block compile: %s\n", err ? err->message : "?");
    hs_free_compile_error(err);
    return false;
  }
  ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
  return hs_alloc_scratch(ref.db, &ref.scratch) == HS_SUCCESS;
}

int count_match(unsigned, unsigned long long, unsigned long long, unsigned, void* ctx) {
  ++*static_cast<std::size_t*>(ctx);
  return 0;
}

struct run_result {
  double seconds = 0;
  std::size_t matches = 0;  // distinct (message, term) pairs
};

[[gnu::noinline]] run_result run_hs_block(const std::vector<message>& msgs, const hs_block_ref& ref,
                                          bool mime_text = false) {
  run_result r;
  auto t0 = clk::now();
  for (const auto& m : msgs) {
    const std::string& text = mime_text ? m.flat_mime : m.flat;
    hs_scan(ref.db, text.data(), static_cast<unsigned>(text.size()), 0, ref.scratch, count_match,
            &r.matches);
  }
  r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  return r;
}

[[gnu::noinline]] run_result run_scan_pieces(const std::vector<message>& msgs, const std::shared_ptr<const f::filter>& fl,
                           f::counters& c) {
  run_result r;
  auto t0 = clk::now();
  for (const auto& m : msgs) {
    f::scan s(fl, &c);
    for (const auto& st : m.streams) {
      s.begin_stream(st.kind);
      for (const auto& p : st.pieces) s.feed(p);
      s.end_stream();
    }
    r.matches += s.finish().term_ids.size();
  }
  r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  return r;
}

[[gnu::noinline]] run_result run_pipeline(const std::vector<message>& msgs, const std::shared_ptr<const f::filter>& fl,
                        f::counters& c) {
  run_result r;
  auto t0 = clk::now();
  for (const auto& m : msgs) {
    f::scan s(fl, &c);
    scan_sink sink(s);
    f::bench::mini_mime mm(sink);
    std::size_t off = 0;
    for (std::size_t n : m.frags) {
      mm.feed(std::string_view(m.raw).substr(off, n));
      off += n;
    }
    mm.finish();
    r.matches += s.finish().term_ids.size();
  }
  r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  return r;
}

[[gnu::noinline]] run_result run_pipeline_mime(const std::vector<message>& msgs,
                                               const std::shared_ptr<const f::filter>& fl, f::counters& c) {
  run_result r;
  std::vector<std::string_view> pieces;
  auto t0 = clk::now();
  for (const auto& m : msgs) {
    pieces.clear();
    std::size_t off = 0;
    for (std::size_t n : m.frags) {
      pieces.push_back(std::string_view(m.raw).substr(off, n));
      off += n;
    }
    inlet::mime::parsed_message pm = inlet::mime::parse(std::span<const std::string_view>(pieces));
    f::scan s(fl, &c);
    f::scan_parsed(s, pm);
    r.matches += s.finish().term_ids.size();
  }
  r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  return r;
}

[[gnu::noinline]] run_result run_decode_only(const std::vector<message>& msgs) {
  run_result r;
  auto t0 = clk::now();
  for (const auto& m : msgs) {
    null_sink sink;
    f::bench::mini_mime mm(sink);
    std::size_t off = 0;
    for (std::size_t n : m.frags) {
      mm.feed(std::string_view(m.raw).substr(off, n));
      off += n;
    }
    mm.finish();
    r.matches += sink.bytes;
  }
  r.seconds = std::chrono::duration<double>(clk::now() - t0).count();
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

template <class Fn>
double timed_ms(Fn fn) {
  auto t0 = clk::now();
  fn();
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

bool parse_args(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--corpus") o.corpus = next();
    else if (a == "--terms") o.terms.push_back(next());
    else if (a == "--synthetic") o.synthetic = std::stoi(next());
    else if (a == "--synthetic-terms") o.synthetic_terms = std::stoi(next());
    else if (a == "--rounds") o.rounds = std::max(1, std::stoi(next()));
    else if (a == "--compile-reps") o.compile_reps = std::max(1, std::stoi(next()));
    else if (a == "--min-frag") o.min_frag = std::stoul(next());
    else if (a == "--max-frag") o.max_frag = std::stoul(next());
    else if (a == "--json") o.json = next();
    else if (a == "--only") o.only = next();
    else if (a == "--every") o.every = std::max(1, std::stoi(next()));
    else return false;
  }
  if (o.min_frag == 0 || o.max_frag < o.min_frag) return false;
  return (!o.corpus.empty() || o.synthetic > 0) && (!o.terms.empty() || o.synthetic_terms > 0);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: filter_bench (--corpus DIR | --synthetic N) (--terms FILE... | --synthetic-terms N)\n"
                 "       [--rounds R] [--compile-reps N] [--min-frag B] [--max-frag B] [--json FILE] [--only MODE] [--every K]\n");
    return 2;
  }
  auto msgs = load_messages(o);
  std::size_t raw_bytes = 0, flat_bytes = 0, pieces = 0;
  for (const auto& m : msgs) {
    raw_bytes += m.raw.size();
    flat_bytes += m.flat.size();
    for (const auto& s : m.streams) pieces += s.pieces.size();
  }
  std::printf("corpus: %zu messages, %.1f MB raw, %.1f MB decoded text, %zu decoded pieces, fragments %zu-%zu B\n",
              msgs.size(), raw_bytes / 1e6, flat_bytes / 1e6, pieces, o.min_frag, o.max_frag);

  std::vector<std::pair<std::string, f::term_list>> lists;
  if (o.terms.empty()) {
    lists.emplace_back("synthetic-" + std::to_string(o.synthetic_terms), synthetic_terms(o.synthetic_terms));
  }
  for (const auto& p : o.terms) {
    auto l = f::load_terms(p);
    if (!l) {
      std::fprintf(stderr, "%s: %s\n", p.c_str(), l.error().to_string().c_str());
      return 1;
    }
    lists.emplace_back(fs::path(p).filename().string(), std::move(*l));
  }

  std::ostringstream js;
  js << "{\n  \"messages\": " << msgs.size() << ", \"raw_bytes\": " << raw_bytes
     << ", \"decoded_bytes\": " << flat_bytes << ", \"rounds\": " << o.rounds << ",\n  \"lists\": [";
  const char* modes[] = {"hs_block",    "scan_pieces",   "pipeline_hs",   "pipeline_hs_lit", "pipeline_ac",
                         "decode_only", "hs_block_mime", "pipeline_mime", "mime_only"};
  constexpr int nmodes = 9;
  auto empty_filter = *f::filter::compile(f::term_list{});
  int failures = 0;
  for (std::size_t li = 0; li < lists.size(); ++li) {
    const auto& [name, terms] = lists[li];
    auto lits = literal_only(terms);
    // Compile times (median of compile_reps).
    // Compile times (median of compile_reps). With --only, compile just what runs.
    auto wanted = [&](std::initializer_list<const char*> ms) {
      if (o.only.empty()) return true;
      for (const char* m : ms)
        if (o.only == m) return true;
      return false;
    };
    std::vector<double> c_hs, c_ac;
    std::shared_ptr<const f::filter> fhs, fhs_lit, fac;
    for (int k = 0; k < o.compile_reps; ++k) {
      c_hs.push_back(timed_ms([&] {
        auto r = f::filter::compile(terms, {f::engine_kind::hyperscan});
        if (!r) { std::fprintf(stderr, "%s\n", r.error().to_string().c_str()); std::exit(1); }
        fhs = *r;
      }));
      if (!o.only.empty()) break;  // profiling run: compile once
    }
    for (int k = 0; k < o.compile_reps; ++k)
      c_ac.push_back(timed_ms([&] { fac = *f::filter::compile(lits, {f::engine_kind::aho_corasick}); }));
    if (wanted({"pipeline_hs_lit"})) fhs_lit = *f::filter::compile(lits, {f::engine_kind::hyperscan});
    hs_block_ref ref;
    double block_ms = 0;
    if (wanted({"hs_block", "hs_block_mime"}) && !compile_block(terms, ref, block_ms)) return 1;

    f::counters counters;
    std::vector<double> t[nmodes];
    std::size_t matches[nmodes] = {};
    for (int r = 0; r < o.rounds; ++r) {
      for (int k = 0; k < nmodes; ++k) {
        int m = (r % 2 == 0) ? k : nmodes - 1 - k;  // alternate the order every round
        run_result rr;
        if (!o.only.empty() && o.only != modes[m]) {
          t[m].push_back(1);
          continue;
        }
        switch (m) {
          case 0: rr = run_hs_block(msgs, ref); break;
          case 1: rr = run_scan_pieces(msgs, fhs, counters); break;
          case 2: rr = run_pipeline(msgs, fhs, counters); break;
          case 3: rr = run_pipeline(msgs, fhs_lit, counters); break;
          case 4: rr = run_pipeline(msgs, fac, counters); break;
          case 5: rr = run_decode_only(msgs); break;
          case 6: rr = run_hs_block(msgs, ref, true); break;
          case 7: rr = run_pipeline_mime(msgs, fhs, counters); break;
          case 8: rr = run_pipeline_mime(msgs, empty_filter, counters); break;
        }
        t[m].push_back(rr.seconds);
        matches[m] = rr.matches;
      }
    }
    // Per-round ratios, then median and spread.
    auto ratio = [&](int num, int den) {
      std::vector<double> v;
      for (int r = 0; r < o.rounds; ++r) v.push_back(t[num][r] / t[den][r]);
      std::sort(v.begin(), v.end());
      return std::array<double, 3>{median(v), v.front(), v.back()};
    };
    auto r_pipe = ratio(0, 2);    // hs_block time / pipeline time  (>= 0.9 wanted)
    auto r_scan = ratio(0, 1);    // hs_block time / scan_pieces time
    auto r_ac = ratio(4, 3);      // ac time / hs time, both literal-only (>= 5 wanted)
    auto r_dec = ratio(5, 2);     // share of the pipeline spent decoding
    auto r_mime = ratio(6, 7);    // hs_block over mime text / pipeline_mime
    auto r_mdec = ratio(8, 7);    // share of pipeline_mime spent parsing + decoding

    std::printf("\n== %s: %zu terms (%zu literal), compile hs %.1f ms (block %.1f ms), ac %.1f ms; "
                "hs db %.1f MB, ac %.1f MB\n",
                name.c_str(), terms.size(), lits.size(), median(c_hs), block_ms, median(c_ac),
                fhs->memory_bytes() / 1e6, fac->memory_bytes() / 1e6);
    std::printf("%-16s %10s %10s %10s %10s\n", "mode", "median ms", "MB/s raw", "MB/s text", "matches");
    for (int m = 0; m < nmodes; ++m) {
      double med = median(t[m]);
      std::printf("%-16s %10.2f %10.1f %10.1f %10zu\n", modes[m], med * 1e3, raw_bytes / med / 1e6,
                  flat_bytes / med / 1e6, matches[m]);
    }
    std::printf("pipeline_hs vs hs_block (time ratio block/pipeline): median %.3f [%.3f..%.3f]\n",
                r_pipe[0], r_pipe[1], r_pipe[2]);
    std::printf("scan_pieces vs hs_block (block/scan):                median %.3f [%.3f..%.3f]\n",
                r_scan[0], r_scan[1], r_scan[2]);
    std::printf("pipeline_hs_lit vs pipeline_ac (ac/hs):              median %.2f [%.2f..%.2f]\n",
                r_ac[0], r_ac[1], r_ac[2]);
    std::printf("decode_only / pipeline_hs:                           median %.3f [%.3f..%.3f]\n",
                r_dec[0], r_dec[1], r_dec[2]);
    std::printf("pipeline_mime vs hs_block_mime (block/pipeline):     median %.3f [%.3f..%.3f]\n",
                r_mime[0], r_mime[1], r_mime[2]);
    std::printf("mime_only / pipeline_mime:                           median %.3f [%.3f..%.3f]\n",
                r_mdec[0], r_mdec[1], r_mdec[2]);
    if (o.only.empty() && matches[6] != matches[7])
      std::printf("note: hs_block_mime found %zu matches, pipeline_mime %zu\n", matches[6], matches[7]);
    if (o.only.empty() && (matches[1] != matches[2] || matches[3] != matches[4])) {
      std::printf("MISMATCH: scan_pieces %zu vs pipeline_hs %zu; hs_lit %zu vs ac %zu\n", matches[1],
                  matches[2], matches[3], matches[4]);
      ++failures;
    }
    if (o.only.empty() && matches[0] != matches[1])
      std::printf("note: hs_block found %zu matches, streaming %zu (flat text joins streams with '\\n')\n",
                  matches[0], matches[1]);

    js << (li ? "," : "") << "\n    {\"name\": \"" << name << "\", \"terms\": " << terms.size()
       << ", \"literal_terms\": " << lits.size() << ", \"compile_ms\": {\"hyperscan_stream\": " << median(c_hs)
       << ", \"hyperscan_block\": " << block_ms << ", \"aho_corasick\": " << median(c_ac)
       << "}, \"memory_bytes\": {\"hyperscan\": " << fhs->memory_bytes() << ", \"aho_corasick\": "
       << fac->memory_bytes() << "},\n     \"seconds\": {";
    for (int m = 0; m < nmodes; ++m) {
      js << (m ? ", " : "") << "\"" << modes[m] << "\": [";
      for (int r = 0; r < o.rounds; ++r) js << (r ? ", " : "") << t[m][r];
      js << "]";
    }
    js << "},\n     \"matches\": {";
    for (int m = 0; m < nmodes; ++m) js << (m ? ", " : "") << "\"" << modes[m] << "\": " << matches[m];
    js << "},\n     \"ratios\": {\"block_over_pipeline\": [" << r_pipe[0] << ", " << r_pipe[1] << ", "
       << r_pipe[2] << "], \"block_over_scan_pieces\": [" << r_scan[0] << ", " << r_scan[1] << ", "
       << r_scan[2] << "], \"ac_over_hs_literal\": [" << r_ac[0] << ", " << r_ac[1] << ", " << r_ac[2]
       << "], \"decode_share\": [" << r_dec[0] << ", " << r_dec[1] << ", " << r_dec[2]
       << "], \"block_mime_over_pipeline_mime\": [" << r_mime[0] << ", " << r_mime[1] << ", " << r_mime[2]
       << "], \"mime_share\": [" << r_mdec[0] << ", " << r_mdec[1] << ", " << r_mdec[2] << "]}}";
  }
  js << "\n  ]\n}\n";
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << js.str();
  }
  return failures == 0 ? 0 : 1;
}
