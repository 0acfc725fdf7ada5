#include "inlet/load/session.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace inlet::load;
using ev = session_output::event;

namespace {
std::string joined(const session_output& o) {
  std::string s;
  for (std::uint8_t i = 0; i < o.n_writes; ++i) s.append(o.writes[i]);
  return s;
}

session_output feed(client_session& s, int code, std::string_view text = "ok") {
  return s.on_reply(reply{code, text});
}

struct fixture {
  envelope env{"client.test", "a@x.test", "b@y.test"};
  prepared_message msg = prepare("Subject: t\r\n\r\n.dot\r\n");

  // Greeting + EHLO with the given extensions; returns the session ready.
  client_session connected(session_config cfg, std::string_view ehlo_text) {
    client_session s(env, cfg);
    s.on_connected();
    EXPECT_FALSE(s.ready());
    const auto o = feed(s, 220, "mx");
    EXPECT_EQ(joined(o), "EHLO client.test\r\n");
    const auto e = feed(s, 250, ehlo_text);
    EXPECT_EQ(e.n_writes, 0);
    EXPECT_TRUE(s.ready());
    return s;
  }
};
}  // namespace

TEST(Session, PipelinedDataTransaction) {
  fixture f;
  auto s = f.connected({.pipelining = true}, "mx\nPIPELINING\nSIZE 100");
  EXPECT_TRUE(s.server_pipelining());
  EXPECT_FALSE(s.server_chunking());
  auto o = s.send(f.msg);
  EXPECT_EQ(joined(o), "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n");
  EXPECT_FALSE(o.body_started);
  EXPECT_EQ(feed(s, 250).n_writes, 0);
  EXPECT_EQ(feed(s, 250).n_writes, 0);
  o = feed(s, 354);
  EXPECT_TRUE(o.body_started);
  ASSERT_EQ(o.n_writes, 1);
  EXPECT_EQ(o.writes[0].data(), f.msg.stuffed.data());  // a view of the prepared bytes, no copy
  o = feed(s, 250);
  EXPECT_EQ(o.ev, ev::message_ok);
  EXPECT_EQ(o.code, 250);
  EXPECT_TRUE(s.ready());
}

TEST(Session, PipeliningRequestedButNotOfferedFallsBack) {
  fixture f;
  auto s = f.connected({.pipelining = true}, "mx");
  EXPECT_EQ(joined(s.send(f.msg)), "MAIL FROM:<a@x.test>\r\n");
  EXPECT_EQ(joined(feed(s, 250)), "RCPT TO:<b@y.test>\r\n");
  EXPECT_EQ(joined(feed(s, 250)), "DATA\r\n");
  auto o = feed(s, 354);
  EXPECT_TRUE(o.body_started);
  EXPECT_EQ(joined(o), f.msg.stuffed);
  EXPECT_EQ(feed(s, 250).ev, ev::message_ok);
}

TEST(Session, PipelinedBdatIsOneWrite) {
  fixture f;
  auto s = f.connected({.pipelining = true, .bdat = true}, "mx\nPIPELINING\nCHUNKING");
  auto o = s.send(f.msg);
  EXPECT_TRUE(o.body_started);
  EXPECT_EQ(joined(o), "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\n" + f.msg.bdat_cmd + f.msg.raw);
  EXPECT_EQ(o.writes[2].data(), f.msg.raw.data());
  EXPECT_EQ(feed(s, 250).ev, ev::none);
  EXPECT_EQ(feed(s, 250).ev, ev::none);
  o = feed(s, 250);
  EXPECT_EQ(o.ev, ev::message_ok);
  EXPECT_TRUE(s.ready());
}

TEST(Session, UnpipelinedBdat) {
  fixture f;
  auto s = f.connected({.pipelining = false, .bdat = true}, "mx\nPIPELINING\nchunking");
  EXPECT_EQ(joined(s.send(f.msg)), "MAIL FROM:<a@x.test>\r\n");
  EXPECT_EQ(joined(feed(s, 250)), "RCPT TO:<b@y.test>\r\n");
  auto o = feed(s, 250);
  EXPECT_TRUE(o.body_started);
  EXPECT_EQ(joined(o), f.msg.bdat_cmd + f.msg.raw);
  EXPECT_EQ(feed(s, 250).ev, ev::message_ok);
}

TEST(Session, RejectedRecipientInPipelineCountsOnceThenRset) {
  fixture f;
  auto s = f.connected({.pipelining = true}, "mx\nPIPELINING");
  s.send(f.msg);
  EXPECT_EQ(feed(s, 250).ev, ev::none);
  EXPECT_EQ(feed(s, 550).ev, ev::none);
  auto o = feed(s, 554);  // DATA refused: no valid recipients
  EXPECT_EQ(o.ev, ev::message_failed);
  EXPECT_EQ(o.code, 550);  // the first failure
  EXPECT_EQ(joined(o), "RSET\r\n");
  EXPECT_FALSE(s.ready());
  EXPECT_EQ(feed(s, 250).ev, ev::none);
  EXPECT_TRUE(s.ready());
}

TEST(Session, RejectedMailWithoutPipeliningStopsEarly) {
  fixture f;
  auto s = f.connected({.pipelining = false}, "mx");
  s.send(f.msg);
  auto o = feed(s, 451);
  EXPECT_EQ(o.ev, ev::message_failed);
  EXPECT_EQ(o.code, 451);
  EXPECT_EQ(joined(o), "RSET\r\n");
}

TEST(Session, BodyRejectedAfterData) {
  fixture f;
  auto s = f.connected({.pipelining = true}, "mx\nPIPELINING");
  s.send(f.msg);
  feed(s, 250);
  feed(s, 250);
  feed(s, 354);
  auto o = feed(s, 552);
  EXPECT_EQ(o.ev, ev::message_failed);
  EXPECT_EQ(o.code, 552);
}

TEST(Session, QuitsAfterMessagesPerConnection) {
  fixture f;
  auto s = f.connected({.pipelining = true, .bdat = false, .messages_per_connection = 2}, "mx\nPIPELINING");
  for (int k = 0; k < 2; ++k) {
    s.send(f.msg);
    feed(s, 250);
    feed(s, 250);
    feed(s, 354);
    auto o = feed(s, 250);
    EXPECT_EQ(o.ev, ev::message_ok);
    if (k == 0) {
      EXPECT_TRUE(s.ready());
    } else {
      EXPECT_EQ(joined(o), "QUIT\r\n");
      EXPECT_FALSE(s.ready());
    }
  }
  auto o = feed(s, 221);
  EXPECT_EQ(o.ev, ev::closed);
  EXPECT_TRUE(o.close);
  // A reconnect starts over.
  s.on_connected();
  EXPECT_EQ(joined(feed(s, 220)), "EHLO client.test\r\n");
  EXPECT_EQ(s.messages_on_connection(), 0u);
}

TEST(Session, RefusedGreetingOrEhloCloses) {
  fixture f;
  client_session s(f.env, {});
  s.on_connected();
  auto o = feed(s, 421);
  EXPECT_EQ(o.ev, ev::connect_failed);
  EXPECT_TRUE(o.close);
  s.on_connected();
  feed(s, 220);
  o = feed(s, 502);
  EXPECT_EQ(o.ev, ev::connect_failed);
  EXPECT_EQ(o.code, 502);
}

TEST(Session, UnexpectedReplyIsAProtocolError) {
  fixture f;
  auto s = f.connected({}, "mx");
  auto o = feed(s, 250);  // nothing outstanding
  EXPECT_EQ(o.ev, ev::protocol_error);
  EXPECT_TRUE(o.close);
}

TEST(Session, PoliteQuitWhenIdle) {
  fixture f;
  auto s = f.connected({}, "mx");
  EXPECT_EQ(joined(s.quit()), "QUIT\r\n");
  EXPECT_EQ(feed(s, 221).ev, ev::closed);
}

TEST(Session, StarttlsThenEhloAgainThenReady) {
  fixture f;
  client_session s(f.env, {.pipelining = true, .starttls = true});
  s.on_connected();
  EXPECT_EQ(joined(feed(s, 220, "mx")), "EHLO client.test\r\n");
  // Capabilities before TLS are not trusted: CHUNKING offered here, not after.
  auto o = feed(s, 250, "mx\nSTARTTLS\nCHUNKING");
  EXPECT_EQ(joined(o), "STARTTLS\r\n");
  EXPECT_FALSE(s.ready());
  o = feed(s, 220, "go ahead");
  EXPECT_EQ(o.ev, ev::start_tls);
  EXPECT_EQ(o.n_writes, 0);
  EXPECT_FALSE(s.ready());
  o = s.on_tls_established();
  EXPECT_EQ(joined(o), "EHLO client.test\r\n");
  o = feed(s, 250, "mx\nPIPELINING");
  EXPECT_EQ(o.n_writes, 0);  // no second STARTTLS inside TLS
  EXPECT_TRUE(s.ready());
  EXPECT_TRUE(s.server_pipelining());
  EXPECT_FALSE(s.server_chunking());
  EXPECT_EQ(joined(s.send(f.msg)), "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n");
}

TEST(Session, StarttlsNotOfferedOrRefusedCloses) {
  fixture f;
  client_session s(f.env, {.starttls = true});
  s.on_connected();
  feed(s, 220, "mx");
  auto o = feed(s, 250, "mx\nPIPELINING");
  EXPECT_EQ(o.ev, ev::tls_refused);
  EXPECT_EQ(o.code, 0);
  EXPECT_TRUE(o.close);
  EXPECT_FALSE(s.ready());

  s.on_connected();
  feed(s, 220, "mx");
  EXPECT_EQ(joined(feed(s, 250, "mx\nSTARTTLS")), "STARTTLS\r\n");
  o = feed(s, 454, "TLS not available");
  EXPECT_EQ(o.ev, ev::tls_refused);
  EXPECT_EQ(o.code, 454);
  EXPECT_TRUE(o.close);
}

TEST(Session, ClearTextReplyDuringHandshakeIsAProtocolError) {
  fixture f;
  client_session s(f.env, {.starttls = true});
  s.on_connected();
  feed(s, 220, "mx");
  feed(s, 250, "mx\nSTARTTLS");
  EXPECT_EQ(feed(s, 220).ev, ev::start_tls);
  const auto o = feed(s, 250, "injected");
  EXPECT_EQ(o.ev, ev::protocol_error);
  EXPECT_TRUE(o.close);
  // on_tls_established outside a handshake is refused too.
  EXPECT_EQ(s.on_tls_established().ev, ev::protocol_error);
}

TEST(Session, SeveralRecipientsPipelinedWaitForEveryRcptReply) {
  fixture f;
  envelope three("client.test", "a@x.test", std::vector<std::string>{"r0@y", "r1@y", "r2@y"});
  auto s = f.connected({.pipelining = true}, "mx\nPIPELINING");
  auto o = s.send(f.msg, &three);
  EXPECT_EQ(joined(o),
            "MAIL FROM:<a@x.test>\r\nRCPT TO:<r0@y>\r\nRCPT TO:<r1@y>\r\nRCPT TO:<r2@y>\r\nDATA\r\n");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(feed(s, 250).n_writes, 0) << i;  // MAIL + 3 RCPT
  o = feed(s, 354);
  EXPECT_TRUE(o.body_started);
  EXPECT_EQ(feed(s, 250).ev, ev::message_ok);
  // The next message with the session's own envelope.
  EXPECT_EQ(joined(s.send(f.msg)), "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n");
}

TEST(Session, SeveralRecipientsOneAtATimeWithoutPipelining) {
  fixture f;
  envelope two("client.test", "a@x.test", std::vector<std::string>{"r0@y", "r1@y"});
  auto s = f.connected({.pipelining = true}, "mx");
  EXPECT_EQ(joined(s.send(f.msg, &two)), "MAIL FROM:<a@x.test>\r\n");
  EXPECT_EQ(joined(feed(s, 250)), "RCPT TO:<r0@y>\r\n");
  EXPECT_EQ(joined(feed(s, 250)), "RCPT TO:<r1@y>\r\n");
  EXPECT_EQ(joined(feed(s, 250)), "DATA\r\n");
  EXPECT_TRUE(feed(s, 354).body_started);
  EXPECT_EQ(feed(s, 250).ev, ev::message_ok);
  // A refused recipient fails the transaction at once.
  EXPECT_EQ(joined(s.send(f.msg, &two)), "MAIL FROM:<a@x.test>\r\n");
  EXPECT_EQ(joined(feed(s, 250)), "RCPT TO:<r0@y>\r\n");
  auto o = feed(s, 550);
  EXPECT_EQ(o.ev, ev::message_failed);
  EXPECT_EQ(o.code, 550);
}
