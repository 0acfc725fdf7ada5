// The store's schema: versioned migrations (store/sql/NNNN_name.sql, embedded at build
// time), applied by inletd itself.
//
// migrate() takes a session advisory lock, so that two instances starting at once apply
// each migration once; each migration runs in one transaction together with the row
// that records it in mail.migration, so a crash leaves either all of it or none.
//
// Thread-safety: functions over one connection (its executor).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/pg/connection.hpp"

namespace inlet::store::pgstore {

struct migration {
  int version;
  const char* name;
  const char* sql;
};

/// Every migration, in version order (generated from store/sql).
const std::vector<migration>& migrations();

/// The statements of a SQL script, split at semicolons outside quotes, dollar-quoted
/// bodies and comments; empty statements (only spaces and comments) are dropped.
std::vector<std::string_view> split_sql(std::string_view script);

/// Advisory lock keys (class, key) of the store (pg_advisory_lock(int, int)).
inline constexpr int lock_class = 1768844404;  // "inlt"
inline constexpr int lock_migrate = 1, lock_ownership = 2, lock_maintenance = 3, lock_init = 4,
                     lock_index_build = 5;

/// Applies the migrations this shard does not have yet. Returns the schema version the
/// shard is at afterwards (it may be newer than ours: another binary migrated it).
boost::asio::awaitable<int> migrate(pg::connection& conn);

/// Builds what a migration declared on a partitioned table only (`CREATE INDEX ... ON
/// ONLY`, which changes the catalog and holds no writes): on each partition that lacks
/// it, CREATE INDEX CONCURRENTLY (writes go on; an earlier attempt's invalid leftover is
/// dropped first), then ATTACH PARTITION; the parent index becomes valid with its last
/// partition. One session at a time per database (pg_try_advisory_lock, not waited for:
/// a session waiting would hold a snapshot the concurrent build waits for). Returns how
/// many partition indexes it built, -1 when another session is building.
boost::asio::awaitable<int> build_deferred_indexes(pg::connection& conn);
/// Whether build_deferred_indexes has something to do (a catalog query).
boost::asio::awaitable<bool> deferred_indexes_missing(pg::connection& conn);

}  // namespace inlet::store::pgstore
