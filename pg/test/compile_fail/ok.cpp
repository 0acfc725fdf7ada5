// expect-compiles: the control: correct use compiles (also with -Wconsumed -Werror).
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  co_await tx.async_execute("SELECT 1");
  auto sp = co_await tx.async_savepoint();
  co_await std::move(sp).async_release();
  co_await std::move(tx).async_commit();
  auto tx2 = co_await pg::async_begin(p);
  pg::transaction moved = std::move(tx2);
  co_await std::move(moved).async_rollback();
}

// An OID map: a registered type's OID is readable.
#include "inlet/pg/oid_map.hpp"
struct attach_ok {
  static constexpr std::string_view pg_type_name = "mail.attach";
};
inlet::pg::oid_t attach_oid(const inlet::pg::oid_map<attach_ok>& m) {
  return inlet::pg::type_oid<attach_ok>(m);
}

// pg::async_request on a connection, a pooled connection and the pool (a provider).
#include "inlet/pg/request.hpp"
asio::awaitable<void> request_ok(pg::pool& p, pg::connection& c) {
  std::vector<int> rows;
  co_await pg::async_request(c, pg::sql("SELECT 1"), pg::into(rows));
  co_await pg::async_request(p, pg::sql("SELECT 1"), pg::into(rows));
  auto h = co_await p.async_acquire();
  pg::result r = co_await pg::async_request(h, pg::sql("SELECT 1"));
}
