// Shared helpers of the *_pgtest programs: DSN from the environment (set by
// scripts/with-postgres.sh), running a coroutine to completion on an io_context.
#pragma once
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <exception>
#include <string>

#include "inlet/pg/connection.hpp"

inline std::string pg_dsn() {
  const char* d = std::getenv("INLET_PG_DSN");
  return d ? d : "";
}

#define REQUIRE_PG()                                                              \
  do {                                                                            \
    if (pg_dsn().empty()) GTEST_SKIP() << "INLET_PG_DSN not set (run via ctest)"; \
  } while (0)

/// Runs an awaitable on a fresh io_context, rethrowing its exception. Bounded by the
/// ctest timeout; every test's awaitables finish by themselves.
template <class F>
void run_co(boost::asio::io_context& io, F&& f) {
  std::exception_ptr ep;
  bool done = false;
  boost::asio::co_spawn(io, std::forward<F>(f), [&](std::exception_ptr e) {
    ep = e;
    done = true;
  });
  io.run();
  io.restart();
  ASSERT_TRUE(done);
  if (ep) std::rethrow_exception(ep);
}
