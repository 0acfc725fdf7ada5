// inlet::pg part 2b figures: typed reads of user-defined types against the raw (untyped)
// read of the same result, and the _SQL builder against pg::sql. One process, one
// throwaway server (scripts/with-postgres.sh), A and B alternating within each round;
// the table shows the median ratio and its [min..max] over rounds.
//
//   types_bench [--rounds N] [--rows N] [--reps N]      (DSN from INLET_PG_DSN)
//
// Shapes:
//   attach10     1000 rows (int8, text, mail.attach[10]): decode the fetched result into
//                std::vector<std::tuple<int64, string, vector<attach>>> vs walk every
//                field's bytes (the raw read). Decode-only, the result fetched once.
//   attach10_e2e the same query end to end (fetch + decode vs fetch + walk).
//   pg_type      OZO's pg_type query: by name into a described struct vs raw.
//   builder      "... = "_SQL + uid + " ... ANY("_SQL + mids + ")"_SQL built and bound
//                vs pg::sql(text, uid, mids) bound (no server).
#include <boost/describe/class.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

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
                      (typname, typnamespace, typowner, typlen, typbyval, typcategory, typispreferred, typisdefined,
                       typdelim, typrelid, typelem, typarray))

volatile std::size_t sink;

std::size_t walk_raw(const pg::result& r) {  // the untyped read: every field's bytes
  std::size_t n = 0;
  for (int i = 0; i < r.rows(); ++i)
    for (int c = 0; c < r.columns(); ++c) {
      auto f = r.at(i, c);
      n += f.bytes().size() + (f.is_null() ? 0 : static_cast<unsigned char>(f.bytes().empty() ? 0 : f.data[0]));
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
  const double amin = *std::min_element(r.a.begin(), r.a.end()), bmin = *std::min_element(r.b.begin(), r.b.end());
  std::printf("| %s | %s %.2f us (min %.2f) | %s %.2f us (min %.2f) | %.3f [%.3f..%.3f] | %.3f |\n", r.shape.c_str(),
              a_name, med(r.a) / 1000, amin / 1000, b_name, med(r.b) / 1000, bmin / 1000, med(ratio),
              *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()),
              amin / bmin);
}
}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, nrows = 1000, reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rows")) nrows = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
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
  for (const char* q : {"SET client_min_messages = warning", "DROP SCHEMA IF EXISTS mail CASCADE", "CREATE SCHEMA mail",
                        "CREATE TYPE mail.attach AS (filename text, type text, size bigint)",
                        "CREATE TABLE mail.messages (mid bigint, st_id text, attaches mail.attach[])"})
    c.execute(pg::query<>(q));
  c.execute(pg::sql("INSERT INTO mail.messages SELECT g, 'st' || g, (SELECT array_agg(ROW('file' || k || '.txt', "
                    "'text/plain', g * k)::mail.attach) FROM generate_series(1, 10) k) FROM generate_series(1, $1) g",
                    nrows));
  pg::lookup_types(c, *types);

  const auto q_attach = pg::sql("SELECT mid, st_id, attaches FROM mail.messages");
  const auto q_type = pg::sql(
      "SELECT typname::text, typnamespace, typowner, typlen, typbyval, typcategory::text, typispreferred, "
      "typisdefined, typdelim::text, typrelid, typelem, typarray FROM pg_type WHERE typtypmod = $1 AND "
      "typisdefined = $2",
      -1, true);
  using attach_row = std::tuple<std::int64_t, std::string, std::vector<attach>>;
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
      const auto q = "SELECT mid, st_id, attaches FROM mail.messages WHERE uid = "_SQL + uid + " AND mid = ANY("_SQL +
                     mids + ")"_SQL;
      std::error_code ec;
      pb.clear();
      q.bind(pb, ec);
      sink = pb.data.size() + q.text().size();
    }));
    build.b.push_back(time_ns(reps * 5000, [&] {
      const auto q = pg::sql("SELECT mid, st_id, attaches FROM mail.messages WHERE uid = $1 AND mid = ANY($2)", uid, mids);
      std::error_code ec;
      pb.clear();
      q.bind(pb, ec);
      sink = pb.data.size() + q.text().size();
    }));
  }
  std::printf("| shape | A | B | A/B median [min..max] over %d rounds | min A / min B |\n|---|---:|---:|---:|---:|\n",
              rounds);
  print(decode, "typed", "raw");
  print(e2e, "typed", "raw");
  print(by_name, "by name", "raw");
  print(build, "_SQL", "pg::sql");
  std::printf("(pg_type rows: %d; attach rows: %d)\n", fetched_type.rows(), fetched.rows());
  return 0;
}
