// Part-tree walk: parses the input flat and in three fragments (cut points derived from
// the input), checks that both parses agree, then walks every part (fields, decoders,
// charset conversion, summary) the way store and http do.
#include <inlet/mime/message.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace m = inlet::mime;

static bool same(const m::parsed_message& a, const m::parsed_message& b) {
  if (a.parts().size() != b.parts().size() || a.headers().size() != b.headers().size() ||
      a.defects().size() != b.defects().size())
    return false;
  for (std::size_t i = 0; i < a.parts().size(); ++i) {
    const m::part &x = a.parts()[i], &y = b.parts()[i];
    if (x.header != y.header || x.body != y.body || x.preamble != y.preamble || x.epilogue != y.epilogue ||
        x.parent != y.parent || x.content_type() != y.content_type() || x.kind != y.kind)
      return false;
  }
  for (std::size_t i = 0; i < a.headers().size(); ++i)
    if (a.headers()[i].name != b.headers()[i].name || a.headers()[i].value != b.headers()[i].value) return false;
  for (std::size_t i = 0; i < a.defects().size(); ++i)
    if (a.defects()[i].code != b.defects()[i].code || a.defects()[i].offset != b.defects()[i].offset) return false;
  return true;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  m::options opt;
  opt.max_parts = 500;
  opt.max_depth = 20;
  m::parsed_message flat = m::parse(in, opt);
  std::size_t h = 0;
  for (std::size_t i = 0; i < size && i < 64; ++i) h = h * 31 + data[i];
  std::size_t c1 = size ? h % (size + 1) : 0, c2 = size ? (h / 7) % (size + 1) : 0;
  if (c1 > c2) std::swap(c1, c2);
  std::string_view pieces[] = {in.substr(0, c1), in.substr(c1, c2 - c1), in.substr(c2)};
  m::parsed_message split = m::parse(std::span<const std::string_view>(pieces), opt);
  if (!same(flat, split)) std::abort();
  m::summary s = m::summarize(flat);
  (void)s;
  for (std::uint32_t i = 0; i < flat.parts().size(); ++i) {
    std::size_t n = 0;
    m::decode_text(flat, i, [&](std::string_view t) { n += t.size(); });
    (void)m::filename(flat, i);
  }
  return 0;
}
