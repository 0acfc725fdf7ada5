#include <inlet/mime/message.hpp>

#include "ascii.hpp"

#include <algorithm>

namespace inlet::mime {

using detail::iequals;

parsed_message parse(std::string_view flat, const options& opt) {
  parser p(opt);
  p.parse(flat);
  return p.release();
}

parsed_message parse(const chunked_view& pieces, const options& opt) {
  parser p(opt);
  p.parse(pieces);
  return p.release();
}

parsed_message parse(std::span<const std::string_view> pieces, const options& opt) {
  parser p(opt);
  for (auto s : pieces) p.feed(s);
  p.finish();
  return p.release();
}

std::string header_value(const parsed_message& m, const header_field& h) {
  std::string scratch;
  return decode_unstructured(m.view(h.value, scratch));
}

std::optional<std::string> header_text(const parsed_message& m, std::uint32_t p, std::string_view name) {
  const header_field* h = m.find(p, name);
  if (!h) return std::nullopt;
  return header_value(m, *h);
}

namespace {
std::optional<mime_field> field(const parsed_message& m, std::uint32_t p, std::string_view name, bool type) {
  const header_field* h = m.find(p, name);
  if (!h) return std::nullopt;
  std::string scratch;
  std::string_view raw = m.view(h->value, scratch);
  return type ? parse_content_type(raw) : parse_content_disposition(raw);
}
}  // namespace

std::optional<std::string> charset(const parsed_message& m, std::uint32_t p) {
  auto f = field(m, p, "content-type", true);
  if (!f) return std::nullopt;
  const mime_parameter* cs = f->find("charset");
  if (!cs) return std::nullopt;
  std::string v;
  for (char c : detail::trim(cs->value)) v.push_back(detail::to_lower(c));
  return v;
}

std::optional<std::string> disposition(const parsed_message& m, std::uint32_t p) {
  auto f = field(m, p, "content-disposition", false);
  if (!f || f->value.empty()) return std::nullopt;
  return f->value;
}

namespace {
// Whether the raw field value could carry a parameter called `name` or
// `filename` (plain, RFC 2231 `name*`, `name*0*`): every such spelling contains
// "name", and folding or comments cannot split a token. When it does not, the
// field's parameters need not be parsed at all; most text parts have none.
bool may_name(const parsed_message& m, const header_field* h) {
  std::string scratch;
  std::string_view v = m.view(h->value, scratch);
  for (std::size_t i = 0; i + 4 <= v.size(); ++i)
    if ((v[i] | 0x20) == 'n' && iequals(v.substr(i, 4), "name")) return true;
  return false;
}
}  // namespace

std::optional<std::string> filename(const parsed_message& m, std::uint32_t p) {
  if (const header_field* h = m.find(p, "content-disposition"); h && may_name(m, h))
    if (auto d = field(m, p, "content-disposition", false))
      if (const mime_parameter* fn = d->find("filename")) return fn->value;
  if (const header_field* h = m.find(p, "content-type"); h && may_name(m, h))
    if (auto t = field(m, p, "content-type", true))
      if (const mime_parameter* n = t->find("name")) return n->value;
  return std::nullopt;
}

bool is_attachment(const parsed_message& m, std::uint32_t p) {
  const part& pt = m.parts()[p];
  if (pt.kind != part_kind::leaf) return false;
  if (pt.main_type() != "text") return true;
  if (auto d = disposition(m, p); d && *d == "attachment") return true;
  return filename(m, p).has_value();
}

errc decode_body(const parsed_message& m, std::uint32_t p, text_sink sink) {
  const part& pt = m.parts()[p];
  body_decoder d(pt.kind == part_kind::leaf ? pt.encoding : transfer_encoding::binary);
  m.input().for_each(pt.body, [&](std::string_view piece) { d.feed(piece, sink); });
  d.finish(sink);
  return d.defect();
}

errc decode_text(const parsed_message& m, std::uint32_t p, text_sink sink) {
  auto cs = charset(m, p);
  charset_converter cv(cs ? *cs : std::string_view{});
  auto to_cv = [&](std::string_view bytes) { cv.feed(bytes, sink); };
  errc e = decode_body(m, p, to_cv);
  cv.finish(sink);
  if (e == errc::ok && !cv.known()) e = errc::unknown_charset;
  return e;
}

namespace {
// decode_text that stops between slices of the raw body once `enough()` holds. The
// transfer decoder and the charset converter are streaming and never take back what they
// emitted, so the output is a prefix of decode_text's (all of it when enough() never holds);
// what is cut is only the tail, and the cut never reaches into bytes already passed on.
template <class Enough>
void decode_text_until(const parsed_message& m, std::uint32_t p, text_sink sink, Enough enough) {
  constexpr std::size_t slice = 256;  // raw bytes decoded between two checks
  const part& pt = m.parts()[p];
  auto cs = charset(m, p);
  charset_converter cv(cs ? *cs : std::string_view{});
  body_decoder d(pt.kind == part_kind::leaf ? pt.encoding : transfer_encoding::binary);
  auto to_cv = [&](std::string_view bytes) { cv.feed(bytes, sink); };
  for (std::size_t at = pt.body.begin; at < pt.body.end; at += slice) {
    const span s{at, std::min(at + slice, pt.body.end)};
    m.input().for_each(s, [&](std::string_view piece) { d.feed(piece, to_cv); });
    if (enough()) return;
  }
  d.finish(to_cv);
  cv.finish(sink);
}
}  // namespace

std::size_t decoded_size(const parsed_message& m, std::uint32_t p) {
  const part& pt = m.parts()[p];
  if (pt.kind != part_kind::leaf) return pt.body.size();
  std::size_t n = 0;
  decode_body(m, p, [&](std::string_view s) { n += s.size(); });
  return n;
}

namespace {

// Appends text with whitespace collapsed; stops at `limit` code points.
struct snippet_builder {
  std::string out;
  std::size_t chars = 0, limit;
  bool space = false;
  bool full() const { return chars >= limit; }
  void add(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c > ' ' && c < 0x7F) {  // a run of printable ASCII goes in whole
        if (full()) return;
        if (space) {
          out.push_back(' ');
          ++chars;
          space = false;
          if (full()) return;
        }
        std::size_t j = i + 1;
        const std::size_t room = limit - chars;
        while (j < s.size() && j - i < room && s[j] > ' ' && s[j] < 0x7F) ++j;
        out.append(s.data() + i, j - i);
        chars += j - i;
        i = j;
        continue;
      }
      if (!add_one(c)) return;
      ++i;
    }
  }
  // One byte of anything else; false once the snippet is full.
  bool add_one(char c) {
    const bool cont = (static_cast<unsigned char>(c) & 0xC0) == 0x80;
    if (!cont && full()) return false;
    if (detail::is_ws(c) || c == '\f' || c == '\v') {
      space = !out.empty();
      return true;
    }
    if (space) {
      out.push_back(' ');
      ++chars;
      space = false;
      if (full()) return false;
    }
    out.push_back(c);
    if (!cont) ++chars;
    return true;
  }
  void finish() {  // drop a cut UTF-8 sequence
    std::size_t k = out.size();
    while (k > 0 && (static_cast<unsigned char>(out[k - 1]) & 0xC0) == 0x80) --k;
    if (k > 0 && static_cast<unsigned char>(out[k - 1]) >= 0xC0) {
      unsigned char lead = static_cast<unsigned char>(out[k - 1]);
      std::size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (out.size() - (k - 1) < need) out.resize(k - 1);
    }
  }
};

void append_utf8(std::string& out, unsigned long cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) out.push_back(static_cast<char>(cp));
  else if (cp < 0x800) {
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

// Text of an HTML document: tags, comments, script and style removed, entities decoded.
std::string html_to_text(std::string_view h) {
  std::string out;
  std::size_t i = 0;
  auto starts_tag = [&](std::size_t k, std::string_view name) {
    return h.size() - k > name.size() && iequals(h.substr(k, name.size()), name);
  };
  while (i < h.size()) {
    char c = h[i];
    if (c == '<') {
      if (h.compare(i, 4, "<!--") == 0) {
        auto e = h.find("-->", i + 4);
        i = e == std::string_view::npos ? h.size() : e + 3;
        continue;
      }
      bool script = starts_tag(i + 1, "script"), style = starts_tag(i + 1, "style");
      auto e = h.find('>', i);
      i = e == std::string_view::npos ? h.size() : e + 1;
      if (script || style) {
        std::string_view close = script ? "</script" : "</style";
        std::size_t k = i;
        while (k < h.size() && !(h[k] == '<' && starts_tag(k, close))) ++k;
        i = k;
      }
      out.push_back(' ');
      continue;
    }
    if (c == '&') {
      auto semi = h.find(';', i);
      if (semi != std::string_view::npos && semi - i <= 10) {
        std::string_view ent = h.substr(i + 1, semi - i - 1);
        static constexpr std::pair<std::string_view, std::string_view> named[] = {
            {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"},
            {"nbsp", " "}, {"copy", "\xC2\xA9"}, {"reg", "\xC2\xAE"}};
        bool done = false;
        for (auto [n, v] : named)
          if (ent == n) {
            out.append(v);
            done = true;
          }
        if (!done && ent.size() > 1 && ent[0] == '#') {
          bool hex = ent[1] == 'x' || ent[1] == 'X';
          std::string digits(ent.substr(hex ? 2 : 1));
          char* end = nullptr;
          unsigned long cp = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
          if (!digits.empty() && end && *end == '\0') {
            append_utf8(out, cp);
            done = true;
          }
        }
        if (done) {
          i = semi + 1;
          continue;
        }
      }
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

}  // namespace

summary summarize(const parsed_message& m, std::size_t snippet_chars) {
  summary s;
  std::string scratch;
  auto addrs = [&](std::string_view name, std::vector<mailbox>& out) {
    if (const header_field* h = m.find(name)) out = parse_address_list(m.view(h->value, scratch));
  };
  addrs("from", s.from);
  addrs("to", s.to);
  addrs("cc", s.cc);
  addrs("bcc", s.bcc);
  addrs("reply-to", s.reply_to);
  s.subject = header_text(m, 0, "subject");
  if (const header_field* h = m.find("date")) s.date = parse_date(m.view(h->value, scratch));
  if (const header_field* h = m.find("message-id")) s.message_id = parse_message_id(m.view(h->value, scratch));

  std::uint32_t plain = no_index, html = no_index;
  for_each_text_part(m, [&](std::uint32_t i) {
    if (plain == no_index && m.parts()[i].sub_type() == "plain") plain = i;
    if (html == no_index && m.parts()[i].sub_type() == "html") html = i;
  });
  snippet_builder sb{{}, 0, snippet_chars};
  // One allocation for an ASCII snippet, not one per doubling.
  if (plain != no_index || html != no_index) sb.out.reserve(snippet_chars);
  if (plain != no_index) {
    // Only as much of the part as the snippet needs (a 9 KB body: ~1 KB decoded, not 9).
    decode_text_until(m, plain, [&](std::string_view t) { sb.add(t); }, [&] { return sb.full(); });
  } else if (html != no_index) {
    std::string h;
    decode_text(m, html, [&](std::string_view t) {
      if (h.size() < 256 * 1024) h.append(t);
    });
    sb.add(html_to_text(h));
  }
  sb.finish();
  s.snippet = std::move(sb.out);

  for (std::uint32_t i = 0; i < m.parts().size(); ++i) {
    if (!is_attachment(m, i)) continue;
    attachment a;
    a.filename = filename(m, i).value_or("");
    a.content_type = std::string(m.parts()[i].content_type());
    a.size = decoded_size(m, i);
    a.part = i;
    s.attachments.push_back(std::move(a));
  }
  return s;
}

}  // namespace inlet::mime
