// The sans-io connection core on scripted bytes and a fake clock: every
// timeout and stop rule, reads per event, idle, STARTTLS sequencing, and the
// messages and close reasons that come out. No socket, no thread, no sleep.
#include "connection.hpp"
#include "memory_tls.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <inlet/tls/self_signed.hpp>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace smtp = inlet::smtp;
using smtp::detail::act;
using smtp::detail::action;
using steady = smtp::detail::clock;
using smtp::detail::conn_policy;
using smtp::detail::connection;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

namespace {

conn_policy test_policy() {
  conn_policy p;
  p.greeting_timeout = 30s;
  p.command_timeout = 60s;
  p.data_timeout = 20s;
  p.message_timeout = 100s;
  p.shutdown_grace = 10s;
  p.last_word_timeout = 2s;
  return p;
}

smtp::session_config test_session() {
  smtp::session_config s;
  s.hostname = "mx.test";
  return s;
}

using inlet::test::tls_client;
std::unique_ptr<inlet::tls::tls_context> test_tls_context() {
  return inlet::test::test_tls_context("mx.test");
}

// A scripted peer and a fake clock around one connection: the "socket" holds
// chunks the client sent (a read takes one chunk, or what fits); writes are
// taken at once unless stalled; deliveries are answered at once unless held.
struct harness {
  explicit harness(conn_policy pol = test_policy(), smtp::session_config s = test_session())
      : policy(pol), c(policy, std::make_shared<const smtp::session_config>(std::move(s))) {
    c.set_remote("192.0.2.7", 2525);
  }

  conn_policy policy;
  connection c;
  steady::time_point now = steady::time_point{} + 1000h;
  std::deque<std::string> socket;  // chunks sent by the client, not yet read
  std::string out;                 // everything written to the client
  std::vector<smtp::received_message> messages;
  std::vector<act> trail;  // every action, in order
  action a;
  bool started = false, closed = false, stall_writes = false, hold_delivery = false;
  int queued = 0;
  std::unique_ptr<tls_client> client;  // after start_tls(): the socket carries ciphertext

  void start() {
    a = c.start(now);
    started = true;
    run();
  }
  void send(std::string bytes) {
    if (client) {
      client->encrypt(bytes);
      bytes = client->take_sent();
    }
    socket.push_back(std::move(bytes));
    run();
  }
  // The client's side of STARTTLS: handshake flights both ways until done.
  void start_tls() {
    client = std::make_unique<tls_client>();
    for (int i = 0; i < 20 && !closed; ++i) {
      client->step();
      std::string flight = client->take_sent();
      if (client->done() && flight.empty()) return;
      if (!flight.empty()) socket.push_back(std::move(flight));
      run();
    }
  }
  std::string replies() const { return client ? out + "<TLS>" + client->plain : out; }
  // Advances the clock; a pending wait, write or handshake past its deadline
  // is interrupted (as a driver's timer does).
  void at(steady::time_point t) {
    now = t;
    if ((a.kind == act::wait || a.kind == act::write) && now >= c.deadline()) {
      a = c.on_interrupted(now);
      run();
    }
  }
  void stop() {
    if (c.on_stop(now)) a = c.on_interrupted(now);
    run();
  }
  void answer_delivery() {
    ASSERT_EQ(a.kind, act::call_out);
    a = c.on_delivered({smtp::delivery_status::accepted("Q" + std::to_string(++queued)), {}}, now);
    run();
  }

  std::size_t read_into() {
    std::string& chunk = socket.front();
    std::size_t n = 0;
    for (auto b : c.read_buffers()) {
      std::size_t k = std::min(b.size(), chunk.size() - n);
      std::memcpy(b.data(), chunk.data() + n, k);
      n += k;
      if (n == chunk.size()) break;
    }
    chunk.erase(0, n);
    if (chunk.empty()) socket.pop_front();
    return n;
  }
  void run() {
    for (;;) {
      trail.push_back(a.kind);
      switch (a.kind) {
        case act::read:
          a = socket.empty() ? c.on_would_block(now) : c.on_read(read_into(), now);
          continue;
        case act::wait:
          if (socket.empty()) return;
          a = c.on_read(read_into(), now);
          continue;
        case act::write:
          if (stall_writes) return;
          if (client)
            client->receive(c.output());
          else
            out += c.output();
          a = c.on_written(now);
          continue;
        case act::call_out:
          messages.push_back(c.take_message());
          if (hold_delivery) return;
          a = c.on_delivered({smtp::delivery_status::accepted("Q" + std::to_string(++queued)), {}},
                             now);
          continue;
        case act::close:
          closed = true;
          return;
      }
    }
  }
  // The trail since the last call.
  std::vector<act> take_trail() { return std::exchange(trail, {}); }
};

const std::string ehlo = "EHLO client.test\r\n";
const std::string envelope_cmds = "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n";

TEST(Connection, GreetsThenWaitsIdleHoldingNothing) {
  harness h;
  h.start();
  EXPECT_EQ(h.out, "220 mx.test ESMTP inlet\r\n");
  EXPECT_EQ(h.a.kind, act::wait);
  EXPECT_TRUE(h.a.idle);
  EXPECT_EQ(h.a.deadline, h.now + 30s);  // the greeting timeout
  EXPECT_FALSE(h.c.holds_input());
}

// The whole session in one write and in chunks of every size: the same replies,
// the same envelope and body, the same close and reason.
TEST(Connection, PipelinedSessionGivesTheSameResultHoweverSplit) {
  const std::string wire =
      ehlo + envelope_cmds + "Subject: t\r\n\r\n..dot\r\nline\r\n.\r\nQUIT\r\n";
  harness whole;
  whole.start();
  whole.send(wire);
  ASSERT_TRUE(whole.closed);
  EXPECT_EQ(whole.c.close_reason(), smtp::errc::client_quit);
  ASSERT_EQ(whole.messages.size(), 1u);
  const auto& env = whole.messages[0].envelope;
  EXPECT_EQ(env.helo, "client.test");
  EXPECT_EQ(env.mail_from, "a@x.test");
  EXPECT_EQ(env.rcpt_to, inlet::smtp::recipient_list{"b@y.test"});
  EXPECT_EQ(env.remote_address, "192.0.2.7");
  EXPECT_EQ(env.remote_port, 2525);
  EXPECT_EQ(whole.messages[0].body.to_string(), "Subject: t\r\n\r\n.dot\r\nline\r\n");
  EXPECT_THAT(whole.out, HasSubstr("250 2.0.0 Ok: queued as Q1\r\n221 2.0.0 Bye\r\n"));
  for (std::size_t k = 1; k < wire.size(); ++k) {
    harness h;
    h.start();
    for (std::size_t p = 0; p < wire.size(); p += k) h.send(wire.substr(p, k));
    ASSERT_TRUE(h.closed) << "chunks of " << k;
    EXPECT_EQ(h.out, whole.out) << "chunks of " << k;
    EXPECT_EQ(h.c.close_reason(), whole.c.close_reason()) << "chunks of " << k;
    ASSERT_EQ(h.messages.size(), 1u) << "chunks of " << k;
    EXPECT_EQ(h.messages[0].body.to_string(), whole.messages[0].body.to_string());
    EXPECT_EQ(h.messages[0].envelope.rcpt_to, env.rcpt_to);
  }
}

TEST(Connection, GreetingTimeoutAnswers421AndCloses) {
  harness h;
  h.start();
  auto t0 = h.now;
  h.at(t0 + 29s);
  EXPECT_FALSE(h.closed);
  h.at(t0 + 30s);
  EXPECT_THAT(h.out, EndsWith("421 4.4.2 mx.test Error: timeout exceeded\r\n"));
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::timeout);
}

// A command line dribbled in does not extend its deadline.
TEST(Connection, TrickledCommandKeepsItsDeadline) {
  harness h;
  h.start();
  h.send(ehlo);
  auto t1 = h.now;
  EXPECT_EQ(h.c.deadline(), t1 + 60s);
  h.at(t1 + 50s);
  h.send("MAIL FROM:<a");
  EXPECT_EQ(h.a.kind, act::wait);
  EXPECT_FALSE(h.a.idle);  // a partial line is held
  EXPECT_EQ(h.c.deadline(), t1 + 60s);
  h.at(t1 + 59s);
  h.send("@x");
  EXPECT_EQ(h.c.deadline(), t1 + 60s);
  h.at(t1 + 60s);
  EXPECT_THAT(h.out, EndsWith("421 4.4.2 mx.test Error: timeout exceeded\r\n"));
  EXPECT_TRUE(h.closed);
}

// A command line past max_command_line is discarded as it comes, so the
// input is empty between reads; it is still one line on one deadline (each
// read of it used to start the command timeout again: 1000 octets a second
// held a slot for ever).
TEST(Connection, AnOverlongCommandKeepsItsDeadline) {
  harness h;
  h.start();
  h.send(ehlo);
  auto t1 = h.now;
  for (int i = 1; i <= 59; ++i) {
    h.at(t1 + std::chrono::seconds(i));
    h.send(std::string(1000, 'x'));
    ASSERT_FALSE(h.closed) << i;
  }
  EXPECT_EQ(h.c.deadline(), t1 + 60s);
  h.at(t1 + 60s);
  EXPECT_THAT(h.out, EndsWith("421 4.4.2 mx.test Error: timeout exceeded\r\n"));
  EXPECT_TRUE(h.closed);
}

// The line's end starts the next command's timeout as usual; a binary BDAT
// chunk that does not end a line does not count as an open command line.
TEST(Connection, AfterAnOverlongLineAndAChunkTheTimeoutStartsAgain) {
  harness h;
  h.start();
  h.send(ehlo);
  auto t1 = h.now;
  h.at(t1 + 10s);
  h.send(std::string(1000, 'x'));
  h.at(t1 + 20s);
  h.send("\r\n");
  EXPECT_THAT(h.out, EndsWith("500 5.5.6 Error: line too long\r\n"));
  EXPECT_EQ(h.c.deadline(), t1 + 80s);
  h.at(t1 + 30s);
  h.send("MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 3\r\nabc");
  EXPECT_THAT(h.out, EndsWith("250 2.0.0 3 octets received\r\n"));
  EXPECT_EQ(h.c.deadline(), t1 + 90s);
  EXPECT_FALSE(h.closed);
}

// Inside a body each read has data_timeout, the whole body message_timeout
// (min_data_rate 0: any read restarts data_timeout).
TEST(Connection, BodyReadsHaveDataTimeoutAndTheBodyMessageTimeout) {
  conn_policy p = test_policy();
  p.min_data_rate = 0;
  harness h(p);
  h.start();
  h.send(ehlo + envelope_cmds);
  auto t_body = h.now;
  EXPECT_EQ(h.c.deadline(), t_body + 20s);
  for (int i = 1; i <= 6; ++i) {
    h.at(t_body + i * 15s);
    h.send("line\r\n");
    EXPECT_EQ(h.c.deadline(), std::min(h.now + 20s, t_body + 100s)) << i;
  }
  h.at(t_body + 100s);
  EXPECT_THAT(h.out, EndsWith("421 4.4.2 mx.test Error: timeout exceeded\r\n"));
  EXPECT_TRUE(h.closed);
  EXPECT_TRUE(h.messages.empty());
}

// A body must keep up min_data_rate: each read moves its deadline on by what
// it brought, at that rate, so a body trickled slower runs out of time after
// about data_timeout, however its bytes are spread.
TEST(Connection, ATrickledBodyRunsOutOfTimeBelowTheMinimumRate) {
  conn_policy p = test_policy();  // data 20 s, message 100 s
  p.min_data_rate = 100;          // octets/s
  harness h(p);
  h.start();
  h.send(ehlo + envelope_cmds);
  const auto t = h.now;
  EXPECT_EQ(h.c.deadline(), t + 20s);
  int reads = 0;
  for (int i = 1; t + i * 2s < h.c.deadline(); ++i) {  // 10 octets every 2 s: 5 octets/s
    h.at(t + i * 2s);
    h.send("123456789\n");
    ++reads;
    EXPECT_EQ(h.c.deadline(), t + 20s + reads * 100ms) << reads;  // 10 octets buy 100 ms
  }
  EXPECT_EQ(reads, 10);
  h.at(h.c.deadline());
  EXPECT_THAT(h.out, EndsWith("421 4.4.2 mx.test Error: timeout exceeded\r\n"));
  EXPECT_TRUE(h.closed);
  EXPECT_TRUE(h.messages.empty());

  // At the rate or faster the deadline stays data_timeout ahead, until the
  // whole body's message_timeout.
  harness fast(p);
  fast.start();
  fast.send(ehlo + envelope_cmds);
  const auto f = fast.now;
  const std::string chunk = std::string(998, 'x') + "\r\n";  // 1000 octets every 5 s
  for (int i = 1; i < 20; ++i) {
    fast.at(f + i * 5s);
    fast.send(chunk);
    EXPECT_EQ(fast.c.deadline(), std::min(fast.now + 20s, f + 100s)) << i;
  }
  fast.at(f + 100s);
  EXPECT_TRUE(fast.closed);
}

// Under slot pressure the command and data timeouts are at most
// pressure_timeout, for a wait already pending too (counted from when it
// began), and they are what they were once the pressure ends.
TEST(Connection, PressureShortensTheTimeoutsOfPendingWaits) {
  std::atomic<bool> pressure{false};
  conn_policy p = test_policy();  // greeting 30 s, command 60 s, data 20 s
  p.pressure_timeout = 5s;
  p.pressure = &pressure;
  harness h(p);
  h.start();
  EXPECT_EQ(h.c.deadline(), h.now + 30s);
  pressure = true;
  EXPECT_EQ(h.c.deadline(), h.now + 5s);
  pressure = false;
  h.send(ehlo);
  const auto t = h.now;
  EXPECT_EQ(h.c.deadline(), t + 60s);
  h.at(t + 3s);
  pressure = true;
  EXPECT_EQ(h.c.deadline(), t + 5s);
  pressure = false;
  EXPECT_EQ(h.c.deadline(), t + 60s);
  h.at(t + 4s);
  h.send(envelope_cmds);  // in a body: data 20 s, under pressure 5 s
  EXPECT_EQ(h.c.deadline(), h.now + 20s);
  pressure = true;
  EXPECT_EQ(h.c.deadline(), h.now + 5s);
  h.at(h.now + 5s);
  EXPECT_THAT(h.out, EndsWith("421 4.4.2 mx.test Error: timeout exceeded\r\n"));
  EXPECT_TRUE(h.closed);
}

// A connection that has waited longer than pressure_timeout when the
// pressure begins is past its deadline at once: the driver's next check (a
// reaper tick, a poll tick) ends the wait with 421 4.4.2. A trickled line
// (its octets parked while the connection waits) does not move that deadline.
TEST(Connection, AWaitOlderThanThePressureTimeoutEndsWhenThePressureBegins) {
  std::atomic<bool> pressure{false};
  conn_policy p = test_policy();  // command 60 s
  p.pressure_timeout = 5s;
  p.pressure = &pressure;
  harness h(p);
  h.start();
  h.send(ehlo);
  const auto t = h.now;
  h.send("MAIL FR");
  h.at(t + 4s);
  h.send("OM:<a");
  h.at(t + 12s);
  EXPECT_FALSE(h.closed);
  EXPECT_EQ(h.c.deadline(), t + 60s);
  pressure = true;
  EXPECT_EQ(h.c.deadline(), t + 5s);
  h.at(t + 12s);  // the same instant, seen again by the driver under pressure
  EXPECT_THAT(h.out, EndsWith("421 4.4.2 mx.test Error: timeout exceeded\r\n"));
  EXPECT_TRUE(h.closed);
}

// The connection tells its admission slot what it does: waiting for a command
// with nothing held (idle), inside a line or a body (waiting), or busy; and
// since when it waits (its progress: a partial line does not move it).
TEST(Connection, KeepsItsSlotCurrent) {
  using phase = smtp::detail::slot::phase;
  smtp::detail::slot s;
  harness h;
  h.c.set_slot(&s);
  h.hold_delivery = true;
  auto rep = [](steady::time_point t) { return t.time_since_epoch().count(); };
  h.start();
  EXPECT_EQ(s.state.load(), phase::idle);
  EXPECT_EQ(s.progress.load(), rep(h.now));
  h.at(h.now + 1s);
  h.send(ehlo);
  const auto t = h.now;
  EXPECT_EQ(s.state.load(), phase::idle);
  EXPECT_EQ(s.progress.load(), rep(t));
  h.at(t + 2s);
  h.send("MAIL FR");
  EXPECT_EQ(s.state.load(), phase::waiting);
  EXPECT_EQ(s.progress.load(), rep(t));
  h.send("OM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\nbody\r\n.\r\n");
  EXPECT_EQ(h.a.kind, act::call_out);
  EXPECT_EQ(s.state.load(), phase::busy);
}

// A connection whose slot was given to another client answers 421 4.7.0 at
// its next wait, inside a body too (the message is dropped), and closes.
TEST(Connection, AnEvictedConnectionAnswers421AndCloses) {
  smtp::detail::slot s;
  harness h;
  h.c.set_slot(&s);
  h.start();
  h.send(ehlo + envelope_cmds + "part of a body\r\n");
  ASSERT_EQ(h.a.kind, act::wait);
  EXPECT_EQ(s.state.load(), smtp::detail::slot::phase::waiting);
  s.evicted = true;
  EXPECT_EQ(h.c.deadline(), steady::time_point::min());  // the driver cancels the wait
  h.at(h.now);
  EXPECT_THAT(h.out,
              EndsWith("421 4.7.0 mx.test Error: too many connections, closing a slow one\r\n"));
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::evicted);
  EXPECT_TRUE(h.messages.empty());
}

// In a body, a read is tried at once (more bytes are usually there), and only
// an empty socket makes the connection wait; that wait is not idle.
TEST(Connection, BodyReadsSpeculativelyThenWaits) {
  harness h;
  h.start();
  h.send(ehlo + envelope_cmds);
  auto t = h.take_trail();
  ASSERT_GE(t.size(), 3u);
  EXPECT_EQ(t[t.size() - 3], act::write);  // 354
  EXPECT_EQ(t[t.size() - 2], act::read);
  EXPECT_EQ(t.back(), act::wait);
  EXPECT_FALSE(h.a.idle);
}

// reads_per_event = 3: after a read is answered, up to two more reads are
// tried before waiting; with 1, every read follows a wait.
TEST(Connection, ReadsPerEventReadsAgainBeforeWaiting) {
  auto count_waits = [](unsigned rpe) {
    conn_policy p = test_policy();
    p.reads_per_event = rpe;
    harness h(p);
    h.start();
    h.socket = {"NOOP\r\n", "NOOP\r\n", "NOOP\r\n"};
    h.take_trail();
    h.run();
    EXPECT_EQ(h.out, "220 mx.test ESMTP inlet\r\n250 2.0.0 Ok\r\n250 2.0.0 Ok\r\n250 2.0.0 Ok\r\n");
    auto t = h.take_trail();
    return std::count(t.begin(), t.end(), act::wait);
  };
  EXPECT_EQ(count_waits(1), 4);  // before each NOOP, and the last
  EXPECT_EQ(count_waits(3), 2);  // before the first NOOP, and the last
}

TEST(Connection, IdleAfterATransactionHoldsNoInput) {
  harness h;
  h.start();
  h.send(ehlo + envelope_cmds + "body\r\n.\r\n");
  ASSERT_EQ(h.messages.size(), 1u);
  EXPECT_EQ(h.a.kind, act::wait);
  EXPECT_TRUE(h.a.idle);
  EXPECT_FALSE(h.c.holds_input());
}

TEST(Connection, StopAnswersAnIdleSession421AtOnce) {
  harness h;
  h.start();
  h.send(ehlo);
  h.stop();
  EXPECT_THAT(h.out, EndsWith("421 4.3.2 mx.test Service shutting down\r\n"));
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::shutting_down);
}

TEST(Connection, StopBeforeStartGreetsWith421) {
  std::atomic<bool> stopping{true};
  conn_policy p = test_policy();
  p.stopping = &stopping;
  harness h(p);
  h.start();
  EXPECT_EQ(h.out, "421 4.3.2 mx.test Service shutting down\r\n");
  EXPECT_TRUE(h.closed);
}

// A transaction in flight when the stop comes finishes, then 421.
TEST(Connection, StopLetsATransactionFinish) {
  harness h;
  h.start();
  h.send(ehlo + "MAIL FROM:<a@x.test>\r\n");
  auto t = h.now;
  h.stop();
  EXPECT_FALSE(h.closed);
  EXPECT_EQ(h.c.deadline(), t + 10s);  // the grace bounds the wait
  h.send("RCPT TO:<b@y.test>\r\nDATA\r\nbody\r\n.\r\n");
  ASSERT_EQ(h.messages.size(), 1u);
  EXPECT_THAT(
      h.out, EndsWith("250 2.0.0 Ok: queued as Q1\r\n421 4.3.2 mx.test Service shutting down\r\n"));
  EXPECT_TRUE(h.closed);
}

// A client stalled inside DATA gets 421 4.3.2 when the grace ends; its
// message is dropped.
TEST(Connection, GraceEndsAStalledBody) {
  harness h;
  h.start();
  h.send(ehlo + envelope_cmds + "half a body\r\n");
  auto t = h.now;
  h.stop();
  EXPECT_FALSE(h.closed);
  h.at(t + 9s);
  EXPECT_FALSE(h.closed);
  h.at(t + 10s);
  EXPECT_THAT(
      h.out,
      EndsWith(
          "354 End data with <CR><LF>.<CR><LF>\r\n421 4.3.2 mx.test Service shutting down\r\n"));
  EXPECT_TRUE(h.closed);
  EXPECT_TRUE(h.messages.empty());
  EXPECT_EQ(h.c.close_reason(), smtp::errc::shutting_down);
}

// After the grace, the 421 gets a short write deadline: a peer that does not
// read it is closed.
TEST(Connection, TheLastWordHasAShortWriteDeadline) {
  harness h;
  h.start();
  h.send(ehlo + envelope_cmds);
  h.stop();
  h.stall_writes = true;
  auto t = h.now;
  h.at(t + 10s);
  ASSERT_EQ(h.a.kind, act::write);
  EXPECT_EQ(h.c.deadline(), t + 12s);
  h.at(t + 12s);
  EXPECT_TRUE(h.closed);
}

// A delivery is always waited for; if it answers after the grace, its reply
// is not sent: the 421 is the last word.
TEST(Connection, ADeliveryThatOutlivesTheGraceIsNotAnswered) {
  harness h;
  h.hold_delivery = true;
  h.start();
  h.send(ehlo + envelope_cmds + "body\r\n.\r\n");
  ASSERT_EQ(h.a.kind, act::call_out);
  EXPECT_EQ(h.c.deadline(), steady::time_point::max());
  auto t = h.now;
  h.stop();
  h.at(t + 30s);
  EXPECT_FALSE(h.closed);
  h.answer_delivery();
  EXPECT_THAT(h.out, Not(HasSubstr("queued as")));
  EXPECT_THAT(h.out, EndsWith("421 4.3.2 mx.test Service shutting down\r\n"));
  EXPECT_TRUE(h.closed);
}

// A peer that does not take our replies is closed after the command timeout,
// without a further reply.
TEST(Connection, AWriteThatDoesNotDrainIsClosed) {
  harness h;
  h.stall_writes = true;
  h.start();
  ASSERT_EQ(h.a.kind, act::write);
  auto t = h.now;
  EXPECT_EQ(h.c.deadline(), t + 60s);
  h.at(t + 60s);
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::timeout);
  EXPECT_EQ(h.out, "");
}

// RFC 3207: what was pipelined after STARTTLS is discarded; after a real
// handshake (an OpenSSL client in memory) the client starts again with EHLO,
// STARTTLS is not offered twice, and the envelope says TLS.
TEST(Connection, StartTlsDiscardsPipelinedInputAndRestarts) {
  auto ctx = test_tls_context();
  conn_policy p = test_policy();
  p.tls = ctx.get();
  smtp::session_config s = test_session();
  s.starttls = true;
  harness h(p, s);
  h.start();
  h.send(ehlo + "STARTTLS\r\nNOOP\r\nNOOP\r\n");
  EXPECT_THAT(
      h.out,
      EndsWith("250-STARTTLS\r\n250 ENHANCEDSTATUSCODES\r\n220 2.0.0 Ready to start TLS\r\n"));
  EXPECT_FALSE(h.c.tls());
  h.start_tls();
  ASSERT_TRUE(h.client->done());
  EXPECT_TRUE(h.c.tls());
  EXPECT_EQ(h.a.kind, act::wait);
  h.send(ehlo);
  EXPECT_THAT(h.client->plain, HasSubstr("250 ENHANCEDSTATUSCODES"));
  EXPECT_THAT(h.client->plain, Not(HasSubstr("STARTTLS")));  // not offered twice
  h.send(envelope_cmds + "x\r\n.\r\nQUIT\r\n");
  ASSERT_EQ(h.messages.size(), 1u);
  EXPECT_TRUE(h.messages[0].envelope.tls);
  EXPECT_EQ(h.messages[0].body.to_string(), "x\r\n");
  EXPECT_THAT(h.client->plain, Not(HasSubstr("250 2.0.0 Ok\r\n")));  // the NOOPs were discarded
  EXPECT_THAT(h.client->plain, EndsWith("250 2.0.0 Ok: queued as Q1\r\n221 2.0.0 Bye\r\n"));
  EXPECT_TRUE(h.closed);
}

// An idle TLS connection holds no receive buffer and no ciphertext.
TEST(Connection, IdleTlsConnectionHoldsNoInput) {
  auto ctx = test_tls_context();
  conn_policy p = test_policy();
  p.tls = ctx.get();
  smtp::session_config s = test_session();
  s.starttls = true;
  harness h(p, s);
  h.start();
  h.send(ehlo + "STARTTLS\r\n");
  h.start_tls();
  h.send(ehlo);
  ASSERT_EQ(h.a.kind, act::wait);
  EXPECT_TRUE(h.a.idle);
  EXPECT_FALSE(h.c.holds_input());
}

// Garbage instead of a ClientHello fails the handshake: closed, no reply.
TEST(Connection, AFailedHandshakeCloses) {
  auto ctx = test_tls_context();
  conn_policy p = test_policy();
  p.tls = ctx.get();
  smtp::session_config s = test_session();
  s.starttls = true;
  harness h(p, s);
  h.start();
  h.send(ehlo + "STARTTLS\r\n");
  std::string before = h.out;
  h.send("MAIL FROM:<evil@x.test>\r\n");  // plain text where a handshake belongs
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::tls_failed);
  EXPECT_EQ(h.out, before);
}

// A handshake that does not finish within the command timeout is closed.
TEST(Connection, AStalledHandshakeTimesOut) {
  auto ctx = test_tls_context();
  conn_policy p = test_policy();
  p.tls = ctx.get();
  smtp::session_config s = test_session();
  s.starttls = true;
  harness h(p, s);
  h.start();
  h.send(ehlo + "STARTTLS\r\n");
  auto t = h.now;
  EXPECT_EQ(h.c.deadline(), t + 60s);
  h.at(t + 60s);
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::timeout);
}

TEST(Connection, APeerLostInsideABodyDeliversNothing) {
  harness h;
  h.start();
  h.send(ehlo + envelope_cmds + "part of a body\r\n");
  h.a = h.c.on_lost();
  h.run();
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::connection_lost);
  EXPECT_TRUE(h.messages.empty());
  EXPECT_FALSE(h.c.holds_input());
}

TEST(Connection, TooManyErrorsCloseWithTheirReason) {
  harness h;
  h.start();
  std::string junk;
  for (int i = 0; i < 25; ++i) junk += "BOGUS\r\n";
  h.send(junk);
  EXPECT_TRUE(h.closed);
  EXPECT_EQ(h.c.close_reason(), smtp::errc::too_many_errors);
}

}  // namespace
