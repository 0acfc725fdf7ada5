#include "inlet/mail/summary.hpp"

#include <algorithm>
#include <inlet/filter/mime_scan.hpp>
#include <inlet/mime/message.hpp>

#include "inlet/mail/read_view.hpp"
#include <inlet/util/ascii.hpp>

namespace inlet::mail {

namespace mm = inlet::mime;
namespace st = inlet::store;

void bound_utf8(std::string& s, std::size_t n) {
  if (s.size() <= n) return;
  std::size_t k = n;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  s.resize(k);
}

namespace {

// Fills the store's list in place: a move of the To list's inline entry is not free.
template <class List>
void to_addresses(std::vector<mm::mailbox>&& in, List& out) {
  out.clear();
  out.reserve(std::min(in.size(), summary_limits::addresses));
  for (auto& m : in) {
    if (out.size() == summary_limits::addresses) break;
    bound_utf8(m.name, summary_limits::field_bytes);
    bound_utf8(m.address, summary_limits::field_bytes);
    out.push_back({std::move(m.name), std::move(m.address)});
  }
}

// Envelope recipients that no To/Cc/Bcc header names are Bcc recipients (as Mailpit
// shows them).
void add_envelope_bcc(st::summary& out, const inlet::store::recipient_list& rcpt_to) {
  auto named = [&](std::string_view r) {
    const auto lists = out.lists();
    for (auto list : {lists[0], lists[1], lists[2]})  // To, Cc, Bcc
      for (const auto& a : list)
        if (inlet::util::iequals(a.address, r)) return true;
    return false;
  };
  // Counted on past the bound (only then does a full list cost the whole loop).
  std::size_t all = std::max<std::size_t>(out.bcc.size(), out.totals.bcc);
  for (const auto& r : rcpt_to) {
    if (r.empty() || named(r)) continue;
    ++all;
    if (out.bcc.size() >= summary_limits::addresses) continue;
    std::string addr = r;
    bound_utf8(addr, summary_limits::field_bytes);
    out.bcc.push_back({"", std::move(addr)});
  }
  if (all > out.bcc.size()) out.totals.bcc = static_cast<std::uint32_t>(all);
}

// The count of a list cut to summary_limits::addresses entries (0: whole).
std::uint32_t total_if_cut(std::size_t n) {
  return n > summary_limits::addresses ? static_cast<std::uint32_t>(n) : 0;
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
  mm::summarize(m, s, summary_limits::snippet_chars, summary_limits::addresses);
  if (!s.from.empty()) {
    mm::mailbox& f = s.from.front();
    bound_utf8(f.name, summary_limits::field_bytes);
    bound_utf8(f.address, summary_limits::field_bytes);
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
  bound_utf8(out.subject, summary_limits::subject_bytes);
  if (s.date) out.date = st::time_point(*s.date);
  if (s.message_id) out.message_id = std::move(*s.message_id);
  bound_utf8(out.message_id, summary_limits::field_bytes);
  out.snippet = std::move(s.snippet);
  // Attachments as the API lists them (inlet::http::list_parts): not the parts inside an
  // attached message, but the attached message itself; inline parts counted apart.
  out.attachments.reserve(s.attachments.size());
  std::size_t attachments = 0;  // kept or not
  for (auto& a : s.attachments) {
    if (inside_attached_message(m, a.part)) continue;
    if (is_inline_part(m, a.part)) {
      ++out.inline_parts;
      continue;
    }
    ++attachments;
    if (out.attachments.size() == summary_limits::addresses) continue;
    bound_utf8(a.filename, summary_limits::field_bytes);
    out.attachments.push_back({std::move(a.filename), std::move(a.content_type), a.size});
  }
  for (std::uint32_t p = 1; p < m.parts().size(); ++p) {
    const auto& pt = m.parts()[p];
    if (pt.kind != mm::part_kind::message || inside_attached_message(m, p)) continue;
    if (++attachments > summary_limits::addresses || out.attachments.size() == summary_limits::addresses) continue;
    std::string name = mm::filename(m, p).value_or("");
    bound_utf8(name, summary_limits::field_bytes);
    out.attachments.push_back({std::move(name), std::string(pt.content_type()), pt.body.size()});
  }
  out.totals.attachments = total_if_cut(attachments);
  if (scan) inlet::filter::scan_parsed(*scan, m);
}


}  // namespace inlet::mail
