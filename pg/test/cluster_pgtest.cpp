// A cluster against a primary and a streaming replica (scripts/with-postgres.sh with
// INLET_PG_REPLICA=on): roles, routing, transactions on the primary, read-only errors on
// the replica; with --failover, the primary is stopped and the replica promoted in the
// middle of a write load (run as its own ctest, since it ends the primary).
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

#include "inlet/pg/cluster.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using namespace std::chrono_literals;

namespace {
std::string cluster_dsn() {
  const char* d = std::getenv("INLET_PG_CLUSTER_DSN");
  return d ? d : "";
}
#define REQUIRE_CLUSTER()                                                   \
  do {                                                                      \
    if (cluster_dsn().empty())                                              \
      GTEST_SKIP() << "INLET_PG_CLUSTER_DSN not set (INLET_PG_REPLICA=on)"; \
  } while (0)

pg::cluster_options copts() {
  pg::cluster_options o;
  o.dsn = cluster_dsn();
  o.pool.size = 4;
  o.pool.acquire_timeout = 3s;
  o.pool.connection.connect_timeout = 1s;
  o.pool.connect_backoff_initial = 20ms;
  o.pool.connect_backoff_max = 200ms;
  o.check_interval = 100ms;
  return o;
}
awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}
awaitable<bool> in_recovery(pg::pooled_connection& c) {
  std::vector<bool> r;
  co_await c->async_query(pg::sql("SELECT pg_is_in_recovery()"), pg::into(r));
  co_return r.at(0);
}
std::string pg_ctl(const char* data, const std::string& args) {
  std::string cmd = std::string(std::getenv("INLET_PG_BIN")) + "/pg_ctl -D " + data + " " + args +
                    " >/dev/null 2>&1";
  if (::geteuid() == 0) cmd = "runuser -u postgres -- " + cmd;
  return cmd;
}
}  // namespace

TEST(PgCluster, RolesAndRouting) {
  REQUIRE_CLUSTER();
  asio::io_context io;
  pg::cluster c(io.get_executor(), copts());
  EXPECT_EQ(c.size(), 2u);
  run_co(io, [&]() -> awaitable<void> {
    auto p = co_await c.async_acquire(pg::target::primary);
    EXPECT_FALSE(co_await in_recovery(p));
    auto r = co_await c.async_acquire(pg::target::replica);
    EXPECT_TRUE(co_await in_recovery(r));
    auto pr = co_await c.async_acquire(pg::target::prefer_replica);
    EXPECT_TRUE(co_await in_recovery(pr));
    auto st = c.status();
    EXPECT_EQ(st.at(0).role, pg::host_role::primary);
    EXPECT_EQ(st.at(1).role, pg::host_role::replica);

    // Writes on the primary reach the replica; the replica refuses writes.
    co_await p->async_execute("DROP TABLE IF EXISTS t_cl");
    co_await p->async_execute("CREATE TABLE t_cl (id int4)");
    auto tx = co_await pg::async_begin(c);  // on the primary
    co_await tx.async_execute(pg::sql("INSERT INTO t_cl VALUES (42)"));
    co_await std::move(tx).async_commit();
    std::vector<std::int64_t> n;
    for (int i = 0; i < 500; ++i) {  // bounded: 5 s
      n.clear();
      auto [ec, rows] = co_await r->async_query(pg::sql("SELECT count(*)::int8 FROM t_cl"),
                                                pg::into(n), asio::as_tuple(asio::use_awaitable));
      if (!ec && n.at(0) == 1) break;
      co_await sleep_for(10ms);
    }
    EXPECT_EQ(n, std::vector<std::int64_t>{1});
    auto [ec, x] = co_await r->async_execute(pg::sql("INSERT INTO t_cl VALUES (1)"),
                                             asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, pg::condition::database_readonly);
    // Read-only transactions on a replica when asked.
    auto rtx = co_await pg::async_begin(c, pg::target::replica, {.read_only = true});
    std::vector<bool> rec;
    co_await rtx.async_query(pg::sql("SELECT pg_is_in_recovery()"), pg::into(rec));
    EXPECT_EQ(rec, std::vector<bool>{true});
    co_await std::move(rtx).async_commit();
    c.close();
  });
}

// The same through a list of per-host strings, replica first: the roles decide, not the order.
TEST(PgCluster, HostListInAnyOrder) {
  REQUIRE_CLUSTER();
  asio::io_context io;
  auto o = copts();
  o.dsn.clear();
  o.hosts = {"postgresql://postgres@127.0.0.1:" +
                 std::string(std::getenv("INLET_PG_REPLICA_PORT")) + "/postgres",
             pg_dsn()};
  pg::cluster c(io.get_executor(), o);
  run_co(io, [&]() -> awaitable<void> {
    auto p = co_await c.async_acquire(pg::target::primary);
    EXPECT_FALSE(co_await in_recovery(p));
    // The hosts are probed concurrently: the primary may answer before the replica has,
    // so wait for a replica connection before reading both roles.
    auto r = co_await c.async_acquire(pg::target::replica);
    EXPECT_TRUE(co_await in_recovery(r));
    EXPECT_EQ(c.status().at(0).role, pg::host_role::replica);
    EXPECT_EQ(c.status().at(1).role, pg::host_role::primary);
    c.close();
  });
}

// A primary and a replica under a write load; the primary stops and the replica is
// promoted: writes fail for a while, then go to the new primary; nothing hangs.
TEST(PgClusterFailover, PromoteInTheMiddleOfLoad) {
  REQUIRE_CLUSTER();
  const char* data = std::getenv("INLET_PG_DATA");
  const char* rdata = std::getenv("INLET_PG_REPLICA_DATA");
  ASSERT_TRUE(data && rdata && std::getenv("INLET_PG_BIN"));
  asio::io_context io;
  pg::cluster c(io.get_executor(), copts());
  std::atomic<bool> failed_over{false};
  std::chrono::steady_clock::time_point promoted_at{}, first_write_after{};
  int before = 0, after = 0, errors = 0, reads = 0, done = 0;
  std::thread failover;
  auto t0 = std::chrono::steady_clock::now();
  auto worker = [&](int k) -> awaitable<void> {
    // Bounded: at most 40 s or 300 writes after the failover.
    bool backoff = false;
    while (after < 300 && std::chrono::steady_clock::now() - t0 < 40s) {
      try {
        if (k == 3) {  // a reader on replicas when there are any
          auto r = co_await c.async_acquire(pg::target::prefer_replica);
          co_await r->async_query(pg::sql("SELECT count(*) FROM t_fo"));
          ++reads;
        } else {
          auto tx = co_await pg::async_begin(c);
          co_await tx.async_execute(pg::sql("INSERT INTO t_fo (w) VALUES ($1::int4)", k));
          co_await std::move(tx).async_commit();
          if (!failed_over) {
            ++before;
          } else {
            if (after++ == 0) first_write_after = std::chrono::steady_clock::now();
          }
        }
      } catch (const pg::error& e) {
        ++errors;
        EXPECT_TRUE(e.code() == pg::condition::connection_error ||
                    e.code() == pg::condition::timeout ||
                    e.code() == pg::errc::commit_outcome_unknown ||
                    e.code() == pg::condition::database_readonly)
            << e.what();
        backoff = true;
      }
      if (backoff) co_await sleep_for(20ms);
      backoff = false;
      if (before >= 200 && !failover.joinable()) {
        failover = std::thread([&] {
          EXPECT_EQ(std::system(pg_ctl(data, "-m immediate -w stop").c_str()), 0);
          EXPECT_EQ(std::system(pg_ctl(rdata, "-w -t 60 promote").c_str()), 0);
          promoted_at = std::chrono::steady_clock::now();
          failed_over = true;
        });
      }
      co_await sleep_for(std::chrono::milliseconds(k == 3 ? 5 : 1));
    }
    ++done;
  };
  run_co(io, [&]() -> awaitable<void> {
    {
      auto p = co_await c.async_acquire(pg::target::primary);
      co_await p->async_execute("DROP TABLE IF EXISTS t_fo");
      co_await p->async_execute("CREATE TABLE t_fo (id serial, w int4)");
      auto r = co_await c.async_acquire(pg::target::replica);
      for (int i = 0; i < 500; ++i) {  // the table reached the replica (bounded: 5 s)
        std::vector<bool> e;
        co_await r->async_query(pg::sql("SELECT to_regclass('t_fo') IS NOT NULL"), pg::into(e));
        if (e.at(0)) break;
        co_await sleep_for(10ms);
      }
    }
    for (int k = 0; k < 4; ++k) asio::co_spawn(io, worker(k), asio::detached);
    // The cluster's timer keeps run() busy: close it once the workers are done.
    while (done < 4) co_await sleep_for(20ms);
    c.close();
  });
  if (failover.joinable()) failover.join();
  EXPECT_EQ(done, 4);
  EXPECT_TRUE(failed_over.load());
  EXPECT_GE(before, 200);
  EXPECT_GE(after, 300) << "errors " << errors;
  EXPECT_GT(reads, 0);
  auto st = c.status();
  EXPECT_EQ(st.at(0).role, pg::host_role::down);
  EXPECT_EQ(st.at(1).role, pg::host_role::primary);
  EXPECT_GE(c.stats().role_changes, 2u);
  if (after > 0) {
    auto gap =
        std::chrono::duration_cast<std::chrono::milliseconds>(first_write_after - promoted_at);
    std::printf("first write on the new primary %lld ms after the promote; %d errors meanwhile\n",
                static_cast<long long>(gap.count()), errors);
    EXPECT_LT(gap, 10s);  // check_interval 100 ms + connect deadline 1 s, with a wide margin
  }
}
