// expect: consumed
// clang -Wconsumed: a savepoint released, then rolled back.
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  auto sp = co_await tx.async_savepoint();
  co_await std::move(sp).async_release();
  co_await std::move(sp).async_rollback();
  co_await std::move(tx).async_commit();
}
