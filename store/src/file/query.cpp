#include "file/query.hpp"

#include <chrono>
#include <limits>

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
      break;
  }
  return nullptr;
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
  using search::field;
  if (t.where == field::addressed) {
    out.sql += "(";
    bool first = true;
    for (auto f : {field::from, field::to, field::cc, field::bcc, field::reply_to}) {
      if (!first) out.sql += " OR ";
      first = false;
      out.sql += "inlet_contains(";
      out.sql += column_of(f);
      out.sql += ",?)";
      out.values.emplace_back(t.value);
    }
    out.sql += ")";
    return;
  }
  if (t.where == field::message_id) {
    out.sql += "m.f_message_id=?";
    out.values.emplace_back(t.value);
    return;
  }
  out.sql += "inlet_contains(";
  out.sql += column_of(t.where);
  out.sql += ",?)";
  if (t.where == field::tag) {
    std::string v;  // appended, not operator+: g++ 12 warns falsely (-Wrestrict) on that
    v.reserve(t.value.size() + 2);
    v.push_back('\n');
    v.append(t.value);
    v.push_back('\n');
    out.values.emplace_back(std::move(v));
  } else {
    out.values.emplace_back(t.value);
  }
}

}  // namespace

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
