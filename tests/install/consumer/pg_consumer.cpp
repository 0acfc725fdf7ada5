// Uses the installed inlet::pg: connects to the server named by argv[1], runs a typed
// query with parameters, and prints the rows.
#include <inlet/pg/connection.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

namespace pg = inlet::pg;
namespace asio = boost::asio;

asio::awaitable<int> run(asio::io_context& io, std::string dsn) {
  pg::connection conn(io.get_executor());
  co_await conn.async_connect(dsn);
  std::vector<std::tuple<std::int32_t, std::string>> rows;
  co_await conn.async_query(
      pg::sql("SELECT g, 'row ' || g FROM generate_series(1, $1::int4) g", std::int32_t{3}),
      pg::into(rows));
  for (auto& [n, text] : rows) std::printf("%d %s\n", n, text.c_str());
  co_return rows.size() == 3 && std::get<1>(rows[2]) == "row 3" ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DSN\n", argv[0]);
    return 2;
  }
  asio::io_context io;
  int rc = 1;
  asio::co_spawn(io, run(io, argv[1]), [&](std::exception_ptr e, int r) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "pg_consumer: %s\n", ex.what());
      }
    } else {
      rc = r;
    }
  });
  io.run();
  return rc;
}
