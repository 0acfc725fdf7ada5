// libpqxx (Debian's 6.4) on the shapes of bench/pg/shapes.hpp, for bench/pg/run.sh.
//   pqxx_bench DSN SCALE ROUND [CONNS=1]
// One JSON line per shape on stdout (client "pqxx_seq"), the format merge.py reads.
// Statements are prepared (connection::prepare) and run with exec_prepared in a
// nontransaction (autocommit: one implicit transaction per statement, as the others).
// libpqxx 6 sends parameters and receives results in text format (it has no binary
// mode for results), so its "raw" is text that every row's fields are converted from
// (as<T>(), binarystring for bytea, array_parser for int4[]). libpqxx's own pipeline
// class takes only plain query strings (no parameters, no prepared statements), so it
// is not measured. With CONNS > 1, CONNS threads each drive their own connection.
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "../shapes.hpp"

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long base_ops(const std::string& n) {  // as pg_bench.cpp
  if (n == "select1") return 4000;
  if (n == "pg_type") return 300;
  if (n == "series1000") return 800;
  if (n == "bytea100") return 1500;
  if (n == "intarr100") return 800;
  return 6;
}

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

std::uint64_t read_int_array(const pqxx::field& f, std::vector<std::int32_t>& out) {
  out.clear();
  auto p = f.as_array();
  for (auto [j, s] = p.get_next(); j != pqxx::array_parser::done; std::tie(j, s) = p.get_next()) {
    if (j != pqxx::array_parser::string_value) continue;
    std::int32_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    out.push_back(v);
  }
  return out.size() + static_cast<std::uint64_t>(out.empty() ? 0 : out[0]);
}

// Every field of every row converted into a C++ value; returns a checksum.
std::uint64_t read(const pgbench::shape& s, const pqxx::result& r) {
  std::uint64_t n = 0;
  if (s.name == "pg_type") {
    for (const auto& row : r) {
      pg_type_row t{row[0].as<std::string>(), row[1].as<std::uint32_t>(), row[2].as<std::uint32_t>(),
                    row[3].as<std::int16_t>(), row[4].as<bool>(), row[5].as<std::string>(),
                    row[6].as<bool>(), row[7].as<bool>(), row[8].as<std::string>(),
                    row[9].as<std::uint32_t>(), row[10].as<std::uint32_t>(), row[11].as<std::uint32_t>()};
      n += t.typname.size() + t.typnamespace + t.typowner + static_cast<std::uint64_t>(t.typlen) + t.typbyval +
           t.typcategory.size() + t.typispreferred + t.typisdefined + t.typdelim.size() + t.typrelid + t.typelem +
           t.typarray;
    }
  } else if (s.name == "bytea100") {
    for (const auto& row : r) n += pqxx::binarystring(row[0]).size();
  } else if (s.name == "intarr100") {
    std::vector<std::int32_t> a;
    for (const auto& row : r) n += read_int_array(row[0], a);
  } else {
    for (const auto& row : r) n += static_cast<std::uint64_t>(row[0].as<std::int32_t>());
  }
  return n;
}

std::uint64_t statement(pqxx::connection& c, const pgbench::shape& s, long i) {
  pqxx::nontransaction tx(c);
  if (s.name == "pg_type") return read(s, tx.exec_prepared("q", -1, true));
  if (s.name == "insert1000") {
    auto r = tx.exec_prepared("q", static_cast<std::int32_t>(i), "row " + std::to_string(i));
    return static_cast<std::uint64_t>(r.affected_rows());
  }
  return read(s, tx.exec_prepared("q"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: pqxx_bench DSN SCALE ROUND [CONNS]\n");
    return 2;
  }
  const std::string dsn = argv[1];
  const double scale = std::stod(argv[2]);
  const int round = std::stoi(argv[3]);
  const int conns = argc > 4 ? std::stoi(argv[4]) : 1;
  std::uint64_t checksum = 0;
  try {
    for (const auto& s : pgbench::shapes()) {
      const long ops = std::max(1L, static_cast<long>(static_cast<double>(base_ops(s.name)) * scale));
      const long total = ops * s.batch;
      std::vector<std::unique_ptr<pqxx::connection>> cs;
      for (int k = 0; k < conns; ++k) {  // fresh, prepared and warmed outside the timing
        cs.push_back(std::make_unique<pqxx::connection>(dsn));
        cs.back()->prepare("q", s.sql);
        checksum += statement(*cs.back(), s, 0);
      }
      std::vector<std::uint64_t> sums(static_cast<std::size_t>(conns));
      std::vector<std::string> errors(static_cast<std::size_t>(conns));
      auto work = [&](int k) {
        try {
          for (long i = k; i < total; i += conns) sums[static_cast<std::size_t>(k)] += statement(*cs[static_cast<std::size_t>(k)], s, i);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(k)] = e.what();
        }
      };
      const double c0 = cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      if (conns == 1) {
        work(0);
      } else {
        std::vector<std::thread> ts;
        for (int k = 0; k < conns; ++k) ts.emplace_back(work, k);
        for (auto& t : ts) t.join();
      }
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = cpu_seconds() - c0;
      for (auto& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
      for (auto x : sums) checksum += x;
      std::printf("{\"round\": %d, \"shape\": \"%s\", \"client\": \"pqxx_seq\", \"conns\": %d, \"ops_per_s\": %g, "
                  "\"cpu_us_per_op\": %g}\n",
                  round, s.name.c_str(), conns, static_cast<double>(ops) / wall, cpu * 1e6 / static_cast<double>(ops));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pqxx_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "(checksum %llu)\n", static_cast<unsigned long long>(checksum));
  return 0;
}
