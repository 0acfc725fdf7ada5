// Bulk transfers: binary COPY in and streamed reads, inlet::pg against raw libpq loops.
//   pg_bulk_bench --task T --client C [--rows N] [--dsn DSN] [--round R] [--chunk K]
//   T: copy_wide (int4, 9 KB bytea), copy_narrow (int4, int8, text), stream (int4 rows of
//      SELECT generate_series(1, N)). C: see the clients of each task below, or "all" (one
//      process: the smoke run; peak RSS is then shared).
// One JSON line per (task, client) on stdout: rows/s (wall), CPU seconds of this process,
// and its peak RSS (getrusage ru_maxrss), so run one client per process to compare RSS.
// The rows to copy are made before the clock starts; encoding them is timed.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <sys/resource.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>

#include "inlet/pg/copy.hpp"
#include "inlet/pg/pool.hpp"
#include "inlet/pg/stream.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;

namespace {

constexpr std::size_t wide_bytes = 9 * 1024;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

void check(PGresult* r, ExecStatusType want, const char* what) {
  const bool ok = PQresultStatus(r) == want;
  std::string msg = ok ? "" : PQresultErrorMessage(r);
  PQclear(r);
  if (!ok) throw std::runtime_error(std::string(what) + ": " + msg);
}

struct env {
  std::string dsn;
  long rows = 0;
  int round = 1;
  std::size_t chunk = 1024;  // inlet_stream's chunk
  PGconn* admin = nullptr;   // setup outside the clock
};

// ---- the data ---------------------------------------------------------------------------
using wide_row = std::tuple<std::int32_t, std::span<const std::byte>>;
using narrow_row = std::tuple<std::int32_t, std::int64_t, std::string>;

struct wide_data {
  std::vector<std::vector<std::byte>> bodies;  // a few distinct bodies, reused
  std::vector<wide_row> rows;
  explicit wide_data(long n) {
    std::mt19937 g(42);
    for (int b = 0; b < 16; ++b) {
      auto& v = bodies.emplace_back(wide_bytes);
      for (auto& x : v) x = static_cast<std::byte>(g());
    }
    rows.reserve(static_cast<std::size_t>(n));
    for (long i = 0; i < n; ++i)
      rows.emplace_back(static_cast<std::int32_t>(i), bodies[static_cast<std::size_t>(i) % 16]);
  }
};
std::vector<narrow_row> narrow_data(long n) {
  std::vector<narrow_row> rows;
  rows.reserve(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i)
    rows.emplace_back(static_cast<std::int32_t>(i), i * 7919, "row " + std::to_string(i));
  return rows;
}

void reset_tables(PGconn* c) {
  // UNLOGGED and EXTERNAL storage: the server's share (WAL, TOAST compression) stays small
  // so that the clients' differences show; every client copies into the same tables.
  check(PQexec(c,
               "DROP TABLE IF EXISTS bulk_wide, bulk_narrow;"
               "CREATE UNLOGGED TABLE bulk_wide (id int4, body bytea);"
               "ALTER TABLE bulk_wide ALTER body SET STORAGE EXTERNAL;"
               "CREATE UNLOGGED TABLE bulk_narrow (id int4, n int8, t text)"),
        PGRES_COMMAND_OK, "setup");
}
long count_rows(PGconn* c, const char* table) {
  PGresult* r = PQexec(c, (std::string("SELECT count(*) FROM ") + table).c_str());
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    PQclear(r);
    throw std::runtime_error("count");
  }
  long n = std::atol(PQgetvalue(r, 0, 0));
  PQclear(r);
  return n;
}

// ---- raw libpq: the binary COPY format written by hand, PQputCopyData per ~256 KiB -------
void put_be16(std::string& o, std::uint16_t v) {
  v = htons(v);
  o.append(reinterpret_cast<const char*>(&v), 2);
}
void put_be32(std::string& o, std::uint32_t v) {
  v = htonl(v);
  o.append(reinterpret_cast<const char*>(&v), 4);
}
void put_be64(std::string& o, std::uint64_t v) {
  put_be32(o, static_cast<std::uint32_t>(v >> 32));
  put_be32(o, static_cast<std::uint32_t>(v));
}

template <class Encode>
long libpq_copy(PGconn* c, const char* sql, long n, Encode&& encode) {
  check(PQexec(c, sql), PGRES_COPY_IN, "COPY");
  std::string buf;
  buf.reserve(300 * 1024);
  buf.append("PGCOPY\n\377\r\n\0", 11);
  put_be32(buf, 0);
  put_be32(buf, 0);
  for (long i = 0; i < n; ++i) {
    encode(buf, i);
    if (buf.size() >= 256 * 1024) {
      if (PQputCopyData(c, buf.data(), static_cast<int>(buf.size())) != 1)
        throw std::runtime_error(PQerrorMessage(c));
      buf.clear();
    }
  }
  put_be16(buf, 0xffff);
  if (PQputCopyData(c, buf.data(), static_cast<int>(buf.size())) != 1 ||
      PQputCopyEnd(c, nullptr) != 1)
    throw std::runtime_error(PQerrorMessage(c));
  PGresult* r = PQgetResult(c);
  const long copied = std::atol(PQcmdTuples(r));
  check(r, PGRES_COMMAND_OK, "COPY end");
  while ((r = PQgetResult(c))) PQclear(r);
  return copied;
}

// ---- streaming: raw libpq -----------------------------------------------------------------
const char* stream_sql = "SELECT generate_series(1, $1::int4)";

std::pair<long, std::int64_t> libpq_read(PGconn* c, long n, bool single_row) {
  const std::string count = std::to_string(n);
  const char* values[1] = {count.c_str()};
  if (!PQsendQueryParams(c, stream_sql, 1, nullptr, values, nullptr, nullptr, 1))
    throw std::runtime_error(PQerrorMessage(c));
  if (single_row && !PQsetSingleRowMode(c)) throw std::runtime_error("single-row mode");
  long rows = 0;
  std::int64_t sum = 0;
  while (PGresult* r = PQgetResult(c)) {
    const auto st = PQresultStatus(r);
    if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK) {
      std::string m = PQresultErrorMessage(r);
      PQclear(r);
      throw std::runtime_error(m);
    }
    const int k = PQntuples(r);
    for (int i = 0; i < k; ++i) {
      std::uint32_t v;
      std::memcpy(&v, PQgetvalue(r, i, 0), 4);
      sum += static_cast<std::int32_t>(ntohl(v));
    }
    rows += k;
    PQclear(r);
  }
  return {rows, sum};
}

// ---- inlet::pg ----------------------------------------------------------------------------
template <class F>
void run_co(F&& f) {
  asio::io_context io;
  std::exception_ptr ep;
  asio::co_spawn(io, std::forward<F>(f), [&](std::exception_ptr e) { ep = e; });
  io.run();
  if (ep) std::rethrow_exception(ep);
}

struct outcome {
  long rows = 0;
  std::int64_t sum = 0;
};
using client_fn = std::function<outcome(env&, const std::function<void()>& start)>;

// Each client connects and prepares, calls start() (the clock), then does the work.
std::map<std::string, std::map<std::string, client_fn>> tasks() {
  std::map<std::string, std::map<std::string, client_fn>> t;
  auto libpq_conn = [](env& e) {
    PGconn* c = PQconnectdb(e.dsn.c_str());
    if (PQstatus(c) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c));
    return std::unique_ptr<PGconn, void (*)(PGconn*)>(c, PQfinish);
  };

  t["copy_wide"]["libpq"] = [libpq_conn](env& e, const auto& start) {
    wide_data d(e.rows);
    auto c = libpq_conn(e);
    start();
    outcome o;
    o.rows = libpq_copy(c.get(), "COPY bulk_wide (id, body) FROM STDIN (FORMAT binary)", e.rows,
                        [&](std::string& b, long i) {
                          const auto& [id, body] = d.rows[static_cast<std::size_t>(i)];
                          put_be16(b, 2);
                          put_be32(b, 4);
                          put_be32(b, static_cast<std::uint32_t>(id));
                          put_be32(b, static_cast<std::uint32_t>(body.size()));
                          b.append(reinterpret_cast<const char*>(body.data()), body.size());
                        });
    return o;
  };
  t["copy_wide"]["inlet"] = [](env& e, const auto& start) {
    wide_data d(e.rows);
    outcome o;
    run_co([&]() -> awaitable<void> {
      pg::connection c(co_await asio::this_coro::executor);
      co_await c.async_connect(e.dsn);
      start();
      o.rows = static_cast<long>(co_await pg::async_copy_in(
          c, "COPY bulk_wide (id, body) FROM STDIN (FORMAT binary)", d.rows));
    });
    return o;
  };
  t["copy_narrow"]["libpq"] = [libpq_conn](env& e, const auto& start) {
    auto rows = narrow_data(e.rows);
    auto c = libpq_conn(e);
    start();
    outcome o;
    o.rows = libpq_copy(c.get(), "COPY bulk_narrow (id, n, t) FROM STDIN (FORMAT binary)", e.rows,
                        [&](std::string& b, long i) {
                          const auto& [id, n, s] = rows[static_cast<std::size_t>(i)];
                          put_be16(b, 3);
                          put_be32(b, 4);
                          put_be32(b, static_cast<std::uint32_t>(id));
                          put_be32(b, 8);
                          put_be64(b, static_cast<std::uint64_t>(n));
                          put_be32(b, static_cast<std::uint32_t>(s.size()));
                          b.append(s);
                        });
    return o;
  };
  t["copy_narrow"]["inlet"] = [](env& e, const auto& start) {
    auto rows = narrow_data(e.rows);
    outcome o;
    run_co([&]() -> awaitable<void> {
      pg::connection c(co_await asio::this_coro::executor);
      co_await c.async_connect(e.dsn);
      start();
      o.rows = static_cast<long>(co_await pg::async_copy_in(
          c, "COPY bulk_narrow (id, n, t) FROM STDIN (FORMAT binary)", rows));
    });
    return o;
  };

  t["stream"]["libpq_buffered"] = [libpq_conn](env& e, const auto& start) {
    auto c = libpq_conn(e);
    start();
    auto [n, s] = libpq_read(c.get(), e.rows, false);
    return outcome{n, s};
  };
  t["stream"]["libpq_single_row"] = [libpq_conn](env& e, const auto& start) {
    auto c = libpq_conn(e);
    start();
    auto [n, s] = libpq_read(c.get(), e.rows, true);
    return outcome{n, s};
  };
  t["stream"]["inlet_buffered"] = [](env& e, const auto& start) {
    outcome o;
    run_co([&]() -> awaitable<void> {
      pg::connection c(co_await asio::this_coro::executor);
      co_await c.async_connect(e.dsn);
      start();
      std::vector<std::int32_t> v;
      co_await c.async_query(pg::sql(stream_sql, static_cast<std::int32_t>(e.rows)), pg::into(v));
      for (auto x : v) o.sum += x;
      o.rows = static_cast<long>(v.size());
    });
    return o;
  };
  t["stream"]["inlet_stream"] = [](env& e, const auto& start) {
    outcome o;
    run_co([&]() -> awaitable<void> {
      pg::connection c(co_await asio::this_coro::executor);
      co_await c.async_connect(e.dsn);
      start();
      auto s = pg::stream<std::int32_t>(c, pg::sql(stream_sql, static_cast<std::int32_t>(e.rows)),
                                        {.chunk = e.chunk});
      std::vector<std::int32_t> v;
      for (;;) {
        v.clear();
        if (co_await s.async_next(v) == 0) break;
        for (auto x : v) o.sum += x;
        o.rows += static_cast<long>(v.size());
      }
    });
    return o;
  };
  t["stream"]["inlet_cursor"] = [](env& e, const auto& start) {
    outcome o;
    run_co([&]() -> awaitable<void> {
      auto ex = co_await asio::this_coro::executor;
      pg::pool_options po;  // named: no aggregate temporary beside a co_await (g++ 12)
      po.dsn = e.dsn;
      po.size = 1;
      pg::pool p(ex, po);
      co_await p.async_acquire();  // connected before the clock
      start();
      auto tx = co_await pg::async_begin(p);
      auto cur = co_await pg::async_declare<std::int32_t>(
          tx, pg::sql(stream_sql, static_cast<std::int32_t>(e.rows)));
      std::vector<std::int32_t> v;
      for (;;) {
        v.clear();
        if (co_await cur.async_fetch(v, 10'000) == 0) break;
        for (auto x : v) o.sum += x;
        o.rows += static_cast<long>(v.size());
      }
      co_await std::move(cur).async_close();
      co_await std::move(tx).async_commit();
    });
    return o;
  };
  return t;
}

}  // namespace

int main(int argc, char** argv) try {
  env e;
  const char* d = std::getenv("INLET_PG_DSN");
  e.dsn = d ? d : "";
  std::string task, client = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--task")
      task = v;
    else if (k == "--client")
      client = v;
    else if (k == "--rows")
      e.rows = std::atol(v.c_str());
    else if (k == "--dsn")
      e.dsn = v;
    else if (k == "--round")
      e.round = std::atoi(v.c_str());
    else if (k == "--chunk")
      e.chunk = static_cast<std::size_t>(std::atol(v.c_str()));
    else
      throw std::runtime_error("unknown option " + k);
  }
  auto all = tasks();
  std::vector<std::string> which;
  if (task.empty() || task == "all") {
    for (auto& [k, _] : all) which.push_back(k);
  } else {
    if (!all.count(task)) throw std::runtime_error("unknown task " + task);
    which.push_back(task);
  }
  e.admin = PQconnectdb(e.dsn.c_str());
  if (PQstatus(e.admin) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(e.admin));
  for (const auto& tk : which) {
    const long rows = e.rows;
    if (rows == 0)
      e.rows = tk == "copy_wide" ? 20'000 : tk == "copy_narrow" ? 1'000'000 : 10'000'000;
    for (auto& [name, fn] : all[tk]) {
      if (client != "all" && client != name) continue;
      reset_tables(e.admin);
      double t0 = 0, c0 = 0;
      auto start = [&] {
        c0 = cpu_seconds();
        t0 = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                 .count();
      };
      outcome o = fn(e, start);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
              .count() -
          t0;
      const double cpu = cpu_seconds() - c0;
      // Every client must have done the whole job.
      long expect = e.rows;
      if (tk != "stream") {
        expect = count_rows(e.admin, tk == "copy_wide" ? "bulk_wide" : "bulk_narrow");
        if (expect != e.rows || o.rows != e.rows)
          throw std::runtime_error(tk + "/" + name + ": rows copied " + std::to_string(o.rows) +
                                   ", in the table " + std::to_string(expect));
      } else if (o.rows != e.rows ||
                 o.sum != static_cast<std::int64_t>(e.rows) * (e.rows + 1) / 2) {
        throw std::runtime_error(tk + "/" + name + ": wrong rows or checksum");
      }
      std::printf(
          "{\"round\": %d, \"task\": \"%s\", \"client\": \"%s\", \"rows\": %ld, \"rows_per_s\": "
          "%.0f, \"cpu_s\": %.3f, \"peak_rss_mb\": %.1f}\n",
          e.round, tk.c_str(), name.c_str(), e.rows, static_cast<double>(e.rows) / wall, cpu,
          peak_rss_mb());
      std::fflush(stdout);
    }
    e.rows = rows;
  }
  PQfinish(e.admin);
  return 0;
} catch (const std::exception& ex) {
  std::fprintf(stderr, "pg_bulk_bench: %s\n", ex.what());
  return 1;
}
