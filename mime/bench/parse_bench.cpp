// Header index + part tree: inlet::mime vs GMime 3 vs memchr (the limit), over the same
// messages held in memory. Rounds alternate A B C A B C; each figure is reported as the
// median over rounds with min..max, and ratios are computed per round.
//
// usage: mime_parse_bench [--rounds N] [--json-out FILE] DIR_OR_FILE...
#include "corpus.hpp"

#include <inlet/mime/parser.hpp>

#include <gmime/gmime.h>

#include <cstring>
#include <string_view>

using namespace inlet::mime;
using namespace inlet::mime::bench;

namespace {

std::size_t run_memchr(const std::vector<std::string>& msgs) {
  std::size_t hits = 0;
  for (const auto& m : msgs) {
    const char* p = m.data();
    const char* e = p + m.size();
    while (p < e) {  // full pass: a byte that (almost) never occurs
      const void* h = std::memchr(p, '\0', static_cast<std::size_t>(e - p));
      if (!h) break;
      ++hits;
      p = static_cast<const char*>(h) + 1;
    }
  }
  return hits;
}

std::size_t run_inlet(parser& p, const std::vector<std::string>& msgs) {
  std::size_t parts = 0;
  for (const auto& m : msgs) parts += p.parse(std::string_view(m)).parts().size();
  return parts;
}

std::size_t count_gmime(GMimeObject* o) {
  std::size_t n = 1;
  if (GMIME_IS_MULTIPART(o)) {
    int c = g_mime_multipart_get_count(GMIME_MULTIPART(o));
    for (int i = 0; i < c; ++i) n += count_gmime(g_mime_multipart_get_part(GMIME_MULTIPART(o), i));
  } else if (GMIME_IS_MESSAGE_PART(o)) {
    GMimeMessage* inner = g_mime_message_part_get_message(GMIME_MESSAGE_PART(o));
    if (inner && g_mime_message_get_mime_part(inner)) n += count_gmime(g_mime_message_get_mime_part(inner));
  }
  return n;
}

std::size_t run_gmime(const std::vector<std::string>& msgs) {
  std::size_t parts = 0;
  for (const auto& m : msgs) {
    GMimeStream* s = g_mime_stream_mem_new_with_buffer(m.data(), m.size());
    GMimeParser* ps = g_mime_parser_new_with_stream(s);
    GMimeMessage* msg = g_mime_parser_construct_message(ps, nullptr);
    if (msg) {
      if (GMimeObject* root = g_mime_message_get_mime_part(msg)) parts += count_gmime(root);
      g_object_unref(msg);
    }
    g_object_unref(ps);
    g_object_unref(s);
  }
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 11;
  std::string json_out;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--json-out" && i + 1 < argc) json_out = argv[++i];
    else paths.push_back(a);
  }
  auto msgs = load_corpus(paths);
  std::size_t bytes = 0;
  for (auto& m : msgs) bytes += m.size();
  if (msgs.empty()) {
    std::fprintf(stderr, "no messages\n");
    return 1;
  }
  g_mime_init();
  parser p;
  std::vector<double> t_memchr, t_inlet, t_gmime, r_gmime, r_memchr;
  std::size_t sink = 0, inlet_parts = 0, gmime_parts = 0;
  run_inlet(p, msgs);  // warm-up: grows the parser's tables once
  for (int r = 0; r < rounds; ++r) {
    double a = seconds([&] { sink += run_memchr(msgs); });
    double b = seconds([&] { inlet_parts = run_inlet(p, msgs); });
    double c = seconds([&] { gmime_parts = run_gmime(msgs); });
    t_memchr.push_back(a);
    t_inlet.push_back(b);
    t_gmime.push_back(c);
    r_gmime.push_back(c / b);
    r_memchr.push_back(b / a);
  }
  auto gbps = [&](double t) { return static_cast<double>(bytes) / t / 1e9; };
  stats m = summarize_values(t_memchr), in = summarize_values(t_inlet), gm = summarize_values(t_gmime);
  stats rg = summarize_values(r_gmime), rm = summarize_values(r_memchr);
  std::printf("corpus: %zu messages, %zu bytes, %d rounds (A=memchr B=inlet C=gmime alternating)\n",
              msgs.size(), bytes, rounds);
  std::printf("parts found: inlet %zu, gmime %zu\n", inlet_parts, gmime_parts);
  std::printf("%-10s %12s %12s %12s %14s\n", "engine", "GB/s med", "GB/s worst", "GB/s best", "msgs/s med");
  auto row = [&](const char* n, stats s) {
    std::printf("%-10s %12.3f %12.3f %12.3f %14.0f\n", n, gbps(s.median), gbps(s.max), gbps(s.min),
                static_cast<double>(msgs.size()) / s.median);
  };
  row("memchr", m);
  row("inlet", in);
  row("gmime", gm);
  std::printf("ratio gmime_time/inlet_time: median %.2f (min %.2f, max %.2f)\n", rg.median, rg.min, rg.max);
  std::printf("ratio inlet_time/memchr_time: median %.2f (min %.2f, max %.2f)\n", rm.median, rm.min, rm.max);
  if (!json_out.empty()) {
    FILE* f = std::fopen(json_out.c_str(), "w");
    if (f) {
      std::fprintf(f,
                   "{\"messages\":%zu,\"bytes\":%zu,\"rounds\":%d,\"inlet_parts\":%zu,\"gmime_parts\":%zu,"
                   "\"seconds\":{\"memchr\":[",
                   msgs.size(), bytes, rounds, inlet_parts, gmime_parts);
      auto arr = [&](const std::vector<double>& v) {
        for (std::size_t i = 0; i < v.size(); ++i) std::fprintf(f, "%s%.6f", i ? "," : "", v[i]);
      };
      arr(t_memchr);
      std::fprintf(f, "],\"inlet\":[");
      arr(t_inlet);
      std::fprintf(f, "],\"gmime\":[");
      arr(t_gmime);
      std::fprintf(f, "]},\"gmime_over_inlet_median\":%.4f,\"inlet_over_memchr_median\":%.4f}\n", rg.median, rm.median);
      std::fclose(f);
    }
  }
  return sink == 12345678 ? 1 : 0;
}
