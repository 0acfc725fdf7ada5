// expect: deleted
// A transaction has one owner: it cannot be copied.
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  pg::transaction copy = tx;
  co_await std::move(copy).async_commit();
}
