// Explicit batches: many statements sent as one pipeline segment with a single Sync.
//
//   pg::batch b;
//   b.add("INSERT INTO t (a, b) VALUES ($1, $2)", std::int32_t{1}, std::string("x"))
//    .add("UPDATE u SET n = n + 1 WHERE id = $1", std::int64_t{7});
//   pg::batch_result r = co_await conn.async_execute(std::move(b));
//   r.affected_rows(0);  // per statement
//
// Semantics (PostgreSQL's, for statements between two Syncs):
// - All or nothing. Outside an explicit transaction the statements of a batch run in one
//   implicit transaction: it commits at the Sync, and an error rolls back every statement
//   of the batch. Inside a transaction (BEGIN before the batch) an error leaves that
//   transaction failed, as any failing statement would.
// - After a failure the server skips the rest of the batch (libpq reports each skipped
//   statement as PGRES_PIPELINE_ABORTED). The operation completes with the failing
//   statement's error (e.g. a SQLSTATE), `batch_result::failed` is its index and
//   `results[failed]` holds its error result; later statements have empty results.
// - Other requests pipelined on the same connection have their own Syncs and are never
//   affected by a failing batch.
//
// Values are encoded when added (binary, with their OIDs), so a batch owns its
// parameters; the SQL texts are *viewed* (they must outlive the operation; literals do).
//
// Thread-safety: a batch is a value; one thread at a time. A batch moved into an
// operation belongs to it until completion.
#pragma once
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "inlet/pg/query.hpp"
#include "inlet/pg/result.hpp"

namespace inlet::pg {

namespace detail {
class conn_impl;
}

/// What a batch gives back: one result per statement (in order).
struct batch_result {
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  std::vector<result> results;  ///< results[i]: statement i (empty when it did not run)
  std::size_t failed = npos;    ///< index of the statement that failed, or npos

  std::size_t size() const noexcept { return results.size(); }
  std::uint64_t affected_rows(std::size_t i) const noexcept { return results[i].affected_rows(); }
};

class batch {
 public:
  batch() = default;
  /// A batch whose parameters of user-defined types (composites, enums, domains, user
  /// ranges) are encoded with `types`, the OID map of the connection that will run it:
  /// `pg::batch b(conn.types());`. The map must outlive the batch's add() calls.
  explicit batch(const type_map* types) noexcept { params_.user_types = types; }

  /// Appends a statement; its parameters are encoded now.
  template <class... A>
  batch& add(std::string_view sql, A&&... args) {
    return add(pg::sql(sql, std::forward<A>(args)...));
  }
  template <class... A>
  batch& add(const query<A...>& q) {
    stmt s{q.text(), static_cast<std::uint32_t>(params_.types.size()),
           static_cast<std::uint32_t>(sizeof...(A))};
    std::error_code ec;
    q.bind(params_, ec);
    if (ec && !ec_) ec_ = ec;
    // A user type's parameter needs its OID (the server checks nested composites' and
    // arrays' element OIDs): without the map the batch is refused when executed.
    if (params_.unmapped && !ec_) ec_ = make_error_code(errc::unknown_type);
    stmts_.push_back(s);
    return *this;
  }

  std::size_t size() const noexcept { return stmts_.size(); }
  bool empty() const noexcept { return stmts_.empty(); }
  /// The first error encoding a parameter (the batch is then refused when executed);
  /// errc::unknown_type for a user-defined type's parameter added without an OID map
  /// that knows it (construct the batch with the connection's map).
  std::error_code encode_error() const noexcept { return ec_; }
  /// The result of the last execution (moved out by the connection on completion).
  batch_result& out_ref() noexcept { return out_; }

  void clear() {
    stmts_.clear();
    params_.clear();
    params_.unmapped = false;
    ec_ = {};
  }

 private:
  friend class detail::conn_impl;
  struct stmt {
    std::string_view sql;
    std::uint32_t first_param, n_params;
  };
  // How the connection's router reads the batch's results back: one step per result
  // libpq will return before the Sync (a Parse we sent, or a statement's own result).
  struct step {
    std::uint32_t stmt;
    std::int32_t key;  ///< >= 0: a Parse, keys[key] is its cache key; -1: the statement
  };

  std::vector<stmt> stmts_;
  detail::param_buffer params_;  // every statement's parameters, one after the other
  std::error_code ec_;
  // Filled by the connection while the batch is in flight.
  std::vector<step> steps_;
  std::vector<std::string> keys_;
  std::size_t cursor_ = 0;
  batch_result out_;
};

template <class T>
struct is_batch : std::false_type {};
template <>
struct is_batch<batch> : std::true_type {};

}  // namespace inlet::pg
