// The SMTP client session without sockets: every conversation is the server's reply
// stream fed in every split (two and three fragments, and a byte at a time); what the
// client wrote and the results must not depend on how the replies were cut.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "inlet/outbound/smtp_client_session.hpp"

using inlet::outbound::outgoing_message;
using inlet::outbound::send_result;
using inlet::outbound::smtp_client_options;
using inlet::outbound::smtp_client_session;
using inlet::outbound::smtp_reply;
using inlet::outbound::smtp_reply_parser;

namespace {

struct outcome {
  std::string written;
  std::vector<send_result> results;
  bool failed = false;
  std::string error;
};

struct message {
  std::string from;
  std::vector<std::string> rcpt;
  std::string data;
  bool all = false;
};

// Runs a session over `server` cut at `cuts` (ascending offsets).
outcome run(const smtp_client_options& opts, const std::vector<message>& msgs,
            std::string_view server, const std::vector<std::size_t>& cuts) {
  smtp_client_session s(opts);
  outcome o;
  for (std::size_t i = 0; i < msgs.size(); ++i)
    s.submit({i, msgs[i].from, msgs[i].rcpt, &msgs[i].data, msgs[i].all});
  s.quit();
  std::size_t at = 0;
  auto feed = [&](std::size_t end) {
    s.receive(server.substr(at, end - at));
    at = end;
    o.written += s.output();
    s.clear_output();
    if (s.wants_tls()) {
      s.tls_started();
      o.written += "<tls>";
      o.written += s.output();
      s.clear_output();
    }
    for (auto& r : s.take_results()) o.results.push_back(std::move(r));
  };
  for (std::size_t c : cuts) feed(c);
  feed(server.size());
  o.failed = s.failed();
  o.error = s.error();
  return o;
}

// The same outcome for the whole stream at once, every two- and three-way split, and a
// byte at a time; returns it.
outcome every_split(const smtp_client_options& opts, const std::vector<message>& msgs,
                    std::string_view server) {
  const outcome whole = run(opts, msgs, server, {});
  auto same = [&](const outcome& o, const std::string& how) {
    ASSERT_EQ(o.written, whole.written) << how;
    ASSERT_EQ(o.failed, whole.failed) << how;
    ASSERT_EQ(o.results.size(), whole.results.size()) << how;
    for (std::size_t i = 0; i < o.results.size(); ++i) {
      EXPECT_EQ(o.results[i].ok, whole.results[i].ok) << how;
      EXPECT_EQ(o.results[i].error, whole.results[i].error) << how;
      EXPECT_EQ(o.results[i].reply.code, whole.results[i].reply.code) << how;
    }
  };
  for (std::size_t i = 1; i < server.size(); ++i) {
    same(run(opts, msgs, server, {i}), "split at " + std::to_string(i));
    for (std::size_t j = i + 1; j < server.size(); j += 7)
      same(run(opts, msgs, server, {i, j}), "split at " + std::to_string(i) + "," +
                                                std::to_string(j));
  }
  std::vector<std::size_t> bytes;
  for (std::size_t i = 1; i < server.size(); ++i) bytes.push_back(i);
  same(run(opts, msgs, server, bytes), "a byte at a time");
  return whole;
}

smtp_client_options plain() {
  smtp_client_options o;
  o.helo_name = "me.example";
  return o;
}

}  // namespace

TEST(SmtpReplyParser, MultilineAndEnhancedCodes) {
  const std::string in =
      "250-mx.example greets you\r\n250-PIPELINING\r\n250 SIZE 100\r\n"
      "550 5.1.1 <x@y>: no such user\r\n"
      "451 4.3.0\r\n"
      "250\r\n"
      "220 2.0 not an enhanced code\r\n"
      "554 4.1.1 wrong class\n";
  for (std::size_t cut = 0; cut <= in.size(); ++cut) {
    smtp_reply_parser p;
    std::vector<smtp_reply> got;
    for (std::string_view part : {std::string_view(in).substr(0, cut),
                                  std::string_view(in).substr(cut)}) {
      smtp_reply r;
      while (!part.empty()) {
        auto st = p.parse(part, r);
        ASSERT_NE(st, smtp_reply_parser::status::error) << p.error();
        if (st == smtp_reply_parser::status::reply) got.push_back(r);
      }
    }
    ASSERT_EQ(got.size(), 6u) << cut;
    EXPECT_EQ(got[0].code, 250);
    EXPECT_EQ(got[0].lines, (std::vector<std::string>{"mx.example greets you", "PIPELINING",
                                                      "SIZE 100"}));
    EXPECT_EQ(got[0].enhanced, "");
    EXPECT_EQ(got[1].enhanced, "5.1.1");
    EXPECT_EQ(got[1].first_line(), "550 5.1.1 <x@y>: no such user");
    EXPECT_EQ(got[2].enhanced, "4.3.0");
    EXPECT_EQ(got[3].first_line(), "250");
    EXPECT_TRUE(got[3].lines.size() == 1 && got[3].lines[0].empty());
    EXPECT_EQ(got[4].enhanced, "");
    EXPECT_EQ(got[5].enhanced, "");  // a 5xx reply with a 4.x.x code: not its own
  }
}

TEST(SmtpReplyParser, RefusesMalformedAndOverlongReplies) {
  auto error_of = [](std::string in) {
    smtp_reply_parser p;
    std::string_view v = in;
    smtp_reply r;
    while (!v.empty())
      if (p.parse(v, r) == smtp_reply_parser::status::error) return p.error();
    return std::string();
  };
  EXPECT_EQ(error_of("hello\r\n"), "malformed reply line");
  EXPECT_EQ(error_of("25\r\n"), "malformed reply line");
  EXPECT_EQ(error_of("250x\r\n"), "malformed reply line");
  EXPECT_EQ(error_of("650 six\r\n"), "malformed reply line");
  EXPECT_EQ(error_of("250-a\r\n251 b\r\n"), "reply code changed within a reply");
  EXPECT_EQ(error_of("250 " + std::string(smtp_reply_parser::kMaxReplyLine, 'x')),
            "reply line too long");  // no line end needed to refuse it
  std::string many;
  for (std::size_t i = 0; i <= smtp_reply_parser::kMaxReplyLines; ++i) many += "250-x\r\n";
  EXPECT_EQ(error_of(many), "reply has too many lines");
  EXPECT_EQ(error_of("250 " + std::string(smtp_reply_parser::kMaxReplyLine - 6, 'x') + "\r\n"),
            "");
}

TEST(SmtpClientSession, DotStuffingAndLineEnds) {
  auto stuffed = [](std::string_view d) {
    std::string out;
    smtp_client_session::append_stuffed(out, d);
    return out;
  };
  EXPECT_EQ(stuffed(""), ".\r\n");
  EXPECT_EQ(stuffed("a\r\n"), "a\r\n.\r\n");
  EXPECT_EQ(stuffed("a"), "a\r\n.\r\n");
  EXPECT_EQ(stuffed(".a\r\n..b\r\n.\r\nc."), "..a\r\n...b\r\n..\r\nc.\r\n.\r\n");
  EXPECT_EQ(stuffed("x\n.y\nz\n"), "x\r\n..y\r\nz\r\n.\r\n");  // bare LF as CRLF
  EXPECT_EQ(stuffed("\r\n.\r\n"), "\r\n..\r\n.\r\n");
  EXPECT_EQ(stuffed("a\rb\r\n"), "a\rb\r\n.\r\n");
}

TEST(SmtpClientSession, PipelinesCommandsAndTheNextMessageBehindTheDot) {
  const std::vector<message> msgs = {{"a@x", {"b@y", "c@y"}, "Subject: 1\r\n\r\n.hi\r\n"},
                                     {"a@x", {"d@y"}, "Subject: 2\r\n\r\nbye\r\n"}};
  const std::string server =
      "220 mx ESMTP\r\n250-mx\r\n250-PIPELINING\r\n250 8BITMIME\r\n"
      "250 2.1.0 ok\r\n250 2.1.5 ok\r\n250 2.1.5 ok\r\n354 go\r\n"
      "250 2.0.0 one\r\n250 ok\r\n250 ok\r\n354 go\r\n250 2.0.0 two\r\n221 bye\r\n";
  const outcome o = every_split(plain(), msgs, server);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\n"
            "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nRCPT TO:<c@y>\r\nDATA\r\n"
            "Subject: 1\r\n\r\n..hi\r\n.\r\n"
            "MAIL FROM:<a@x>\r\nRCPT TO:<d@y>\r\nDATA\r\n"
            "Subject: 2\r\n\r\nbye\r\n.\r\nQUIT\r\n");
  ASSERT_EQ(o.results.size(), 2u);
  EXPECT_TRUE(o.results[0].ok);
  EXPECT_EQ(o.results[0].reply.first_line(), "250 2.0.0 one");
  EXPECT_TRUE(o.results[1].ok);
  EXPECT_FALSE(o.failed);

  // The writes themselves: one per round trip.
  smtp_client_session s(plain());
  s.submit({0, msgs[0].from, msgs[0].rcpt, &msgs[0].data});
  s.submit({1, msgs[1].from, msgs[1].rcpt, &msgs[1].data});
  s.receive("220 mx\r\n");
  s.clear_output();
  s.receive("250-mx\r\n250 PIPELINING\r\n");
  EXPECT_EQ(s.output(), "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nRCPT TO:<c@y>\r\nDATA\r\n");
  s.clear_output();
  s.receive("250 ok\r\n250 ok\r\n250 ok\r\n");
  EXPECT_EQ(s.output(), "");
  s.receive("354 go\r\n");
  EXPECT_EQ(s.output(), "Subject: 1\r\n\r\n..hi\r\n.\r\nMAIL FROM:<a@x>\r\nRCPT TO:<d@y>\r\nDATA\r\n");
}

TEST(SmtpClientSession, OneCommandPerRoundTripWithoutPipelining) {
  const std::vector<message> msgs = {{"a@x", {"b@y", "c@y"}, "m1\r\n"}, {"", {"d@y"}, "m2"}};
  const std::string server =
      "220 mx\r\n250-mx\r\n250 SIZE 1000\r\n"
      "250 ok\r\n250 ok\r\n250 ok\r\n354 go\r\n250 one\r\n"
      "250 ok\r\n250 ok\r\n354 go\r\n250 two\r\n221 bye\r\n";
  const outcome o = every_split(plain(), msgs, server);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nMAIL FROM:<a@x> SIZE=4\r\nRCPT TO:<b@y>\r\nRCPT TO:<c@y>\r\n"
            "DATA\r\nm1\r\n.\r\nMAIL FROM:<> SIZE=2\r\nRCPT TO:<d@y>\r\nDATA\r\nm2\r\n.\r\n"
            "QUIT\r\n");
  ASSERT_EQ(o.results.size(), 2u);
  EXPECT_TRUE(o.results[0].ok && o.results[1].ok);

  smtp_client_session s(plain());
  s.submit({0, msgs[0].from, msgs[0].rcpt, &msgs[0].data});
  s.submit({1, msgs[1].from, msgs[1].rcpt, &msgs[1].data});
  s.receive("220 mx\r\n250 mx\r\n");
  EXPECT_EQ(s.output(), "EHLO me.example\r\nMAIL FROM:<a@x>\r\n");  // no SIZE offered
  s.clear_output();
  s.receive("250 ok\r\n");
  EXPECT_EQ(s.output(), "RCPT TO:<b@y>\r\n");
  s.clear_output();
  s.receive("250 ok\r\n");
  EXPECT_EQ(s.output(), "RCPT TO:<c@y>\r\n");
  s.clear_output();
  s.receive("250 ok\r\n");
  EXPECT_EQ(s.output(), "DATA\r\n");
  s.clear_output();
  s.receive("354 go\r\n");
  EXPECT_EQ(s.output(), "m1\r\n.\r\n");  // the next MAIL waits for the dot's reply
  s.clear_output();
  s.receive("250 one\r\n");
  EXPECT_EQ(s.output(), "MAIL FROM:<>\r\n");
}

TEST(SmtpClientSession, RefusedRecipientsSkippedOrAllRefusedThenRset) {
  const std::vector<message> msgs = {{"a@x", {"b@y", "gone@y"}, "m1\r\n"},
                                     {"a@x", {"gone@y"}, "m2\r\n"},
                                     {"a@x", {"b@y"}, "m3\r\n"}};
  const std::string server =
      "220 mx\r\n250-mx\r\n250 PIPELINING\r\n"
      "250 ok\r\n250 ok\r\n550 5.1.1 no such user\r\n354 go\r\n250 one\r\n"
      "250 ok\r\n550 5.1.1 no such user\r\n554 5.5.1 no valid recipients\r\n250 reset\r\n"
      "250 ok\r\n250 ok\r\n354 go\r\n250 three\r\n221 bye\r\n";
  const outcome o = every_split(plain(), msgs, server);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nRCPT TO:<gone@y>\r\nDATA\r\n"
            "m1\r\n.\r\nMAIL FROM:<a@x>\r\nRCPT TO:<gone@y>\r\nDATA\r\nRSET\r\n"
            "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nm3\r\n.\r\nQUIT\r\n");
  ASSERT_EQ(o.results.size(), 3u);
  EXPECT_TRUE(o.results[0].ok);
  EXPECT_EQ(o.results[0].refused, std::vector<std::string>{"gone@y"});
  EXPECT_FALSE(o.results[1].ok);
  EXPECT_EQ(o.results[1].reply.first_line(), "550 5.1.1 no such user");
  EXPECT_EQ(o.results[1].error, "no recipient accepted: 550 5.1.1 no such user");
  EXPECT_FALSE(o.results[1].data_sent);
  EXPECT_TRUE(o.results[2].ok);
}

TEST(SmtpClientSession, AllRecipientsRequiredSendsNoData) {
  std::vector<message> msgs = {{"a@x", {"b@y", "gone@y"}, "m1\r\n", true},
                               {"a@x", {"b@y"}, "m2\r\n", true}};
  const std::string server =
      "220 mx\r\n250-mx\r\n250 PIPELINING\r\n"
      "250 ok\r\n250 ok\r\n550 5.1.1 <gone@y>: no\r\n250 reset\r\n"
      "250 ok\r\n250 ok\r\n354 go\r\n250 two\r\n221 bye\r\n";
  const outcome o = every_split(plain(), msgs, server);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nRCPT TO:<gone@y>\r\n"
            "RSET\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nm2\r\n.\r\nQUIT\r\n");
  ASSERT_EQ(o.results.size(), 2u);
  EXPECT_FALSE(o.results[0].ok);
  EXPECT_EQ(o.results[0].reply.code, 550);
  EXPECT_EQ(o.results[0].reply.enhanced, "5.1.1");
  EXPECT_EQ(o.results[0].reply.first_line(), "550 5.1.1 <gone@y>: no");
  EXPECT_TRUE(o.results[1].ok);
}

TEST(SmtpClientSession, RefusedMailFromAndRefusedData) {
  const std::vector<message> msgs = {{"bad@x", {"b@y"}, "m1\r\n"}, {"a@x", {"b@y"}, "m2\r\n"}};
  const std::string server =
      "220 mx\r\n250-mx\r\n250 PIPELINING\r\n"
      "553 5.7.1 sender refused\r\n503 5.5.1 need MAIL\r\n503 5.5.1 need MAIL\r\n250 reset\r\n"
      "250 ok\r\n250 ok\r\n354 go\r\n452 4.3.1 out of space\r\n221 bye\r\n";
  const outcome o = every_split(plain(), msgs, server);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nMAIL FROM:<bad@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nRSET\r\n"
            "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nm2\r\n.\r\nQUIT\r\n");
  ASSERT_EQ(o.results.size(), 2u);
  EXPECT_EQ(o.results[0].reply.first_line(), "553 5.7.1 sender refused");
  EXPECT_EQ(o.results[0].error, "MAIL FROM refused: 553 5.7.1 sender refused");
  EXPECT_EQ(o.results[1].reply.code, 452);
  EXPECT_TRUE(o.results[1].data_sent);
  EXPECT_FALSE(o.results[1].ok);
}

TEST(SmtpClientSession, MailParametersWhenOffered) {
  const std::vector<message> msgs = {{"ann@x", {"b@y"}, "caf\xc3\xa9\r\n"},
                                     {"ann@x", {"j\xc3\xbcrg@y"}, "plain\r\n"}};
  const std::string ehlo = "220 mx\r\n250-mx\r\n250-SIZE 10000\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n"
                           "250 PIPELINING\r\n";
  const outcome o = every_split(plain(), msgs,
                                ehlo + "250 ok\r\n250 ok\r\n354 go\r\n250 one\r\n"
                                       "250 ok\r\n250 ok\r\n354 go\r\n250 two\r\n221 bye\r\n");
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nMAIL FROM:<ann@x> SIZE=7 BODY=8BITMIME\r\nRCPT TO:<b@y>\r\n"
            "DATA\r\ncaf\xc3\xa9\r\n.\r\nMAIL FROM:<ann@x> SIZE=7 SMTPUTF8\r\n"
            "RCPT TO:<j\xc3\xbcrg@y>\r\nDATA\r\nplain\r\n.\r\nQUIT\r\n");
  EXPECT_TRUE(o.results.at(0).ok && o.results.at(1).ok);
}

TEST(SmtpClientSession, HeloWhenEhloIsRefused) {
  const std::vector<message> msgs = {{"a@x", {"b@y"}, "m\r\n"}};
  const std::string server =
      "220 old\r\n502 what\r\n250 old\r\n250 ok\r\n250 ok\r\n354 go\r\n250 ok\r\n221 bye\r\n";
  const outcome o = every_split(plain(), msgs, server);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nHELO me.example\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\n"
            "m\r\n.\r\nQUIT\r\n");
  EXPECT_TRUE(o.results.at(0).ok);
}

TEST(SmtpClientSession, StartTlsWhenRequired) {
  smtp_client_options opts = plain();
  opts.require_starttls = true;
  const std::vector<message> msgs = {{"a@x", {"b@y"}, "m\r\n"}};
  // The driver handshakes between the 220 and the second EHLO's reply.
  smtp_client_session s(opts);
  s.submit({0, "a@x", {"b@y"}, &msgs[0].data});
  s.receive("220 mx\r\n250-mx\r\n250-STARTTLS\r\n250 PIPELINING\r\n");
  EXPECT_EQ(s.output(), "EHLO me.example\r\nSTARTTLS\r\n");  // nothing else in clear text
  s.clear_output();
  s.receive("220 2.0.0 ready\r\n");
  ASSERT_TRUE(s.wants_tls());
  EXPECT_EQ(s.output(), "");
  s.tls_started();
  EXPECT_EQ(s.output(), "EHLO me.example\r\n");
  s.clear_output();
  s.receive("250-mx\r\n250 PIPELINING\r\n");
  EXPECT_EQ(s.output(), "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\n");
  EXPECT_FALSE(s.offers_starttls());

  // Every split of the clear-text part, and the same after the handshake.
  const outcome o = every_split(opts, msgs,
                                "220 mx\r\n250-mx\r\n250 STARTTLS\r\n220 go\r\n");
  EXPECT_EQ(o.written, "EHLO me.example\r\nSTARTTLS\r\n<tls>EHLO me.example\r\n");
  EXPECT_FALSE(o.failed);

  // Not offered: nothing is sent.
  const outcome none = run(opts, msgs, "220 mx\r\n250-mx\r\n250 PIPELINING\r\n", {});
  EXPECT_TRUE(none.failed);
  EXPECT_EQ(none.error, "the server does not offer STARTTLS");
  EXPECT_EQ(none.written, "EHLO me.example\r\n");
  ASSERT_EQ(none.results.size(), 1u);
  EXPECT_FALSE(none.results[0].ok);

  // Replies the server "sent" with its 220 would be read as if protected: refused.
  smtp_client_session inject(opts);
  inject.submit({0, "a@x", {"b@y"}, &msgs[0].data});
  inject.receive("220 mx\r\n250-mx\r\n250 STARTTLS\r\n220 go\r\n250 PIPELINING\r\n");
  EXPECT_TRUE(inject.failed());
  EXPECT_EQ(inject.error(), "the server sent data before the TLS handshake");
}

TEST(SmtpClientSession, AuthPlainLoginCramMd5) {
  smtp_client_options opts = plain();
  opts.username = "tim";
  opts.password = "tanstaaftanstaaf";
  const std::vector<message> msgs = {{"a@x", {"b@y"}, "m\r\n"}};
  const std::string tail = "250 ok\r\n250 ok\r\n354 go\r\n250 ok\r\n221 bye\r\n";
  const std::string mail = "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nm\r\n.\r\nQUIT\r\n";

  opts.auth = "plain";
  auto o = every_split(opts, msgs, "220 mx\r\n250-mx\r\n250 AUTH LOGIN PLAIN\r\n235 ok\r\n" + tail);
  EXPECT_EQ(o.written, "EHLO me.example\r\nAUTH PLAIN AHRpbQB0YW5zdGFhZnRhbnN0YWFm\r\n" + mail);
  EXPECT_TRUE(o.results.at(0).ok);

  opts.auth = "login";
  o = every_split(opts, msgs,
                  "220 mx\r\n250-mx\r\n250 AUTH=LOGIN\r\n334 VXNlcm5hbWU6\r\n334 UGFzc3dvcmQ6\r\n"
                  "235 ok\r\n" + tail);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nAUTH LOGIN\r\ndGlt\r\ndGFuc3RhYWZ0YW5zdGFhZg==\r\n" + mail);
  EXPECT_TRUE(o.results.at(0).ok);

  // RFC 2195's example exchange; "none" picks CRAM-MD5 when offered.
  opts.auth = "none";
  o = every_split(opts, msgs,
                  "220 mx\r\n250-mx\r\n250 AUTH PLAIN CRAM-MD5\r\n"
                  "334 PDE4OTYuNjk3MTcwOTUyQHBvc3RvZmZpY2UucmVzdG9uLm1jaS5uZXQ+\r\n235 ok\r\n" +
                      tail);
  EXPECT_EQ(o.written,
            "EHLO me.example\r\nAUTH CRAM-MD5\r\n"
            "dGltIGI5MTNhNjAyYzdlZGE3YTQ5NWI0ZTZlNzMzNGQzODkw\r\n" + mail);
  EXPECT_TRUE(o.results.at(0).ok);

  opts.auth = "plain";
  o = run(opts, msgs, "220 mx\r\n250-mx\r\n250 AUTH PLAIN\r\n535 5.7.8 bad credentials\r\n", {});
  EXPECT_TRUE(o.failed);
  EXPECT_EQ(o.error, "AUTH PLAIN refused: 535 5.7.8 bad credentials");
  EXPECT_FALSE(o.results.at(0).ok);

  o = run(opts, msgs, "220 mx\r\n250 mx\r\n", {});
  EXPECT_EQ(o.error, "the server does not offer AUTH");
}

TEST(SmtpClientSession, FailuresGiveEveryMessageOneResult) {
  const std::vector<message> msgs = {{"a@x", {"b@y"}, "m1\r\n"}, {"a@x", {"c@y"}, "m2\r\n"}};
  auto o = run(plain(), msgs, "554 go away\r\n", {});
  EXPECT_TRUE(o.failed);
  EXPECT_EQ(o.error, "greeting: 554 go away");
  EXPECT_EQ(o.results.size(), 2u);

  o = run(plain(), msgs, "220 mx\r\nthis is not SMTP\r\n", {});
  EXPECT_EQ(o.error, "bad reply from the server: malformed reply line");
  EXPECT_EQ(o.results.size(), 2u);

  // The connection is lost after the first body went out: it may have arrived.
  smtp_client_session s(plain());
  s.submit({0, "a@x", {"b@y"}, &msgs[0].data});
  s.submit({1, "a@x", {"c@y"}, &msgs[1].data});
  s.receive("220 mx\r\n250-mx\r\n250 PIPELINING\r\n250 ok\r\n250 ok\r\n354 go\r\n");
  s.connection_lost("reset by peer");
  auto r = s.take_results();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].data_sent);
  EXPECT_FALSE(r[1].data_sent);
  EXPECT_EQ(r[1].error, "reset by peer");
  EXPECT_EQ(r[1].reply.code, 0);

  // A 421 out of turn ends the session.
  smtp_client_session t(plain());
  t.receive("220 mx\r\n250 mx\r\n421 4.4.2 idle too long\r\n");
  EXPECT_TRUE(t.failed());
}

TEST(SmtpClientSession, RefusesEnvelopesThatWouldInjectCommands) {
  smtp_client_session s(plain());
  const std::string data = "m\r\n";
  s.submit({0, "a@x>\r\nRCPT TO:<evil@y", {"b@y"}, &data});
  s.submit({1, "a@x", {"b@y\r\nDATA"}, &data});
  s.submit({2, "a@x", {}, &data});
  s.receive("220 mx\r\n250 mx\r\n");
  EXPECT_EQ(s.output(), "EHLO me.example\r\n");
  auto r = s.take_results();
  ASSERT_EQ(r.size(), 3u);
  for (const auto& x : r) EXPECT_FALSE(x.ok);
  EXPECT_EQ(s.pending(), 0u);
}
