// The durable message store: PostgreSQL, sharded by mailbox, group-committed.
//
//   inlet::store::pg_store_config cfg;
//   cfg.shards = {"postgresql://inlet@db1/inlet", "postgresql://inlet@db2/inlet"};
//   inlet::store::pg_store store(cfg);   // connects and migrates in the background
//   store.put(std::move(msg), [](std::error_code ec, message_ptr m) { ... });
//
// Sharding: a message is stored on the shard of each envelope recipient's mailbox
// (mailbox -> one of `buckets` buckets by a stable hash -> shard through the bucket map
// kept in the shards themselves); a message for recipients on k shards is written to
// those k shards. Each shard's URI may name several hosts (libpq multi-host syntax: a
// primary and its streaming replicas): writes, set-up and LISTEN go to the host that
// accepts writes, reads to the primary or (reads_on_replicas) a replica, and after a
// failover every connection finds the promoted primary by itself.
//
// Acknowledgement: put's handler succeeds only after the transaction holding the message
// committed on every shard it goes to; any failure or timeout fails the put (the SMTP
// layer answers 451). Deliveries that arrive together share one transaction per shard
// (group commit): see docs/store-pg.md.
//
// Start-up never blocks: the constructor returns at once; each shard is connected,
// migrated and loaded in the background, and retried while it is down. Until a shard is
// up, health() says so and puts for its mailboxes fail.
//
// Thread-safety: every member may be called from any thread. The store runs its own I/O
// threads (`io_threads`); handlers of reads run on their associated executor, put
// handlers and event observers on a store thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inlet/store/store.hpp"

namespace inlet::store {

struct pg_store_config {
  /// One libpq URI (or conninfo) per shard, in shard order. The order is part of the
  /// cluster: each shard records its index at creation and refuses another.
  std::vector<std::string> shards;
  /// The number of shards the operator means (inletd --expect-shards); 0: not checked.
  /// A `shards` list of another length is refused at construction (std::invalid_argument),
  /// before anything is written: a shard list cut short by a quoting mistake would
  /// otherwise start a smaller cluster.
  unsigned expect_shards = 0;
  /// Buckets of the cluster (fixed when the cluster is created; at most 3844).
  std::uint32_t buckets = 1024;
  /// Name of this instance in notifications (default: host name, pid and a random part).
  std::string instance;
  unsigned io_threads = 1;

  // ---- group commit ----
  std::size_t writer_connections = 4;  ///< per shard
  /// Transactions a writer connection may have in flight at once (pipelined, each its own
  /// implicit transaction and Sync). More than one is used only while the connection's
  /// measured round trip says the next commit acknowledgement is still far off (a shard
  /// across a network); on loopback batches grow instead. 1: one at a time.
  std::size_t writer_pipeline = 4;
  std::size_t max_batch_messages = 256;    ///< per transaction
  std::size_t max_batch_bytes = 8u << 20;  ///< per transaction (encoded size)
  /// With a connection free and fewer than max_batch_messages waiting, wait this long for
  /// more before sending (0: send at once; batches then form while others commit).
  std::chrono::microseconds max_batch_wait{0};
  /// A put not committed on every shard within this time fails.
  std::chrono::milliseconds put_timeout{10'000};

  // ---- reads ----
  std::size_t reader_connections = 4;  ///< per shard host
  /// Reads (listings, get, search) on a replica of each shard when one is up, else on
  /// the primary. Off by default: a replica lags, so a message just acknowledged may not
  /// be listed yet (no read-your-writes). A shard's URI with
  /// target_session_attrs=prefer-standby (or standby) turns it on for that shard.
  /// Changes (flags, tags, deletes) always go to the primary.
  bool reads_on_replicas = false;
  /// A shard that has not answered a read within this time is left out (page.partial).
  std::chrono::milliseconds read_timeout{5'000};

  // ---- retention ----
  /// Messages older than this are dropped (whole partitions, see docs/store-pg.md).
  std::optional<std::chrono::seconds> retention;
  /// At most this many messages per mailbox (the oldest go first); 0: no cap.
  std::size_t mailbox_cap = 0;
  /// Width of a time partition; 0: retention / 8 clamped to [1 minute, 1 day], or 1 day.
  std::chrono::seconds partition_interval{0};

  // ---- background ----
  bool events = true;  ///< NOTIFY other instances of changes (and LISTEN to theirs)
  std::chrono::milliseconds reconnect_delay{500};
  /// How often each host's role (primary, replica, down) is checked (pg::cluster).
  std::chrono::milliseconds role_check_interval{1'000};
  std::chrono::milliseconds map_refresh{5'000};
  std::chrono::milliseconds maintenance_every{30'000};
};

/// What one shard is doing (for /metrics and /readyz).
struct pg_shard_stats {
  unsigned index = 0;
  std::string endpoint;  ///< host:port of the URI (no credentials)
  bool up = false;
  std::string detail;  ///< why not up
  std::uint32_t buckets_owned = 0;
  std::uint64_t batches = 0, batch_messages = 0, batch_errors = 0, refused = 0;
  std::uint64_t puts_ok = 0, puts_failed = 0;
  std::uint64_t reads = 0, read_errors = 0;
  std::uint64_t read_retries = 0;  ///< reads sent again after their connection was lost
  /// Batch sizes: counts of batches of 1, 2-3, 4-7, ... 128-255, >= 256 messages.
  std::vector<std::uint64_t> batch_size_hist;
  /// Commit latency of batches (send to commit acknowledged), microseconds: bucket
  /// upper bounds in batch_latency_bounds_us, counts in batch_latency_hist.
  std::vector<std::uint64_t> batch_latency_hist;
  std::uint64_t batch_latency_sum_us = 0;
  /// Where a put's time goes (sums over copies, microseconds): route and encode (put()
  /// to queued), waiting in the queue (queued to its batch sent), its batch's round trip
  /// and commit (sent to result).
  std::uint64_t copy_route_sum_us = 0, copy_queue_sum_us = 0, copy_commit_sum_us = 0;
  /// Batches sent on a connection that already had one in flight (pipelined).
  std::uint64_t batches_pipelined = 0;
  /// The smallest round trip measured on a writer connection (microseconds; 0: none yet).
  std::uint64_t writer_rtt_us = 0;
  std::uint64_t queued = 0;  ///< copies waiting for a batch now
};

/// Upper bounds (microseconds) of the latency histogram buckets; the last is +inf.
const std::vector<std::uint64_t>& batch_latency_bounds_us();

namespace pgstore {
class engine;
}

class pg_store final : public store {
 public:
  explicit pg_store(pg_store_config cfg);
  ~pg_store() override;
  pg_store(const pg_store&) = delete;
  pg_store& operator=(const pg_store&) = delete;

  void put(new_message msg, put_handler done) override;
  store_stats stats() const override;
  store_health health() const override;
  bool accepts_mailbox(std::string_view mailbox) const override;
  std::uint64_t subscribe(event_observer observer) override;
  void unsubscribe(std::uint64_t handle) override;

  /// Blocks until every shard is up or `timeout` passes; true when all are up. For tools
  /// and tests (never call it from a store thread).
  bool wait_ready(std::chrono::milliseconds timeout) const;
  /// A configuration the cluster refuses and no retry can mend (this instance was given
  /// fewer shards than the cluster has, recorded on shard 0): why, or "" while none was
  /// found. wait_ready() returns false at once when there is one.
  std::string configuration_error() const;

  std::vector<pg_shard_stats> shard_stats() const;
  /// Appends the per-shard metrics in Prometheus text format.
  void append_metrics(std::string& out) const;

 protected:
  void do_list(list_request req, handler<void(std::error_code, page)> h) override;
  void do_get(std::string id, handler<void(std::error_code, message_ptr)> h) override;
  void do_remove(selection which, handler<void(std::error_code, std::size_t)> h) override;
  void do_set_read(selection which, bool read,
                   handler<void(std::error_code, std::size_t)> h) override;
  void do_set_tags(selection which, std::vector<std::string> tags,
                   handler<void(std::error_code, std::size_t)> h) override;
  void do_list_tags(handler<void(std::error_code, std::vector<std::string>)> h) override;
  void do_rename_tag(std::string from, std::string to,
                     handler<void(std::error_code, std::size_t)> h) override;
  void do_delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) override;

 private:
  std::shared_ptr<pgstore::engine> engine_;
};

}  // namespace inlet::store
