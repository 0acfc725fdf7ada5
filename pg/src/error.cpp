#include "inlet/pg/error.hpp"

namespace inlet::pg {

namespace {
struct pg_cat final : std::error_category {
  const char* name() const noexcept override { return "inlet.pg"; }
  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
      case errc::ok:
        return "ok";
      case errc::connection_error:
        return "connection error";
      case errc::not_connected:
        return "not connected";
      case errc::protocol_error:
        return "protocol error";
      case errc::timeout:
        return "operation timed out";
      case errc::type_mismatch:
        return "column type does not match the C++ type";
      case errc::column_count_mismatch:
        return "column count does not match the C++ row type";
      case errc::unexpected_null:
        return "NULL read into a non-optional value";
      case errc::invalid_value:
        return "invalid binary value";
      case errc::no_rows:
        return "no rows";
      case errc::pipeline_aborted:
        return "an earlier statement in the pipeline failed";
      case errc::pool_queue_full:
        return "pool acquisition queue is full";
      case errc::pool_timeout:
        return "timed out waiting for a pooled connection";
      case errc::pool_closed:
        return "pool closed";
      case errc::busy:
        return "connection has asynchronous operations in flight";
      case errc::connect_timeout:
        return "connect timed out";
      case errc::transaction_closed:
        return "the transaction is over (committed, rolled back or moved from)";
      case errc::commit_outcome_unknown:
        return "COMMIT was sent but the connection was lost: outcome unknown";
      case errc::transaction_aborted:
        return "COMMIT of a transaction in which a statement failed: rolled back";
      case errc::no_host:
        return "no host of the requested role is reachable";
      case errc::copy_closed:
        return "the COPY is over (finished, aborted or failed)";
    }
    return "unknown inlet.pg error";
  }
  std::error_condition default_error_condition(int v) const noexcept override;
};

struct sqlstate_cat final : std::error_category {
  const char* name() const noexcept override { return "sqlstate"; }
  std::string message(int v) const override { return "SQLSTATE " + sqlstate_to_string(v); }
};

struct cond_cat final : std::error_category {
  const char* name() const noexcept override { return "inlet.pg.condition"; }
  std::string message(int v) const override {
    switch (static_cast<condition>(v)) {
      case condition::connection_error:
        return "connection error";
      case condition::timeout:
        return "timeout";
      case condition::type_mismatch:
        return "type mismatch";
      case condition::database_readonly:
        return "database is read-only";
      case condition::unique_violation:
        return "unique violation";
      case condition::integrity_violation:
        return "integrity constraint violation";
      case condition::serialization_failure:
        return "serialization failure";
      case condition::deadlock_detected:
        return "deadlock detected";
      case condition::query_canceled:
        return "query canceled";
      case condition::syntax_error:
        return "syntax error or access rule violation";
      case condition::server_error:
        return "server error";
    }
    return "unknown condition";
  }
  bool equivalent(const std::error_code& ec, int cv) const noexcept override {
    auto c = static_cast<condition>(cv);
    if (ec.category() == pg_category()) {
      auto e = static_cast<errc>(ec.value());
      switch (c) {
        case condition::connection_error:
          return e == errc::connection_error || e == errc::not_connected ||
                 e == errc::connect_timeout || e == errc::no_host;
        case condition::timeout:
          return e == errc::timeout || e == errc::pool_timeout || e == errc::connect_timeout;
        case condition::type_mismatch:
          return e == errc::type_mismatch || e == errc::column_count_mismatch ||
                 e == errc::unexpected_null || e == errc::invalid_value;
        default:
          return false;
      }
    }
    if (ec.category() == sqlstate_category()) {
      std::string s = sqlstate_to_string(ec.value());
      std::string_view cls = std::string_view(s).substr(0, 2);
      switch (c) {
        case condition::connection_error:
          return cls == "08" || s == "57P01" || s == "57P02" || s == "57P03";
        case condition::database_readonly:
          return s == "25006";
        case condition::unique_violation:
          return s == "23505";
        case condition::integrity_violation:
          return cls == "23";
        case condition::serialization_failure:
          return s == "40001";
        case condition::deadlock_detected:
          return s == "40P01";
        case condition::query_canceled:
          return s == "57014";
        case condition::syntax_error:
          return cls == "42";
        case condition::server_error:
          return true;
        default:
          return false;
      }
    }
    return false;
  }
};

const pg_cat pg_cat_instance;
const sqlstate_cat sqlstate_cat_instance;
const cond_cat cond_cat_instance;

std::error_condition pg_cat::default_error_condition(int v) const noexcept {
  return {v, *this};
}
}  // namespace

const std::error_category& pg_category() noexcept {
  return pg_cat_instance;
}
const std::error_category& sqlstate_category() noexcept {
  return sqlstate_cat_instance;
}
const std::error_category& condition_category() noexcept {
  return cond_cat_instance;
}
std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), pg_cat_instance};
}
std::error_condition make_error_condition(condition c) noexcept {
  return {static_cast<int>(c), cond_cat_instance};
}

std::string sqlstate_to_string(int v) {
  std::string s(5, '0');
  for (int i = 4; i >= 0; --i) {
    int d = v % 36;
    v /= 36;
    s[static_cast<std::size_t>(i)] = static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10);
  }
  return s;
}

std::string diagnostics::to_string() const {
  std::string s;
  if (!sqlstate.empty()) {
    s = (severity.empty() ? std::string("ERROR") : severity) + " " + sqlstate + ": " + message;
    if (!detail.empty()) s += " DETAIL: " + detail;
    if (!hint.empty()) s += " HINT: " + hint;
    if (position) s += " POSITION: " + std::to_string(position);
  }
  if (!client_message.empty())
    s += (s.empty() ? "" : " ") + std::string("(client: ") + client_message + ")";
  return s;
}

error::error(std::error_code ec, diagnostics d)
    : std::system_error(ec, d.to_string()), diag_(std::move(d)) {}

}  // namespace inlet::pg
