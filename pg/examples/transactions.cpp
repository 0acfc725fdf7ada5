// Transactions: a transfer between two accounts on a pool, a savepoint for an optional
// part, pg::transact re-running the body on serialization failures, and what COMMIT's
// outcomes mean.
//   pg_example_transactions "postgresql://postgres@127.0.0.1:5432/postgres"
#include <boost/asio/io_context.hpp>
#include <cstdio>

#include "example_main.hpp"
#include "inlet/pg/transaction.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;

asio::awaitable<void> transfer(pg::pool& pool, std::int32_t from, std::int32_t to,
                               std::int64_t amount) {
  // 1. A transaction owns its connection until it ends; only it can run statements in it.
  auto tx = co_await pg::async_begin(pool, {.level = pg::isolation::repeatable_read});
  co_await tx.async_execute(
      pg::sql("UPDATE acct SET balance = balance - $1 WHERE id = $2", amount, from));
  co_await tx.async_execute(
      pg::sql("UPDATE acct SET balance = balance + $1 WHERE id = $2", amount, to));

  // 2. A savepoint: an optional part that may fail without failing the transfer.
  {
    auto sp = co_await tx.async_savepoint();
    try {
      co_await tx.async_execute(
          pg::sql("INSERT INTO audit (note) VALUES ($1)", std::string("transfer")));
      co_await std::move(sp).async_release();
    } catch (const pg::error& e) {
      std::printf("audit skipped: %s\n", e.diag().message.c_str());
      // sp is dropped here: the transaction rolls back to it and goes on.
    }
  }

  // 3. COMMIT consumes the transaction (tx.async_commit() on an lvalue does not compile).
  try {
    co_await std::move(tx).async_commit();
  } catch (const pg::error& e) {
    if (e.code() == pg::errc::commit_outcome_unknown) {
      // The connection was lost after COMMIT was sent: it may have committed. Check
      // before doing it again (an idempotency key in the data is the usual answer).
      std::printf("transfer outcome unknown: %s\n", e.what());
    } else {
      std::printf("transfer rolled back: %s\n", e.what());  // a failure: nothing was applied
    }
    throw;
  }
}

asio::awaitable<void> tutorial(asio::io_context& io, std::string dsn) {
  pg::pool pool(io.get_executor(), {.dsn = dsn, .size = 4});
  {
    auto c = co_await pool.async_acquire();
    co_await c->async_execute("DROP TABLE IF EXISTS acct, audit");
    co_await c->async_execute(
        "CREATE TABLE acct (id int4 PRIMARY KEY, balance int8 NOT NULL CHECK (balance >= 0))");
    co_await c->async_execute("CREATE TABLE audit (id serial, note text)");
    co_await c->async_execute("INSERT INTO acct VALUES (1, 100), (2, 0)");
  }
  co_await transfer(pool, 1, 2, 30);

  // 4. pg::transact: BEGIN, the body, COMMIT; on a serialization failure or a deadlock
  //    (40001, 40P01) everything runs again after a jittered backoff (bounded attempts).
  std::int64_t total = co_await pg::transact(
      pool, {.level = pg::isolation::serializable},
      [](pg::transaction& tx) -> asio::awaitable<std::int64_t> {
        std::vector<std::int64_t> sum;
        co_await tx.async_query(pg::sql("SELECT sum(balance)::int8 FROM acct"), pg::into(sum));
        co_return sum.at(0);
      });
  std::printf("total balance %lld\n", static_cast<long long>(total));

  // 5. A failing statement: dropping the transaction (here, by the exception leaving the
  //    scope) rolls it back; the pooled connection goes back to the pool after ROLLBACK.
  try {
    co_await transfer(pool, 2, 1, 1000);  // balance would go negative: CHECK fails
  } catch (const pg::error& e) {
    std::printf("refused: %s [%s]\n", e.diag().message.c_str(), e.diag().sqlstate.c_str());
  }
}

int main(int argc, char** argv) {
  return run_example(argc, argv, tutorial);
}
