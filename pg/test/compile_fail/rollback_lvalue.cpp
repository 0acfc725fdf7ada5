// expect: async_rollback|discards qualifiers|rvalue|transaction&&|savepoint&&
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  co_await tx.async_rollback();
}
