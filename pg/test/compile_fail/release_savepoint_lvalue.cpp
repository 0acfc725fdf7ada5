// expect: async_release|discards qualifiers|rvalue|transaction&&|savepoint&&
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  auto sp = co_await tx.async_savepoint();
  co_await sp.async_release();
}
