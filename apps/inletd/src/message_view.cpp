#include "message_view.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <inlet/filter/mime_scan.hpp>
#include <inlet/http/render.hpp>
#include <inlet/mime/message.hpp>
#include <inlet/store/search.hpp>
#include <inlet/store/tags.hpp>
#include <optional>

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

// Fills the store's list in place: a move of the To list's inline entry is not free.
template <class List>
void to_addresses(std::vector<mm::mailbox>&& in, List& out) {
  out.clear();
  out.reserve(std::min(in.size(), max_addresses));
  for (auto& m : in) {
    if (out.size() == max_addresses) break;
    bound(m.name, max_field_bytes);
    bound(m.address, max_field_bytes);
    out.push_back({std::move(m.name), std::move(m.address)});
  }
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
void add_envelope_bcc(st::summary& out, const inlet::store::recipient_list& rcpt_to) {
  auto named = [&](std::string_view r) {
    const auto lists = out.lists();
    for (auto list : {lists[0], lists[1], lists[2]})  // To, Cc, Bcc
      for (const auto& a : list)
        if (same_address(a.address, r)) return true;
    return false;
  };
  // Counted on past the bound (only then does a full list cost the whole loop).
  std::size_t all = std::max<std::size_t>(out.bcc.size(), out.totals.bcc);
  for (const auto& r : rcpt_to) {
    if (r.empty() || named(r)) continue;
    ++all;
    if (out.bcc.size() >= max_addresses) continue;
    std::string addr = r;
    bound(addr, max_field_bytes);
    out.bcc.push_back({"", std::move(addr)});
  }
  if (all > out.bcc.size()) out.totals.bcc = static_cast<std::uint32_t>(all);
}

// The count of a list cut to max_addresses entries (0: whole).
std::uint32_t total_if_cut(std::size_t n) {
  return n > max_addresses ? static_cast<std::uint32_t>(n) : 0;
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

// Whether p lies inside an attached message (message/rfc822 below the root).
bool below_message(const mm::parsed_message& m, std::uint32_t p) {
  const auto& parts = m.parts();
  for (auto q = parts[p].parent; q != mm::no_index; q = parts[q].parent)
    if (parts[q].kind == mm::part_kind::message) return true;
  return false;
}

}  // namespace

mm::parser& thread_parser() {
  thread_local mm::parser p;
  return p;
}

void analyze(const mm::parsed_message& m, const inlet::store::recipient_list& rcpt_to,
             st::summary& out, inlet::filter::scan* scan) {
  // One summary per thread, reused: its address lists keep their capacity, so the
  // From and To lists of an ordinary message cost no allocation (analyze is not
  // re-entered on a thread; what is moved out of it is reset by the next summarize).
  thread_local mm::summary scratch;
  mm::summary& s = scratch;
  // A long list seen once does not stay held by the thread.
  for (auto* v : {&s.from, &s.to, &s.cc, &s.bcc, &s.reply_to})
    if (v->capacity() > 8) *v = {};
  mm::summarize(m, s, 200, max_addresses);
  if (!s.from.empty()) {
    mm::mailbox& f = s.from.front();
    bound(f.name, max_field_bytes);
    bound(f.address, max_field_bytes);
    out.from = {std::move(f.name), std::move(f.address)};
  }
  out.totals.to = total_if_cut(s.address_counts.to);
  out.totals.cc = total_if_cut(s.address_counts.cc);
  out.totals.bcc = total_if_cut(s.address_counts.bcc);
  out.totals.reply_to = total_if_cut(s.address_counts.reply_to);
  to_addresses(std::move(s.to), out.to);
  to_addresses(std::move(s.cc), out.cc);
  to_addresses(std::move(s.bcc), out.bcc);
  to_addresses(std::move(s.reply_to), out.reply_to);
  add_envelope_bcc(out, rcpt_to);
  if (s.subject) out.subject = std::move(*s.subject);
  bound(out.subject, max_subject_bytes);
  if (s.date) out.date = st::time_point(*s.date);
  if (s.message_id) out.message_id = std::move(*s.message_id);
  bound(out.message_id, max_field_bytes);
  out.snippet = std::move(s.snippet);
  // Attachments as the API lists them (inlet::http::list_parts): not the parts inside an
  // attached message, but the attached message itself; inline parts counted apart.
  out.attachments.reserve(s.attachments.size());
  std::size_t attachments = 0;  // kept or not
  for (auto& a : s.attachments) {
    if (below_message(m, a.part)) continue;
    if (inlet::http::is_inline_part(m, a.part)) {
      ++out.inline_parts;
      continue;
    }
    ++attachments;
    if (out.attachments.size() == max_addresses) continue;
    bound(a.filename, max_field_bytes);
    out.attachments.push_back({std::move(a.filename), std::move(a.content_type), a.size});
  }
  for (std::uint32_t p = 1; p < m.parts().size(); ++p) {
    const auto& pt = m.parts()[p];
    if (pt.kind != mm::part_kind::message || below_message(m, p)) continue;
    if (++attachments > max_addresses || out.attachments.size() == max_addresses) continue;
    std::string name = mm::filename(m, p).value_or("");
    bound(name, max_field_bytes);
    out.attachments.push_back({std::move(name), std::string(pt.content_type()), pt.body.size()});
  }
  out.totals.attachments = total_if_cut(attachments);
  if (scan) inlet::filter::scan_parsed(*scan, m);
}

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
    body = inlet::http::html_to_text(body);
    text = body;
  }
  std::string out = st::search::build_search_text(s, text, search_text_bytes);
  parser.reset();  // no views into `raw` left behind
  return out;
}

void message_tags(const mm::parsed_message& m, const st::summary& s, const tag_options& o,
                  std::vector<std::string>& out) {
  auto add = [&](std::string_view raw_tag) {
    std::string t = st::clean_tag(raw_tag);
    if (t.empty()) return;
    out.push_back(o.title_case ? st::title_case(t) : std::move(t));
  };
  if (o.x_tags) {
    const auto& root = m.parts().front();
    std::string scratch;
    for (std::uint32_t i = root.first_header; i < root.first_header + root.header_count; ++i) {
      const auto& h = m.headers()[i];
      std::string_view name = m.view(h.name, scratch);
      if (name.size() != 6 || !(name[0] == 'x' || name[0] == 'X') ||
          st::search::fold_case(name) != "x-tags")
        continue;
      std::string value = mm::decode_unstructured(m.view(h.value, scratch));
      std::string_view rest = value;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        add(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
  }
  if (o.plus_addresses) {
    auto from_address = [&](const st::address& a) {
      auto at = a.address.rfind('@');
      auto local = std::string_view(a.address).substr(0, at == std::string::npos ? 0 : at);
      auto plus = local.find('+');
      if (plus == std::string_view::npos) return;
      local.remove_prefix(plus + 1);  // user+one+two@x: one, two
      while (!local.empty()) {
        auto next = local.find('+');
        add(local.substr(0, next));
        if (next == std::string_view::npos) break;
        local.remove_prefix(next + 1);
      }
    };
    from_address(s.from);
    const auto lists = s.lists();
    for (auto list : {lists[0], lists[1], lists[2]})  // To, Cc, Bcc
      for (const auto& a : list) from_address(a);
  }
}

namespace {

// Mailpit's argument splitting (whitespace outside double quotes; quotes dropped).
std::vector<std::string> split_args(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : s) {
    if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::string trim_copy(std::string_view v) {
  auto b = v.find_first_not_of(" \t\r\n");
  auto e = v.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? std::string{} : std::string(v.substr(b, e - b + 1));
}

std::string yaml_scalar(std::string_view v) {
  std::string t = trim_copy(v);
  if (t.size() >= 2 && (t.front() == '"' || t.front() == '\'') && t.back() == t.front())
    return t.substr(1, t.size() - 2);
  return t;
}

}  // namespace

bool tag_rules::add(std::string_view tags, std::string_view match, std::string& error) {
  rule r;
  std::string_view rest = tags;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string t = st::clean_tag(rest.substr(0, comma));
    if (!t.empty()) r.tags.push_back(std::move(t));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  st::search::query q;
  std::string why;
  if (st::search::parse(match, {}, q, &why)) {
    error = "tag filter \"" + std::string(match) + "\": " + why;
    return false;
  }
  if (r.tags.empty() || q.empty()) {
    error = "tag filter \"" + std::string(tags) + "=" + std::string(match) +
            "\" needs a tag and a match";
    return false;
  }
  for (auto& t : q.terms) {
    const bool word = t.what == st::search::kind::match && t.where == st::search::field::text;
    (word ? r.words : r.others).terms.push_back(std::move(t));
  }
  rules_.push_back(std::move(r));
  return true;
}

bool tag_rules::parse(const std::vector<std::string>& specs, const std::string& yaml_file,
                      tag_rules& out, std::string& error) {
  tag_rules rules;
  for (const auto& spec : specs) {
    for (const auto& arg : split_args(spec)) {
      auto eq = arg.find('=');
      if (eq == std::string::npos || eq == 0) {
        error = "--tag \"" + arg + "\" is not tag=match";
        return false;
      }
      if (!rules.add(std::string_view(arg).substr(0, eq), std::string_view(arg).substr(eq + 1),
                     error))
        return false;
    }
  }
  if (!yaml_file.empty()) {
    std::ifstream in(yaml_file);
    if (!in) {
      error = "cannot read " + yaml_file;
      return false;
    }
    // filters:
    //   - match: ...
    //     tags: ...
    std::string line, match, tags;
    auto flush = [&]() {
      if (match.empty() && tags.empty()) return true;
      bool ok = rules.add(tags, match, error);
      match.clear();
      tags.clear();
      return ok;
    };
    while (std::getline(in, line)) {
      std::string t = trim_copy(line);
      if (t.empty() || t.front() == '#' || t == "filters:" || t == "---") continue;
      if (t.starts_with("- ")) {
        if (!flush()) return false;
        t = trim_copy(t.substr(2));
      }
      if (t.starts_with("match:"))
        match = yaml_scalar(t.substr(6));
      else if (t.starts_with("tags:"))
        tags = yaml_scalar(t.substr(5));
      else {
        error = yaml_file + ": unexpected line \"" + t + "\"";
        return false;
      }
    }
    if (!flush()) return false;
  }
  out = std::move(rules);
  return true;
}

void tag_rules::apply(const st::new_message& msg, std::vector<std::string>& tags) const {
  if (rules_.empty()) return;
  // What the terms look at: the summary (as the store will keep it) and the raw bytes,
  // folded once for the words.
  st::stored_message probe;
  probe.envelope = msg.envelope;
  probe.summary = msg.summary;
  probe.size = msg.raw.size();
  probe.created = std::chrono::system_clock::now();
  const st::search::prepared_fields fields(probe);
  std::string folded;
  for (const auto& r : rules_) {
    if (!st::search::matches(r.others, probe, fields)) continue;
    bool ok = true;
    for (const auto& w : r.words.terms) {
      if (folded.empty()) folded = st::search::fold_case(msg.raw);
      const bool found = folded.find(w.value) != std::string::npos;
      if (found == w.negated) {
        ok = false;
        break;
      }
    }
    if (ok) tags.insert(tags.end(), r.tags.begin(), r.tags.end());
  }
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
