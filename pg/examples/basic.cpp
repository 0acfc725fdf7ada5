// Tutorial: connect, typed rows into structs, parameters, affected rows, the pool.
//   pg_example_basic "postgresql://postgres@127.0.0.1:5432/postgres"
#include <boost/asio/io_context.hpp>
#include <cstdio>

#include "example_main.hpp"
#include "inlet/pg/pool.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;

struct type_info {  // read by position through Boost.PFR: no macros
  std::string name;
  std::int16_t length;
  std::optional<std::string> category;
};

asio::awaitable<void> tutorial(asio::io_context& io, std::string dsn) {
  // 1. One connection; the default completion token works with co_await and throws pg::error.
  pg::connection conn(io.get_executor());
  co_await conn.async_connect(dsn);

  // 2. Parameters are sent in binary ($1, $2); rows come back typed.
  std::vector<type_info> types;
  co_await conn.async_query(pg::sql("SELECT typname::text, typlen, typcategory::text FROM pg_type "
                                    "WHERE typlen = $1 LIMIT $2::int8",
                                    std::int16_t{4}, std::int64_t{5}),
                            pg::into(types));
  for (auto& t : types) std::printf("%-12s len=%d\n", t.name.c_str(), t.length);

  // 3. Affected rows of a command.
  co_await conn.async_execute(pg::sql("CREATE TEMP TABLE notes (id int4, body text)"));
  auto n = co_await conn.async_execute(
      pg::sql("INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, $1::int4) g", 3));
  std::printf("inserted %llu rows\n", static_cast<unsigned long long>(n));

  // 4. Errors: std::error_code conditions plus server diagnostics.
  try {
    co_await conn.async_execute(pg::sql("SELECT * FROM no_such_table"));
  } catch (const pg::error& e) {
    // The exception carries this operation's own diagnostics.
    std::printf("error: %s [%s] %s\n", e.code().message().c_str(), e.diag().sqlstate.c_str(),
                e.diag().message.c_str());
  }

  // 5. A pool: acquire, query, the connection goes back when `c` is destroyed.
  pg::pool pool(io.get_executor(), {.dsn = dsn, .size = 4});
  auto c = co_await pool.async_acquire();
  auto r = co_await c->async_query(pg::sql("SELECT version()"));
  std::string version;
  r.at(0, 0).as(version);
  std::printf("%s\n", version.c_str());
}

int main(int argc, char** argv) {
  return run_example(argc, argv, tutorial);
}
