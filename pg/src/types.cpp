// OID map lookups and the connection's map (oid_map.hpp, type_lookup.hpp).
#include "conn_impl.hpp"
#include "inlet/pg/type_lookup.hpp"

namespace inlet::pg {
namespace detail {

const type_map* types_of(const conn_impl& c) noexcept {
  return c.pb_.user_types;
}
const std::shared_ptr<const type_map>& shared_types_of(const conn_impl& c) noexcept {
  return c.opts_.types;
}

std::vector<std::string> lookup_names(const type_map& m) {
  std::vector<std::string> names;
  names.reserve(m.entries().size());
  for (const auto& e : m.entries()) names.emplace_back(e.name);
  return names;
}

std::error_code apply_lookup(type_map& m, const std::vector<lookup_row>& rows,
                             std::string& message) {
  message.clear();
  auto& entries = m.entries();
  if (rows.size() != entries.size()) return make_error_code(errc::protocol_error);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [pos, o, arr] = rows[i];
    auto& e = entries[static_cast<std::size_t>(pos - 1)];
    if (!o) {
      message += message.empty() ? "type \"" : ", type \"";
      message.append(e.name).append("\" does not exist on the server");
      continue;
    }
    e.oid = *o;
    e.array_oid = arr.value_or(0);
  }
  return message.empty() ? std::error_code{} : make_error_code(errc::unknown_type);
}

}  // namespace detail

void lookup_types(connection& c, type_map& m, std::error_code& ec) {
  std::vector<detail::lookup_row> rows;
  c.query(sql(detail::lookup_sql, detail::lookup_names(m)), into(rows), ec);
  if (!ec) ec = detail::apply_lookup(m, rows, m.last_error_ref());
}

void lookup_types(connection& c, type_map& m) {
  std::error_code ec;
  lookup_types(c, m, ec);
  if (!ec) return;
  diagnostics d = c.last_diagnostics();
  if (ec == errc::unknown_type) {
    d.clear();
    d.client_message = m.last_error();
  }
  throw error(ec, std::move(d));
}

}  // namespace inlet::pg
