#include "inlet/mail/search_text.hpp"

#include <algorithm>
#include <inlet/mime/message.hpp>
#include <inlet/store/search.hpp>
#include <optional>

#include "inlet/mail/read_view.hpp"
#include "inlet/mail/summary.hpp"

namespace inlet::mail {

namespace mm = inlet::mime;
namespace st = inlet::store;

namespace {

constexpr std::size_t search_body_bytes = 16384;  // decoded HTML read for it (HTML shrinks)

// Decodes a text part to UTF-8, stopping once `limit` bytes are out (reads ~256 raw
// bytes past that at most): the search text needs the start of a body, not all of it.
void decode_text_bounded(const mm::parsed_message& m, std::uint32_t p, std::size_t limit,
                         std::string& out) {
  constexpr std::size_t slice = 256;
  const mm::part& pt = m.parts()[p];
  auto cs = mm::charset(m, p);
  // UTF-8 and ASCII need no conversion: the search text is only matched, never shown,
  // so an invalid byte in it does no harm (and validating costs ~1 instruction a byte).
  const bool as_is = !cs || mm::canonical_charset(*cs).empty();
  mm::charset_converter cv(as_is ? std::string_view{} : std::string_view(*cs));
  mm::body_decoder d(pt.encoding);
  auto sink = [&](std::string_view utf8) { out.append(utf8); };
  auto to_cv = [&](std::string_view bytes) {
    if (as_is)
      out.append(bytes);
    else
      cv.feed(bytes, sink);
  };
  for (std::size_t at = pt.body.begin; at < pt.body.end; at += slice) {
    const mm::span s{at, std::min(at + slice, pt.body.end)};
    m.input().for_each(s, [&](std::string_view piece) { d.feed(piece, to_cv); });
    if (out.size() >= limit) {
      bound_utf8(out, limit);
      return;
    }
  }
  d.finish(to_cv);
  if (!as_is) cv.finish(sink);
  bound_utf8(out, limit);
}

// The first `limit` bytes of a text part whose bytes are its UTF-8 text already (no
// transfer encoding, an ASCII or UTF-8 charset), cut at a character boundary, as a view
// into the input; nullopt when the part needs decoding.
std::optional<std::string_view> identity_text(const mm::parsed_message& m, std::uint32_t p,
                                              std::size_t limit, std::string& scratch) {
  const mm::part& pt = m.parts()[p];
  using te = mm::transfer_encoding;
  if (pt.encoding != te::seven_bit && pt.encoding != te::eight_bit && pt.encoding != te::binary)
    return std::nullopt;
  if (auto cs = mm::charset(m, p); cs && !mm::canonical_charset(*cs).empty()) return std::nullopt;
  // One byte past the limit, to see whether the cut falls inside a character.
  const mm::span s{pt.body.begin, std::min(pt.body.end, pt.body.begin + limit + 1)};
  std::string_view v = m.view(s, scratch);
  if (v.size() > limit) {
    std::size_t k = limit;
    while (k > 0 && (static_cast<unsigned char>(v[k]) & 0xC0) == 0x80) --k;
    v = v.substr(0, k);
  }
  return v;
}

}  // namespace

std::string search_text_of(const st::summary& s, std::string_view raw) {
  // Its own parser: a store may call this on a thread whose thread_parser() result is
  // still in use.
  thread_local mm::parser parser;
  const mm::parsed_message& m = parser.parse(raw);
  // The first text/plain part, else the first text/html part as words.
  std::uint32_t plain = mm::no_index, html = mm::no_index;
  mm::for_each_text_part(m, [&](std::uint32_t i) {
    if (plain == mm::no_index && m.parts()[i].sub_type() == "plain") plain = i;
    if (html == mm::no_index && m.parts()[i].sub_type() == "html") html = i;
  });
  std::string body, scratch;
  std::string_view text;
  if (plain != mm::no_index) {
    if (auto v = identity_text(m, plain, search_text_bytes, scratch)) {
      text = *v;
    } else {
      decode_text_bounded(m, plain, search_text_bytes, body);
      text = body;
    }
  } else if (html != mm::no_index) {
    decode_text_bounded(m, html, search_body_bytes, body);
    body = html_to_text(body);
    text = body;
  }
  std::string out = st::search::build_search_text(s, text, search_text_bytes);
  parser.reset();  // no views into `raw` left behind
  return out;
}

}  // namespace inlet::mail
