// Shared helpers of the *_pgtest programs: DSN from the environment (set by
// scripts/with-postgres.sh), running a coroutine to completion on an io_context, a
// server that accepts and never answers.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "inlet/pg/connection.hpp"

inline std::string pg_dsn() {
  const char* d = std::getenv("INLET_PG_DSN");
  return d ? d : "";
}

#define REQUIRE_PG()                                                              \
  do {                                                                            \
    if (pg_dsn().empty()) GTEST_SKIP() << "INLET_PG_DSN not set (run via ctest)"; \
  } while (0)

/// ASSERT_TRUE for coroutines (gtest's ASSERT_* return, which a coroutine cannot).
#define CO_ASSERT_TRUE(cond)                     \
  do {                                           \
    const bool co_ok_ = static_cast<bool>(cond); \
    EXPECT_TRUE(co_ok_) << #cond;                \
    if (!co_ok_) co_return;                      \
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

/// A TCP server on 127.0.0.1 that accepts connections and never answers (a stuck host):
/// its own io_context on its own thread; stops and joins when destroyed.
class silent_server {
 public:
  silent_server() : acc_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    accept();
    th_ = std::thread([this] { io_.run(); });
  }
  ~silent_server() {
    io_.stop();
    th_.join();
  }
  unsigned short port() const { return acc_.local_endpoint().port(); }
  std::size_t accepted() const { return accepted_.load(); }

 private:
  void accept() {
    acc_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket s) {
      if (ec) return;
      ++accepted_;
      held_.push_back(std::make_unique<boost::asio::ip::tcp::socket>(std::move(s)));
      accept();
    });
  }
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acc_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>> held_;
  std::atomic<std::size_t> accepted_{0};
  std::thread th_;
};
