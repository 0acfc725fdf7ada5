// What every example's main() does: take the DSN from argv, run the example's coroutine on
// one io_context, and turn an escaped exception into a message and exit code 1.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <exception>
#include <string>

template <class Tutorial>
int run_example(int argc, char** argv, Tutorial tutorial) {
  namespace asio = boost::asio;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DSN\n", argv[0]);
    return 2;
  }
  asio::io_context io;
  int rc = 0;
  asio::co_spawn(io, tutorial(io, std::string(argv[1])), [&](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      std::fprintf(stderr, "failed: %s\n", x.what());
      rc = 1;
    }
  });
  io.run();
  return rc;
}
