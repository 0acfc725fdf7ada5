#include "reads.hpp"

#include <algorithm>

#include "inlet/pg/codec.hpp"
#include "inlet/store/error.hpp"
#include "wire.hpp"

namespace inlet::store::pgstore {

namespace {

constexpr const char* summary_names[] = {
    "id",          "received",       "created",   "helo",      "mail_from",  "rcpt_to",
    "remote",      "protocol",       "auth_user", "from_addr", "to_addrs",   "cc_addrs",
    "bcc_addrs",   "reply_to_addrs", "subject",   "sent",      "message_id", "snippet",
    "attachments", "inline_parts",   "size",      "read",      "tags",       "totals"};
constexpr int summary_count = sizeof summary_names / sizeof summary_names[0];

std::error_code bad_row() {
  return make_error_code(errc::unavailable);
}

bool text(const pg::result& r, int row, int col, std::string& out) {
  auto f = r.at(row, col);
  if (f.is_null()) {
    out.clear();
    return true;
  }
  out.assign(f.bytes());
  return true;
}

time_point to_time(pg::timestamptz t) {
  return time_point(std::chrono::duration_cast<time_point::duration>(t.time_since_epoch()));
}

// mail.message.totals: NULL (every list whole, or a row of schema version 1), or
// {to, cc, bcc, reply_to, attachments}.
bool read_totals(const pg::field& f, summary::list_totals& out) {
  out = {};
  if (f.is_null()) return true;
  std::vector<std::int32_t> v;
  if (!decode_int4_array(f.bytes(), v) || v.size() != 5) return false;
  if (std::any_of(v.begin(), v.end(), [](std::int32_t x) { return x < 0; })) return false;
  auto u = [](std::int32_t x) { return static_cast<std::uint32_t>(x); };
  out.to = u(v[0]), out.cc = u(v[1]), out.bcc = u(v[2]), out.reply_to = u(v[3]);
  out.attachments = u(v[4]);
  return true;
}

}  // namespace

std::string summary_columns(std::string_view alias, bool with_raw) {
  std::string out;
  auto add = [&](std::string_view name) {
    if (!out.empty()) out += ", ";
    if (!alias.empty()) {
      out += alias;
      out += '.';
    }
    out += name;
  };
  for (auto* n : summary_names) add(n);
  if (with_raw) {
    add("search_text");
    add("raw");
  }
  return out;
}

std::error_code read_summary_row(const pg::result& r, int row, bool with_raw, stored_message& m) {
  if (r.columns() < summary_count + (with_raw ? 2 : 0)) return bad_row();
  pg::timestamptz received{}, created{};
  if (r.at(row, 1).as(received) || r.at(row, 2).as(created)) return bad_row();
  {
    std::string id;
    text(r, row, 0, id);
    if (id.size() != id_length) return bad_row();
    m.id = message_id(id);
  }
  m.created = to_time(created);
  m.seq = static_cast<std::uint64_t>(received.time_since_epoch().count());  // arrival order
  int c = 3;
  text(r, row, c++, m.envelope.helo);
  text(r, row, c++, m.envelope.mail_from);
  {
    std::vector<std::string> rcpt;  // the decoder fills vectors; the envelope keeps one inline
    if (r.at(row, c++).as(rcpt)) return bad_row();
    m.envelope.rcpt_to.assign(std::make_move_iterator(rcpt.begin()),
                              std::make_move_iterator(rcpt.end()));
  }
  text(r, row, c++, m.envelope.remote);
  text(r, row, c++, m.envelope.protocol);
  text(r, row, c++, m.envelope.auth_user);
  auto& s = m.summary;
  if (!decode_addr(r.at(row, c++).bytes(), s.from)) return bad_row();
  if (!decode_addr_array(r.at(row, c++).bytes(), s.to)) return bad_row();
  if (!decode_addr_array(r.at(row, c++).bytes(), s.cc)) return bad_row();
  if (!decode_addr_array(r.at(row, c++).bytes(), s.bcc)) return bad_row();
  if (!decode_addr_array(r.at(row, c++).bytes(), s.reply_to)) return bad_row();
  text(r, row, c++, s.subject);
  std::optional<pg::timestamptz> sent;
  if (r.at(row, c++).as(sent)) return bad_row();
  if (sent)
    s.date = to_time(*sent);
  else
    s.date.reset();
  text(r, row, c++, s.message_id);
  text(r, row, c++, s.snippet);
  if (!decode_attach_array(r.at(row, c++).bytes(), s.attachments)) return bad_row();
  std::int32_t inline_parts = 0;
  if (r.at(row, c++).as(inline_parts)) return bad_row();
  s.inline_parts = static_cast<std::uint32_t>(inline_parts);
  std::int64_t size = 0;
  if (r.at(row, c++).as(size)) return bad_row();
  m.size = static_cast<std::size_t>(size);
  bool read = false;
  if (r.at(row, c++).as(read)) return bad_row();
  m.init_read(read);
  std::vector<std::string> tags;
  if (r.at(row, c++).as(tags)) return bad_row();
  m.set_tags(std::make_shared<const std::vector<std::string>>(std::move(tags)));
  if (!read_totals(r.at(row, c++), s.totals)) return bad_row();
  if (with_raw) {
    text(r, row, c++, s.search_text);
    auto raw = r.at(row, c++);
    if (raw.is_null()) return bad_row();
    m.raw.assign(raw.bytes());
    m.has_raw = true;
  } else {
    m.raw.clear();
    m.has_raw = false;
  }
  return {};
}

// ---- search --------------------------------------------------------------------------

namespace {

// A folded header field (mail.message.fields, in wire.hpp's fields_order) as SQL.
std::string field_sql(search::field f) {
  for (std::size_t i = 0; i < fields_order.size(); ++i)
    if (fields_order[i] == f) return "m.fields[" + std::to_string(i + 1) + "]";
  return "''";
}

// Substring test on folded text: the needle is folded by search::parse, the fields by
// inletd when it stored them (search::prepared_fields), as search::matches compares.
std::string contains(const std::string& hay, const std::string& needle) {
  return "strpos(" + hay + ", " + needle + ") > 0";
}

// One field of a match term as SQL: the value (parameter `p`) found there.
std::string match_sql(search::field where, const std::string& p) {
  using search::field;
  switch (where) {
    case field::text:
      return contains("m.search_text", p);
    case field::to:
    case field::from:
    case field::cc:
    case field::bcc:
    case field::reply_to:
    case field::subject:
      return contains(field_sql(where), p);
    case field::addressed:  // From, To, Cc, Bcc, Reply-To, as search::matches
      return "(" + contains(field_sql(field::to), p) + " OR " +
             contains(field_sql(field::from), p) + " OR " + contains(field_sql(field::cc), p) +
             " OR " + contains(field_sql(field::bcc), p) + " OR " +
             contains(field_sql(field::reply_to), p) + ")";
    case field::message_id:
      return field_sql(field::message_id) + " = " + p;
    case field::tag:
      return "EXISTS (SELECT 1 FROM unnest(m.tags) AS g WHERE mail.fold(g) = " + p + ")";
    case field::envelope_from:  // stored as given: folded here, as search::matches does
      return contains("mail.fold(m.mail_from)", p);
    case field::envelope_to:
      return "EXISTS (SELECT 1 FROM unnest(m.rcpt_to) AS r WHERE " + contains("mail.fold(r)", p) +
             ")";
  }
  return "FALSE";
}

}  // namespace

compiled_search compile_search(const search::query& q, int tp, int ip, int sp) {
  compiled_search out;
  if (q.empty()) {
    out.condition = "TRUE";
    return out;
  }
  auto text_param = [&](const std::string& v) {
    out.texts.push_back(v);
    return "($" + std::to_string(tp) + "::text[])[" + std::to_string(out.texts.size()) + "]";
  };
  auto instant_param = [&](time_point t) {
    out.instants.push_back(pg::timestamptz(
        std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch())));
    return "($" + std::to_string(ip) + "::timestamptz[])[" + std::to_string(out.instants.size()) +
           "]";
  };
  auto size_param = [&](std::uint64_t n) {
    out.sizes.push_back(static_cast<std::int64_t>(n));
    return "($" + std::to_string(sp) + "::int8[])[" + std::to_string(out.sizes.size()) + "]";
  };
  std::string cond;
  for (const auto& t : q.terms) {
    std::string c;
    using search::field;
    using search::kind;
    switch (t.what) {
      case kind::match: {
        auto p = text_param(t.value);
        c = match_sql(t.where, p);
        for (auto f : t.also) c += " OR " + match_sql(f, p);
        break;
      }
      case kind::is_read:
        c = "m.read";
        break;
      case kind::is_unread:
        c = "NOT m.read";
        break;
      case kind::is_tagged:
        c = "m.tags <> '{}'";
        break;
      case kind::has_attachment:
        c = "cardinality(m.attachments) > 0";
        break;
      case kind::has_inline:
        c = "m.inline_parts > 0";
        break;
      case kind::after:
        c = "m.created >= " + instant_param(t.when);
        break;
      case kind::before:
        c = "m.created < " + instant_param(t.when);
        break;
      case kind::larger:
        c = "m.size > " + size_param(t.bytes);
        break;
      case kind::smaller:
        c = "m.size < " + size_param(t.bytes);
        break;
    }
    if (t.negated) c = "NOT (" + c + ")";
    if (!cond.empty()) cond += " AND ";
    cond += "(" + c + ")";
  }
  out.condition = std::move(cond);
  return out;
}

}  // namespace inlet::store::pgstore
