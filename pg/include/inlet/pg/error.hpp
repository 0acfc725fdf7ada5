// Errors of inlet::pg: one errc enum + category for the client's own errors, a second
// category for server SQLSTATEs, and portable conditions that both map onto
// (connection_error, timeout, type_mismatch, database_readonly, unique_violation, ...).
// Server-side text is kept apart from the client's own text in `diagnostics`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace inlet::pg {

/// The client's own errors (never a server SQLSTATE; those use sqlstate_category()).
enum class errc {
  ok = 0,
  connection_error = 1,   ///< connect failed, socket error, server went away
  not_connected,          ///< operation on a connection that is not open
  protocol_error,         ///< libpq returned something the client did not expect
  timeout,                ///< the per-operation timeout expired
  type_mismatch,          ///< a column's OID does not match the C++ type (diagnostics name it)
  column_count_mismatch,  ///< the row has a different number of columns than the C++ row type
  unexpected_null,        ///< NULL read into a non-optional
  invalid_value,          ///< binary value malformed or out of range for the C++ type
  no_rows,                ///< exactly one row was expected, none came
  pipeline_aborted,       ///< an earlier statement of the same batch failed
  pool_queue_full,        ///< pool acquisition queue limit reached
  pool_timeout,           ///< no connection became free in time
  pool_closed,            ///< the pool was shut down
  busy,                   ///< a synchronous call on a connection that has async operations
  connect_timeout,        ///< every host's connect attempt reached its deadline
  transaction_closed,     ///< a statement on a transaction that is over or was moved from
  /// The connection was lost, or the wait given up, after COMMIT was sent: the
  /// transaction may or may not have committed. Not a connection_error: retrying the
  /// transaction blindly could apply it twice.
  commit_outcome_unknown,
  transaction_aborted,  ///< COMMIT of a transaction in which a statement had failed: rolled back
  no_host,              ///< cluster: no host of the requested role (primary, replica) in time
  copy_closed,  ///< a COPY writer/reader used after its COPY ended (finished, aborted, failed)
};

const std::error_category& pg_category() noexcept;

namespace detail {
// A success value built once: `std::error_code{}` calls std::system_category(), an
// out-of-line function, and decoders return success once per field (callgrind).
inline const std::error_code no_error{};
inline std::error_code ok() noexcept {
  return no_error;
}
}  // namespace detail
std::error_code make_error_code(errc e) noexcept;

/// Category of server errors: the value is the SQLSTATE packed by sqlstate_to_int().
const std::error_category& sqlstate_category() noexcept;
constexpr int sqlstate_to_int(std::string_view s) noexcept {
  int v = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    char c = i < s.size() ? s[i] : '0';
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'Z') ? c - 'A' + 10 : 0;
    v = v * 36 + d;
  }
  return v;
}
std::string sqlstate_to_string(int v);
inline std::error_code make_sqlstate_error(std::string_view s) noexcept {
  return {sqlstate_to_int(s), sqlstate_category()};
}

/// Portable conditions: compare any error_code from this library against these.
enum class condition {
  connection_error = 1,  ///< errc::connection_error/not_connected/connect_timeout/no_host, SQLSTATE
                         ///< class 08, 57P01..03
  timeout,               ///< errc::timeout, errc::pool_timeout, errc::connect_timeout
  type_mismatch,        ///< errc::type_mismatch/column_count_mismatch/unexpected_null/invalid_value
  database_readonly,    ///< SQLSTATE 25006
  unique_violation,     ///< SQLSTATE 23505
  integrity_violation,  ///< SQLSTATE class 23
  serialization_failure,  ///< SQLSTATE 40001
  deadlock_detected,      ///< SQLSTATE 40P01
  query_canceled,         ///< SQLSTATE 57014
  syntax_error,           ///< SQLSTATE class 42
  server_error,           ///< any SQLSTATE
};
const std::error_category& condition_category() noexcept;
std::error_condition make_error_condition(condition c) noexcept;

/// Detail of the last failure. Server fields are empty for client-side errors;
/// client_message holds the client's own text (libpq's message or ours).
struct diagnostics {
  std::string severity, sqlstate, message, detail, hint, context;
  std::string schema, table, column, constraint;
  int position = 0;  ///< 1-based character position in the query text, 0 if none
  std::string client_message;

  void clear() { *this = diagnostics{}; }
  /// One line: "ERROR 23505: duplicate key ... DETAIL: ... (client: ...)".
  std::string to_string() const;
};

/// Thrown by the synchronous throwing overloads; carries the diagnostics.
class error : public std::system_error {
 public:
  error(std::error_code ec, diagnostics d);
  const diagnostics& diag() const noexcept { return diag_; }

 private:
  diagnostics diag_;
};

}  // namespace inlet::pg

template <>
struct std::is_error_code_enum<inlet::pg::errc> : std::true_type {};
template <>
struct std::is_error_condition_enum<inlet::pg::condition> : std::true_type {};
