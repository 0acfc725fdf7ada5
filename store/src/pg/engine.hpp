// The PostgreSQL store's engine: shards, the bucket map, the group-commit writers and
// the reads. pg_store (the public class) is a thin front over it.
//
// Threads: the engine runs its own io_context on `io_threads` threads. Each shard has a
// strand: its supervisor coroutine (connect, migrate, load, refresh, maintenance), its
// writer (queue, connections, batches) and its writer connections all run there. Reads
// run as coroutines on the io_context and use each shard's connection pool.
//
// Design notes beside the data structures; the whole picture is docs/store-pg.md.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "inlet/pg/cluster.hpp"
#include "inlet/pg/connection.hpp"
#include "inlet/pg/listener.hpp"
#include "inlet/pg/pool.hpp"
#include "inlet/store/pg_store.hpp"
#include "wire.hpp"

namespace inlet::store::pgstore {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;
using strand_t = asio::strand<asio::io_context::executor_type>;

/// Bucket -> shard, as the union of what every reachable shard says it holds.
/// Immutable once published (engine::map_ is swapped whole), so readers take a
/// snapshot without a lock. -1: no reachable shard owns the bucket (its shard is down,
/// or a move is between its two steps).
struct bucket_map {
  std::vector<std::int16_t> owner;
  std::uint64_t version = 0;
  int shard_of(std::uint32_t bucket) const noexcept {
    return bucket < owner.size() ? owner[bucket] : -1;
  }
};

/// One put: the record, and how many shard copies are still being written. The put's
/// handler runs once, when the last copy finished (failed or committed).
struct put_state {
  std::shared_ptr<stored_message> rec;
  std::int64_t received_us = 0;
  std::int32_t primary_bucket = 0;
  put_handler done;
  steady::time_point start, deadline;
  std::atomic<int> pending{0};
  std::atomic<int> reroutes{0};  ///< times a copy was routed again (sets the next delay)
  std::mutex mu;
  std::error_code error;            ///< the first failure (under mu)
  std::vector<unsigned> committed;  ///< shards whose copy committed (under mu)
};

/// One copy of a put, for one shard: its mailboxes there and their buckets, and its
/// encoded mail.new_message_v2 record (encoded with that shard's type OIDs).
struct copy_item {
  std::shared_ptr<put_state> put;
  std::vector<std::string> mailboxes;
  std::vector<std::int32_t> buckets;
  bool home = false;
  std::string encoded;
  steady::time_point queued_at{};
  steady::time_point not_before{};  ///< retry delay after a refusal
  bool solo = false;  ///< in a batch that failed: sent alone, so one bad copy fails alone
};

/// Per-shard counters (relaxed atomics; read by /metrics).
struct shard_counters {
  static constexpr std::size_t size_buckets = 10;  // 1, 2-3, ..., 128-255, >= 256
  std::atomic<std::uint64_t> batches{0}, batch_messages{0}, batch_errors{0}, refused{0};
  std::atomic<std::uint64_t> copies_ok{0}, copies_failed{0}, reads{0}, read_errors{0};
  /// Reads sent again on another connection after their connection was lost.
  std::atomic<std::uint64_t> read_retries{0};
  std::array<std::atomic<std::uint64_t>, size_buckets> size_hist{};
  std::array<std::atomic<std::uint64_t>, 16> latency_hist{};
  std::atomic<std::uint64_t> latency_sum_us{0};
  /// Per copy: put() to queued, queued to sent, sent to result (pg_shard_stats).
  std::atomic<std::uint64_t> route_sum_us{0}, queue_sum_us{0}, commit_sum_us{0};
  std::atomic<std::uint64_t> pipelined{0};     ///< batches sent behind another in flight
  std::atomic<std::uint64_t> writer_rtt_us{0};  ///< the smallest writer round trip seen
};

class engine;

/// One shard: its connections, state, writer. Lives as long as the engine.
class shard {
 public:
  shard(engine& e, unsigned index, std::string dsn);
  ~shard();

  unsigned index() const noexcept { return index_; }
  /// The shard's URI as configured plus target_session_attrs=read-write: connections
  /// for writes, set-up and LISTEN reach the primary among the URI's hosts, and after a
  /// failover reconnect to the promoted one.
  const std::string& dsn() const noexcept { return dsn_; }
  const std::string& endpoint() const noexcept { return endpoint_; }
  strand_t& strand() noexcept { return strand_; }

  /// Schema loaded and at least one writer connection open.
  bool up() const noexcept {
    return ready_.load(std::memory_order_acquire) && live_slots_.load() > 0;
  }
  bool ready() const noexcept { return ready_.load(std::memory_order_acquire); }
  /// Up, and not known to have gone away since: the notification listener, always
  /// reading, sees a shard stop at once, while idle writer connections see it only at
  /// their next batch. What SMTP asks before it accepts a recipient of this shard.
  bool accepting() const noexcept;
  std::string detail() const;
  void set_detail(std::string d);
  std::shared_ptr<const shard_types> types() const noexcept { return types_.load(); }
  /// The shard's hosts (primary and replicas), each with a pool for reads and updates.
  pg::cluster& cluster() noexcept { return *cluster_; }
  /// Where reads go: the primary (read-your-writes), or a replica when one is up.
  pg::target read_target() const noexcept { return read_target_; }
  shard_counters& counters() noexcept { return counters_; }
  const shard_counters& counters() const noexcept { return counters_; }
  std::size_t queued() const;
  /// Buckets this shard reported at its last refresh, with their states.
  std::vector<std::pair<std::int32_t, char>> holdings() const;
  /// Home copies of each bucket frozen here at the last refresh (same snapshot as the
  /// tally): a move's switch, where the new shard may already own and count them.
  struct frozen_count {
    std::int32_t bucket = 0;
    std::int64_t messages = 0, unread = 0, bytes = 0;
  };
  std::vector<frozen_count> frozen_counts() const;

  void start();
  void stop();

  /// Queues a copy for the next batch (any thread).
  void enqueue(copy_item item);
  /// Asks the supervisor to re-read this shard's buckets soon (any thread).
  void refresh_soon();

  /// What the shard's tally said at the last refresh (home copies only).
  std::atomic<std::int64_t> tally_messages{0}, tally_unread{0}, tally_bytes{0};

 private:
  friend class engine;
  struct slot;

  asio::awaitable<void> supervise();
  asio::awaitable<void> listen();  // other instances' changes (LISTEN inlet_events)
  asio::awaitable<void> bring_up(pg::connection& conn);
  asio::awaitable<void> refresh(pg::connection& conn);
  asio::awaitable<void> maintain(pg::connection& conn);
  // Indexes a migration declared for later (build_deferred_indexes), on a connection of
  // their own so the shard serves meanwhile; checked at each maintenance.
  asio::awaitable<void> build_indexes();

  // Writer (on the strand).
  void schedule_pump();
  void pump();
  void send(slot& s, std::vector<copy_item> batch);
  void on_batch(slot& s, std::uint64_t generation, std::vector<copy_item> batch,
                steady::time_point sent, std::error_code ec, pg::result r);
  void ping_slot(slot& s, std::uint64_t generation, int left);
  void slot_ready(slot& s);
  void connect_slot(slot& s);
  void slot_failed(slot& s);

  engine& eng_;
  unsigned index_;
  std::string dsn_, endpoint_;
  pg::target read_target_ = pg::target::primary;
  strand_t strand_;
  std::atomic<bool> ready_{false}, stopping_{false}, maintain_now_{false}, building_{false};
  std::atomic<int> live_slots_{0};
  std::atomic<std::shared_ptr<const shard_types>> types_;
  std::unique_ptr<pg::cluster> cluster_;
  std::unique_ptr<pg::listener> listener_;
  shard_counters counters_;

  mutable std::mutex mu_;  // detail_, holdings_, frozen_
  std::string detail_ = "connecting";
  std::vector<std::pair<std::int32_t, char>> holdings_;
  std::vector<frozen_count> frozen_;

  mutable std::mutex queue_mu_;  // queue_, pump_posted_
  std::deque<copy_item> queue_;
  bool pump_posted_ = false;

  // On the strand only.
  std::vector<std::unique_ptr<slot>> slots_;
  asio::steady_timer wake_;    // supervisor's sleep (refresh_soon cancels it)
  asio::steady_timer linger_;  // max_batch_wait and retry delays
  bool linger_armed_ = false;
  steady::time_point last_maintenance_{};
  bool stopped_ = false;
};

class engine : public std::enable_shared_from_this<engine> {
 public:
  explicit engine(pg_store_config cfg);
  ~engine();

  void start();
  void stop();

  const pg_store_config& config() const noexcept { return cfg_; }
  asio::io_context& io() noexcept { return io_; }
  const std::string& instance() const noexcept { return cfg_.instance; }
  std::string channel() const { return cfg_.events ? "inlet_events" : ""; }
  std::chrono::seconds partition_interval() const noexcept { return part_interval_; }

  std::shared_ptr<const bucket_map> map() const noexcept { return map_.load(); }
  /// Recomputes the map from every shard's holdings (after a shard's refresh).
  void rebuild_map();
  shard& at(unsigned i) noexcept { return *shards_[i]; }
  std::size_t shard_count() const noexcept { return shards_.size(); }
  /// A configuration no retry can mend (see pg_store::configuration_error); first wins.
  void set_configuration_error(std::string why);
  std::string configuration_error() const;

  // ---- cluster set-up (shards without their meta rows) ----
  /// Called by a shard's supervisor when its database has the schema but no identity;
  /// initialises the cluster (when every shard is reachable and none has one) or adds
  /// this shard to the existing cluster. Returns true when the shard now has its identity.
  asio::awaitable<bool> initialise_shard(pg::connection& conn, unsigned index);

  // ---- write path ----
  void put(new_message msg, put_handler done);
  /// Routes (or re-routes) the mailboxes of a copy with the current map.
  void route(std::shared_ptr<put_state> put, std::vector<std::string> mailboxes,
             std::vector<std::int32_t> buckets, steady::time_point not_before);
  /// A copy of `put` finished: committed on shard `committed_on` (when no error), or
  /// failed. The last one completes the put.
  void copy_finished(const std::shared_ptr<put_state>& put, std::error_code ec,
                     int committed_on = -1);
  /// A put that failed after some of its copies committed: deletes those copies (so the
  /// client's retry after 451 does not store the message twice there), then answers.
  void remove_orphans(std::shared_ptr<put_state> put, std::vector<unsigned> shards,
                      std::error_code err);
  /// A refused copy: re-route it after a short delay (the map is refreshing).
  void reroute_later(copy_item item);
  /// Routes mailboxes again after a short delay (bucket in transit, or refused), while
  /// the put's deadline allows; the caller holds one place in put->pending for them.
  void route_later(std::shared_ptr<put_state> put, std::vector<std::string> mailboxes,
                   std::vector<std::int32_t> buckets);
  bool all_ready() const;

  // ---- events ----
  std::uint64_t subscribe(event_observer o);
  void unsubscribe(std::uint64_t h);
  void emit(const store_event& ev);
  /// A notification from shard `from` (another instance's change; see mail.notify).
  void on_notification(shard& from, std::string_view payload);
  /// Notifications may have been missed (a listener reconnected): observers reload.
  void on_gap();
  bool has_observers() const noexcept { return observer_count_.load() > 0; }

  // ---- stats ----
  store_stats stats() const;
  store_health health() const;
  bool all_up() const;
  /// Whether the shard of `mailbox`'s bucket is up (pg_store::accepts_mailbox).
  bool accepts_mailbox(std::string_view mailbox) const;

  // ---- reads (reads.cpp) ----
  void list(list_request req, handler<void(std::error_code, page)> h);
  void get(std::string id, handler<void(std::error_code, message_ptr)> h);
  void remove(selection which, handler<void(std::error_code, std::size_t)> h);
  void set_read(selection which, bool read, handler<void(std::error_code, std::size_t)> h);
  void set_tags(selection which, std::vector<std::string> tags,
                handler<void(std::error_code, std::size_t)> h);
  void list_tags(handler<void(std::error_code, std::vector<std::string>)> h);
  void rename_tag(std::string from, std::string to, handler<void(std::error_code, std::size_t)> h);
  void delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h);

  /// Messages dropped by retention (called by a shard's maintenance).
  void expired(std::uint64_t n) {
    evicted_.fetch_add(n, std::memory_order_relaxed);
    note_change();
  }
  void deleted(std::uint64_t n) { deleted_.fetch_add(n, std::memory_order_relaxed); }
  /// Messages a mailbox cap pushed out (their home copies), told to observers.
  void trimmed(std::vector<std::string> ids);

  // ---- deep pages (list cursors) ----
  /// A listing's page at `start` can continue from the last ID of the page before it
  /// instead of reading start + limit rows on every shard. Such a cursor is valid while
  /// nothing changed: any change (a put, a delete, read state, tags, a bucket move, a
  /// notification from another instance) advances the change count and retires every
  /// cursor. Only with events on (otherwise another instance's changes go unseen).
  ///
  /// Design: a handful of recent cursors (a deque of at most 64, newest first) keyed by
  /// mailbox, query, before_id and start, each with the change count it was made at.
  std::uint64_t changes() const noexcept { return changes_.load(std::memory_order_acquire); }
  void note_change() noexcept { changes_.fetch_add(1, std::memory_order_acq_rel); }
  std::optional<std::string> find_cursor(const list_request& req) const;
  void keep_cursor(const list_request& req, std::size_t start, std::string after_id,
                   std::uint64_t made_at);

  std::atomic<std::uint64_t> puts_ok{0}, puts_failed{0};
  /// Listing pages read from a cursor (see find_cursor).
  std::atomic<std::uint64_t> cursor_pages{0};
  /// Global listings read again because their shards' snapshots counted a bucket being
  /// switched by a move twice or not at all.
  std::atomic<std::uint64_t> inconsistent_reads{0};
  /// The last whole global listing still counted a bucket twice or not at all after a
  /// second of re-reading (a move interrupted between its take and its leave).
  std::atomic<bool> listing_stuck{false};
  /// Failed multi-shard puts whose committed copies were deleted, or could not be.
  std::atomic<std::uint64_t> orphans_removed{0}, orphans_left{0};

 private:
  pg_store_config cfg_;
  std::chrono::seconds part_interval_{86400};
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  mutable std::mutex config_error_m_;
  std::string config_error_;  // guarded by config_error_m_
  std::vector<std::unique_ptr<shard>> shards_;
  std::atomic<std::shared_ptr<const bucket_map>> map_;
  std::mutex map_mu_;  // serialises rebuild_map

  mutable std::mutex obs_mu_;
  std::map<std::uint64_t, std::shared_ptr<const event_observer>> observers_;
  std::uint64_t next_obs_ = 1;
  std::atomic<std::size_t> observer_count_{0};
  std::atomic<std::uint64_t> evicted_{0}, deleted_{0};

  struct list_cursor {
    std::string mailbox, before_id;
    search::query query;
    std::size_t start = 0;
    std::string after_id;  // the last ID of the page that ends at `start`
    std::uint64_t made_at = 0;
  };
  std::atomic<std::uint64_t> changes_{0};
  mutable std::mutex cursor_mu_;
  std::deque<list_cursor> cursors_;  // guarded by cursor_mu_
};

/// Upper bounds of the batch latency histogram (microseconds; the last is unbounded).
const std::vector<std::uint64_t>& latency_bounds();

/// Appends `key=value` to a libpq URI or conninfo string unless the key is already there.
std::string with_dsn_param(std::string dsn, std::string_view key, std::string_view value);
/// The value of `key` in a libpq URI or conninfo string ("" when absent).
std::string dsn_param(std::string_view dsn, std::string_view key);
/// `dsn` with `key=value`, replacing the key's value if it is there.
std::string set_dsn_param(std::string dsn, std::string_view key, std::string_view value);
/// host:port of a URI or conninfo (for messages and metrics; never credentials).
std::string dsn_endpoint(std::string_view dsn);

}  // namespace inlet::store::pgstore
