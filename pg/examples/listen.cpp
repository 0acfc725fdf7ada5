// LISTEN/NOTIFY: a listener receives notifications as an async stream; a gap event says
// the connection was re-established and notifications may have been missed (re-read the
// state they were about, then go on).
//   pg_example_listen "postgresql://postgres@127.0.0.1:5432/postgres"
#include <boost/asio/io_context.hpp>
#include <cstdio>

#include "example_main.hpp"
#include "inlet/pg/listener.hpp"

namespace pg = inlet::pg;
namespace asio = boost::asio;

asio::awaitable<void> consume(pg::listener& l, int count) {
  for (int seen = 0; seen < count;) {
    pg::notification n = co_await l.async_receive();
    if (n.gap) {
      std::printf("reconnected: notifications may have been missed, re-reading state\n");
      continue;
    }
    std::printf("%s: %s (from server process %d)\n", n.channel.c_str(), n.payload.c_str(),
                n.backend_pid);
    ++seen;
  }
}

asio::awaitable<void> tutorial(asio::io_context& io, std::string dsn) {
  // 1. A listener has its own connection (LISTEN is per session) and reconnects by itself.
  pg::listener l(io.get_executor(), {.dsn = dsn});
  co_await l.async_listen("new_mail");  // returns once subscribed

  // 2. Anyone notifies with pg_notify (or NOTIFY); inside a transaction, at COMMIT.
  pg::connection conn(io.get_executor());
  co_await conn.async_connect(dsn);
  for (const char* mailbox : {"alice@example.com", "bob@example.com", "carol@example.com"})
    co_await conn.async_execute(pg::sql("SELECT pg_notify('new_mail', $1)", std::string(mailbox)));

  // 3. Receive them; then close the listener (it would otherwise keep io.run() busy).
  co_await consume(l, 3);
  l.close();
}

int main(int argc, char** argv) {
  return run_example(argc, argv, tutorial);
}
