// Administration of a PostgreSQL store cluster while inletd instances run against it:
// status, and moving buckets between shards (how a shard is added: append its URI to
// every instance's --store list, restart them one by one, then move buckets to it).
//
// A move of bucket b from shard A to shard B (schema version 3), each step one transaction:
//   1. B: b incoming (B accepts copies of b, serves nothing of it)
//   2. A: b noted    (b stays owned and writable; a trigger notes every copy of b that
//                     changes from now on in mail.move_log)
//   3. copy b's messages A -> B (in chunks; B keeps them hidden)
//   4. catch up: the noted copies, as A has them now, applied to B (a few passes)
//   5. A: b frozen   (writes to b refused, they retry; reads still served by A)
//   6. catch up the last notes (only what changed since the previous pass)
//   7. B: b owned    (B's copies become home; writes and reads go to B)
//   8. A: b gone     (A's copies stop being home), notes dropped
//   9. A: b's rows removed
// Writes to b wait only from 5 to 7. Between 7 and 8 both shards count b: readers
// detect that (and the other order's gap) and read again (docs/store-pg.md).
// Every step checks the states first, so a move that was interrupted (a crash, a shard
// down) is finished by running it again.
//
// Thread-safety: plain blocking functions (they open their own connections); for tools
// and tests, never for a store thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

namespace inlet::store::pg_admin {

struct shard_status {
  unsigned index = 0;
  std::string endpoint;
  bool reachable = false;
  std::string error;
  int schema_version = 0;
  int shard_index = -1;  ///< what the database says it is (-1: not set up)
  std::uint32_t buckets = 0;  ///< the cluster's bucket count (0: not set up)
  std::vector<std::int32_t> owned, frozen, incoming, gone;
  /// Buckets whose changes are noted for a move (schema 3; a move stopped while copying
  /// leaves them noted until it is run again).
  std::vector<std::int32_t> copying;
  std::int64_t messages = 0;  ///< home copies (what listings count)
  std::int64_t copies = 0;    ///< rows in mail.message
};

/// Reads each shard's identity, buckets and counts (unreachable shards are reported).
std::vector<shard_status> status(const std::vector<std::string>& shards);

struct move_result {
  unsigned from = 0, to = 0;
  std::uint64_t copied = 0;    ///< message copies written to the new shard
  std::uint64_t released = 0;  ///< copies the old shard no longer needed
  bool already_there = false;
  std::uint64_t caught_up = 0;  ///< change notes applied after the copy
  double frozen_ms = 0;         ///< longest time a bucket was frozen (writes waited)
  std::uint64_t switches = 0;   ///< switches (freeze, last catch-up, take) that held writes
  std::vector<double> held_ms;  ///< how long each switch held writes, in order
};

/// Moves bucket `bucket` to shard `to` (see above). On failure returns an error and says
/// why in `message`; running it again resumes.
/// `after_copy` (for tests) runs once the copy is written, before the catch-up, while
/// the bucket still takes writes. `after_take` (for tests) runs once the new shard took
/// the bucket, before the old one leaves it; returning false stops the move there, as a
/// tool killed at that point would (std::errc::operation_canceled).
std::error_code move_bucket(const std::vector<std::string>& shards, std::uint32_t bucket,
                            unsigned to, move_result& out, std::string& message,
                            const std::function<void()>& after_copy = {},
                            const std::function<bool()>& after_take = {});

/// Several moves over one set of connections. Moves between the same two shards go in
/// groups of `group_size` whose changes of state are one transaction each (an empty
/// bucket costs a few round trips, not a few commits); `progress` is called with the
/// number of buckets moved after each group. `out` sums the groups (`from`/`to` unset).
std::error_code move_buckets(const std::vector<std::string>& shards,
                             const std::vector<std::pair<std::uint32_t, unsigned>>& moves,
                             std::size_t group_size, move_result& out, std::string& message,
                             const std::function<void(std::size_t done)>& progress = {});

/// Moves that leave every shard with an equal share of the buckets (within one), taking
/// buckets from the shards that have the most. For adding shards.
std::vector<std::pair<std::uint32_t, unsigned>> plan_rebalance(const std::vector<shard_status>& st);

}  // namespace inlet::store::pg_admin
