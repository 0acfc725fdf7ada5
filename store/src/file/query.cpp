#include "file/query.hpp"

#include <chrono>
#include <limits>
#include <string.h>

#include "file/codec.hpp"

namespace inlet::store::file {
namespace {

std::int64_t ns_of(time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::int64_t clamp64(std::uint64_t v) {
  constexpr auto top = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return static_cast<std::int64_t>(v > top ? top : v);
}

const char* column_of(search::field f) {
  using search::field;
  switch (f) {
    case field::text:
      return "m.search_text";
    case field::to:
      return "m.f_to";
    case field::from:
      return "m.f_from";
    case field::cc:
      return "m.f_cc";
    case field::bcc:
      return "m.f_bcc";
    case field::reply_to:
      return "m.f_reply_to";
    case field::subject:
      return "m.f_subject";
    case field::message_id:
      return "m.f_message_id";
    case field::tag:
      return "m.tags_f";
    case field::addressed:
    case field::envelope_from:
    case field::envelope_to:
      break;
  }
  return nullptr;
}

// One field of a match term: `value` found there.
void field_sql(search::field where, const std::string& value, sql_condition& out) {
  using search::field;
  if (where == field::addressed) {
    out.sql += "(";
    bool first = true;
    for (auto f : {field::from, field::to, field::cc, field::bcc, field::reply_to}) {
      if (!first) out.sql += " OR ";
      first = false;
      out.sql += "inlet_contains(";
      out.sql += column_of(f);
      out.sql += ",?)";
      out.values.emplace_back(value);
    }
    out.sql += ")";
    return;
  }
  if (where == field::message_id) {
    out.sql += "m.f_message_id=?";
    out.values.emplace_back(value);
    return;
  }
  if (where == field::envelope_from || where == field::envelope_to) {
    // The envelope is in the meta column (codec.hpp); see inlet_envelope_contains.
    out.sql += where == field::envelope_from ? "inlet_envelope_contains(m.meta,?,0)"
                                             : "inlet_envelope_contains(m.meta,?,1)";
    out.values.emplace_back(value);
    return;
  }
  out.sql += "inlet_contains(";
  out.sql += column_of(where);
  out.sql += ",?)";
  if (where == field::tag) {
    std::string v;  // appended, not operator+: g++ 12 warns falsely (-Wrestrict) on that
    v.reserve(value.size() + 2);
    v.push_back('\n');
    v.append(value);
    v.push_back('\n');
    out.values.emplace_back(std::move(v));
  } else {
    out.values.emplace_back(value);
  }
}

// inlet_envelope_contains(meta, needle, which): 1 when the envelope sender (which 0) or
// an envelope recipient (1), folded, contains the needle (folded by search::parse).
void envelope_contains_fn(sqlite3_context* ctx, int, sqlite3_value** argv) {
  thread_local std::vector<std::string_view> rcpt;
  thread_local std::string folded;
  auto bytes = [&](int k) {
    const auto* p = static_cast<const char*>(sqlite3_value_blob(argv[k]));
    return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_value_bytes(argv[k])))
             : std::string_view{};
  };
  const std::string_view in = bytes(0), n = bytes(1);
  const bool recipients = sqlite3_value_int(argv[2]) != 0;
  std::string_view from;
  if (!decode_meta_addresses(in, from, rcpt)) return sqlite3_result_int(ctx, 0);
  auto has = [&](std::string_view a) {
    folded.assign(a);
    search::fold_case_in_place(folded);
    return n.empty() || ::memmem(folded.data(), folded.size(), n.data(), n.size()) != nullptr;
  };
  bool hit = false;
  if (!recipients)
    hit = has(from);
  else
    for (auto r : rcpt)
      if ((hit = has(r))) break;
  sqlite3_result_int(ctx, hit ? 1 : 0);
}

void term_sql(const search::term& t, sql_condition& out) {
  using search::kind;
  auto num = [&](const char* op_sql, std::int64_t v) {
    out.sql += op_sql;
    out.values.emplace_back(v);
  };
  switch (t.what) {
    case kind::is_read:
      out.sql += "m.read=1";
      return;
    case kind::is_unread:
      out.sql += "m.read=0";
      return;
    case kind::is_tagged:
      out.sql += "m.tags<>''";
      return;
    case kind::has_attachment:
      out.sql += "m.attachments>0";
      return;
    case kind::has_inline:
      out.sql += "m.inline_parts>0";
      return;
    case kind::after:
      return num("m.created>=?", ns_of(t.when));
    case kind::before:
      return num("m.created<?", ns_of(t.when));
    case kind::larger:
      return num("m.size>?", clamp64(t.bytes));
    case kind::smaller:
      return num("m.size<?", clamp64(t.bytes));
    case kind::match:
      break;
  }
  out.sql += "(";
  field_sql(t.where, t.value, out);
  for (auto f : t.also) {
    out.sql += " OR ";
    field_sql(f, t.value, out);
  }
  out.sql += ")";
}

}  // namespace

void add_query_functions(connection& c) {
  const int rc = sqlite3_create_function_v2(
      c.get(), "inlet_envelope_contains", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
      nullptr, &envelope_contains_fn, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) c.fail(rc, "inlet_envelope_contains");
}

int sql_condition::bind(statement& st, int first) const {
  for (const auto& v : values) {
    if (const auto* i = std::get_if<std::int64_t>(&v))
      st.bind(first++, *i);
    else
      st.bind_blob(first++, std::get<std::string>(v));
  }
  return first;
}

sql_condition compile(const search::query& q) {
  sql_condition out;
  if (q.empty()) {
    out.sql.push_back('1');  // not operator=(const char*): g++ 12 warns falsely (-Wrestrict)
    return out;
  }
  bool first = true;
  for (const auto& t : q.terms) {
    if (!first) out.sql += " AND ";
    first = false;
    // NOT over a condition that is never NULL (every column is NOT NULL).
    out.sql += t.negated ? "NOT (" : "(";
    term_sql(t, out);
    out.sql += ")";
  }
  return out;
}

}  // namespace inlet::store::file
