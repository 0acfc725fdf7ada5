// The database's types as the program's types, in the order of OZO's talk on them: an OID
// map for a composite, the _SQL builder, a typed request into tuples with an array of
// composites, the raw result, rows by name, the query repository and a transaction.
//   pg_example_types "postgresql://postgres@127.0.0.1:5432/postgres"
#include <boost/asio/io_context.hpp>
#include <boost/describe/class.hpp>
#include <cstdio>
#include <functional>
#include <stdexcept>

#include "example_main.hpp"
#include "inlet/pg/builder.hpp"
#include "inlet/pg/pool.hpp"
#include "inlet/pg/repository.hpp"
#include "inlet/pg/transaction.hpp"
#include "inlet/pg/type_lookup.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using namespace pg::literals;

// CREATE TYPE mail.attach AS (filename text, type text, size bigint): a plain struct
// (fields by Boost.PFR, in order) and the type's name on the server.
struct attach {
  std::string filename;
  std::string type;
  std::int64_t size;
  static constexpr std::string_view pg_type_name = "mail.attach";
};

// A row matched to columns by name.
struct message {
  std::int64_t mid;
  std::string st_id;
  std::vector<attach> attaches;
};
BOOST_DESCRIBE_STRUCT(message, (), (mid, st_id, attaches))

// A query of the repository: its name, its parameters, its row.
struct GetMessages {
  static constexpr std::string_view name = "GetMessages";
  struct parameters_type {
    std::int64_t uid;
    std::vector<std::int64_t> mids;
  };
  using row_type = std::tuple<std::int64_t, std::string, std::vector<attach>>;
};
BOOST_DESCRIBE_STRUCT(GetMessages::parameters_type, (), (uid, mids))

// Loaded at run time (a file in production: query_repository<...>::load_file).
constexpr std::string_view query_conf_text = R"(
-- name: GetMessages
-- attributes: read-only
SELECT mid, st_id, attaches
  FROM mail.messages
 WHERE uid = :uid
   AND mid = ANY(:mids::code.mids)
)";

// The example checks what it prints (ctest runs it).
void expect(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("unexpected: ") + what);
}

// The schema of the talk. (The talk is split into steps: one coroutine with every step
// trips a false -Wmismatched-new-delete in g++ 12.)
asio::awaitable<void> make_schema(asio::io_context& io, std::string dsn) {
  {
    pg::connection setup(io.get_executor());
    co_await setup.async_connect(dsn);
    for (const char* q : {"SET client_min_messages = warning", "DROP SCHEMA IF EXISTS mail CASCADE",
                          "DROP SCHEMA IF EXISTS code CASCADE", "CREATE SCHEMA mail",
                          "CREATE SCHEMA code", "CREATE DOMAIN code.mids AS bigint[]",
                          "CREATE TYPE mail.attach AS (filename text, type text, size bigint)",
                          "CREATE TABLE mail.messages (uid bigint, mid bigint, st_id text, "
                          "attaches mail.attach[])"})
      co_await setup.async_execute(pg::query<>(q));
  }
}

// 2. The query template: built once, bound by reference, run with new values ...
asio::awaitable<void> insert_messages(pg::pool& pool) {
  std::int64_t uid = 0, mid = 0;
  std::string st_id;
  std::vector<attach> attaches;
  const auto insert = ("INSERT INTO mail.messages (uid, mid, st_id, attaches)"_SQL +
                       "VALUES ("_SQL + std::cref(uid) + ", "_SQL + std::cref(mid) + ", "_SQL +
                       std::cref(st_id) + ", "_SQL + std::cref(attaches) + ")"_SQL)
                          .build();
  std::printf("%.*s\n", static_cast<int>(insert.text().size()), insert.text().data());
  // 7. ... in a transaction.
  auto tx = co_await pg::async_begin(pool);
  for (std::int64_t i = 1; i <= 3; ++i) {
    std::tie(uid, mid, st_id, attaches) = std::make_tuple(
        std::int64_t{42}, i, "st" + std::to_string(i),
        std::vector<attach>(static_cast<std::size_t>(i), attach{"a.txt", "text/plain", 100 * i}));
    co_await tx.async_execute(insert);
  }
  co_await std::move(tx).async_commit();
}

asio::awaitable<void> read_messages(pg::pool& pool);
asio::awaitable<void> use_repository(pg::connection& conn);

asio::awaitable<void> talk(asio::io_context& io, std::string dsn) {
  co_await make_schema(io, dsn);

  // 1. The OID map, shared by every connection of the pool; OIDs looked up once.
  const auto oid_map = pg::register_types<attach>();
  pg::pool_options po;
  po.dsn = dsn;
  po.size = 4;
  po.connection.types = oid_map;
  pg::pool pool(io.get_executor(), po);
  {
    auto c = co_await pool.async_acquire();
    co_await pg::async_lookup_types(*c, *oid_map);
  }
  std::printf("mail.attach oid %u, array oid %u\n", pg::type_oid<attach>(*oid_map),
              pg::array_oid<attach>(*oid_map));

  co_await insert_messages(pool);
  co_await read_messages(pool);
}

// 3. The request: typed rows, an array of composites in each.
asio::awaitable<void> read_messages(pg::pool& pool) {
  const std::int64_t uid = 42;
  auto conn = co_await pool.async_acquire();
  std::vector<std::int64_t> mids{1, 3};
  const auto query = "SELECT mid, st_id, attaches"_SQL + " FROM mail.messages "_SQL +
                     "WHERE uid = "_SQL + uid + " AND mid = ANY("_SQL + mids + "::code.mids)"_SQL;
  using row_t = std::tuple<std::int64_t, std::string, std::vector<attach>>;
  std::vector<row_t> result;
  co_await conn->async_query(query, pg::into(result));
  expect(result.size() == 2 && std::get<2>(result[1]).size() == 3,
         "two messages, the second with 3 attaches");
  for (const auto& [m, s, a] : result)
    std::printf("mid %lld %s: %zu attaches, first %s (%lld bytes)\n", static_cast<long long>(m),
                s.c_str(), a.size(), a.at(0).filename.c_str(),
                static_cast<long long>(a.at(0).size));

  // 4. The raw result: fields as bytes, no decoding.
  auto raw = co_await conn->async_query(query);
  std::size_t bytes = 0;
  for (int r = 0; r < raw.rows(); ++r)
    for (int c = 0; c < raw.columns(); ++c) bytes += raw.at(r, c).bytes().size();
  expect(raw.rows() == 2, "two raw rows");
  std::printf("raw: %d rows, %zu bytes\n", raw.rows(), bytes);

  // 5. Rows by name: the column order does not matter, a wrong name is an error.
  std::vector<message> by_name;
  co_await conn->async_query(
      "SELECT attaches, mid, st_id FROM mail.messages WHERE uid = "_SQL + uid, pg::into(by_name));
  expect(by_name.size() == 3, "three rows by name");
  std::printf("by name: %zu rows, mid %lld has %zu attaches\n", by_name.size(),
              static_cast<long long>(by_name.back().mid), by_name.back().attaches.size());

  co_await use_repository(*conn);
}

// 6. The query repository: checked against the server, then called with its own
//    parameter type (another type does not compile).
asio::awaitable<void> use_repository(pg::connection& conn) {
  const auto repo = pg::query_repository<GetMessages>::load_text(query_conf_text, "queries.sql");
  repo.validate(conn);
  GetMessages::parameters_type parameters{42, {1, 2, 3}};
  std::vector<GetMessages::row_type> rows;
  co_await conn.async_query(repo.make_query<GetMessages>(parameters), pg::into(rows));
  expect(rows.size() == 3, "three rows from the repository");
  std::printf("repository: %zu rows\n", rows.size());
}

int main(int argc, char** argv) {
  return run_example(argc, argv, talk);
}
