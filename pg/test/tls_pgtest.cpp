// inlet::pg over TLS (ctest runs this against a cluster with ssl=on and a DSN with
// sslmode=require): large results and many pipelined requests must all complete. With
// TLS, libpq (OpenSSL) may hold decrypted bytes that the socket no longer shows as
// readable; a reader that waits on the socket then would wait forever. Every request
// has a timeout, so such a stall fails the test instead of hanging it.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>

#include "inlet/pg/pool.hpp"
#include "pg_test_env.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;
using asio::awaitable;
using namespace std::chrono_literals;

namespace {
const pg::connection_options tls_opts{.query_timeout = std::chrono::milliseconds(20'000)};
}

TEST(PgTls, ConnectionUsesTls) {
  REQUIRE_PG();
  asio::io_context io;
  pg::connection c(io.get_executor(), tls_opts);
  c.connect(pg_dsn());
  EXPECT_EQ(PQsslInUse(c.native_handle()), 1) << "run via ctest (INLET_PG_SSL=on)";
  auto r = c.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
  bool ssl = false;
  EXPECT_FALSE(r.at(0, 0).as(ssl));
  EXPECT_TRUE(ssl);
}

TEST(PgTls, LargeResultsSequential) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor(), tls_opts);
    co_await c.async_connect(pg_dsn());
    // Field sizes around and above TLS record sizes (16 KiB) and libpq's buffer steps.
    for (std::int32_t size : {1, 4000, 8191, 8192, 16384, 16385, 40000, 100000, 1'000'000}) {
      for (std::int32_t rows : {1, 3, 17}) {
        std::vector<std::string> got;
        auto [ec, n] = co_await c.async_query(
            pg::sql("SELECT repeat(chr(65 + g % 26), $1) FROM generate_series(1, $2::int4) g", size, rows),
            pg::into(got), asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec) << size << "x" << rows << ": " << ec.message();
        EXPECT_EQ(n, static_cast<std::size_t>(rows));
        for (std::size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].size(), static_cast<std::size_t>(size));
          EXPECT_EQ(got[i].front(), static_cast<char>('A' + (i + 1) % 26));
        }
        if (ec) co_return;
      }
    }
  });
}

TEST(PgTls, ManyPipelinedRequests) {
  REQUIRE_PG();
  asio::io_context io;
  run_co(io, [&]() -> awaitable<void> {
    pg::connection c(io.get_executor(), tls_opts);
    co_await c.async_connect(pg_dsn());
    constexpr int n = 300;
    int done = 0, ok = 0;
    for (int i = 0; i < n; ++i) {
      // Mixed sizes: small rows and fields that span several TLS records.
      std::int32_t size = (i % 5 == 0) ? 20000 + i * 37 : 10 + i;
      c.async_query(pg::sql("SELECT repeat('z', $1), $2::int4", size, i),
                    [&, size, i](std::error_code ec, pg::result r) {
                      ++done;
                      if (ec) {
                        ADD_FAILURE() << i << ": " << ec.message();
                        return;
                      }
                      std::string_view s;
                      std::int32_t back = -1;
                      r.at(0, 0).as(s);
                      r.at(0, 1).as(back);
                      if (s.size() == static_cast<std::size_t>(size) && back == i) ++ok;
                    });
    }
    asio::steady_timer t(io);
    for (int spin = 0; done < n && spin < 6000; ++spin) {
      t.expires_after(5ms);
      co_await t.async_wait(asio::use_awaitable);
    }
    EXPECT_EQ(done, n);
    EXPECT_EQ(ok, n);
    // A batch and the pool over TLS too.
    pg::batch b;
    for (std::int32_t i = 0; i < 50; ++i) b.add("SELECT repeat('q', $1)", 1000 * i);
    auto br = co_await c.async_execute(std::move(b));
    EXPECT_EQ(br.size(), 50u);
    EXPECT_EQ(br.failed, pg::batch_result::npos);
  });
}

TEST(PgTls, PoolOverTls) {
  REQUIRE_PG();
  asio::io_context io;
  pg::pool_options o;
  o.dsn = pg_dsn();
  o.size = 4;
  o.connection = tls_opts;
  pg::pool p(io.get_executor(), o);
  int ok = 0;
  for (int w = 0; w < 8; ++w) {
    asio::co_spawn(io, [&]() -> awaitable<void> {
      for (int i = 0; i < 10; ++i) {
        auto c = co_await p.async_acquire();
        std::vector<std::string> v;
        co_await c->async_query(pg::sql("SELECT repeat('p', 30000) FROM generate_series(1, 4)"), pg::into(v));
        if (v.size() == 4 && v[3].size() == 30000) ++ok;
      }
    }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  }
  io.run();
  EXPECT_EQ(ok, 80);
}
