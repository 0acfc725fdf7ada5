// POP3's connection core (pop3/src/connection.hpp) driven as the I/O drivers
// drive it, without sockets: scripted client bytes, a fake clock, store answers
// given when the test chooses (at once or later), TLS through memory BIOs.
#include "connection.hpp"
#include "memory_tls.hpp"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <inlet/tls/engine.hpp>
#include <inlet/tls/self_signed.hpp>
#include <memory>
#include <string>

namespace pop3 = inlet::pop3;
namespace store = inlet::store;
using namespace std::chrono_literals;
using pop3::detail::act;
using pop3::detail::action;
using tclock = pop3::detail::clock;
using pop3::detail::listener_kind;

namespace {

using inlet::test::tls_client;
std::unique_ptr<inlet::tls::tls_context> test_tls_context() {
  return inlet::test::test_tls_context("pop.test");
}

store::message_ptr stored(std::string id, std::string raw) {
  auto m = std::make_shared<store::stored_message>();
  m->size = raw.size();
  m->raw = std::move(raw);
  (void)id;
  return m;
}

// One connection, a fake clock, and a client: writes are taken whole at once
// (clear text into `out`, ciphertext into the TLS client), reads hand over
// what the client queued.
struct harness {
  pop3::detail::conn_policy policy;
  std::atomic<bool> stopping{false}, pressure{false};
  std::unique_ptr<pop3::detail::connection> c;
  std::unique_ptr<tls_client> tls;
  tclock::time_point now = tclock::time_point{} + 1h;
  action a;
  std::string out;      // clear text written so far
  std::string pending;  // bytes the client sent, not read yet

  explicit harness(const inlet::tls::tls_context* ctx = nullptr, bool stls = false,
                   bool implicit = false) {
    pop3::session_config s;
    s.auth = [](std::string_view u, std::string_view p) { return u == "alice" && p == "pw"; };
    s.stls = stls;
    policy.session = std::make_shared<const pop3::session_config>(s);
    policy.tls = ctx;
    policy.implicit_tls = implicit;
    policy.stopping = &stopping;
    policy.pressure = &pressure;
    c = std::make_unique<pop3::detail::connection>(
        policy, implicit ? listener_kind::smtps : listener_kind::smtp);
  }

  // Runs actions until the connection waits for the client, calls out, or closes.
  void run() {
    for (;;) {
      if (a.kind == act::write) {
        std::string_view o = c->output();
        if (tls)
          tls->receive(o);
        else
          out.append(o);
        a = c->on_written(now);
      } else if ((a.kind == act::read || a.kind == act::wait) && tls && tls->done() == false) {
        if (tls) pending += tls->take_sent();
        if (pending.empty()) return;
        deliver_pending();
      } else if (a.kind == act::read) {
        if (tls) pending += tls->take_sent();
        if (pending.empty()) {
          a = c->on_would_block(now);
          continue;
        }
        deliver_pending();
      } else {
        return;  // wait, call_out, close
      }
    }
  }
  void deliver_pending() {
    std::size_t n = 0;
    for (auto b : c->read_buffers()) {
      std::size_t k = std::min(b.size(), pending.size() - n);
      std::memcpy(b.data(), pending.data() + n, k);
      n += k;
      if (n == pending.size()) break;
    }
    pending.erase(0, n);
    a = c->on_read(n, now);
  }
  void start() {
    a = c->start(now);
    run();
  }
  // The client sends `bytes` (encrypted once TLS is up); the waiting
  // connection reads them.
  void send(std::string_view bytes) {
    ASSERT_TRUE(a.kind == act::wait || a.kind == act::read) << static_cast<int>(a.kind);
    if (tls && tls->done()) {
      tls->encrypt(bytes);
      pending += tls->take_sent();
    } else {
      pending.append(bytes);
    }
    deliver_pending();
    run();
  }
  // The store answers the pending call-out.
  void answer(pop3::detail::store_answer ans) {
    ASSERT_EQ(a.kind, act::call_out);
    a = c->on_answered(std::move(ans), now);
    run();
  }
  void list(std::size_t n) {
    ASSERT_EQ(c->request(), pop3::step_kind::list);
    pop3::detail::store_answer ans;
    for (std::size_t i = 0; i < n; ++i)
      ans.entries.push_back({"id" + std::to_string(i + 1), 10 + i});
    answer(std::move(ans));
  }
  std::string take() { return std::exchange(out, {}); }
  std::string text() const { return tls ? tls->plain : out; }
};

TEST(pop3_connection, greeting_sign_in_and_store_answers_arriving_later) {
  harness h;
  h.start();
  EXPECT_EQ(h.take().rfind("+OK inlet", 0), 0u);
  ASSERT_EQ(h.a.kind, act::wait);
  EXPECT_TRUE(h.a.idle);
  EXPECT_FALSE(h.c->holds_input());  // nothing held while the client is silent

  h.send("USER alice\r\nPASS pw\r\n");
  ASSERT_EQ(h.a.kind, act::call_out);  // the maildrop is read from the store
  EXPECT_EQ(h.c->request(), pop3::step_kind::list);
  EXPECT_EQ(h.c->deadline(), tclock::time_point::max());  // a store call has no socket deadline
  h.now += 5s;                                            // the store answers later
  h.list(2);
  EXPECT_EQ(h.take(), "+OK send PASS\r\n+OK signed in, 2 messages (21 octets)\r\n");
  ASSERT_EQ(h.a.kind, act::wait);

  h.send("RETR 1\r\n");
  ASSERT_EQ(h.a.kind, act::call_out);
  EXPECT_EQ(h.c->request(), pop3::step_kind::fetch);
  EXPECT_EQ(h.c->protocol().fetch_id(), "id1");
  pop3::detail::store_answer got;
  got.message = stored("id1", "Subject: x\n\n.dot\n");
  h.answer(std::move(got));
  EXPECT_EQ(h.take(), "+OK 20 octets\r\nSubject: x\r\n\r\n..dot\r\n.\r\n");

  h.send("DELE 2\r\nQUIT\r\n");
  ASSERT_EQ(h.a.kind, act::call_out);
  EXPECT_EQ(h.c->request(), pop3::step_kind::remove);
  EXPECT_EQ(h.c->protocol().deletions(), std::vector<std::string>{"id2"});
  pop3::detail::store_answer rm;
  rm.removed = 1;
  h.answer(std::move(rm));
  EXPECT_EQ(h.a.kind, act::close);
  std::string t = h.take();
  EXPECT_EQ(t, "+OK message marked for deletion\r\n"
               "+OK inlet POP3 server signing off (1 messages deleted)\r\n");
  EXPECT_EQ(h.c->close_reason(), pop3::errc::client_quit);
}

// Every split of a whole session (one byte at a time) gives the same replies.
TEST(pop3_connection, session_split_byte_by_byte) {
  const std::string script = "CAPA\r\nUSER alice\r\nPASS pw\r\nSTAT\r\nUIDL\r\nNOOP\r\nQUIT\r\n";
  auto play = [&](std::size_t chunk) {
    harness h;
    h.start();
    for (std::size_t i = 0; i < script.size(); i += chunk) {
      while (h.a.kind == act::call_out) h.list(3);
      if (h.a.kind == act::close) break;
      h.send(script.substr(i, chunk));
    }
    while (h.a.kind == act::call_out) {
      if (h.c->request() == pop3::step_kind::list)
        h.list(3);
      else
        h.answer({});
    }
    EXPECT_EQ(h.a.kind, act::close);
    return h.take();
  };
  std::string whole = play(script.size());
  EXPECT_NE(whole.find("+OK 3 33\r\n"), std::string::npos) << whole;
  for (std::size_t chunk : {1u, 2u, 3u, 7u}) EXPECT_EQ(play(chunk), whole) << chunk;
}

TEST(pop3_connection, idle_timeout_closes_without_a_reply_and_trickling_does_not_extend_it) {
  harness h;
  h.start();
  h.take();
  const tclock::time_point began = h.now;
  EXPECT_EQ(h.a.deadline, began + 10min);
  h.now += 9min;
  h.send("US");  // half a command
  ASSERT_EQ(h.a.kind, act::wait);
  EXPECT_EQ(h.a.deadline, began + 10min);  // the line must arrive whole in time
  EXPECT_TRUE(h.c->holds_input());
  h.now = began + 10min;
  h.a = h.c->on_interrupted(h.now);
  h.run();
  EXPECT_EQ(h.a.kind, act::close);
  EXPECT_EQ(h.take(), "");  // RFC 1939 3: the autologout says nothing
  EXPECT_EQ(h.c->close_reason(), pop3::errc::timeout);
}

TEST(pop3_connection, slot_pressure_cuts_the_idle_time) {
  harness h;
  h.start();
  EXPECT_EQ(h.c->deadline(false), h.now + 10min);
  EXPECT_EQ(h.c->deadline(true), h.now + 10s);
  h.pressure = true;
  EXPECT_EQ(h.c->deadline(), h.now + 10s);
}

TEST(pop3_connection, stop_answers_a_waiting_connection_at_once) {
  harness h;
  h.start();
  h.send("USER alice\r\n");
  h.take();
  h.stopping = true;
  ASSERT_TRUE(h.c->on_stop(h.now));  // the wait is cancelled
  h.a = h.c->on_interrupted(h.now);
  h.run();
  EXPECT_EQ(h.take(), "-ERR [SYS/TEMP] server shutting down\r\n");
  EXPECT_EQ(h.a.kind, act::close);
  EXPECT_EQ(h.c->close_reason(), pop3::errc::shutdown);
}

TEST(pop3_connection, stop_lets_a_store_call_finish_first) {
  harness h;
  h.start();
  h.take();
  h.send("USER alice\r\nPASS pw\r\n");
  ASSERT_EQ(h.a.kind, act::call_out);
  EXPECT_FALSE(h.c->on_stop(h.now));  // nothing to cancel: the store call goes on
  h.now += 1s;
  h.list(1);
  std::string t = h.take();
  EXPECT_EQ(t, "+OK send PASS\r\n+OK signed in, 1 messages (10 octets)\r\n"
               "-ERR [SYS/TEMP] server shutting down\r\n");
  EXPECT_EQ(h.a.kind, act::close);
}

TEST(pop3_connection, eviction_answers_and_closes_at_the_next_wait) {
  harness h;
  inlet::net::slot s;
  h.c->set_slot(&s);
  h.start();
  h.take();
  EXPECT_EQ(s.state.load(), inlet::net::slot::phase::idle);
  s.evicted.store(true);
  EXPECT_EQ(h.c->deadline(), tclock::time_point::min());
  h.a = h.c->on_interrupted(h.now);
  h.run();
  EXPECT_EQ(h.take(), "-ERR [SYS/TEMP] too many connections, closing an idle one\r\n");
  EXPECT_EQ(h.a.kind, act::close);
  EXPECT_EQ(h.c->close_reason(), pop3::errc::evicted);
}

TEST(pop3_connection, a_client_that_does_not_read_is_closed_at_the_write_deadline) {
  harness h;
  h.a = h.c->start(h.now);
  ASSERT_EQ(h.a.kind, act::write);
  EXPECT_EQ(h.a.deadline, h.now + 60s);
  h.a = h.c->on_interrupted(h.now + 60s);
  EXPECT_EQ(h.a.kind, act::close);
  EXPECT_EQ(h.c->close_reason(), pop3::errc::timeout);
}

TEST(pop3_connection, store_error_at_sign_in) {
  harness h;
  h.start();
  h.send("USER alice\r\nPASS pw\r\n");
  pop3::detail::store_answer failed;
  failed.ec = std::make_error_code(std::errc::io_error);
  h.answer(std::move(failed));
  std::string t = h.take();
  EXPECT_NE(t.find("-ERR [SYS/TEMP]"), std::string::npos) << t;
  EXPECT_EQ(h.a.kind, act::wait);  // back to AUTHORIZATION
}

TEST(pop3_connection, stls_then_sign_in_over_tls) {
  auto ctx = test_tls_context();
  ASSERT_TRUE(ctx);
  harness h(ctx.get(), /*stls=*/true);
  h.start();
  h.take();
  h.send("CAPA\r\n");
  EXPECT_NE(h.take().find("STLS\r\n"), std::string::npos);
  h.send("STLS\r\nUSER pipelined-before-the-handshake\r\n");
  EXPECT_EQ(h.take(), "+OK begin TLS negotiation\r\n");
  ASSERT_EQ(h.a.kind, act::wait);
  EXPECT_EQ(h.a.deadline, h.now + 30s);  // the handshake's deadline
  h.tls = std::make_unique<tls_client>();
  h.tls->step();  // ClientHello
  h.pending += h.tls->take_sent();
  h.deliver_pending();
  h.run();
  for (int i = 0; i < 8 && !h.tls->done(); ++i) {
    h.pending += h.tls->take_sent();
    if (h.pending.empty()) break;
    h.deliver_pending();
    h.run();
  }
  ASSERT_TRUE(h.tls->done());
  h.pending += h.tls->take_sent();  // the client's Finished
  if (!h.pending.empty()) {
    h.deliver_pending();
    h.run();
  }
  EXPECT_TRUE(h.c->tls());
  h.send("USER alice\r\nPASS pw\r\n");
  ASSERT_EQ(h.a.kind, act::call_out);  // the pipelined USER was dropped: this one counts
  h.list(0);
  EXPECT_NE(h.tls->plain.find("+OK signed in, 0 messages"), std::string::npos) << h.tls->plain;
}

TEST(pop3_connection, implicit_tls_handshake_deadline) {
  auto ctx = test_tls_context();
  ASSERT_TRUE(ctx);
  harness h(ctx.get(), false, /*implicit=*/true);
  h.a = h.c->start(h.now);
  ASSERT_EQ(h.a.kind, act::wait);  // the client speaks first
  EXPECT_EQ(h.a.deadline, h.now + 30s);
  h.a = h.c->on_interrupted(h.now + 30s);
  EXPECT_EQ(h.a.kind, act::close);
  EXPECT_EQ(h.c->close_reason(), pop3::errc::timeout);
}

TEST(pop3_connection, implicit_tls_greets_after_the_handshake) {
  auto ctx = test_tls_context();
  ASSERT_TRUE(ctx);
  harness h(ctx.get(), false, /*implicit=*/true);
  h.tls = std::make_unique<tls_client>();
  h.a = h.c->start(h.now);
  h.tls->step();
  for (int i = 0; i < 8 && h.tls->plain.empty(); ++i) {
    h.pending += h.tls->take_sent();
    if (h.pending.empty()) break;
    h.deliver_pending();
    h.run();
  }
  EXPECT_EQ(h.tls->plain.rfind("+OK inlet", 0), 0u) << h.tls->plain;
  EXPECT_EQ(h.a.kind, act::wait);
}

}  // namespace
