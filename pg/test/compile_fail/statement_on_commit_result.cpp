// expect: void
// What commit returns is not a transaction: it has no statements.
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  auto done = co_await std::move(tx).async_commit();
  co_await done.async_execute("SELECT 1");
}
