#include "reads.hpp"

#include "inlet/pg/codec.hpp"
#include "inlet/store/error.hpp"
#include "wire.hpp"

namespace inlet::store::pgstore {

namespace {

constexpr const char* summary_names[] = {
    "id",         "received",  "helo",           "mail_from",    "rcpt_to",
    "remote",     "protocol",  "auth_user",      "from_addr",    "to_addrs",
    "cc_addrs",   "bcc_addrs", "reply_to_addrs", "subject",      "sent",
    "message_id", "snippet",   "attachments",    "inline_parts", "size",
    "read",       "tags"};
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
  pg::timestamptz received{};
  if (r.at(row, 1).as(received)) return bad_row();
  text(r, row, 0, m.id);
  m.created = to_time(received);
  m.seq = static_cast<std::uint64_t>(received.time_since_epoch().count());
  text(r, row, 2, m.envelope.helo);
  text(r, row, 3, m.envelope.mail_from);
  if (r.at(row, 4).as(m.envelope.rcpt_to)) return bad_row();
  text(r, row, 5, m.envelope.remote);
  text(r, row, 6, m.envelope.protocol);
  text(r, row, 7, m.envelope.auth_user);
  auto& s = m.summary;
  if (!decode_addr(r.at(row, 8).bytes(), s.from)) return bad_row();
  if (!decode_addr_array(r.at(row, 9).bytes(), s.to)) return bad_row();
  if (!decode_addr_array(r.at(row, 10).bytes(), s.cc)) return bad_row();
  if (!decode_addr_array(r.at(row, 11).bytes(), s.bcc)) return bad_row();
  if (!decode_addr_array(r.at(row, 12).bytes(), s.reply_to)) return bad_row();
  text(r, row, 13, s.subject);
  std::optional<pg::timestamptz> sent;
  if (r.at(row, 14).as(sent)) return bad_row();
  if (sent)
    s.date = to_time(*sent);
  else
    s.date.reset();
  text(r, row, 15, s.message_id);
  text(r, row, 16, s.snippet);
  if (!decode_attach_array(r.at(row, 17).bytes(), s.attachments)) return bad_row();
  std::int32_t inline_parts = 0;
  if (r.at(row, 18).as(inline_parts)) return bad_row();
  s.inline_parts = static_cast<std::uint32_t>(inline_parts);
  std::int64_t size = 0;
  if (r.at(row, 19).as(size)) return bad_row();
  m.size = static_cast<std::size_t>(size);
  bool read = false;
  if (r.at(row, 20).as(read)) return bad_row();
  m.init_read(read);
  std::vector<std::string> tags;
  if (r.at(row, 21).as(tags)) return bad_row();
  m.set_tags(std::make_shared<const std::vector<std::string>>(std::move(tags)));
  if (with_raw) {
    text(r, row, 22, s.search_text);
    auto raw = r.at(row, 23);
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

// Case-insensitive containment of a lower-cased needle: lower() here and
// search::matches' lower-casing must agree (see docs/store-pg.md, search).
std::string contains(std::string_view expr, const std::string& param) {
  return "strpos(lower(" + std::string(expr) + "), " + param + ") > 0";
}

std::string addr_list_contains(std::string_view column, const std::string& p) {
  return "EXISTS (SELECT 1 FROM unnest(m." + std::string(column) + ") AS a WHERE " +
         contains("a.name", p) + " OR " + contains("a.address", p) + ")";
}

std::string addr_contains(std::string_view column, const std::string& p) {
  return "(" + contains("(m." + std::string(column) + ").name", p) + " OR " +
         contains("(m." + std::string(column) + ").address", p) + ")";
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
        switch (t.where) {
          case field::text:
            c = "strpos(m.search_text, " + p + ") > 0";
            break;
          case field::to:
            c = addr_list_contains("to_addrs", p);
            break;
          case field::from:
            c = addr_contains("from_addr", p);
            break;
          case field::cc:
            c = addr_list_contains("cc_addrs", p);
            break;
          case field::bcc:
            c = addr_list_contains("bcc_addrs", p);
            break;
          case field::reply_to:
            c = addr_list_contains("reply_to_addrs", p);
            break;
          case field::addressed:
            c = "(" + addr_list_contains("to_addrs", p) + " OR " +
                addr_list_contains("cc_addrs", p) + " OR " + addr_list_contains("bcc_addrs", p) +
                " OR " + addr_list_contains("reply_to_addrs", p) +
                " OR EXISTS (SELECT 1 FROM unnest(m.rcpt_to) AS r WHERE " + contains("r", p) + "))";
            break;
          case field::subject:
            c = contains("m.subject", p);
            break;
          case field::message_id:
            c = "lower(m.message_id) = " + p;
            break;
          case field::tag:
            c = "EXISTS (SELECT 1 FROM unnest(m.tags) AS g WHERE lower(g) = " + p + ")";
            break;
        }
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
        c = "m.received >= " + instant_param(t.when);
        break;
      case kind::before:
        c = "m.received < " + instant_param(t.when);
        break;
      case kind::larger:
        c = "m.size >= " + size_param(t.bytes);
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
