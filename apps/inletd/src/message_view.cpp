#include "message_view.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <inlet/filter/mime_scan.hpp>
#include <inlet/mime/message.hpp>
#include <inlet/store/search.hpp>

#include "filter_stage.hpp"
#include "pipeline.hpp"

namespace inletd {

namespace mm = inlet::mime;
namespace st = inlet::store;

namespace {

// Bounds of what a summary keeps of hostile input (types.hpp: the filler bounds it).
constexpr std::size_t max_addresses = 100;     // entries per address list
constexpr std::size_t max_field_bytes = 2048;  // a name, an address
constexpr std::size_t max_subject_bytes = 4096;
constexpr std::size_t search_text_bytes = 8192;   // summary.search_text
constexpr std::size_t search_body_bytes = 16384;  // decoded text read for it (HTML shrinks)

// Cuts at `n` bytes, never inside a UTF-8 character.
void bound(std::string& s, std::size_t n) {
  if (s.size() <= n) return;
  std::size_t k = n;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  s.resize(k);
}

std::vector<st::address> to_addresses(std::vector<mm::mailbox>&& in) {
  std::vector<st::address> out;
  out.reserve(std::min(in.size(), max_addresses));
  for (auto& m : in) {
    if (out.size() == max_addresses) break;
    bound(m.name, max_field_bytes);
    bound(m.address, max_field_bytes);
    out.push_back({std::move(m.name), std::move(m.address)});
  }
  return out;
}

bool same_address(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// Envelope recipients that no To/Cc/Bcc header names are Bcc recipients (as Mailpit
// shows them).
void add_envelope_bcc(st::summary& out, const std::vector<std::string>& rcpt_to) {
  auto named = [&](std::string_view r) {
    for (const auto* list : {&out.to, &out.cc, &out.bcc})
      for (const auto& a : *list)
        if (same_address(a.address, r)) return true;
    return false;
  };
  for (const auto& r : rcpt_to) {
    if (out.bcc.size() >= max_addresses) break;
    if (r.empty() || named(r)) continue;
    std::string addr = r;
    bound(addr, max_field_bytes);
    out.bcc.push_back({"", std::move(addr)});
  }
}

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
      bound(out, limit);
      return;
    }
  }
  d.finish(to_cv);
  if (!as_is) cv.finish(sink);
  bound(out, limit);
}

bool starts_tag(std::string_view h, std::size_t k, std::string_view name) {
  if (h.size() - k < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(h[k + i])) != name[i]) return false;
  return true;
}

// The words of an HTML body for search: tags, comments, scripts and styles dropped, the
// common entities decoded (others kept as written).
std::string html_words(std::string_view h) {
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
      auto e = h.find('>', i);
      i = e == std::string_view::npos ? h.size() : e + 1;
      if (script || style) {
        std::string_view close = script ? "</script" : "</style";
        while (i < h.size() && !(h[i] == '<' && starts_tag(h, i, close))) ++i;
      }
      out.push_back(' ');
      continue;
    }
    if (c == '&') {
      static constexpr std::pair<std::string_view, std::string_view> named[] = {
          {"&amp;", "&"}, {"&lt;", "<"},   {"&gt;", ">"},  {"&quot;", "\""},
          {"&#39;", "'"}, {"&apos;", "'"}, {"&nbsp;", " "}};
      bool done = false;
      for (auto [n, v] : named) {
        if (h.compare(i, n.size(), n) == 0) {
          out.append(v);
          i += n.size();
          done = true;
          break;
        }
      }
      if (done) continue;
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

// Attachments shown inline by the HTML: disposition inline, or no disposition and a
// Content-ID (parts of multipart/related). Mailpit lists them under Inline.
bool is_inline_part(const mm::parsed_message& m, std::uint32_t p) {
  auto disp = mm::disposition(m, p);
  if (disp) return *disp == "inline";
  return m.find(p, "content-id") != nullptr;
}

}  // namespace

mm::parser& thread_parser() {
  thread_local mm::parser p;
  return p;
}

void analyze(const mm::parsed_message& m, const std::vector<std::string>& rcpt_to, st::summary& out,
             inlet::filter::scan* scan) {
  mm::summary s = mm::summarize(m);
  if (!s.from.empty()) {
    auto from = to_addresses(std::move(s.from));
    out.from = std::move(from.front());
  }
  out.to = to_addresses(std::move(s.to));
  out.cc = to_addresses(std::move(s.cc));
  out.bcc = to_addresses(std::move(s.bcc));
  out.reply_to = to_addresses(std::move(s.reply_to));
  add_envelope_bcc(out, rcpt_to);
  out.subject = s.subject.value_or("");
  bound(out.subject, max_subject_bytes);
  if (s.date) out.date = st::time_point(*s.date);
  out.message_id = s.message_id.value_or("");
  bound(out.message_id, max_field_bytes);
  out.snippet = std::move(s.snippet);
  out.attachments.reserve(s.attachments.size());
  for (auto& a : s.attachments) {
    if (is_inline_part(m, a.part)) {
      ++out.inline_parts;
      continue;
    }
    if (out.attachments.size() == max_addresses) continue;
    bound(a.filename, max_field_bytes);
    out.attachments.push_back({std::move(a.filename), std::move(a.content_type), a.size});
  }
  // The search text: the first text/plain part, else the first text/html part as words.
  std::uint32_t plain = mm::no_index, html = mm::no_index;
  mm::for_each_text_part(m, [&](std::uint32_t i) {
    if (plain == mm::no_index && m.parts()[i].sub_type() == "plain") plain = i;
    if (html == mm::no_index && m.parts()[i].sub_type() == "html") html = i;
  });
  std::string body;
  if (plain != mm::no_index) {
    decode_text_bounded(m, plain, search_text_bytes, body);
  } else if (html != mm::no_index) {
    decode_text_bounded(m, html, search_body_bytes, body);
    body = html_words(body);
  }
  out.search_text = st::search::build_search_text(out, body, search_text_bytes);
  if (scan) inlet::filter::scan_parsed(*scan, m);
}

inlet::http::rendered_body render_body(std::string_view raw) {
  inlet::http::rendered_body r;
  const mm::parsed_message& m = thread_parser().parse(raw);
  mm::for_each_text_part(m, [&](std::uint32_t p) {
    auto sub = m.parts()[p].sub_type();
    std::string* target = sub == "html" ? &r.html : sub == "plain" ? &r.text : nullptr;
    if (!target || !target->empty()) return;  // the first plain and the first html part
    mm::decode_text(m, p, [&](std::string_view utf8) { target->append(utf8); });
  });
  for (std::uint32_t p = 0; p < m.parts().size(); ++p) {
    if (!mm::is_attachment(m, p)) continue;
    inlet::http::part_info info;
    info.part_id = std::to_string(p);
    info.filename = mm::filename(m, p).value_or("");
    info.content_type = std::string(m.parts()[p].content_type());
    if (auto cid = mm::header_text(m, p, "Content-ID"))
      info.content_id = mm::parse_message_id(*cid).value_or("");
    info.size = mm::decoded_size(m, p);
    (is_inline_part(m, p) ? r.inline_parts : r.attachments).push_back(std::move(info));
  }
  return r;
}

void append_metrics(const pipeline& p, filter_stage* f, std::string& out) {
  auto line = [&out](const char* name, const char* type, const char* help, double value) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
    out += name;
    out += ' ';
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g\n", value);
    out += buf;
  };
  const auto& c = p.counters();
  auto get = [](const std::atomic<std::uint64_t>& a) {
    return static_cast<double>(a.load(std::memory_order_relaxed));
  };
  line("inlet_messages_received_total", "counter", "Messages whose data was complete.",
       get(c.received));
  line("inlet_messages_accepted_total", "counter", "Messages answered 250 (stored, or sunk).",
       get(c.stored));
  line("inlet_message_bytes_total", "counter", "Bytes of messages received.", get(c.bytes));
  line("inlet_store_errors_total", "counter", "Messages the store refused.", get(c.store_errors));
  line("inlet_filter_tagged_total", "counter", "Messages tagged spam by the filter.",
       get(c.filter_tagged));
  line("inlet_filter_rejected_total", "counter", "Messages rejected by the filter.",
       get(c.filter_rejected));
  if (f) {
    auto s = f->registry().stats().load();
    line("inlet_filter_messages_scanned_total", "counter", "Messages scanned.",
         double(s.messages_scanned));
    line("inlet_filter_messages_matched_total", "counter", "Messages with a match.",
         double(s.messages_matched));
    line("inlet_filter_bytes_scanned_total", "counter", "Decoded bytes scanned.",
         double(s.bytes_scanned));
    line("inlet_filter_seconds_total", "counter", "Time spent in the engine.",
         double(s.nanoseconds) / 1e9);
  }
}

}  // namespace inletd
