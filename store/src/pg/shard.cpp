// A shard's supervisor (connect, migrate, identity, types, partitions, bucket refresh,
// maintenance) and its group-commit writer.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>

#include "engine.hpp"
#include "params.hpp"
#include "schema.hpp"

namespace inlet::store::pgstore {

namespace {

std::string describe(const std::exception& e) {
  if (auto* pe = dynamic_cast<const pg::error*>(&e)) {
    auto d = pe->diag().to_string();
    return d.empty() ? std::string(pe->what()) : d;
  }
  return e.what();
}

pg::connection_options writer_options(const pg_store_config& c) {
  pg::connection_options o;
  o.query_timeout = c.put_timeout;
  return o;
}

bool is_connection_loss(std::error_code ec) {
  return ec == pg::condition::connection_error || ec == pg::condition::timeout ||
         ec == pg::condition::query_canceled;
}

// Copies that justify a transaction beside those in flight (see pump).
constexpr std::size_t parallel_batch = 16;

// A batch is pipelined behind others on a writer connection only when no result can
// come back sooner than this (see pump): on loopback the next commit is always that
// close, so batches grow there instead of splitting into more, smaller transactions.
constexpr auto pipeline_gap = std::chrono::microseconds(500);

// Round trips measured on a new writer connection before it takes batches.
constexpr int writer_pings = 3;

// The smallest writer round trip of the shard, for its stats.
void note_rtt(shard_counters& c, steady::duration d) {
  if (d == steady::duration::max()) return;
  auto us = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
  auto cur = c.writer_rtt_us.load(std::memory_order_relaxed);
  while ((cur == 0 || us < cur) &&
         !c.writer_rtt_us.compare_exchange_weak(cur, us, std::memory_order_relaxed)) {
  }
}

std::uint64_t micros(steady::duration d) {
  return static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
}

std::size_t size_bucket(std::size_t n) {
  std::size_t b = 0;
  while (n > 1 && b + 1 < shard_counters::size_buckets) {
    n >>= 1;
    ++b;
  }
  return b;
}

}  // namespace

const std::vector<std::uint64_t>& latency_bounds() {
  static const std::vector<std::uint64_t> b = {250,     500,     1000,    2000,      4000,   8000,
                                               16000,   32000,   64000,   128000,    256000, 512000,
                                               1000000, 2000000, 5000000, UINT64_MAX};
  return b;
}

// A writer connection. Its batches are pipelined (each its own statement and Sync, so
// its own implicit transaction: an error aborts only that batch) and their results come
// back in the order sent, so `in_flight` holds their send times oldest first.
struct shard::slot {
  enum class state { down, connecting, open };
  slot(strand_t ex, pg::connection_options o)
      : conn(std::make_unique<pg::connection>(ex, o)), retry(ex) {}
  std::unique_ptr<pg::connection> conn;
  state st = state::down;
  asio::steady_timer retry;
  std::deque<steady::time_point> in_flight;
  /// Advances whenever the connection is replaced or given up: completions carrying an
  /// older one belong to a dead connection and leave the slot alone.
  std::uint64_t generation = 0;
  /// The smallest round trip seen on this connection: its pings at connect, then every
  /// batch's send-to-result (never shorter than a round trip).
  steady::duration rtt = steady::duration::max();
};

namespace {

// Reads on replicas when the configuration asks for them, or when the shard's URI itself
// says its sessions prefer standbys.
pg::target choose_read_target(const pg_store_config& c, std::string_view dsn) {
  auto tsa = dsn_param(dsn, "target_session_attrs");
  if (c.reads_on_replicas || tsa == "prefer-standby" || tsa == "standby")
    return pg::target::prefer_replica;
  return pg::target::primary;
}

std::string shard_dsn(std::string dsn) {
  return with_dsn_param(with_dsn_param(std::move(dsn), "connect_timeout", "5"), "application_name",
                        "inletd");
}

}  // namespace

shard::shard(engine& e, unsigned index, std::string dsn)
    : eng_(e),
      index_(index),
      dsn_(set_dsn_param(shard_dsn(dsn), "target_session_attrs", "read-write")),
      endpoint_(dsn_endpoint(dsn)),
      read_target_(choose_read_target(e.config(), dsn)),
      strand_(asio::make_strand(e.io())),
      wake_(strand_),
      linger_(strand_) {
  pg::cluster_options co;
  co.dsn = shard_dsn(dsn);
  co.pool.size = std::max<std::size_t>(1, e.config().reader_connections);
  co.pool.acquire_timeout = e.config().read_timeout;
  co.pool.connection.query_timeout = e.config().read_timeout;
  co.check_interval = e.config().role_check_interval;
  cluster_ = std::make_unique<pg::cluster>(e.io().get_executor(), co);
}

shard::~shard() = default;

std::string shard::detail() const {
  std::lock_guard lk(mu_);
  return detail_;
}

void shard::set_detail(std::string d) {
  std::lock_guard lk(mu_);
  detail_ = std::move(d);
}

std::vector<shard::frozen_count> shard::frozen_counts() const {
  std::lock_guard lk(mu_);
  return frozen_;
}

std::vector<std::pair<std::int32_t, char>> shard::holdings() const {
  std::lock_guard lk(mu_);
  return holdings_;
}

std::size_t shard::queued() const {
  std::lock_guard lk(queue_mu_);
  return queue_.size();
}

bool shard::accepting() const noexcept {
  return up() && !(listener_ && listener_->lost());
}

void shard::start() {
  asio::co_spawn(strand_, supervise(), asio::detached);
  if (eng_.config().events) {
    pg::listener_options lo;
    lo.dsn = dsn_;
    // Its loss is what tells SMTP the shard is gone (accepting()): back as soon as the
    // writers would be, not after a long backoff.
    lo.reconnect_max = eng_.config().reconnect_delay;
    listener_ = std::make_unique<pg::listener>(strand_, lo);
    asio::co_spawn(strand_, listen(), asio::detached);
  }
}

asio::awaitable<void> shard::listen() {
  for (;;) {
    auto [ec] =
        co_await listener_->async_listen(eng_.channel(), asio::as_tuple(asio::use_awaitable));
    if (!ec || stopping_.load()) break;
    // The listener keeps the channel and keeps trying; wait for its next attempt.
    asio::steady_timer t(strand_, eng_.config().reconnect_delay);
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  while (!stopping_.load()) {
    auto [ec, n] = co_await listener_->async_receive(asio::as_tuple(asio::use_awaitable));
    if (stopping_.load()) break;
    if (ec) {
      asio::steady_timer t(strand_, eng_.config().reconnect_delay);
      co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    if (n.gap)
      eng_.on_gap();
    else
      eng_.on_notification(*this, n.payload);
  }
}

void shard::stop() {
  stopping_.store(true);
  asio::post(strand_, [this] {
    stopped_ = true;
    wake_.cancel();
    linger_.cancel();
    for (auto& s : slots_) {
      s->retry.cancel();
      s->conn->close();
    }
    cluster_->close();
    if (listener_) listener_->close();
    // Copies still queued will not be written: fail them now.
    std::deque<copy_item> left;
    {
      std::lock_guard lk(queue_mu_);
      left.swap(queue_);
    }
    for (auto& item : left) eng_.copy_finished(item.put, make_error_code(errc::unavailable));
  });
}

void shard::refresh_soon() {
  asio::post(strand_, [this] { wake_.cancel(); });
}

// ---- supervisor ------------------------------------------------------------------------

asio::awaitable<void> shard::supervise() {
  bool was_up = false;
  while (!stopping_.load()) {
    std::string failure;
    try {
      pg::connection conn(strand_);
      co_await conn.async_connect(dsn_);
      co_await conn.async_execute("SET client_min_messages = warning");
      co_await bring_up(conn);
      if (!was_up)
        std::fprintf(stderr, "inlet pg store: shard %u (%s) up\n", index_, endpoint_.c_str());
      was_up = true;
      for (;;) {
        wake_.expires_after(eng_.config().map_refresh);
        co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
        if (stopping_.load()) break;
        co_await refresh(conn);
        if (maintain_now_.exchange(false) ||
            steady::now() - last_maintenance_ >= eng_.config().maintenance_every)
          co_await maintain(conn);
      }
      conn.close();
    } catch (const std::exception& e) {
      failure = describe(e);
    }
    if (stopping_.load()) break;
    if (!failure.empty()) {
      if (was_up || detail() != failure)
        std::fprintf(stderr, "inlet pg store: shard %u (%s): %s\n", index_, endpoint_.c_str(),
                     failure.c_str());
      was_up = false;
      set_detail(failure);
    }
    wake_.expires_after(eng_.config().reconnect_delay);
    co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

asio::awaitable<void> shard::bring_up(pg::connection& conn) {
  co_await migrate(conn);
  std::vector<std::tuple<std::string, std::string>> meta;
  co_await conn.async_query(pg::sql("SELECT key, value FROM mail.meta"), pg::into(meta));
  auto find = [&](std::string_view k) -> std::string {
    for (auto& [key, value] : meta)
      if (key == k) return value;
    return {};
  };
  if (find("shard").empty()) {
    set_detail("waiting for cluster set-up (every shard must be reachable the first time)");
    if (!co_await eng_.initialise_shard(conn, index_))
      throw std::runtime_error(
          "cluster not set up yet: every shard must be reachable the first time");
    meta.clear();
    co_await conn.async_query(pg::sql("SELECT key, value FROM mail.meta"), pg::into(meta));
  }
  if (find("shard") != std::to_string(index_))
    throw std::runtime_error("this database is shard " + find("shard") +
                             " of its cluster, configured as shard " + std::to_string(index_) +
                             " (shard order changed?)");
  if (index_ == 0) {
    // Shard 0 records how many shards the cluster has (at set-up, and as shards join):
    // an instance given fewer would place their buckets' mail nowhere.
    std::string recorded = find("shards");
    if (recorded.empty()) recorded = find("initialized");
    if (!recorded.empty() && std::stoul(recorded) > eng_.shard_count()) {
      std::string why = "the cluster has " + recorded + " shards (recorded on shard 0); this " +
                        "instance was given " + std::to_string(eng_.shard_count()) +
                        ": a shard is missing from --store/--shard";
      eng_.set_configuration_error(why);
      throw std::runtime_error(why);
    }
  }
  if (find("buckets") != std::to_string(eng_.config().buckets))
    throw std::runtime_error("the cluster has " + find("buckets") + " buckets, configured " +
                             std::to_string(eng_.config().buckets));

  std::vector<std::tuple<std::string, std::uint32_t, std::uint32_t>> types;
  co_await conn.async_query(pg::sql("SELECT typname::text, oid, typarray FROM pg_type "
                                    "WHERE typnamespace = 'mail'::regnamespace AND typname IN "
                                    "('addr', 'attach', 'new_message_v2')"),
                            pg::into(types));
  auto t = std::make_shared<shard_types>();
  for (auto& [name, oid, array] : types) {
    if (name == "addr")
      t->addr = oid, t->addr_array = array;
    else if (name == "attach")
      t->attach = oid, t->attach_array = array;
    else if (name == "new_message_v2")
      t->new_message = oid, t->new_message_array = array;
  }
  if (!t->complete()) throw std::runtime_error("the schema lacks the mail.* types");
  types_.store(std::move(t));

  co_await conn.async_execute("SET lock_timeout = '500ms'");
  last_maintenance_ = {};
  co_await maintain(conn);
  co_await refresh(conn);
  ready_.store(true, std::memory_order_release);
  if (slots_.empty()) {
    for (std::size_t i = 0; i < eng_.config().writer_connections; ++i) {
      slots_.push_back(std::make_unique<slot>(strand_, writer_options(eng_.config())));
      connect_slot(*slots_.back());
    }
  }
  set_detail(live_slots_.load() > 0 ? "up" : "connecting writers");
}

asio::awaitable<void> shard::refresh(pg::connection& conn) {
  // The buckets, the home copies of frozen ones and the tally in one snapshot: stats()
  // takes a frozen bucket out of this shard's tally once its new shard owns it.
  co_await conn.async_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  std::vector<std::tuple<std::int32_t, std::string, std::int64_t, std::int64_t, std::int64_t>> rows;
  co_await conn.async_query(
      // The condition on the state inside the lateral query: a one-time filter, so only
      // a frozen bucket's copies are looked up.
      pg::sql("SELECT b.bucket, b.state, f.messages, f.unread, f.bytes FROM mail.bucket b "
              "CROSS JOIN LATERAL (SELECT count(*)::int8 AS messages, "
              "count(*) FILTER (WHERE NOT m.read)::int8 AS unread, "
              "coalesce(sum(m.size), 0)::int8 AS bytes FROM mail.message m "
              "WHERE b.state = 'frozen' AND m.home AND m.primary_bucket = b.bucket) f "
              "ORDER BY b.bucket"),
      pg::into(rows));
  std::vector<std::pair<std::int32_t, char>> h;
  std::vector<frozen_count> frozen;
  h.reserve(rows.size());
  for (auto& [b, st, n, unread, bytes] : rows) {
    h.emplace_back(b, st.empty() ? '?' : st.front());
    if (st == "frozen") frozen.push_back({b, n, unread, bytes});
  }
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> tally;
  co_await conn.async_query(
      pg::sql("SELECT coalesce(sum(messages), 0)::int8, coalesce(sum(unread), 0)::int8, "
              "coalesce(sum(bytes), 0)::int8 FROM mail.tally"),
      pg::into(tally));
  co_await conn.async_execute("COMMIT");
  {
    std::lock_guard lk(mu_);
    holdings_ = std::move(h);
    frozen_ = std::move(frozen);
  }
  if (!tally.empty()) {
    tally_messages.store(std::get<0>(tally[0]));
    tally_unread.store(std::get<1>(tally[0]));
    tally_bytes.store(std::get<2>(tally[0]));
  }
  eng_.rebuild_map();
  if (ready()) set_detail(live_slots_.load() > 0 ? "up" : "no writer connection");
}

asio::awaitable<void> shard::maintain(pg::connection& conn) {
  last_maintenance_ = steady::now();
  pg::interval step{static_cast<std::int64_t>(eng_.partition_interval().count()) * 1000000, 0, 0};
  co_await conn.async_query(pg::sql("SELECT mail.ensure_parts($1, 3)", step));
  if (auto keep = eng_.config().retention) {
    pg::interval k{static_cast<std::int64_t>(keep->count()) * 1000000, 0, 0};
    for (int i = 0; i < 64; ++i) {  // a bounded number per round
      std::vector<std::optional<std::int64_t>> dropped;
      co_await conn.async_query(pg::sql("SELECT mail.drop_expired_part($1)", k), pg::into(dropped));
      if (dropped.empty() || !dropped.front()) break;
      eng_.expired(static_cast<std::uint64_t>(*dropped.front()));
    }
  }
  co_await conn.async_query(pg::sql("SELECT mail.compact_tally()"));
  if (!building_.load() && co_await deferred_indexes_missing(conn) && !building_.exchange(true))
    asio::co_spawn(strand_, build_indexes(), asio::detached);
}

asio::awaitable<void> shard::build_indexes() {
  std::string failure;
  try {
    pg::connection conn(strand_);
    co_await conn.async_connect(dsn_);
    co_await conn.async_execute("SET client_min_messages = warning");
    int built = co_await build_deferred_indexes(conn);
    if (built > 0)
      std::fprintf(stderr, "inlet pg store: shard %u (%s): built %d partition indexes\n", index_,
                   endpoint_.c_str(), built);
    conn.close();
  } catch (const std::exception& e) {
    failure = describe(e);
  }
  if (!failure.empty() && !stopping_.load())
    std::fprintf(stderr,
                 "inlet pg store: shard %u (%s): building indexes: %s (tried again at the next "
                 "maintenance)\n",
                 index_, endpoint_.c_str(), failure.c_str());
  building_.store(false);
}

// ---- writer ----------------------------------------------------------------------------

void shard::enqueue(copy_item item) {
  item.queued_at = steady::now();
  bool post = false;
  {
    std::lock_guard lk(queue_mu_);
    queue_.push_back(std::move(item));
    if (!pump_posted_) post = pump_posted_ = true;
  }
  if (post) asio::post(strand_, [this] { pump(); });
}

void shard::schedule_pump() {
  bool post = false;
  {
    std::lock_guard lk(queue_mu_);
    if (!pump_posted_) post = pump_posted_ = true;
  }
  if (post) asio::post(strand_, [this] { pump(); });
}

void shard::connect_slot(slot& s) {
  if (stopped_) return;
  s.conn = std::make_unique<pg::connection>(strand_, writer_options(eng_.config()));
  s.st = slot::state::connecting;
  s.in_flight.clear();
  s.rtt = steady::duration::max();
  const auto generation = ++s.generation;
  s.conn->async_connect(dsn_, [this, &s, generation](std::error_code ec) {
    if (stopped_ || generation != s.generation) return;
    if (ec) {
      s.st = slot::state::down;
      s.retry.expires_after(eng_.config().reconnect_delay);
      s.retry.async_wait([this, &s](boost::system::error_code e) {
        if (!e) connect_slot(s);
      });
      pump();  // fails what is queued if no connection is left
      return;
    }
    ping_slot(s, generation, writer_pings);
  });
}

// The connection's round trip, before it takes batches: what tells pump whether a
// batch should wait for a commit on it or be pipelined behind it.
void shard::ping_slot(slot& s, std::uint64_t generation, int left) {
  if (left == 0) {
    slot_ready(s);
    return;
  }
  auto t0 = steady::now();
  s.conn->async_execute("SELECT 1", [this, &s, generation, left, t0](std::error_code ec,
                                                                    std::uint64_t) {
    if (stopped_ || generation != s.generation) return;
    if (ec) {
      s.st = slot::state::down;
      ++s.generation;
      s.conn->close();
      s.retry.expires_after(eng_.config().reconnect_delay);
      s.retry.async_wait([this, &s](boost::system::error_code e) {
        if (!e) connect_slot(s);
      });
      pump();
      return;
    }
    s.rtt = std::min(s.rtt, steady::now() - t0);
    ping_slot(s, generation, left - 1);
  });
}

void shard::slot_ready(slot& s) {
  s.st = slot::state::open;
  note_rtt(counters_, s.rtt);
  live_slots_.fetch_add(1);
  if (ready()) set_detail("up");
  pump();
}

void shard::slot_failed(slot& s) {
  if (s.st == slot::state::open) live_slots_.fetch_sub(1);
  s.st = slot::state::down;
  // Its batches still in flight complete with errors and go back to the queue.
  ++s.generation;
  s.in_flight.clear();
  s.conn->close();
  if (live_slots_.load() == 0)
    set_detail("writer connections lost: " + s.conn->last_diagnostics().to_string());
  s.retry.expires_after(eng_.config().reconnect_delay);
  s.retry.async_wait([this, &s](boost::system::error_code e) {
    if (!e) connect_slot(s);
  });
}

void shard::pump() {
  {
    std::lock_guard lk(queue_mu_);
    pump_posted_ = false;
  }
  if (stopped_) return;
  const auto& cfg = eng_.config();
  auto now = steady::now();
  std::vector<copy_item> expired;
  // With no writer connection the queued copies cannot be written soon: fail them now
  // (their puts answer 451) instead of holding the senders until the timeout.
  if (live_slots_.load() == 0) {
    bool connecting = false;
    for (auto& s : slots_) connecting = connecting || s->st == slot::state::connecting;
    if (!connecting || !ready()) {
      std::lock_guard lk(queue_mu_);
      for (auto& i : queue_) expired.push_back(std::move(i));
      queue_.clear();
    }
  }
  const std::size_t depth = std::max<std::size_t>(1, cfg.writer_pipeline);
  std::size_t busy = 0;  // transactions in flight on every connection
  for (auto& sp : slots_) busy += sp->in_flight.size();
  for (;;) {
    slot* pick = nullptr;
    for (auto& sp : slots_) {
      if (sp->st == slot::state::open && sp->in_flight.empty()) {
        pick = sp.get();
        break;
      }
    }
    if (!pick && busy > 0 && depth > 1) {
      // Every connection has a transaction in flight. The soonest any result can come
      // back is a connection's oldest batch plus its round trip: if that is near (on
      // loopback, always), the queue waits for it and its batch grows; if it is a
      // network's round trip away, the queue leaves now, pipelined behind the
      // connection with the fewest in flight, instead of waiting a whole round trip.
      auto soonest = steady::time_point::max();
      slot* least = nullptr;
      for (auto& sp : slots_) {
        if (sp->st != slot::state::open || sp->in_flight.empty()) continue;
        if (sp->rtt != steady::duration::max())
          soonest = std::min(soonest, sp->in_flight.front() + sp->rtt);
        if (sp->in_flight.size() < depth &&
            (!least || sp->in_flight.size() < least->in_flight.size()))
          least = sp.get();
      }
      if (least && soonest != steady::time_point::max() && soonest - now >= pipeline_gap)
        pick = least;
    }
    if (!pick) break;
    slot& s = *pick;
    std::vector<copy_item> batch;
    std::size_t bytes = 0;
    steady::time_point wake_at{};
    {
      std::lock_guard lk(queue_mu_);
      // Group commit: with nothing in flight a batch leaves at once (the latency of one
      // commit at low load); with transactions in flight another starts only for a
      // batch worth it (parallel_batch copies), else the queue keeps growing until a
      // commit frees its connection. Per-transaction work is most of a small batch's
      // cost, so this keeps batches large under load.
      if (busy > 0 && queue_.size() < std::min(cfg.max_batch_messages, parallel_batch)) break;
      // Linger: with few copies waiting, give others a moment to join the batch.
      if (cfg.max_batch_wait.count() > 0 && !queue_.empty() &&
          queue_.size() < cfg.max_batch_messages &&
          queue_.front().queued_at + cfg.max_batch_wait > now) {
        wake_at = queue_.front().queued_at + cfg.max_batch_wait;
      } else {
        for (auto it = queue_.begin();
             it != queue_.end() && batch.size() < cfg.max_batch_messages;) {
          if (it->put->deadline <= now) {
            expired.push_back(std::move(*it));
            it = queue_.erase(it);
            continue;
          }
          if (it->not_before > now) {
            if (wake_at == steady::time_point{} || it->not_before < wake_at)
              wake_at = it->not_before;
            ++it;
            continue;
          }
          if (!batch.empty() &&
              (it->solo || batch.front().solo || bytes + it->encoded.size() > cfg.max_batch_bytes))
            break;
          bytes += it->encoded.size();
          batch.push_back(std::move(*it));
          it = queue_.erase(it);
        }
      }
    }
    if (wake_at != steady::time_point{} && !linger_armed_) {
      linger_armed_ = true;
      linger_.expires_at(wake_at);
      linger_.async_wait([this](boost::system::error_code) {
        linger_armed_ = false;
        pump();
      });
    }
    if (batch.empty()) break;
    send(s, std::move(batch));
    ++busy;
  }
  for (auto& i : expired) {
    counters_.copies_failed.fetch_add(1, std::memory_order_relaxed);
    eng_.copy_finished(
        i.put, make_error_code(live_slots_.load() == 0 ? errc::unavailable : errc::timeout));
  }
}

void shard::send(slot& s, std::vector<copy_item> batch) {
  auto sent = steady::now();
  for (auto& item : batch) {
    counters_.route_sum_us.fetch_add(micros(item.queued_at - item.put->start),
                                     std::memory_order_relaxed);
    counters_.queue_sum_us.fetch_add(micros(sent - item.queued_at), std::memory_order_relaxed);
  }
  // The whole batch as one mail.new_message_v2[] parameter: this shard's element OID in
  // the array header, the copies' records as the elements.
  array_param p;
  p.element = types()->new_message;
  p.elements.reserve(batch.size());
  // (copy position, bucket) pairs the shard checks ownership of: every bucket of the copy
  // and, for the home copy, the primary bucket.
  std::vector<std::int32_t> copy_of, bucket_of;
  // With a mailbox cap: the batch's mailboxes, which the shard trims after storing.
  const auto cap = static_cast<std::int32_t>(eng_.config().mailbox_cap);
  std::vector<std::string> box_names;
  std::vector<std::int32_t> box_buckets;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& item = batch[i];
    p.elements.emplace_back(item.encoded);
    for (auto b : item.buckets) {
      copy_of.push_back(static_cast<std::int32_t>(i + 1));
      bucket_of.push_back(b);
    }
    if (item.home) {
      copy_of.push_back(static_cast<std::int32_t>(i + 1));
      bucket_of.push_back(item.put->primary_bucket);
    }
    if (cap > 0) {
      box_names.insert(box_names.end(), item.mailboxes.begin(), item.mailboxes.end());
      box_buckets.insert(box_buckets.end(), item.buckets.begin(), item.buckets.end());
    }
  }
  auto q = pg::sql(
      "SELECT refused, trimmed FROM mail.put_v2($1::mail.new_message_v2[], $2, $3, $4, $5, $6, $7, "
      "$8)",
      std::move(p), std::move(copy_of), std::move(bucket_of), cap, std::move(box_names),
      std::move(box_buckets), eng_.channel(), eng_.instance());
  if (!s.in_flight.empty()) counters_.pipelined.fetch_add(1, std::memory_order_relaxed);
  s.in_flight.push_back(sent);
  s.conn->async_query(std::move(q), [this, &s, generation = s.generation,
                                     batch = std::move(batch),
                                     sent](std::error_code ec, pg::result r) mutable {
    on_batch(s, generation, std::move(batch), sent, ec, std::move(r));
  });
}

void shard::on_batch(slot& s, std::uint64_t generation, std::vector<copy_item> batch,
                     steady::time_point sent, std::error_code ec, pg::result r) {
  const auto took = steady::now() - sent;
  const auto us = micros(took);
  counters_.latency_sum_us.fetch_add(us, std::memory_order_relaxed);
  const auto& bounds = latency_bounds();
  std::size_t li = 0;
  while (li + 1 < bounds.size() && us > bounds[li]) ++li;
  counters_.latency_hist[li].fetch_add(1, std::memory_order_relaxed);
  if (stopped_) {
    for (auto& i : batch) eng_.copy_finished(i.put, make_error_code(errc::unavailable));
    return;
  }
  // A completion of the slot's current connection (else of one already given up).
  const bool current = generation == s.generation;
  if (current) {
    auto it = std::find(s.in_flight.begin(), s.in_flight.end(), sent);
    if (it != s.in_flight.end()) s.in_flight.erase(it);
    if (!ec) {
      s.rtt = std::min(s.rtt, took);
      note_rtt(counters_, took);
    }
  }

  std::vector<std::int32_t> refused;
  std::vector<std::string> trimmed;
  if (!ec && r.rows() == 1) {
    ec = r.at(0, 0).as(refused);
    if (!ec) ec = r.at(0, 1).as(trimmed);
  }
  if (ec) {
    counters_.batch_errors.fetch_add(1, std::memory_order_relaxed);
    bool lost = !current || is_connection_loss(ec) || !s.conn->is_open();
    std::string why = current ? s.conn->last_diagnostics().to_string() : std::string();
    if (lost) {
      // The commit's outcome is unknown; sending the copies again is safe (a stored
      // copy is skipped), so they go back to the front of the queue. The connection's
      // other batches in flight come back here too, each as its own failure.
      if (current) slot_failed(s);
      std::lock_guard lk(queue_mu_);
      for (auto it = batch.rbegin(); it != batch.rend(); ++it) queue_.push_front(std::move(*it));
    } else if (ec == pg::make_sqlstate_error("23514")) {
      // No partition for the rows (they are made ahead by maintenance; one was lost or
      // is being made): have maintenance run now and try again shortly.
      maintain_now_.store(true);
      refresh_soon();
      auto later = steady::now() + std::chrono::milliseconds(200);
      std::lock_guard lk(queue_mu_);
      for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
        it->not_before = later;
        queue_.push_front(std::move(*it));
      }
    } else if (batch.size() > 1 && !batch.front().solo) {
      // A statement error: find the copy that causes it by sending each alone.
      std::lock_guard lk(queue_mu_);
      for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
        it->solo = true;
        queue_.push_front(std::move(*it));
      }
    } else {
      std::fprintf(stderr, "inlet pg store: shard %u: a message could not be stored: %s\n", index_,
                   why.c_str());
      for (auto& i : batch) {
        counters_.copies_failed.fetch_add(1, std::memory_order_relaxed);
        eng_.copy_finished(i.put, make_error_code(errc::unavailable));
      }
    }
    pump();
    return;
  }
  counters_.batches.fetch_add(1, std::memory_order_relaxed);
  counters_.commit_sum_us.fetch_add(us * batch.size(), std::memory_order_relaxed);
  counters_.batch_messages.fetch_add(batch.size(), std::memory_order_relaxed);
  counters_.size_hist[size_bucket(batch.size())].fetch_add(1, std::memory_order_relaxed);
  std::size_t next_refused = 0;
  std::sort(refused.begin(), refused.end());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (next_refused < refused.size() &&
        refused[next_refused] == static_cast<std::int32_t>(i + 1)) {
      ++next_refused;
      counters_.refused.fetch_add(1, std::memory_order_relaxed);
      eng_.reroute_later(std::move(batch[i]));
      continue;
    }
    counters_.copies_ok.fetch_add(1, std::memory_order_relaxed);
    eng_.copy_finished(batch[i].put, {}, static_cast<int>(index_));
  }
  if (!trimmed.empty()) eng_.trimmed(std::move(trimmed));
  pump();
}

}  // namespace inlet::store::pgstore
