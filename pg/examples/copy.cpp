// COPY: typed rows in and out in binary format (the same codecs as queries), a writer fed
// in pieces, raw bytes in text format, and an aborted COPY that leaves nothing behind.
//   pg_example_copy "postgresql://postgres@127.0.0.1:5432/postgres"
#include "inlet/pg/copy.hpp"

#include <boost/asio/io_context.hpp>
#include <cstdio>

#include "example_main.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;

struct message {  // a plain aggregate: fields in column order (Boost.PFR)
  std::int64_t id;
  std::string mailbox;
  std::vector<std::byte> body;
  std::optional<std::string> subject;
};

std::vector<message> make_messages(int n, std::int64_t first_id) {
  std::vector<message> v;
  for (int i = 0; i < n; ++i)
    v.push_back({first_id + i, "box" + std::to_string(i % 10),
                 std::vector<std::byte>(64, std::byte{'x'}),
                 i % 3 ? std::optional<std::string>("hello " + std::to_string(i)) : std::nullopt});
  return v;
}

asio::awaitable<void> copy_in(pg::connection& conn) {
  // 1. Rows from any range, in one call. The C++ types must match the columns exactly
  //    (binary COPY has no type information to check against).
  const std::vector<message> batch = make_messages(10'000, 0);
  std::uint64_t n =
      co_await pg::async_copy_in(conn, "COPY copy_demo FROM STDIN (FORMAT binary)", batch);
  std::printf("copied in %llu rows\n", static_cast<unsigned long long>(n));

  // 2. A writer: the caller decides the pieces (say, as messages arrive).
  auto w = co_await pg::async_copy_in(conn, "COPY copy_demo FROM STDIN (FORMAT binary)");
  const std::vector<message> first = make_messages(1, 100'000);
  co_await w.async_write_rows(first);
  n = co_await std::move(w).async_finish();
  std::printf("writer copied %llu rows\n", static_cast<unsigned long long>(n));
}

asio::awaitable<void> copy_out(pg::connection& conn) {
  // 3. Out, typed, in chunks: memory stays bounded by the chunk, not the table.
  auto r = co_await pg::async_copy_out(
      conn, "COPY (SELECT * FROM copy_demo WHERE mailbox = 'box3') TO STDOUT (FORMAT binary)");
  std::vector<message> rows;
  std::size_t total = 0;
  for (;;) {
    const std::size_t got = co_await r.async_read(rows);  // 0: the end
    if (got == 0) break;
    total += got;
    rows.clear();
  }
  std::printf("read back %zu rows of box3\n", total);

  // 4. Raw bytes, text format.
  auto text = co_await pg::async_copy_out(
      conn, "COPY (SELECT id, mailbox FROM copy_demo ORDER BY id LIMIT 3) TO STDOUT");
  for (;;) {
    const std::string chunk = co_await text.async_read_raw();  // empty: the end
    if (chunk.empty()) break;
    std::fwrite(chunk.data(), 1, chunk.size(), stdout);
  }
}

asio::awaitable<void> abort_one(pg::connection& conn) {
  // 5. An aborted COPY keeps nothing, and the connection goes on.
  auto a = co_await pg::async_copy_in(conn, "COPY copy_demo FROM STDIN (FORMAT binary)");
  const std::vector<message> one = make_messages(1, 200'000);
  co_await a.async_write_rows(one);
  co_await std::move(a).async_abort("changed my mind");
  std::vector<std::int64_t> count;
  co_await conn.async_query(pg::sql("SELECT count(*)::int8 FROM copy_demo"), pg::into(count));
  std::printf("%lld rows in the table\n", static_cast<long long>(count.at(0)));
}

// Split into steps: one coroutine with every step trips a false -Wmismatched-new-delete
// in g++ 12 (Asio's coroutine frames have their own operator new/delete).
asio::awaitable<void> tutorial(asio::io_context& io, std::string dsn) {
  pg::connection conn(io.get_executor());
  co_await conn.async_connect(dsn);
  co_await conn.async_execute("DROP TABLE IF EXISTS copy_demo");
  co_await conn.async_execute(
      "CREATE TABLE copy_demo (id int8, mailbox text, body bytea, subject text)");
  co_await copy_in(conn);
  co_await copy_out(conn);
  co_await abort_one(conn);
}

int main(int argc, char** argv) {
  return run_example(argc, argv, tutorial);
}
