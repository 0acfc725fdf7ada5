// LISTEN/NOTIFY against a real server: channels (quoted names), unlisten, cancellation,
// a terminated backend and a server restart (reconnect, re-subscribe, a gap event), the
// queue limit, a server that is down.
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <thread>

#include "inlet/pg/listener.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

namespace {
awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}
/// Receives with a deadline: nullopt if nothing came in time.
awaitable<std::optional<pg::notification>> receive_within(pg::listener& l,
                                                          std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  auto r = co_await (l.async_receive() || t.async_wait(asio::use_awaitable));
  if (r.index() == 0) co_return std::get<0>(std::move(r));
  co_return std::nullopt;
}
pg::listener_options lopts() {
  pg::listener_options o;
  o.dsn = pg_dsn();
  o.reconnect_initial = 20ms;
  o.reconnect_max = 200ms;
  return o;
}
}  // namespace

TEST(PgListener, ReceivesOnItsChannelsOnly) {
  REQUIRE_PG();
  asio::io_context io;
  pg::listener l(io.get_executor(), lopts());
  pg::connection n(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await l.async_listen("ch1");
    co_await l.async_listen("Chan \"two\"");  // any name: quoted as an identifier
    co_await n.async_connect(pg_dsn());
    co_await n.async_execute(pg::sql("SELECT pg_notify('other', 'x')"));
    co_await n.async_execute(
        pg::sql("SELECT pg_notify($1, $2)", std::string("ch1"), std::string("a")));
    co_await n.async_execute(
        pg::sql("SELECT pg_notify($1, $2)", std::string("Chan \"two\""), std::string("b")));
    auto a = co_await l.async_receive();
    auto b = co_await l.async_receive();
    EXPECT_EQ(a.channel, "ch1");
    EXPECT_EQ(a.payload, "a");
    EXPECT_FALSE(a.gap);
    EXPECT_GT(a.backend_pid, 0);
    EXPECT_EQ(b.channel, "Chan \"two\"");
    EXPECT_EQ(b.payload, "b");
    co_await l.async_unlisten("ch1");
    co_await n.async_execute(pg::sql("SELECT pg_notify('ch1', 'gone')"));
    co_await n.async_execute(pg::sql("SELECT pg_notify('Chan \"two\"', 'sentinel')"));
    auto c = co_await l.async_receive();
    EXPECT_EQ(c.payload, "sentinel");
    // Notifications sent inside a transaction arrive at its commit, in order.
    co_await n.async_execute("BEGIN");
    for (int i = 0; i < 5; ++i)
      co_await n.async_execute(pg::sql("SELECT pg_notify('Chan \"two\"', $1)", std::to_string(i)));
    co_await n.async_execute("COMMIT");
    for (int i = 0; i < 5; ++i) EXPECT_EQ((co_await l.async_receive()).payload, std::to_string(i));
    l.close();
  });
  EXPECT_EQ(l.stats().received, 8u);
}

TEST(PgListener, ReceiveIsCancellableAndTheListenerGoesOn) {
  REQUIRE_PG();
  asio::io_context io;
  pg::listener l(io.get_executor(), lopts());
  pg::connection n(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await l.async_listen("cancel_ch");
    auto none = co_await receive_within(l, 50ms);
    EXPECT_FALSE(none.has_value());
    co_await n.async_connect(pg_dsn());
    co_await n.async_execute(pg::sql("SELECT pg_notify('cancel_ch', 'after')"));
    auto got = co_await receive_within(l, 5000ms);
    CO_ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->payload, "after");
    l.close();
    auto [ec, x] = co_await l.async_receive(asio::as_tuple(asio::use_awaitable));
    EXPECT_EQ(ec, std::errc::operation_canceled);
  });
}

// The listener's backend is terminated: it reconnects, subscribes again, reports a gap,
// and receives what is sent afterwards.
TEST(PgListener, ReconnectsAfterItsBackendIsTerminated) {
  REQUIRE_PG();
  asio::io_context io;
  pg::listener l(io.get_executor(), lopts());
  pg::connection n(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await l.async_listen("term_ch");
    co_await n.async_connect(pg_dsn());
    co_await n.async_execute(pg::sql("SELECT pg_notify('term_ch', 'before')"));
    EXPECT_EQ((co_await l.async_receive()).payload, "before");
    co_await n.async_execute(pg::sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'"));
    auto gap = co_await receive_within(l, 10'000ms);
    CO_ASSERT_TRUE(gap.has_value());
    EXPECT_TRUE(gap->gap);
    co_await n.async_execute(pg::sql("SELECT pg_notify('term_ch', 'after')"));
    auto after = co_await receive_within(l, 10'000ms);
    CO_ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->payload, "after");
    EXPECT_EQ(l.stats().reconnects, 1u);
    l.close();
  });
}

// A listener across a server restart: notifications keep being sent by a separate
// notifier; the listener comes back, says it may have missed some, and gets the rest.
TEST(PgListener, AcrossAServerRestart) {
  REQUIRE_PG();
  const char* bin = std::getenv("INLET_PG_BIN");
  const char* data = std::getenv("INLET_PG_DATA");
  if (!bin || !data) GTEST_SKIP() << "INLET_PG_BIN/INLET_PG_DATA not set";
  std::string ctl =
      std::string(bin) + "/pg_ctl -D " + data + " -m fast -w -t 60 restart >/dev/null 2>&1";
  if (::geteuid() == 0) ctl = "runuser -u postgres -- " + ctl;

  asio::io_context io;
  pg::listener l(io.get_executor(), lopts());
  std::atomic<bool> restarted{false}, stop{false};
  std::thread restarter;
  std::thread notifier;
  int before = 0, after_gap = 0, gaps = 0;
  run_co(io, [&]() -> awaitable<void> {
    co_await l.async_listen("restart_ch");
    notifier = std::thread([&] {  // bounded: at most 30 s
      asio::io_context nio;
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; !stop && std::chrono::steady_clock::now() - t0 < 30s; ++i) {
        try {
          pg::connection n(nio.get_executor());
          n.connect(pg_dsn());
          for (; !stop && std::chrono::steady_clock::now() - t0 < 30s; ++i) {
            n.execute(pg::sql("SELECT pg_notify('restart_ch', $1)", std::to_string(i)));
            std::this_thread::sleep_for(10ms);
          }
        } catch (const std::exception&) {
          std::this_thread::sleep_for(50ms);  // the server is restarting
        }
      }
    });
    auto t0 = std::chrono::steady_clock::now();
    while (after_gap < 20 && std::chrono::steady_clock::now() - t0 < 25s) {
      auto got = co_await receive_within(l, 1000ms);
      if (!got) continue;
      if (got->gap) {
        ++gaps;
        continue;
      }
      if (gaps == 0) {
        if (++before == 10)
          restarter = std::thread([&] {
            EXPECT_EQ(std::system(ctl.c_str()), 0);
            restarted = true;
          });
      } else {
        ++after_gap;
      }
    }
    stop = true;
    l.close();
  });
  if (restarter.joinable()) restarter.join();
  if (notifier.joinable()) notifier.join();
  EXPECT_TRUE(restarted.load());
  EXPECT_GE(before, 10);
  EXPECT_EQ(gaps, 1);
  EXPECT_GE(after_gap, 20);
  EXPECT_GE(l.stats().reconnects, 1u);
}

TEST(PgListener, QueueLimitDropsAndReportsAGap) {
  REQUIRE_PG();
  asio::io_context io;
  auto o = lopts();
  o.queue_limit = 5;
  pg::listener l(io.get_executor(), o);
  pg::connection n(io.get_executor());
  run_co(io, [&]() -> awaitable<void> {
    co_await l.async_listen("q_ch");
    co_await n.async_connect(pg_dsn());
    co_await n.async_execute(
        pg::sql("SELECT pg_notify('q_ch', g::text) FROM generate_series(1, 20) g"));
    co_await sleep_for(200ms);  // all 20 arrived meanwhile; 5 fit
    for (int i = 1; i <= 5; ++i) EXPECT_EQ((co_await l.async_receive()).payload, std::to_string(i));
    EXPECT_TRUE((co_await l.async_receive()).gap);
    co_await n.async_execute(pg::sql("SELECT pg_notify('q_ch', 'next')"));
    EXPECT_EQ((co_await l.async_receive()).payload, "next");
    l.close();
  });
  EXPECT_EQ(l.stats().dropped, 15u);
}

TEST(PgListener, ServerDownFailsTheListenAndKeepsTrying) {
  REQUIRE_PG();
  asio::io_context io;
  auto o = lopts();
  o.dsn = "postgresql://postgres@127.0.0.1:1/postgres";
  pg::listener l(io.get_executor(), o);
  run_co(io, [&]() -> awaitable<void> {
    pg::diagnostics d;
    auto [ec] =
        co_await l.async_listen("x", pg::with_diagnostics(asio::as_tuple(asio::use_awaitable), d));
    EXPECT_EQ(ec, pg::condition::connection_error);
    EXPECT_FALSE(d.client_message.empty());
    co_await sleep_for(300ms);
    EXPECT_GE(l.stats().connect_failures, 2u);  // retried with backoff
    EXPECT_FALSE(l.stats().connected);
    l.close();
  });
}

// The listener on a thread pool, its consumer on another thread's io_context, the
// notifier on a third (run under TSan, label tsan).
TEST(PgListener, FromSeveralThreads) {
  REQUIRE_PG();
  asio::thread_pool tp(2);
  pg::listener l(tp.get_executor(), lopts());
  std::atomic<int> got{0};
  std::thread consumer([&] {
    asio::io_context io;
    run_co(io, [&]() -> awaitable<void> {
      co_await l.async_listen("mt_ch");
      got = -1;  // subscribed
      for (int i = 0; i < 200; ++i) {
        auto n = co_await receive_within(l, 10'000ms);
        if (!n || n->gap) break;
        EXPECT_EQ(n->payload, std::to_string(i));
        got = i + 1;
      }
    });
  });
  while (got == 0) std::this_thread::sleep_for(1ms);
  std::thread notifier([&] {
    asio::io_context io;
    pg::connection n(io.get_executor());
    n.connect(pg_dsn());
    for (int i = 0; i < 200; ++i)
      n.execute(pg::sql("SELECT pg_notify('mt_ch', $1)", std::to_string(i)));
  });
  notifier.join();
  consumer.join();
  EXPECT_EQ(got.load(), 200);
  l.close();
  tp.join();
}
