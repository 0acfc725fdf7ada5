// inlet::pg part 2b figures: typed reads of user-defined types against the raw (untyped)
// read of the same result, and the _SQL builder against pg::sql. One process, one
// throwaway server (scripts/with-postgres.sh), A and B alternating within each round;
// the table shows the median ratio and its [min..max] over rounds.
//
//   types_bench [--rounds N] [--rows N] [--reps N]      (DSN from INLET_PG_DSN)
//               [--e2e-only] [--json FILE --round R] [--setup-only | --no-setup]
//
// --e2e-only measures only the two end-to-end reads (the shapes bench/pg/types.sh runs
// side by side with asyncpg, bench/pg/asyncpg_types_bench.py): each request is a
// co_await on the connection, as a user's coroutine issues it; wall time and this
// process's CPU (getrusage) per request go to FILE as JSON lines. --setup-only creates
// the schema and rows and exits; --no-setup reuses them.
//
// Shapes:
//   attach10     1000 rows (int8, text, mail.attach[10]): decode the fetched result into
//                std::vector<std::tuple<int64, string, vector<attach>>> vs walk every
//                field's bytes (the raw read). Decode-only, the result fetched once.
//   attach10_e2e the same query end to end (fetch + decode vs fetch + walk).
//   pg_type      OZO's pg_type query: by name into a described struct vs raw (decode
//                only, and end to end).
//   builder      "... = "_SQL + uid + " ... ANY("_SQL + mids + ")"_SQL built and bound
//                vs pg::sql(text, uid, mids) bound (no server).
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/describe/class.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "inlet/pg/builder.hpp"
#include "inlet/pg/connection.hpp"
#include "inlet/pg/type_lookup.hpp"

namespace pg = inlet::pg;
using namespace pg::literals;
using clk = std::chrono::steady_clock;

namespace {
struct attach {
  std::string filename, type;
  std::int64_t size;
  static constexpr std::string_view pg_type_name = "mail.attach";
};
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
BOOST_DESCRIBE_STRUCT(pg_type_row, (),
                      (typname, typnamespace, typowner, typlen, typbyval, typcategory,
                       typispreferred, typisdefined, typdelim, typrelid, typelem, typarray))

volatile std::size_t sink;

double cpu_seconds() {  // this process's user + sys time
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::size_t walk_raw(const pg::result& r) {  // the untyped read: every field's bytes
  std::size_t n = 0;
  for (int i = 0; i < r.rows(); ++i)
    for (int c = 0; c < r.columns(); ++c) {
      auto f = r.at(i, c);
      n += f.bytes().size() +
           (f.is_null() ? 0 : static_cast<unsigned char>(f.bytes().empty() ? 0 : f.data[0]));
    }
  return n;
}

template <class F>
double time_ns(int reps, F&& f) {
  auto t0 = clk::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / reps;
}

struct row_out {
  std::string shape;
  std::vector<double> a, b;  // ns per op, per round
};
void print(const row_out& r, const char* a_name, const char* b_name) {
  std::vector<double> ratio;
  for (std::size_t i = 0; i < r.a.size(); ++i) ratio.push_back(r.a[i] / r.b[i]);
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double amin = *std::min_element(r.a.begin(), r.a.end()),
               bmin = *std::min_element(r.b.begin(), r.b.end());
  std::printf("| %s | %s %.2f us (min %.2f) | %s %.2f us (min %.2f) | %.3f [%.3f..%.3f] | %.3f |\n",
              r.shape.c_str(), a_name, med(r.a) / 1000, amin / 1000, b_name, med(r.b) / 1000,
              bmin / 1000, med(ratio), *std::min_element(ratio.begin(), ratio.end()),
              *std::max_element(ratio.begin(), ratio.end()), amin / bmin);
}
}  // namespace

struct e2e_sample {
  double wall_us, cpu_us;  // per request
};
// `ops` requests, one co_await after another on c (run on io until done).
template <class F>
e2e_sample run_e2e(boost::asio::io_context& io, int ops, F body) {
  const double c0 = cpu_seconds();
  const auto t0 = clk::now();
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        for (int i = 0; i < ops; ++i) co_await body();
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  io.restart();
  const double wall = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
  return {wall / ops, (cpu_seconds() - c0) * 1e6 / ops};
}
void json_line(std::FILE* f, int round, const char* shape, const char* client, int rows,
               const e2e_sample& s) {
  if (!f) return;
  std::fprintf(f,
               "{\"round\": %d, \"shape\": \"%s\", \"client\": \"%s\", \"rows\": %d, "
               "\"wall_us_per_op\": %.2f, "
               "\"cpu_us_per_op\": %.2f}\n",
               round, shape, client, rows, s.wall_us, s.cpu_us);
  std::fflush(f);
}

constexpr const char* attach_sql = "SELECT mid, st_id, attaches FROM mail.messages";
constexpr const char* pg_type_sql =
    "SELECT typname::text, typnamespace, typowner, typlen, typbyval, typcategory::text, "
    "typispreferred, "
    "typisdefined, typdelim::text, typrelid, typelem, typarray FROM pg_type WHERE typtypmod = $1 "
    "AND "
    "typisdefined = $2";
using attach_row = std::tuple<std::int64_t, std::string, std::vector<attach>>;

// The end-to-end reads, typed and raw alternating within each round (the order flips
// every round), as JSON lines for bench/pg/types.sh and a table on stdout.
void e2e_only(boost::asio::io_context& io, pg::connection& c, int rounds, int first_round, int reps,
              std::FILE* json) {
  const auto q_attach = pg::sql(attach_sql);
  const auto q_type = pg::sql(pg_type_sql, -1, true);
  int n_attach = 0, n_type = 0;
  auto attach_typed = [&]() -> boost::asio::awaitable<void> {
    std::vector<attach_row> rows;
    co_await c.async_query(q_attach, pg::into(rows));
    n_attach = static_cast<int>(rows.size());
    sink = rows.size();
  };
  auto attach_raw = [&]() -> boost::asio::awaitable<void> {
    pg::result r = co_await c.async_query(q_attach);
    sink = walk_raw(r);
  };
  auto type_typed = [&]() -> boost::asio::awaitable<void> {
    std::vector<pg_type_row> rows;
    co_await c.async_query(q_type, pg::into(rows));
    n_type = static_cast<int>(rows.size());
    sink = rows.size();
  };
  auto type_raw = [&]() -> boost::asio::awaitable<void> {
    pg::result r = co_await c.async_query(q_type);
    sink = walk_raw(r);
  };
  // Warm: statements prepared, OID map used, heap grown, outside the clock.
  run_e2e(io, 2, attach_typed), run_e2e(io, 2, attach_raw), run_e2e(io, 2, type_typed),
      run_e2e(io, 2, type_raw);
  row_out a{"attach10 end to end (co_await)", {}, {}},
      t{"pg_type by name end to end (co_await)", {}, {}};
  for (int r = 0; r < rounds; ++r) {
    const int round = first_round + r;
    const bool flip = round % 2 != 0;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) != flip) {
        auto s = run_e2e(io, reps, attach_typed);
        a.a.push_back(s.wall_us * 1000);
        json_line(json, round, "attach10", "inlet_typed", n_attach, s);
        auto u = run_e2e(io, reps * 4, type_typed);
        t.a.push_back(u.wall_us * 1000);
        json_line(json, round, "pg_type", "inlet_typed", n_type, u);
      } else {
        auto s = run_e2e(io, reps, attach_raw);
        a.b.push_back(s.wall_us * 1000);
        json_line(json, round, "attach10", "inlet_raw", n_attach, s);
        auto u = run_e2e(io, reps * 4, type_raw);
        t.b.push_back(u.wall_us * 1000);
        json_line(json, round, "pg_type", "inlet_raw", n_type, u);
      }
    }
  }
  std::printf(
      "| shape | A | B | A/B median [min..max] over %d rounds | min A / min B "
      "|\n|---|---:|---:|---:|---:|\n",
      rounds);
  print(a, "typed", "raw");
  print(t, "by name", "raw");
}
int main(int argc, char** argv) {
  int rounds = 7, nrows = 1000, reps = 20, first_round = 1;
  bool e2e_mode = false, setup = true, setup_only = false;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const bool has = i + 1 < argc;
    if (!std::strcmp(argv[i], "--e2e-only"))
      e2e_mode = true;
    else if (!std::strcmp(argv[i], "--no-setup"))
      setup = false;
    else if (!std::strcmp(argv[i], "--setup-only"))
      setup_only = true;
    else if (has && !std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[++i]);
    else if (has && !std::strcmp(argv[i], "--rows"))
      nrows = std::atoi(argv[++i]);
    else if (has && !std::strcmp(argv[i], "--reps"))
      reps = std::atoi(argv[++i]);
    else if (has && !std::strcmp(argv[i], "--round"))
      first_round = std::atoi(argv[++i]);
    else if (has && !std::strcmp(argv[i], "--json"))
      json_path = argv[++i];
    else {
      std::fprintf(stderr, "types_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  const char* dsn = std::getenv("INLET_PG_DSN");
  if (!dsn) {
    std::fprintf(stderr, "INLET_PG_DSN not set (run under scripts/with-postgres.sh)\n");
    return 2;
  }
  boost::asio::io_context io;
  auto types = pg::register_types<attach>();
  pg::connection_options o;
  o.types = types;
  pg::connection c(io.get_executor(), o);
  c.connect(dsn);
  if (setup || setup_only) {
    for (const char* q :
         {"SET client_min_messages = warning", "DROP SCHEMA IF EXISTS mail CASCADE",
          "CREATE SCHEMA mail",
          "CREATE TYPE mail.attach AS (filename text, type text, size bigint)",
          "CREATE TABLE mail.messages (mid bigint, st_id text, attaches mail.attach[])"})
      c.execute(pg::query<>(q));
    c.execute(
        pg::sql("INSERT INTO mail.messages SELECT g, 'st' || g, (SELECT array_agg(ROW('file' || k "
                "|| '.txt', "
                "'text/plain', g * k)::mail.attach) FROM generate_series(1, 10) k) FROM "
                "generate_series(1, $1) g",
                nrows));
    c.execute(pg::query<>("VACUUM ANALYZE mail.messages"));
  }
  if (setup_only) return 0;
  pg::lookup_types(c, *types);
  if (e2e_mode) {
    std::FILE* json = json_path ? std::fopen(json_path, "a") : nullptr;
    if (json_path && !json) {
      std::perror(json_path);
      return 2;
    }
    e2e_only(io, c, rounds, first_round, reps, json);
    if (json) std::fclose(json);
    return 0;
  }

  const auto q_attach = pg::sql(attach_sql);
  const auto q_type = pg::sql(pg_type_sql, -1, true);
  pg::result fetched = c.query(q_attach);
  pg::result fetched_type = c.query(q_type);
  const pg::type_map* map = types.get();

  row_out decode{"attach10 decode (1000 rows)", {}, {}}, e2e{"attach10 end to end", {}, {}},
      by_name{"pg_type by name, decode", {}, {}}, build{"builder build+bind", {}, {}};
  std::int64_t uid = 42;
  std::vector<std::int64_t> mids{1, 2, 3, 4, 5};
  pg::detail::param_buffer pb;
  for (int r = 0; r < rounds; ++r) {
    decode.a.push_back(time_ns(reps, [&] {
      pg::detail::type_scope s(map);
      std::vector<attach_row> rows;
      if (fetched.read_all<attach_row>(rows)) std::abort();
      sink = rows.size();
    }));
    decode.b.push_back(time_ns(reps, [&] { sink = walk_raw(fetched); }));
    e2e.a.push_back(time_ns(reps / 4 + 1, [&] {
      std::vector<attach_row> rows;
      c.query(q_attach, pg::into(rows));
      sink = rows.size();
    }));
    e2e.b.push_back(time_ns(reps / 4 + 1, [&] { sink = walk_raw(c.query(q_attach)); }));
    by_name.a.push_back(time_ns(reps * 10, [&] {
      std::vector<pg_type_row> rows;
      if (fetched_type.read_all<pg_type_row>(rows)) std::abort();
      sink = rows.size();
    }));
    by_name.b.push_back(time_ns(reps * 10, [&] { sink = walk_raw(fetched_type); }));
    build.a.push_back(time_ns(reps * 5000, [&] {
      const auto q = "SELECT mid, st_id, attaches FROM mail.messages WHERE uid = "_SQL + uid +
                     " AND mid = ANY("_SQL + mids + ")"_SQL;
      std::error_code ec;
      pb.clear();
      q.bind(pb, ec);
      sink = pb.data.size() + q.text().size();
    }));
    build.b.push_back(time_ns(reps * 5000, [&] {
      const auto q =
          pg::sql("SELECT mid, st_id, attaches FROM mail.messages WHERE uid = $1 AND mid = ANY($2)",
                  uid, mids);
      std::error_code ec;
      pb.clear();
      q.bind(pb, ec);
      sink = pb.data.size() + q.text().size();
    }));
  }
  std::printf(
      "| shape | A | B | A/B median [min..max] over %d rounds | min A / min B "
      "|\n|---|---:|---:|---:|---:|\n",
      rounds);
  print(decode, "typed", "raw");
  print(e2e, "typed", "raw");
  print(by_name, "by name", "raw");
  print(build, "_SQL", "pg::sql");
  std::printf("(pg_type rows: %d; attach rows: %d)\n", fetched_type.rows(), fetched.rows());
  return 0;
}
