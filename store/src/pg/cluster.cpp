// Cluster set-up: giving each shard its identity (index, bucket count) and, the first
// time, its buckets.
//
// Shard 0 is the coordinator of set-up only: its mail.meta row `initialized` says the
// cluster exists. Set-up runs under an advisory lock on shard 0, so two instances
// starting at once do it once:
// - no `initialized` on shard 0: a new cluster. Every shard must be reachable (else
//   nothing is written and set-up is retried); each gets its index, the bucket count
//   and the buckets b with b % N == index, shard 0 last, then `initialized`. Every
//   step is an upsert, so a set-up interrupted half-way is finished by the next try.
// - `initialized` present: this shard was added to a running cluster. It gets its
//   identity and no bucket; buckets are moved to it (docs/store-pg.md).
// After set-up a shard needs no other shard to start.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine.hpp"
#include "schema.hpp"

namespace inlet::store::pgstore {

namespace {

asio::awaitable<std::string> meta_value(pg::connection& c, std::string key) {
  std::vector<std::string> v;
  auto q = pg::sql("SELECT value FROM mail.meta WHERE key = $1", std::move(key));
  co_await c.async_query(std::move(q), pg::into(v));
  co_return v.empty() ? std::string() : v.front();
}

asio::awaitable<void> set_identity(pg::connection& c, unsigned index, std::uint32_t buckets,
                                   std::optional<unsigned> of_shards) {
  co_await c.async_execute("BEGIN");
  auto existing = co_await meta_value(c, "shard");
  if (!existing.empty() && existing != std::to_string(index))
    throw std::runtime_error("database is already shard " + existing + ", configured as shard " +
                             std::to_string(index));
  if (of_shards) {
    std::vector<std::int64_t> n;
    co_await c.async_query(pg::sql("SELECT count(*) FROM (SELECT 1 FROM mail.message LIMIT 1) m"),
                           pg::into(n));
    if (!n.empty() && n.front() > 0)
      throw std::runtime_error(
          "shard " + std::to_string(index) +
          " holds messages but the cluster is not set up: refusing to assign buckets");
  }
  auto upsert = pg::sql(
      "INSERT INTO mail.meta (key, value) VALUES ('shard', $1), ('buckets', $2) "
      "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      std::to_string(index), std::to_string(buckets));
  co_await c.async_execute(std::move(upsert));
  if (of_shards) {
    auto own = pg::sql(
        "INSERT INTO mail.bucket (bucket, state) SELECT b, 'owned' FROM generate_series(0, $1 - 1) "
        "AS b "
        "WHERE b % $2 = $3 ON CONFLICT (bucket) DO NOTHING",
        static_cast<std::int32_t>(buckets), static_cast<std::int32_t>(*of_shards),
        static_cast<std::int32_t>(index));
    co_await c.async_execute(std::move(own));
  }
  co_await c.async_execute("COMMIT");
}

}  // namespace

asio::awaitable<bool> engine::initialise_shard(pg::connection& own, unsigned index) {
  const unsigned n = static_cast<unsigned>(shards_.size());
  auto ex = co_await asio::this_coro::executor;
  // Connections to the other shards this set-up needs (shard 0 always; all when new).
  std::vector<std::unique_ptr<pg::connection>> conns(n);
  auto conn_to = [&](unsigned i) -> asio::awaitable<pg::connection*> {
    if (i == index) co_return &own;
    if (!conns[i]) {
      auto c = std::make_unique<pg::connection>(ex);
      co_await c->async_connect(shards_[i]->dsn());
      co_await c->async_execute("SET client_min_messages = warning");
      conns[i] = std::move(c);
    }
    co_return conns[i].get();
  };

  pg::connection* c0 = co_await conn_to(0);
  if (index != 0) co_await migrate(*c0);
  auto lock = pg::sql("SELECT pg_advisory_lock($1, $2)", lock_class, lock_init);
  co_await c0->async_execute(std::move(lock));
  std::exception_ptr failed;
  bool done = false;
  try {
    if (!(co_await meta_value(*c0, "initialized")).empty()) {
      // A running cluster: this shard joins it without buckets, and shard 0 records the
      // larger count.
      co_await set_identity(*co_await conn_to(index), index, cfg_.buckets, std::nullopt);
      auto count = pg::sql(
          "INSERT INTO mail.meta (key, value) VALUES ('shards', $1) ON CONFLICT (key) DO UPDATE "
          "SET value = greatest(mail.meta.value::int, excluded.value::int)::text",
          std::to_string(index + 1));
      co_await c0->async_execute(std::move(count));
      done = true;
    } else {
      for (unsigned i = 1; i < n; ++i) co_await migrate(*co_await conn_to(i));
      for (unsigned i = 1; i < n; ++i)
        co_await set_identity(*co_await conn_to(i), i, cfg_.buckets, n);
      co_await set_identity(*c0, 0, cfg_.buckets, n);
      auto mark = pg::sql(
          "INSERT INTO mail.meta (key, value) VALUES ('initialized', $1), ('shards', $1) "
          "ON CONFLICT (key) DO NOTHING",
          std::to_string(n));
      co_await c0->async_execute(std::move(mark));
      done = true;
    }
  } catch (...) {
    failed = std::current_exception();
  }
  co_await c0->async_execute("SELECT pg_advisory_unlock_all()",
                             asio::as_tuple(asio::use_awaitable));
  for (auto& c : conns)
    if (c) c->close();
  if (failed) std::rethrow_exception(failed);
  co_return done;
}

}  // namespace inlet::store::pgstore
