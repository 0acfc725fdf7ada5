// Benchmark shapes shared by every client program (OZO's and asyncpg's shapes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pgbench {

struct shape {
  std::string name;
  std::string sql;       // $n placeholders
  int params;            // 0, or 2 for pg_type (int4 -1, bool true)
  int batch;             // statements per operation (1000 for the insert batch)
};

inline const std::vector<shape>& shapes() {
  static const std::vector<shape> s = {
      {"select1", "SELECT 1+1", 0, 1},
      {"pg_type", "SELECT typname, typnamespace, typowner, typlen, typbyval, typcategory, typispreferred, "
                  "typisdefined, typdelim, typrelid, typelem, typarray FROM pg_type WHERE typtypmod = $1 "
                  "AND typisdefined = $2", 2, 1},
      {"series1000", "SELECT i FROM generate_series(1, 1000) AS i", 0, 1},
      {"bytea100", "SELECT b FROM bench_bytes", 0, 1},
      {"intarr100", "SELECT a FROM bench_arrays", 0, 1},
      {"insert1000", "INSERT INTO bench_ins (a, b) VALUES ($1, $2)", 2, 1000},
  };
  return s;
}

inline const char* setup_sql() {
  return "DROP TABLE IF EXISTS bench_bytes, bench_arrays, bench_ins;"
         "CREATE TABLE bench_bytes AS SELECT decode(repeat('ab', 1000), 'hex') AS b FROM generate_series(1, 100);"
         "CREATE TABLE bench_arrays AS SELECT array_agg(j)::int4[] AS a FROM generate_series(1, 100) i, "
         "generate_series(1, 100) j GROUP BY i;"
         "CREATE TABLE bench_ins (a int4, b text);";
}

}  // namespace pgbench
