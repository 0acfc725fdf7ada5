#include "file/mailpit.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <map>
#include <set>

#include "file/codec.hpp"

namespace inlet::store::file {
namespace {

std::set<std::string> columns_of(connection& c, const std::string& table) {
  std::set<std::string> out;
  statement st(c, "PRAGMA table_info(\"" + table + "\")");
  while (st.step()) {
    std::string name(st.bytes(1));
    for (auto& ch : name)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    out.insert(std::move(name));
  }
  return out;
}

bool table_exists(connection& c, const std::string& name) {
  statement st(c, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=? COLLATE NOCASE");
  st.bind_text(1, name);
  return st.step();
}

std::string text_of(const boost::json::value* v) {
  if (!v || !v->is_string()) return {};
  return std::string(v->as_string());
}

address address_of(const boost::json::value& v) {
  address a;
  if (!v.is_object()) return a;
  a.name = text_of(v.as_object().if_contains("Name"));
  a.address = text_of(v.as_object().if_contains("Address"));
  return a;
}

template <class List>
void list_of(const boost::json::object& o, const char* key, List& out) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_array()) return;
  for (const auto& e : v->as_array()) out.push_back(address_of(e));
}

void parse_metadata(std::string_view json, summary& s) {
  boost::system::error_code ec;
  auto v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return;
  const auto& o = v.as_object();
  if (const auto* f = o.if_contains("From")) s.from = address_of(*f);
  list_of(o, "To", s.to);
  list_of(o, "Cc", s.cc);
  list_of(o, "Bcc", s.bcc);
  list_of(o, "ReplyTo", s.reply_to);
}

std::vector<std::string> json_tags(std::string_view json) {
  std::vector<std::string> out;
  boost::system::error_code ec;
  auto v = boost::json::parse(json, ec);
  if (ec || !v.is_array()) return out;
  for (const auto& e : v.as_array())
    if (e.is_string()) out.emplace_back(e.as_string());
  return out;
}

}  // namespace

std::string mailpit_prefix(const std::string& tenant_id) {
  // Mailpit: whitespace runs to one space, trimmed, then every character but
  // [A-Za-z0-9_] becomes '_', and a '_' ends it.
  std::string s;
  for (char c : tenant_id) {
    const bool ws = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    if (ws) {
      if (!s.empty() && s.back() != ' ') s += ' ';
    } else {
      s += c;
    }
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.empty()) return s;
  for (auto& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_';
    if (!ok) c = '_';
  }
  if (s.back() != '_') s += '_';
  return s;
}

bool has_mailpit_tables(connection& c, const std::string& prefix) {
  return table_exists(c, prefix + "mailbox") && table_exists(c, prefix + "mailbox_data");
}

void read_mailpit(connection& c, const std::string& prefix,
                  const std::function<void(mailpit_message&&)>& each) {
  const std::string mailbox = prefix + "mailbox", data = prefix + "mailbox_data";
  const auto mcols = columns_of(c, mailbox);
  const auto dcols = columns_of(c, data);
  // Tags: the tag tables (1.10 on), else the JSON column of older versions.
  std::map<std::string, std::vector<std::string>> tags;
  if (table_exists(c, prefix + "tags") && table_exists(c, prefix + "message_tags")) {
    statement st(c, "SELECT mt.ID, t.Name FROM \"" + prefix + "message_tags\" mt JOIN \"" + prefix +
                        "tags\" t ON t.ID = mt.TagID ORDER BY mt.Key");
    while (st.step()) tags[std::string(st.bytes(0))].emplace_back(st.bytes(1));
  }
  const bool json_tag_column = mcols.contains("tags");
  std::string sql = "SELECT m.ID, m.Created, coalesce(m.Read, 0), coalesce(m.Subject, ''),"
                    " coalesce(m.MessageID, ''), coalesce(m.Metadata, ''), coalesce(m.Inline, 0),"
                    " coalesce(m.Attachments, 0), ";
  sql += mcols.contains("snippet") ? "coalesce(m.Snippet, '')" : "''";
  sql += mcols.contains("searchtext") ? ", coalesce(m.SearchText, '')" : ", ''";
  sql += json_tag_column ? ", coalesce(m.Tags, '')" : ", ''";
  sql += ", d.Email, ";
  sql += dcols.contains("compressed") ? "d.Compressed" : "1";
  sql += " FROM \"" + mailbox + "\" m JOIN \"" + data + "\" d ON d.ID = m.ID ORDER BY m.Created, m.rowid";
  statement st(c, sql);
  while (st.step()) {
    mailpit_message m;
    m.id = std::string(st.bytes(0));
    m.created = time_point(std::chrono::duration_cast<time_point::duration>(
        std::chrono::milliseconds(st.int64(1))));
    m.read = st.int64(2) != 0;
    auto& s = m.from_columns;
    s.subject = std::string(st.bytes(3));
    s.message_id = std::string(st.bytes(4));
    parse_metadata(st.bytes(5), s);
    s.inline_parts = static_cast<std::uint32_t>(st.int64(6));
    m.attachments = static_cast<std::uint32_t>(st.int64(7));
    s.snippet = std::string(st.bytes(8));
    m.search_text = std::string(st.bytes(9));
    if (auto it = tags.find(m.id); it != tags.end()) m.tags = it->second;
    else if (json_tag_column) m.tags = json_tags(st.bytes(10));
    const auto email = st.bytes(11);
    if (st.int64(12) != 0) {
      if (!decompress(email, m.raw, std::size_t{1} << 31))
        throw sqlite_error(SQLITE_CORRUPT, "Mailpit message " + m.id + ": raw bytes do not decompress");
      m.zstd_frame = std::string(email);
    } else {
      m.raw = std::string(email);
    }
    each(std::move(m));
  }
}

}  // namespace inlet::store::file
