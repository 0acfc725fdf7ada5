#include "inlet/mime/text.hpp"

#include <algorithm>
#include <cstdlib>
#include <inlet/mime/decode.hpp>
#include <optional>

#include "ascii.hpp"

namespace inlet::mime {

namespace {

bool starts_tag(std::string_view h, std::size_t k, std::string_view name) {
  return h.size() - k >= name.size() && detail::iequals(h.substr(k, name.size()), name);
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | cp >> 6));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | cp >> 12));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | cp >> 18));
    out.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes the entity at h[i] ('&') into out; returns the bytes it took, 0 when it is
// not one (the '&' is then text).
std::size_t entity(std::string_view h, std::size_t i, std::string& out) {
  const auto semi = h.find(';', i);
  if (semi == std::string_view::npos || semi - i > 10) return 0;
  const std::string_view ent = h.substr(i + 1, semi - i - 1);
  static constexpr std::pair<std::string_view, std::string_view> named[] = {
      {"amp", "&"},  {"lt", "<"},   {"gt", ">"},          {"quot", "\""},
      {"apos", "'"}, {"nbsp", " "}, {"copy", "\xC2\xA9"}, {"reg", "\xC2\xAE"}};
  for (auto [n, v] : named)
    if (ent == n) {
      out.append(v);
      return semi - i + 1;
    }
  if (ent.size() < 2 || ent[0] != '#') return 0;
  const bool hex = ent[1] == 'x' || ent[1] == 'X';
  const std::string digits(ent.substr(hex ? 2 : 1));
  if (digits.empty() || digits[0] == '-' || digits[0] == '+' || digits[0] == ' ') return 0;
  char* end = nullptr;
  const unsigned long cp = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
  if (!end || *end != '\0') return 0;
  append_utf8(out, cp);
  return semi - i + 1;
}

void bound_utf8(std::string& s, std::size_t n) {
  if (s.size() <= n) return;
  std::size_t k = n;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  s.resize(k);
}

// Decodes a text part to UTF-8 into out, stopping once `limit` bytes are there (reads
// ~256 raw bytes past that at most).
void decode_bounded(const parsed_message& m, std::uint32_t p, std::size_t limit, std::string& out) {
  constexpr std::size_t slice = 256;
  const part& pt = m.parts()[p];
  auto cs = charset(m, p);
  // UTF-8 and ASCII need no conversion: the text is matched, not shown, so an invalid
  // byte in it does no harm (and validating costs ~1 instruction a byte).
  const bool as_is = !cs || canonical_charset(*cs).empty();
  charset_converter cv(as_is ? std::string_view{} : std::string_view(*cs));
  body_decoder d(pt.encoding);
  auto sink = [&](std::string_view utf8) { out.append(utf8); };
  auto to_cv = [&](std::string_view bytes) {
    if (as_is)
      out.append(bytes);
    else
      cv.feed(bytes, sink);
  };
  for (std::size_t at = pt.body.begin; at < pt.body.end; at += slice) {
    const span s{at, std::min(at + slice, pt.body.end)};
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

// The first `limit` bytes of a part whose bytes are its UTF-8 text already (no transfer
// encoding, an ASCII or UTF-8 charset), cut at a character boundary; nullopt when the
// part needs decoding.
std::optional<std::string_view> identity_text(const parsed_message& m, std::uint32_t p,
                                              std::size_t limit, std::string& scratch) {
  const part& pt = m.parts()[p];
  using te = transfer_encoding;
  if (pt.encoding != te::seven_bit && pt.encoding != te::eight_bit && pt.encoding != te::binary)
    return std::nullopt;
  if (auto cs = charset(m, p); cs && !canonical_charset(*cs).empty()) return std::nullopt;
  // One byte past the limit, to see whether the cut falls inside a character.
  const span s{pt.body.begin, std::min(pt.body.end, pt.body.begin + limit + 1)};
  std::string_view v = m.view(s, scratch);
  if (v.size() > limit) {
    std::size_t k = limit;
    while (k > 0 && (static_cast<unsigned char>(v[k]) & 0xC0) == 0x80) --k;
    v = v.substr(0, k);
  }
  return v;
}

}  // namespace

std::string html_to_text(std::string_view h) {
  std::string out;
  out.reserve(h.size() / 2);
  std::size_t i = 0;
  while (i < h.size()) {
    const char c = h[i];
    if (c == '<') {
      if (h.compare(i, 4, "<!--") == 0) {
        auto e = h.find("-->", i + 4);
        i = e == std::string_view::npos ? h.size() : e + 3;
        continue;
      }
      const bool script = starts_tag(h, i + 1, "script"), style = starts_tag(h, i + 1, "style");
      const bool block = starts_tag(h, i + 1, "br") || starts_tag(h, i + 1, "/p") ||
                         starts_tag(h, i + 1, "/div") || starts_tag(h, i + 1, "/tr") ||
                         starts_tag(h, i + 1, "/h") || starts_tag(h, i + 1, "/li");
      auto e = h.find('>', i);
      i = e == std::string_view::npos ? h.size() : e + 1;
      if (script || style) {
        std::string_view close = script ? "</script" : "</style";
        while (i < h.size() && !(h[i] == '<' && starts_tag(h, i, close))) ++i;
      }
      out.push_back(block ? '\n' : ' ');
      continue;
    }
    if (c == '&') {
      if (std::size_t n = entity(h, i, out)) {
        i += n;
        continue;
      }
    }
    out.push_back(c);
    ++i;
  }
  // Collapse the spaces tags left; keep line breaks.
  std::string tidy;
  tidy.reserve(out.size());
  for (char ch : out) {
    if (ch == '\t' || ch == '\f') ch = ' ';  // HTML's white space, collapsed as spaces are
    if (ch == ' ' && (tidy.empty() || tidy.back() == ' ' || tidy.back() == '\n'))
      continue;
    if ((ch == '\n' || ch == '\r') && !tidy.empty() && tidy.back() == ' ') tidy.pop_back();
    if (ch == '\r') continue;
    if (ch == '\n' && tidy.size() >= 2 && tidy.back() == '\n' && tidy[tidy.size() - 2] == '\n')
      continue;
    tidy.push_back(ch);
  }
  while (!tidy.empty() && (tidy.back() == ' ' || tidy.back() == '\n')) tidy.pop_back();
  std::size_t lead = 0;
  while (lead < tidy.size() && (tidy[lead] == ' ' || tidy[lead] == '\n')) ++lead;
  return tidy.substr(lead);
}

std::string_view body_text(const parsed_message& m, std::size_t limit, std::string& scratch) {
  std::uint32_t plain = no_index, html = no_index;
  for_each_text_part(m, [&](std::uint32_t i) {
    if (plain == no_index && m.parts()[i].sub_type() == "plain") plain = i;
    if (html == no_index && m.parts()[i].sub_type() == "html") html = i;
  });
  scratch.clear();
  if (plain != no_index) {
    if (auto v = identity_text(m, plain, limit, scratch)) return *v;
    decode_bounded(m, plain, limit, scratch);
    return scratch;
  }
  if (html != no_index) {
    std::string h;
    decode_bounded(m, html, 2 * limit, h);
    scratch = html_to_text(h);
    bound_utf8(scratch, limit);
    return scratch;
  }
  return {};
}

}  // namespace inlet::mime
