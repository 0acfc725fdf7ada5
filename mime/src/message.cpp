#include <algorithm>
#include <inlet/mime/message.hpp>
#include <inlet/mime/text.hpp>
#include <memory>

#include "ascii.hpp"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

std::optional<std::string> header_text(const parsed_message& m, std::uint32_t p,
                                       std::string_view name) {
  const header_field* h = m.find(p, name);
  if (!h) return std::nullopt;
  return header_value(m, *h);
}

namespace {
std::optional<mime_field> field(const parsed_message& m, std::uint32_t p, std::string_view name,
                                bool type) {
  const header_field* h = m.find(p, name);
  if (!h) return std::nullopt;
  std::string scratch;
  std::string_view raw = m.view(h->value, scratch);
  return type ? parse_content_type(raw) : parse_content_disposition(raw);
}
}  // namespace

std::optional<std::string> charset(const parsed_message& m, std::uint32_t p) {
  if (const header_field* h = m.find(p, "content-type")) {
    std::string scratch;
    std::optional<std::string> simple;
    if (detail::simple_charset_param(m.view(h->value, scratch), simple)) return simple;
  }
  auto f = field(m, p, "content-type", true);
  if (!f) return std::nullopt;
  const mime_parameter* cs = f->find("charset");
  if (!cs) return std::nullopt;
  std::string v;
  for (char c : detail::trim(cs->value)) v.push_back(detail::ascii_lower(c));
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
  // disposition() and filename() in one pass over the part's header fields.
  const header_field* cd = nullptr;
  const header_field* ct = nullptr;
  std::string scratch;
  for (std::uint32_t i = pt.first_header; i < pt.first_header + pt.header_count; ++i) {
    const header_field& h = m.headers()[i];
    if (h.name.size() == 19 && !cd && iequals(m.view(h.name, scratch), "content-disposition"))
      cd = &h;
    else if (h.name.size() == 12 && !ct && iequals(m.view(h.name, scratch), "content-type"))
      ct = &h;
  }
  if (cd) {
    const mime_field d = parse_content_disposition(m.view(cd->value, scratch));
    if (d.value == "attachment") return true;
    if (may_name(m, cd) && d.find("filename")) return true;
  }
  return ct && may_name(m, ct) && parse_content_type(m.view(ct->value, scratch)).find("name");
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

// Appends text with whitespace collapsed; stops at `limit` code points. Bytes go to a
// buffer sized for the worst case (4 bytes a code point), on the stack for the usual
// limits, and the snippet is one exact-size string at the end: no growth, no per-word
// append calls.
struct snippet_builder {
  explicit snippet_builder(std::size_t limit) : limit(limit) {
    const std::size_t cap = 4 * limit + 4;  // every code point 4 bytes, and a space
    if (cap > sizeof local) {
      heap.reset(new char[cap]);
      begin = heap.get();
    }
    p = begin;
    end = begin + cap;
  }
  char local[1024];
  std::unique_ptr<char[]> heap;
  char* begin = local;
  char* p;
  char* end;
  std::size_t chars = 0, limit;
  bool space = false;
  bool full() const { return chars >= limit; }
  static bool printable(char c) { return c > ' ' && c < 0x7F; }
  void add(std::string_view s) {
    // Locals: stores through char pointers could alias the members.
    const char* i = s.data();
    const char* const e = i + s.size();
    char* o = p;
    std::size_t n = chars;
    bool sp = space;
    while (i < e) {
      if (printable(*i)) {  // a run of printable ASCII goes in whole
        if (n >= limit) break;
        if (sp) {
          *o++ = ' ';
          sp = false;
          if (++n >= limit) break;
        }
#ifdef __SSE2__
        // 16 bytes at a time while the run, the limit and the buffer allow. A block of
        // words with single spaces between them, starting and ending on a word, is
        // already collapsed: it goes in whole too.
        while (e - i >= 16 && limit - n >= 16 && end - o >= 16) {
          const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(i));
          const __m128i ok = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(' ')),
                                           _mm_cmplt_epi8(v, _mm_set1_epi8(0x7F)));
          const unsigned pm = static_cast<unsigned>(_mm_movemask_epi8(ok));
          const unsigned sm =
              static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' '))));
          if ((pm | sm) == 0xFFFF && (sm & (sm >> 1)) == 0 && (sm & 0x8001) == 0) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o), v);
            o += 16;
            i += 16;
            n += 16;
            continue;
          }
          const unsigned run = static_cast<unsigned>(__builtin_ctz(~pm | 0x10000));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(o), v);
          o += run;
          i += run;
          n += run;
          if (run < 16) break;
        }
#endif
        const char* const stop =
            i + std::min<std::size_t>(static_cast<std::size_t>(e - i), limit - n);
        const char* const from = i;
        while (i < stop && printable(*i)) *o++ = *i++;
        n += static_cast<std::size_t>(i - from);
        continue;
      }
      // One byte of anything else.
      const char c = *i;
      const bool cont = (static_cast<unsigned char>(c) & 0xC0) == 0x80;
      if (!cont && n >= limit) break;
      if (detail::is_ws(c) || c == '\f' || c == '\v') {
        sp = o != begin;
        ++i;
        continue;
      }
      if (end - o < 2) break;  // only a stream of stray continuation bytes gets here
      if (sp) {
        *o++ = ' ';
        sp = false;
        if (++n >= limit) break;
      }
      *o++ = c;
      if (!cont) ++n;
      ++i;
    }
    p = o;
    chars = n;
    space = sp;
  }
  std::string finish() {  // drops a cut UTF-8 sequence
    std::size_t n = static_cast<std::size_t>(p - begin);
    std::size_t k = n;
    while (k > 0 && (static_cast<unsigned char>(begin[k - 1]) & 0xC0) == 0x80) --k;
    if (k > 0 && static_cast<unsigned char>(begin[k - 1]) >= 0xC0) {
      unsigned char lead = static_cast<unsigned char>(begin[k - 1]);
      std::size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (n - (k - 1) < need) n = k - 1;
    }
    return std::string(begin, n);
  }
};
}  // namespace

summary summarize(const parsed_message& m, std::size_t snippet_chars, std::size_t max_addresses) {
  summary s;
  summarize(m, s, snippet_chars, max_addresses);
  return s;
}

void summarize(const parsed_message& m, summary& s, std::size_t snippet_chars,
               std::size_t max_addresses) {
  for (auto* v : {&s.from, &s.to, &s.cc, &s.bcc, &s.reply_to}) v->clear();
  s.address_counts = {};
  s.subject.reset();
  s.date.reset();
  s.message_id.reset();
  s.snippet.clear();
  s.attachments.clear();
  std::string scratch;
  // The fields the summary reads, found in one pass over the root's header (the first
  // of each name counts, as with find()).
  enum slot : unsigned { from, to, cc, bcc, reply_to, subject, date, message_id, slots };
  static constexpr std::string_view names[slots] = {"from",     "to",      "cc",   "bcc",
                                                    "reply-to", "subject", "date", "message-id"};
  const header_field* found[slots] = {};
  if (!m.parts().empty()) {
    const part& root = m.parts().front();
    for (std::uint32_t i = root.first_header; i < root.first_header + root.header_count; ++i) {
      const header_field& h = m.headers()[i];
      const std::size_t n = h.name.size();
      if (n < 2 || n > 10) continue;
      std::string_view name = m.view(h.name, scratch);
      for (unsigned k = 0; k < slots; ++k)
        if (!found[k] && names[k].size() == n && detail::iequals(name, names[k])) {
          found[k] = &h;
          break;
        }
    }
  }
  auto addrs = [&](slot k, std::vector<mailbox>& out, std::size_t& count) {
    if (found[k])
      parse_address_list(m.view(found[k]->value, scratch), max_addresses, &count, nullptr, out);
  };
  summary::counts& c = s.address_counts;
  addrs(from, s.from, c.from);
  addrs(to, s.to, c.to);
  addrs(cc, s.cc, c.cc);
  addrs(bcc, s.bcc, c.bcc);
  addrs(reply_to, s.reply_to, c.reply_to);
  if (found[subject]) s.subject = header_value(m, *found[subject]);
  if (found[date]) s.date = parse_date(m.view(found[date]->value, scratch));
  if (found[message_id]) s.message_id = parse_message_id(m.view(found[message_id]->value, scratch));

  std::uint32_t plain = no_index, html = no_index;
  for_each_text_part(m, [&](std::uint32_t i) {
    if (plain == no_index && m.parts()[i].sub_type() == "plain") plain = i;
    if (html == no_index && m.parts()[i].sub_type() == "html") html = i;
  });
  snippet_builder sb(snippet_chars);
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
  s.snippet = sb.finish();

  for (std::uint32_t i = 0; i < m.parts().size(); ++i) {
    if (!is_attachment(m, i)) continue;
    attachment a;
    a.filename = filename(m, i).value_or("");
    a.content_type = std::string(m.parts()[i].content_type());
    a.size = decoded_size(m, i);
    a.part = i;
    s.attachments.push_back(std::move(a));
  }
}

}  // namespace inlet::mime
