// expect: async_commit|discards qualifiers|rvalue|transaction&&|savepoint&&
// Commit consumes the transaction: it takes only an rvalue (std::move(tx).async_commit()).
#include "common.hpp"

asio::awaitable<void> body(pg::pool& p) {
  auto tx = co_await pg::async_begin(p);
  co_await tx.async_commit();
}
