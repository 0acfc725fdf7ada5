// Compiles a search::query into a SQL condition over the file store's columns (see
// schema.hpp), with the values to bind. Each term means what search::matches says:
// header fields and the search text are stored folded (BLOB columns, compared byte-wise
// with inlet_contains, schema.hpp), address lists as "name <address>" entries joined by '\n' (a query value
// never holds a '\n', so a substring of the joined text is a substring of one entry),
// tags as "\nfolded\n" runs (a whole-tag test is a substring test of "\nvalue\n"); the
// envelope's addresses are read from the meta column and folded on the search.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "file/sqlite.hpp"
#include "inlet/store/search.hpp"

namespace inlet::store::file {

struct sql_condition {
  std::string sql;  ///< "1" when the query is empty; columns prefixed with "m."
  std::vector<std::variant<std::int64_t, std::string>> values;  ///< strings bound as blobs
  /// Binds the values from parameter `first` on; returns the next free index.
  int bind(statement& st, int first) const;
};

sql_condition compile(const search::query& q);

/// Registers the functions compile() uses beside inlet_contains:
/// inlet_envelope_contains(meta, needle, which), the envelope sender (which 0) or any
/// envelope recipient (1) of a meta column, folded, holds needle.
void add_query_functions(connection& c);

}  // namespace inlet::store::file
