// A cluster: one primary and its streaming replicas, named by one connection string with
// several hosts (postgresql://u@h1:5432,h2:5432/db) or a list of per-host strings. One
// pool per host; each host's role (primary, replica, down) is checked every
// check_interval with `SELECT pg_is_in_recovery()` on a monitor connection of its own.
// Read-write work goes to the primary; read-only work goes to replicas when asked
// (target::replica / prefer_replica). After a failover (the primary goes away, a replica
// is promoted) acquires for the primary wait (up to acquire_timeout, re-checking at once)
// until the new primary is seen, so writes follow within about check_interval plus the
// connect deadline.
//
//   pg::cluster shard(io.get_executor(), {.dsn = "postgresql://app@db1,db2/mail", .pool = {.size =
//   16}}); auto c = co_await shard.async_acquire(pg::target::primary); auto tx = co_await
//   pg::async_begin(shard);                       // on the primary auto r = co_await
//   shard.async_acquire(pg::target::prefer_replica); // reads
//
// The cluster keeps a timer (the role checks) until close(): io_context::run() does not
// return while it is open. Thread-safety: every member may be called from any thread.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "inlet/pg/detail/erased_handler.hpp"
#include "inlet/pg/pool.hpp"
#include "inlet/pg/transaction.hpp"

namespace inlet::pg {

enum class host_role : unsigned char { unknown, primary, replica, down };
enum class target : unsigned char {
  primary,         ///< read-write: the primary only
  replica,         ///< a replica only (round robin); no replica: errc::no_host
  prefer_replica,  ///< a replica if one is up, else the primary
  any,             ///< any host that is up (round robin)
};

struct cluster_options {
  std::string dsn;                 ///< one string naming every host
  std::vector<std::string> hosts;  ///< or one string per host (used when not empty)
  pool_options pool;               ///< settings of each host's pool (its dsn is set per host)
  std::chrono::milliseconds check_interval{1'000};  ///< role check period
};

struct host_status {
  std::string label;  ///< host:port
  host_role role = host_role::unknown;
  std::uint64_t checks = 0, check_failures = 0;
  pool_stats pool;
};

struct cluster_stats {
  std::uint64_t role_changes = 0;  ///< a host seen with another role than before
  std::uint64_t waits = 0;         ///< acquires that waited for a host of their role
  std::uint64_t no_host = 0;       ///< acquires that found none in time
};

namespace detail {
class cluster_impl;
using cluster_ptr = std::shared_ptr<cluster_impl>;
void cluster_acquire(const cluster_ptr& c, target t,
                     std::unique_ptr<erased_handler<std::error_code, pooled_connection>> h);
const asio::any_io_executor& cluster_executor(const cluster_impl& c) noexcept;
}  // namespace detail

class cluster {
 public:
  /// Throws pg::error if the connection string cannot be parsed.
  cluster(asio::any_io_executor ex, cluster_options opts);
  ~cluster();  ///< close()
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  /// A connection to a host of the wanted role. void(error_code, pooled_connection).
  /// Waits (at most pool.acquire_timeout) while no such host is known; then no_host.
  template <class Token = pg::use_awaitable_t>
  auto async_acquire(target t = target::primary, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, pooled_connection)>(
        [c = impl_, t](auto h) {
          detail::cluster_acquire(c, t,
                                  detail::erase_handler<std::error_code, pooled_connection>(
                                      std::move(h), detail::cluster_executor(*c)));
        },
        token);
  }

  std::size_t size() const noexcept;
  std::vector<host_status> status() const;
  cluster_stats stats() const;
  /// Checks every host's role now (also done every check_interval).
  void check_now();
  void close();

 private:
  detail::cluster_ptr impl_;
};

/// BEGIN on a connection of the cluster: the primary unless another target is given.
/// void(error_code, transaction).
template <class Token = pg::use_awaitable_t>
auto async_begin(cluster& c, target t, transaction_options o = {}, Token&& token = {}) {
  return asio::async_initiate<Token, void(std::error_code, transaction)>(
      [&c, t, sql = detail::begin_sql(o)](auto h) {
        using H = decltype(h);
        c.async_acquire(t, detail::acquire_then_begin<H>{std::move(h), sql});
      },
      token);
}
template <class Token = pg::use_awaitable_t>
auto async_begin(cluster& c, transaction_options o = {}, Token&& token = {}) {
  return async_begin(c, target::primary, o, std::forward<Token>(token));
}
/// pg::transact on the cluster's primary.
template <class Body>
asio::awaitable<detail::body_value_t<Body>> transact(cluster& c, transaction_options o, Body body,
                                                     retry_policy rp = {}) {
  return detail::transact_impl(c, o, std::move(body), rp);
}

}  // namespace inlet::pg
