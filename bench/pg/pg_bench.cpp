// inlet::pg vs raw libpq on the same PostgreSQL, in one run, alternating clients.
//   pg_bench [--dsn DSN] [--rounds R] [--scale S] [--depth D] [--json FILE] [--only SHAPE]
//   pg_bench --clients N [--round R] ...   (N concurrent clients; JSON lines, see multi_client_run)
// DSN defaults to $INLET_PG_DSN. Prints a Markdown table; writes raw JSON per measurement.
// Reported per (shape, client): operations/s (wall) and client CPU microseconds per
// operation (getrusage of this single-threaded process), and their ratios against the
// raw libpq loops measured in the same round.
#include <libpq-fe.h>
#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <thread>

#include <boost/asio/detached.hpp>

#include "inlet/pg/connection.hpp"
#include "inlet/pg/pool.hpp"
#include "shapes.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;

namespace {

struct pg_type_row {
  std::string typname;
  std::uint32_t typnamespace, typowner;
  std::int16_t typlen;
  bool typbyval;
  std::string typcategory;
  bool typispreferred, typisdefined;
  std::string typdelim;
  std::uint32_t typrelid, typelem, typarray;
};

struct sample {
  double ops_per_s, cpu_us_per_op;
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

template <class F>
sample measure(long ops, F&& f) {
  double c0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  f();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = cpu_seconds() - c0;
  return {static_cast<double>(ops) / wall, cpu * 1e6 / static_cast<double>(ops)};
}

[[noreturn]] void die(const std::string& m) { throw std::runtime_error(m); }

// ---- raw libpq -------------------------------------------------------------------------
struct pq_params {
  std::int32_t a_be = 0;
  char b = 1;
  std::string text;
  const char* values[2];
  int lengths[2], formats[2] = {1, 1};
  Oid types[2];
  void set(const pgbench::shape& s, int i) {
    if (s.name == "pg_type") {
      a_be = static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(-1)));
      values[0] = reinterpret_cast<const char*>(&a_be), lengths[0] = 4, types[0] = 23;
      values[1] = &b, lengths[1] = 1, types[1] = 16;
    } else {  // insert
      a_be = static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(i)));
      text = "row " + std::to_string(i);
      values[0] = reinterpret_cast<const char*>(&a_be), lengths[0] = 4, types[0] = 23;
      values[1] = text.data(), lengths[1] = static_cast<int>(text.size()), types[1] = 25;
    }
  }
};

std::uint64_t touch(const PGresult* r) {  // what a "raw" reader does: every field's bytes
  std::uint64_t n = 0;
  const int rows = PQntuples(r), cols = PQnfields(r);
  for (int i = 0; i < rows; ++i)
    for (int c = 0; c < cols; ++c) n += static_cast<std::uint64_t>(PQgetlength(r, i, c)) + (PQgetvalue(r, i, c)[0] != 0);
  return n;
}

PGconn* pq_connect(const std::string& dsn) {
  PGconn* c = PQconnectdb(dsn.c_str());
  if (PQstatus(c) != CONNECTION_OK) die(PQerrorMessage(c));
  return c;
}

void pq_prepare(PGconn* c, const pgbench::shape& s) {
  pq_params p;
  p.set(s, 0);
  PGresult* r = PQprepare(c, "q", s.sql.c_str(), s.params, s.params ? p.types : nullptr);
  if (PQresultStatus(r) != PGRES_COMMAND_OK) die(PQresultErrorMessage(r));
  PQclear(r);
}

thread_local std::uint64_t sink = 0;  // per thread: --clients runs libpq loops on N threads

void libpq_sync(PGconn* c, const pgbench::shape& s, long ops) {
  pq_params p;
  for (long i = 0; i < ops; ++i) {
    for (int k = 0; k < s.batch; ++k) {
      if (s.params) p.set(s, static_cast<int>(i * s.batch + k));
      PGresult* r = PQexecPrepared(c, "q", s.params, p.values, p.lengths, p.formats, 1);
      auto st = PQresultStatus(r);
      if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) die(PQresultErrorMessage(r));
      sink += touch(r);
      PQclear(r);
    }
  }
}

// Pipeline mode, at most `depth` statements in flight, a Sync after each (as ours does).
void libpq_pipe(PGconn* c, const pgbench::shape& s, long ops, int depth) {
  if (PQenterPipelineMode(c) != 1 || PQsetnonblocking(c, 1) != 0) die("pipeline mode");
  pq_params p;
  const long total = ops * s.batch;
  long sent = 0, done = 0;
  while (done < total) {
    while (sent < total && sent - done < depth) {
      if (s.params) p.set(s, static_cast<int>(sent));
      if (!PQsendQueryPrepared(c, "q", s.params, p.values, p.lengths, p.formats, 1) || !PQpipelineSync(c))
        die(PQerrorMessage(c));
      ++sent;
    }
    int fl = PQflush(c);
    if (fl < 0) die(PQerrorMessage(c));
    pollfd pf{PQsocket(c), static_cast<short>(POLLIN | (fl ? POLLOUT : 0)), 0};
    if (::poll(&pf, 1, 10000) <= 0) die("poll timeout");
    if (!(pf.revents & POLLIN)) continue;
    if (!PQconsumeInput(c)) die(PQerrorMessage(c));
    int nulls = 0;
    while (!PQisBusy(c)) {
      PGresult* r = PQgetResult(c);
      if (!r) {
        if (++nulls >= 2 || done == sent) break;
        continue;
      }
      nulls = 0;
      auto st = PQresultStatus(r);
      if (st == PGRES_PIPELINE_SYNC) ++done;
      else if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) sink += touch(r);
      else die(PQresultErrorMessage(r));
      PQclear(r);
    }
  }
  PQsetnonblocking(c, 0);
  PQexitPipelineMode(c);
}

// ---- inlet::pg -------------------------------------------------------------------------
template <class Row>
awaitable<void> one(pg::connection& c, const pgbench::shape& s, long i, bool typed) {
  if (s.name == "insert1000") {
    co_await c.async_execute(pg::sql(s.sql, static_cast<std::int32_t>(i), "row " + std::to_string(i)));
  } else if (typed) {
    std::vector<Row> rows;
    if (s.params) co_await c.async_query(pg::sql(s.sql, std::int32_t{-1}, true), pg::into(rows));
    else co_await c.async_query(pg::sql(s.sql), pg::into(rows));
    sink += rows.size();
  } else {
    pg::result r;  // (no co_await inside ?: — GCC 12 miscompiles it)
    if (s.params) r = co_await c.async_query(pg::sql(s.sql, std::int32_t{-1}, true));
    else r = co_await c.async_query(pg::sql(s.sql));
    sink += touch(r.native());
  }
}

// The statements of one client as a user's coroutine would issue them: the shape's
// kind is decided once, then one co_await per statement (no nested coroutine frame
// and no shape-name compare per statement, which the libpq loops do not pay either).
// `next()` gives the next statement index, or -1 when done.
template <class Row, class Next>
awaitable<void> loop(pg::connection& c, const pgbench::shape& s, bool typed, Next next) {
  const std::string_view sql = s.sql;
  long i;
  if (s.name == "insert1000") {
    while ((i = next()) >= 0)
      co_await c.async_execute(pg::sql(sql, static_cast<std::int32_t>(i), "row " + std::to_string(i)));
  } else if (typed && s.params) {
    while (next() >= 0) {
      std::vector<Row> rows;
      co_await c.async_query(pg::sql(sql, std::int32_t{-1}, true), pg::into(rows));
      sink += rows.size();
    }
  } else if (typed) {
    while (next() >= 0) {
      std::vector<Row> rows;
      co_await c.async_query(pg::sql(sql), pg::into(rows));
      sink += rows.size();
    }
  } else if (s.params) {
    while (next() >= 0) {
      pg::result r = co_await c.async_query(pg::sql(sql, std::int32_t{-1}, true));
      sink += touch(r.native());
    }
  } else {
    while (next() >= 0) {
      pg::result r = co_await c.async_query(pg::sql(sql));
      sink += touch(r.native());
    }
  }
}

template <class Row>
void inlet_run(asio::io_context& io, pg::connection& c, const pgbench::shape& s, long ops, int depth, bool typed) {
  const long total = ops * s.batch;
  long next = 0;
  int workers = std::max(1, depth);
  for (int w = 0; w < workers; ++w) {
    asio::co_spawn(io, loop<Row>(c, s, typed, [&] { return next < total ? next++ : -1L; }),
                   [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  }
  io.run();
  io.restart();
}

void inlet_any(asio::io_context& io, pg::connection& c, const pgbench::shape& s, long ops, int depth, bool typed) {
  if (s.name == "select1") inlet_run<std::int32_t>(io, c, s, ops, depth, typed);
  else if (s.name == "pg_type") inlet_run<pg_type_row>(io, c, s, ops, depth, typed);
  else if (s.name == "series1000") inlet_run<std::int32_t>(io, c, s, ops, depth, typed);
  else if (s.name == "bytea100") inlet_run<std::vector<std::byte>>(io, c, s, ops, depth, typed);
  else if (s.name == "intarr100") inlet_run<std::vector<std::int32_t>>(io, c, s, ops, depth, typed);
  else inlet_run<std::int32_t>(io, c, s, ops, depth, typed);
}

// inlet::pg explicit batches, the same work as pgx_batch: the shape's statements in
// pg::batch'es of `depth` (one Sync per batch, one batch in flight), every result decoded
// into typed rows as the *_typed clients do (INSERTs: the affected-row counts). For
// insert1000 a batch of INSERTs is one implicit transaction: not the same commit work as
// one Sync per statement (flagged in merge.py, as pgx_batch).
template <class Row>
void inlet_batch_run(asio::io_context& io, pg::connection& c, const pgbench::shape& s, long ops, int depth) {
  asio::co_spawn(io, [&]() -> awaitable<void> {
    const std::string_view sql = s.sql;
    const bool insert = s.name == "insert1000";
    const long total = ops * s.batch;
    for (long i = 0; i < total;) {
      pg::batch b;
      for (int k = 0; k < depth && i < total; ++k, ++i) {
        if (insert) b.add(sql, static_cast<std::int32_t>(i), "row " + std::to_string(i));
        else if (s.params) b.add(sql, std::int32_t{-1}, true);
        else b.add(sql);
      }
      auto r = co_await c.async_execute(std::move(b));
      for (std::size_t k = 0; k < r.size(); ++k) {
        if (insert) {
          sink += r.affected_rows(k);
          continue;
        }
        std::vector<Row> rows;
        if (auto ec = r.results[k].template read_all<Row>(rows)) throw pg::error(ec, c.last_diagnostics());
        sink += rows.size();
      }
    }
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  io.run();
  io.restart();
}

void inlet_batch_any(asio::io_context& io, pg::connection& c, const pgbench::shape& s, long ops, int depth) {
  if (s.name == "pg_type") inlet_batch_run<pg_type_row>(io, c, s, ops, depth);
  else if (s.name == "bytea100") inlet_batch_run<std::vector<std::byte>>(io, c, s, ops, depth);
  else if (s.name == "intarr100") inlet_batch_run<std::vector<std::int32_t>>(io, c, s, ops, depth);
  else inlet_batch_run<std::int32_t>(io, c, s, ops, depth);  // select1, series1000, insert1000
}

long base_ops(const std::string& n) {
  if (n == "select1") return 4000;
  if (n == "pg_type") return 300;
  if (n == "series1000") return 800;
  if (n == "bytea100") return 1500;
  if (n == "intarr100") return 800;
  return 6;  // insert1000: batches of 1000
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}


// ---- asyncpg's setup: N concurrent clients, each issuing statements back to back ---------
// (bench/pg/run.sh --clients N). The shape's statements are dealt round-robin to N clients;
// ops/s counts the shape's operations over the wall time of all N, CPU us/op is this whole
// process (all threads) per operation. One JSON line per (shape, client) to --json.
//   libpq_sync / libpq_pipe: N threads, each its own PGconn (sync loop / pipelined, depth D)
//   inlet_seq_raw / inlet_seq_typed: N connections on one io_context, one coroutine each
//   inlet_pool_typed: a pool of N on the same io_context, N coroutines, each statement
//                     acquire + query + release
pgbench::shape single_statements(const pgbench::shape& s) {
  pgbench::shape one = s;
  one.batch = 1;  // count statements, not operations
  return one;
}

template <class Row>
awaitable<void> multi_one_client(pg::connection& c, const pgbench::shape& s, long count, bool typed) {
  long i = 0;
  co_await loop<Row>(c, s, typed, [&i, count] { return i < count ? i++ : -1L; });
}

template <class Row>
awaitable<void> multi_pool_client(pg::pool& p, const pgbench::shape& s, long count) {
  for (long i = 0; i < count; ++i) {
    auto c = co_await p.async_acquire();
    co_await one<Row>(*c, s, i, true);
  }
}

template <class Row>
sample multi_inlet(const std::string& dsn, const pgbench::shape& s, long ops, int n, const std::string& cl) {
  asio::io_context io;
  const long total = ops * s.batch;
  auto share = [&](int k) { return total / n + (k < total % n ? 1 : 0); };
  const auto s1 = single_statements(s);
  auto rethrow = [](std::exception_ptr e) { if (e) std::rethrow_exception(e); };
  if (cl == "inlet_pool_typed") {
    pg::pool_options o;
    o.dsn = dsn;
    o.size = static_cast<std::size_t>(n);
    pg::pool p(io.get_executor(), o);
    for (int k = 0; k < n; ++k)  // open and warm all N outside the timing
      asio::co_spawn(io, multi_pool_client<Row>(p, s1, 1), rethrow);
    io.run();
    io.restart();
    sample smp = measure(ops, [&] {
      for (int k = 0; k < n; ++k) asio::co_spawn(io, multi_pool_client<Row>(p, s1, share(k)), rethrow);
      io.run();
      io.restart();
    });
    p.close();
    io.run();
    return smp;
  }
  const bool typed = cl == "inlet_seq_typed";
  std::vector<std::unique_ptr<pg::connection>> cs;
  for (int k = 0; k < n; ++k) {
    cs.push_back(std::make_unique<pg::connection>(io.get_executor()));
    cs.back()->connect(dsn);
    asio::co_spawn(io, multi_one_client<Row>(*cs.back(), s1, 1, typed), rethrow);
  }
  io.run();
  io.restart();
  return measure(ops, [&] {
    for (int k = 0; k < n; ++k) asio::co_spawn(io, multi_one_client<Row>(*cs[static_cast<std::size_t>(k)], s1, share(k), typed), rethrow);
    io.run();
    io.restart();
  });
}

sample multi_inlet_any(const std::string& dsn, const pgbench::shape& s, long ops, int n, const std::string& cl) {
  if (s.name == "pg_type") return multi_inlet<pg_type_row>(dsn, s, ops, n, cl);
  if (s.name == "bytea100") return multi_inlet<std::vector<std::byte>>(dsn, s, ops, n, cl);
  if (s.name == "intarr100") return multi_inlet<std::vector<std::int32_t>>(dsn, s, ops, n, cl);
  return multi_inlet<std::int32_t>(dsn, s, ops, n, cl);  // select1, series1000, insert1000
}

sample multi_libpq(const std::string& dsn, const pgbench::shape& s, long ops, int n, int depth, bool pipe) {
  const long total = ops * s.batch;
  const auto s1 = single_statements(s);
  std::vector<PGconn*> cs;
  for (int k = 0; k < n; ++k) {
    cs.push_back(pq_connect(dsn));
    pq_prepare(cs.back(), s);
    libpq_sync(cs.back(), s1, 1);
  }
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(n));
  sample smp = measure(ops, [&] {
    std::vector<std::thread> ts;
    for (int k = 0; k < n; ++k)
      ts.emplace_back([&, k] {
        const long count = total / n + (k < total % n ? 1 : 0);
        try {
          if (pipe) libpq_pipe(cs[static_cast<std::size_t>(k)], s1, count, depth);
          else libpq_sync(cs[static_cast<std::size_t>(k)], s1, count);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(k)] = e.what();
        }
        sums[static_cast<std::size_t>(k)] = sink;  // this thread's checksum
      });
    for (auto& t : ts) t.join();
  });
  for (auto x : sums) sink += x;
  for (auto* c : cs) PQfinish(c);
  for (auto& e : errors)
    if (!e.empty()) die(e);
  return smp;
}

int multi_client_run(const std::string& dsn, int n, int round, double scale, int depth, const std::string& json_path,
                     const std::string& only, const std::string& only_client) {
  const std::vector<std::string> clients = {"libpq_sync", "libpq_pipe", "inlet_seq_raw", "inlet_seq_typed",
                                            "inlet_pool_typed"};
  std::FILE* out = json_path.empty() ? stdout : std::fopen(json_path.c_str(), "w");
  if (!out) die("cannot write " + json_path);
  for (const auto& s : pgbench::shapes()) {
    if (!only.empty() && s.name != only) continue;
    const long ops = std::max(1L, static_cast<long>(static_cast<double>(base_ops(s.name)) * scale));
    for (const auto& cl : clients) {
      if (!only_client.empty() && cl != only_client) continue;
      std::fprintf(stderr, "clients %d round %d %s %s\n", n, round, s.name.c_str(), cl.c_str());
      sample smp = cl.rfind("libpq", 0) == 0 ? multi_libpq(dsn, s, ops, n, depth, cl == "libpq_pipe")
                                             : multi_inlet_any(dsn, s, ops, n, cl);
      std::fprintf(out, "{\"round\": %d, \"shape\": \"%s\", \"client\": \"%s\", \"conns\": %d, \"ops_per_s\": %g, "
                   "\"cpu_us_per_op\": %g}\n", round, s.name.c_str(), cl.c_str(), n, smp.ops_per_s, smp.cpu_us_per_op);
      std::fflush(out);
    }
  }
  if (out != stdout) std::fclose(out);
  std::fprintf(stderr, "(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}

// ---- OZO's table: connection per request, pool, 1..64 connections --------------
void ozo_table(const std::string& dsn, int rounds, double scale, const std::string& json_path) {
  asio::io_context io;
  std::map<std::string, std::vector<sample>> res;
  const long n_conn = std::max(5L, static_cast<long>(100 * scale));
  const long n_q = std::max(20L, static_cast<long>(2000 * scale));
  const long n_curve = std::max(8L, static_cast<long>(256 * scale));
  const auto& pgt = pgbench::shapes()[1];
  for (int round = 0; round < rounds; ++round) {
    std::fprintf(stderr, "ozo round %d\n", round);
    res["conn_per_request libpq"].push_back(measure(n_conn, [&] {
      for (long i = 0; i < n_conn; ++i) {
        PGconn* c = pq_connect(dsn);
        PQclear(PQexec(c, "SELECT 1"));
        PQfinish(c);
      }
    }));
    res["conn_per_request inlet"].push_back(measure(n_conn, [&] {
      asio::co_spawn(io, [&]() -> awaitable<void> {
        for (long i = 0; i < n_conn; ++i) {
          pg::connection c(io.get_executor());
          co_await c.async_connect(dsn);
          co_await c.async_query(pg::sql("SELECT 1"));
        }
      }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
      io.run();
      io.restart();
    }));
    {
      pg::connection c(io.get_executor());
      c.connect(dsn);
      res["reused_connection inlet"].push_back(measure(n_q, [&] {
        asio::co_spawn(io, [&]() -> awaitable<void> {
          for (long i = 0; i < n_q; ++i) co_await c.async_query(pg::sql("SELECT 1"));
        }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
        io.run();
        io.restart();
      }));
    }
    for (int conns : {1, 0, 2, 4, 8, 16, 32, 64}) {  // 0: the sequential pool row
      for (bool typed : {false, true}) {
        if (conns == 0 && typed) continue;
        pg::pool_options o;
        o.dsn = dsn;
        o.size = static_cast<std::size_t>(std::max(1, conns));
        pg::pool p(io.get_executor(), o);
        long total = conns == 0 ? n_q : n_curve, next = 0;
        auto body = [&]() -> awaitable<void> {
          while (next < total) {
            ++next;
            auto c = co_await p.async_acquire();
            if (conns == 0) {
              co_await c->async_query(pg::sql("SELECT 1"));
            } else if (typed) {
              std::vector<pg_type_row> rows;
              co_await c->async_query(pg::sql(pgt.sql, std::int32_t{-1}, true), pg::into(rows));
            } else {
              auto r = co_await c->async_query(pg::sql(pgt.sql, std::int32_t{-1}, true));
              sink += touch(r.native());
            }
          }
        };
        // warm every connection outside the timing
        for (int w = 0; w < std::max(1, conns); ++w)
          asio::co_spawn(io, [&]() -> awaitable<void> { auto c = co_await p.async_acquire(); co_await c->async_query(pg::sql("SELECT 1")); }, asio::detached);
        io.run();
        io.restart();
        std::string key = conns == 0 ? "pool inlet" : "pg_type " + std::string(typed ? "parsed" : "raw") + " conns=" + std::to_string(conns);
        res[key].push_back(measure(total, [&] {
          for (int w = 0; w < std::max(1, conns); ++w)
            asio::co_spawn(io, body, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
          io.run();
          io.restart();
        }));
        p.close();
        io.run();
        io.restart();
      }
    }
  }
  std::printf("| OZO row | req/s (median [min..max]) | client CPU us/req (median) |\n|---|---:|---:|\n");
  std::ofstream js;
  if (!json_path.empty()) js.open(json_path);
  if (js) js << "{\"rounds\": " << rounds << ", \"scale\": " << scale << ", \"results\": [";
  bool first = true;
  for (auto& [k, v] : res) {
    std::vector<double> ops, cpu;
    for (auto& x : v) ops.push_back(x.ops_per_s), cpu.push_back(x.cpu_us_per_op);
    auto [mn, mx] = std::minmax_element(ops.begin(), ops.end());
    std::printf("| %s | %.0f [%.0f..%.0f] | %.1f |\n", k.c_str(), median(ops), *mn, *mx, median(cpu));
    if (js) {
      js << (first ? "" : ",") << "\n {\"row\": \"" << k << "\", \"ops_per_s\": [";
      for (std::size_t i = 0; i < ops.size(); ++i) js << (i ? ", " : "") << ops[i];
      js << "], \"cpu_us_per_op\": [";
      for (std::size_t i = 0; i < cpu.size(); ++i) js << (i ? ", " : "") << cpu[i];
      js << "]}";
      first = false;
    }
  }
  if (js) js << "\n]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string dsn = std::getenv("INLET_PG_DSN") ? std::getenv("INLET_PG_DSN") : "";
  int rounds = 5, depth = 64;
  double scale = 1.0;
  std::string json_path, only;
  bool ozo = false;
  std::string only_client;
  int clients_n = 0, round_no = 1;  // --clients N: the N-concurrent-clients mode (JSON lines)
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--dsn") dsn = v;
    else if (a == "--rounds") rounds = std::stoi(v);
    else if (a == "--scale") scale = std::stod(v);
    else if (a == "--depth") depth = std::stoi(v);
    else if (a == "--json") json_path = v;
    else if (a == "--only") only = v;
    else if (a == "--ozo") ozo = v == "1";
    else if (a == "--client") only_client = v;
    else if (a == "--clients") clients_n = std::stoi(v);
    else if (a == "--round") round_no = std::stoi(v);
  }
  if (dsn.empty()) {
    std::fprintf(stderr, "no DSN (--dsn or INLET_PG_DSN)\n");
    return 2;
  }
  try {
    if (ozo) {
      ozo_table(dsn, rounds, scale, json_path);
      return 0;
    }
    PGconn* setup = pq_connect(dsn);
    PGresult* r = PQexec(setup, pgbench::setup_sql());
    if (PQresultStatus(r) != PGRES_COMMAND_OK) die(PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(setup);
    if (clients_n > 0) return multi_client_run(dsn, clients_n, round_no, scale, depth, json_path, only, only_client);

    asio::io_context io;
    const std::vector<std::string> clients = {"libpq_sync", "libpq_pipe", "inlet_seq_raw", "inlet_seq_typed",
                                              "inlet_pipe_raw", "inlet_pipe_typed", "inlet_batch"};
    // results[shape][client] = samples over rounds
    std::map<std::string, std::map<std::string, std::vector<sample>>> res;
    for (int round = 0; round < rounds; ++round) {
      for (const auto& s : pgbench::shapes()) {
        if (!only.empty() && s.name != only) continue;
        long ops = std::max(1L, static_cast<long>(static_cast<double>(base_ops(s.name)) * scale));
        // One fresh connection per client and shape, warmed (prepared) outside the timing.
        for (const auto& cl : clients) {
          if (!only_client.empty() && cl != only_client) continue;
          sample smp{};
          std::fprintf(stderr, "round %d %s %s\n", round, s.name.c_str(), cl.c_str());
          if (cl.rfind("libpq", 0) == 0) {
            PGconn* c = pq_connect(dsn);
            pq_prepare(c, s);
            libpq_sync(c, s, 1);
            if (cl == "libpq_sync") smp = measure(ops, [&] { libpq_sync(c, s, ops); });
            else smp = measure(ops, [&] { libpq_pipe(c, s, ops, depth); });
            PQfinish(c);
          } else {
            pg::connection c(io.get_executor());
            c.connect(dsn);
            bool typed = cl.find("typed") != std::string::npos;
            int d = cl.find("pipe") != std::string::npos ? depth : 1;
            inlet_any(io, c, s, 1, 1, typed);
            if (cl == "inlet_batch") smp = measure(ops, [&] { inlet_batch_any(io, c, s, ops, depth); });
            else smp = measure(ops, [&] { inlet_any(io, c, s, ops, d, typed); });
          }
          res[s.name][cl].push_back(smp);
        }
      }
    }
    // Table: medians and ratios against libpq in the same round.
    std::printf("| shape | client | ops/s (median) | CPU us/op (median) | ops/s vs libpq_sync | ops/s vs libpq_pipe | CPU/op vs libpq_pipe (median [min..max]) |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|\n");
    std::ofstream js;
    if (!json_path.empty()) js.open(json_path);
    if (js) js << "{\"depth\": " << depth << ", \"rounds\": " << rounds << ", \"scale\": " << scale << ", \"results\": [";
    bool first = true;
    for (const auto& s : pgbench::shapes()) {
      if (!res.count(s.name)) continue;
      auto& m = res[s.name];
      for (const auto& cl : clients) {
        if (!m.count(cl)) continue;
        auto& v = m[cl];
        // Ratios need the references of the same round (absent with --client).
        const bool refs = m.count("libpq_sync") && m.count("libpq_pipe");
        std::vector<double> ops, cpu, r_sync{0}, r_pipe{0}, c_pipe{0};
        if (refs) r_sync.clear(), r_pipe.clear(), c_pipe.clear();
        for (std::size_t i = 0; i < v.size(); ++i) {
          ops.push_back(v[i].ops_per_s);
          cpu.push_back(v[i].cpu_us_per_op);
          if (!refs) continue;
          r_sync.push_back(v[i].ops_per_s / m["libpq_sync"][i].ops_per_s);
          r_pipe.push_back(v[i].ops_per_s / m["libpq_pipe"][i].ops_per_s);
          c_pipe.push_back(v[i].cpu_us_per_op / m["libpq_pipe"][i].cpu_us_per_op);
        }
        auto [mn, mx] = std::minmax_element(c_pipe.begin(), c_pipe.end());
        std::printf("| %s | %s | %.0f | %.2f | %.2f | %.2f | %.2f [%.2f..%.2f] |\n", s.name.c_str(), cl.c_str(),
                    median(ops), median(cpu), median(r_sync), median(r_pipe), median(c_pipe), *mn, *mx);
        if (js) {
          js << (first ? "" : ",") << "\n {\"shape\": \"" << s.name << "\", \"client\": \"" << cl
             << "\", \"ops_per_s\": [";
          for (std::size_t i = 0; i < v.size(); ++i) js << (i ? ", " : "") << v[i].ops_per_s;
          js << "], \"cpu_us_per_op\": [";
          for (std::size_t i = 0; i < v.size(); ++i) js << (i ? ", " : "") << v[i].cpu_us_per_op;
          js << "]}";
          first = false;
        }
      }
    }
    if (js) js << "\n]}\n";
    std::fprintf(stderr, "(checksum %llu)\n", static_cast<unsigned long long>(sink));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pg_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
