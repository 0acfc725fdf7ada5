// expect: consumed
// clang -Wconsumed: a statement after commit.
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  co_await std::move(tx).async_commit();
  co_await tx.async_execute("SELECT 1");
}
