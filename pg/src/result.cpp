#include "inlet/pg/result.hpp"

#include <string>
#include <vector>

namespace inlet::pg {

namespace detail {
namespace {
std::string col_desc(const PGresult* r, int col) {
  const char* n = PQfname(r, col);
  return "column " + std::to_string(col) + " \"" + (n ? n : "?") + "\"";
}
}  // namespace

std::error_code column_error(const PGresult* r, int col, oid_t got, oid_t want, diagnostics* d) {
  if (d) {
    d->clear();
    d->column = PQfname(r, col) ? PQfname(r, col) : "";
    d->client_message = col_desc(r, col) + ": the C++ type maps to " + type_name(want) + " (oid " +
                        std::to_string(want) + "), the server sent " + type_name(got) + " (oid " +
                        std::to_string(got) + ")";
  }
  return make_error_code(errc::type_mismatch);
}

std::error_code count_error(const PGresult* r, std::size_t want, diagnostics* d) {
  if (d) {
    d->clear();
    d->client_message = "the C++ row type has " + std::to_string(want) + " fields, the result has " +
                        std::to_string(PQnfields(r)) + " columns";
  }
  return make_error_code(errc::column_count_mismatch);
}

std::error_code value_error(const PGresult* r, int row, int col, std::error_code ec, diagnostics* d) {
  if (d) {
    d->clear();
    d->column = PQfname(r, col) ? PQfname(r, col) : "";
    d->client_message = col_desc(r, col) + ", row " + std::to_string(row) + ": " + ec.message();
  }
  return ec;
}

std::error_code match_columns(const PGresult* r, const std::string_view* names, std::size_t n, int* cols,
                              diagnostics* d) {
  const int ncols = PQnfields(r);
  std::vector<bool> used(static_cast<std::size_t>(ncols), false);
  std::string missing, extra;
  for (std::size_t i = 0; i < n; ++i) {
    cols[i] = -1;
    for (int c = 0; c < ncols; ++c) {
      if (!used[static_cast<std::size_t>(c)] && names[i] == PQfname(r, c)) {
        cols[i] = c;
        used[static_cast<std::size_t>(c)] = true;
        break;
      }
    }
    if (cols[i] < 0) missing.append(missing.empty() ? "\"" : ", \"").append(names[i]).append("\"");
  }
  for (int c = 0; c < ncols; ++c)
    if (!used[static_cast<std::size_t>(c)])
      extra.append(extra.empty() ? "\"" : ", \"").append(PQfname(r, c)).append("\"");
  if (missing.empty() && extra.empty()) return ok();
  if (d) {
    d->clear();
    std::string m = "the row type's fields are matched to columns by name:";
    if (!missing.empty()) m += " no column for field(s) " + missing + ";";
    if (!extra.empty()) m += " column(s) " + extra + " match no field;";
    m.pop_back();
    d->client_message = std::move(m);
  }
  return make_error_code(errc::column_count_mismatch);
}
}  // namespace detail

diagnostics result::error_diagnostics() const {
  diagnostics d;
  if (!r_) return d;
  auto f = [&](int code) {
    const char* s = PQresultErrorField(r_.get(), code);
    return std::string(s ? s : "");
  };
  d.severity = f(PG_DIAG_SEVERITY_NONLOCALIZED);
  d.sqlstate = f(PG_DIAG_SQLSTATE);
  d.message = f(PG_DIAG_MESSAGE_PRIMARY);
  d.detail = f(PG_DIAG_MESSAGE_DETAIL);
  d.hint = f(PG_DIAG_MESSAGE_HINT);
  d.context = f(PG_DIAG_CONTEXT);
  d.table = f(PG_DIAG_TABLE_NAME);
  d.column = f(PG_DIAG_COLUMN_NAME);
  d.constraint = f(PG_DIAG_CONSTRAINT_NAME);
  auto pos = f(PG_DIAG_STATEMENT_POSITION);
  d.position = pos.empty() ? 0 : std::atoi(pos.c_str());
  return d;
}

}  // namespace inlet::pg
