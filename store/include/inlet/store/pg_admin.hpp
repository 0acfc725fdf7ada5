// Administration of a PostgreSQL store cluster while inletd instances run against it:
// status, and moving buckets between shards (how a shard is added: append its URI to
// every instance's --store list, restart them one by one, then move buckets to it).
//
// A move of bucket b from shard A to shard B, each step one transaction:
//   1. B: b incoming (B accepts copies of b, serves nothing of it)
//   2. A: b frozen   (writes to b refused, they retry; reads still served by A)
//   3. copy b's messages A -> B (in chunks; B keeps them hidden)
//   4. A: b gone     (A's copies stop being home: listings stop showing them)
//   5. B: b owned    (B's copies become home; writes and reads go to B)
//   6. A: b's rows removed
// Between 4 and 5 (one round trip) b has no owner: puts for it wait and retry, a
// listing of one of its mailboxes retries once. No message is lost, none is listed twice.
// Every step checks the states first, so a move that was interrupted (a crash, a shard
// down) is finished by running it again.
//
// Thread-safety: plain blocking functions (they open their own connections); for tools
// and tests, never for a store thread.
#pragma once

#include <cstdint>
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
};

/// Moves bucket `bucket` to shard `to` (see above). On failure returns an error and says
/// why in `message`; running it again resumes.
std::error_code move_bucket(const std::vector<std::string>& shards, std::uint32_t bucket,
                            unsigned to, move_result& out, std::string& message);

/// Moves that leave every shard with an equal share of the buckets (within one), taking
/// buckets from the shards that have the most. For adding shards.
std::vector<std::pair<std::uint32_t, unsigned>> plan_rebalance(const std::vector<shard_status>& st);

}  // namespace inlet::store::pg_admin
