// Fuzzes the term-list parser, then compiles what parsed with both engines and
// scans the input itself through a two-piece split: nothing may crash or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inlet/filter/filter.hpp"
#include "inlet/filter/terms.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace f = inlet::filter;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  f::parse_limits lim;
  lim.max_terms = 64;
  lim.max_term_bytes = 256;
  auto terms = f::parse_terms(text, lim);
  if (!terms) {
    (void)terms.error().to_string();
    return 0;
  }
  for (auto kind : {f::engine_kind::aho_corasick, f::engine_kind::hyperscan}) {
    auto fl = f::filter::compile(*terms, {kind});
    if (!fl) {
      (void)fl.error().to_string();
      continue;
    }
    f::scan s(*fl);
    s.begin_stream(f::stream_kind::text_plain);
    s.feed(text.substr(0, size / 2));
    s.feed(text.substr(size / 2));
    auto v = s.finish();
    if (v.matched() && v.terms.size() != v.term_ids.size()) __builtin_trap();
  }
  return 0;
}
