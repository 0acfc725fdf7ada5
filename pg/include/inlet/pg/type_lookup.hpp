// Looking up the OIDs of an OID map's types on the server: one query per map, run once
// per connection or, for a pool, once with any of its connections (the pool's
// connections share the map through connection_options::types).
//
//   auto types = pg::register_types<attach, color>();
//   pg::connection_options o;
//   o.types = types;
//   pg::connection conn(ex, o);
//   co_await conn.async_connect(dsn);
//   co_await pg::async_lookup_types(conn, *types);  // errc::unknown_type names what is missing
//
// Not thread-safe against readers of the same map: look up before queries use it.
#pragma once
#include <boost/asio/compose.hpp>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "inlet/pg/connection.hpp"
#include "inlet/pg/oid_map.hpp"

namespace inlet::pg {

namespace detail {
using lookup_row =
    std::tuple<std::int64_t, std::optional<std::uint32_t>, std::optional<std::uint32_t>>;
/// One row per name, in the map's order: position, oid, array oid (NULLs when missing).
inline constexpr std::string_view lookup_sql =
    "SELECT n.i, t.oid, t.typarray FROM unnest($1::text[]) WITH ORDINALITY AS n(name, i) "
    "LEFT JOIN pg_catalog.pg_type t ON t.oid = pg_catalog.to_regtype(n.name)::oid ORDER BY n.i";
std::vector<std::string> lookup_names(const type_map& m);
/// Fills m's OIDs from the rows; errc::unknown_type and `message` naming every missing
/// type when some do not exist.
std::error_code apply_lookup(type_map& m, const std::vector<lookup_row>& rows,
                             std::string& message);
}  // namespace detail

/// Looks up every OID of m. On errc::unknown_type, m.last_error() names the missing types.
void lookup_types(connection& c, type_map& m, std::error_code& ec);
/// Throwing: pg::error whose diagnostics' client_message names the missing types.
void lookup_types(connection& c, type_map& m);

/// Asynchronous lookup; completes with (std::error_code). See lookup_types.
template <class Token = pg::use_awaitable_t>
auto async_lookup_types(connection& c, type_map& m, Token&& token = {}) {
  auto rows = std::make_shared<std::vector<detail::lookup_row>>();
  return boost::asio::async_compose<Token, void(std::error_code)>(
      [&c, &m, rows, started = false](auto& self, std::error_code ec = {},
                                      std::size_t = 0) mutable {
        if (!started) {
          started = true;
          auto q = sql(detail::lookup_sql, detail::lookup_names(m));
          c.async_query(std::move(q), into(*rows), std::move(self));
          return;
        }
        if (!ec) ec = detail::apply_lookup(m, *rows, m.last_error_ref());
        self.complete(ec);
      },
      token, c.get_executor());
}

}  // namespace inlet::pg
