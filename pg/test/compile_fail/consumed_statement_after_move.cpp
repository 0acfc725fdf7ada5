// expect: consumed
// clang -Wconsumed: a statement on a moved-from transaction.
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  pg::transaction other = std::move(tx);
  co_await tx.async_execute("SELECT 1");
  co_await std::move(other).async_commit();
}
