// Unit tests of the sans-io session on scripted bytes. Every scripted input is
// fed whole, split at every offset, byte by byte, and (when short) split at
// every pair of offsets; all feedings must give the same replies and messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <inlet/smtp/server_session.hpp>
#include <string>
#include <vector>

namespace smtp = inlet::smtp;
using smtp::step_kind;
using ::testing::HasSubstr;

namespace {

bool same_envelope(const smtp::envelope& a, const smtp::envelope& b) {
  return a.helo == b.helo && a.mail_from == b.mail_from && a.rcpt_to == b.rcpt_to &&
         a.body == b.body && a.smtputf8 == b.smtputf8 && a.declared_size == b.declared_size &&
         a.proto == b.proto && a.tls == b.tls && a.chunked == b.chunked &&
         a.remote_address == b.remote_address && a.remote_port == b.remote_port;
}

// Everything a feeding of the session produced; two feedings of the same bytes
// must agree on all of it (replies, bodies, envelopes, how it closed and why).
struct run_result {
  std::string output;
  std::vector<std::string> bodies;
  std::vector<smtp::envelope> envelopes;
  int aborted = 0;
  bool closed = false;
  std::error_code close_reason;
  bool operator==(const run_result& o) const {
    return output == o.output && bodies == o.bodies && aborted == o.aborted && closed == o.closed &&
           close_reason == o.close_reason &&
           std::equal(envelopes.begin(), envelopes.end(), o.envelopes.begin(), o.envelopes.end(),
                      same_envelope);
  }
};

using result_fn = std::function<smtp::delivery_result(const smtp::envelope&, const std::string&)>;

smtp::delivery_result accept_all(const smtp::envelope&, const std::string&) {
  return {smtp::delivery_status::accepted("ID1"), {}};
}

// A minimal driver: keeps unconsumed input, appends each fragment, collects
// body pieces and checks that every piece points into the input it was given.
run_result run(const smtp::session_config& cfg, const std::vector<std::string>& fragments,
               result_fn deliver = accept_all,
               std::function<void(smtp::server_session&)> at_tls = {}) {
  smtp::server_session s(cfg);
  s.start();
  run_result r;
  std::string pending, body;
  for (const std::string& f : fragments) {
    pending += f;
    for (;;) {
      auto st = s.consume(pending);
      EXPECT_LE(st.consumed, pending.size());
      if (st.kind == step_kind::body_data) {
        EXPECT_GE(st.data.data(), pending.data());
        EXPECT_LE(st.data.data() + st.data.size(), pending.data() + st.consumed);
        body.append(st.data);
      }
      pending.erase(0, st.consumed);
      if (st.kind == step_kind::need_more) break;
      if (st.kind == step_kind::close) {
        r.closed = true;
        r.close_reason = st.reason;
        r.output += s.output();
        return r;
      }
      if (st.kind == step_kind::message_aborted) {
        ++r.aborted;
        body.clear();
      }
      if (st.kind == step_kind::message_complete) {
        auto env = s.take_envelope();
        auto res = deliver(env, body);
        r.bodies.push_back(body);
        r.envelopes.push_back(env);
        body.clear();
        s.delivery_done(res);
      }
      if (st.kind == step_kind::start_tls) {
        r.output += s.output();
        s.clear_output();
        r.output += "<TLS>";
        pending.clear();  // the driver discards what was pipelined after STARTTLS
        s.tls_started();
        if (at_tls) at_tls(s);
      }
    }
  }
  r.output += s.output();
  return r;
}

// Feeds `input` whole and in every split; all must agree. Returns the whole run.
run_result run_all_splits(const smtp::session_config& cfg, const std::string& input,
                          result_fn deliver = accept_all) {
  run_result whole = run(cfg, {input}, deliver);
  for (std::size_t i = 0; i <= input.size(); ++i) {
    run_result r = run(cfg, {input.substr(0, i), input.substr(i)}, deliver);
    EXPECT_EQ(r, whole) << "split at " << i;
    if (!(r == whole)) return whole;
  }
  std::vector<std::string> bytes;
  for (char c : input) bytes.emplace_back(1, c);
  EXPECT_EQ(run(cfg, bytes, deliver), whole) << "byte by byte";
  if (input.size() <= 160) {
    for (std::size_t i = 0; i <= input.size(); ++i)
      for (std::size_t j = i; j <= input.size(); ++j) {
        run_result r =
            run(cfg, {input.substr(0, i), input.substr(i, j - i), input.substr(j)}, deliver);
        EXPECT_EQ(r, whole) << "split at " << i << "," << j;
        if (!(r == whole)) return whole;
      }
  }
  return whole;
}

std::vector<std::string> replies(const std::string& out) {
  std::vector<std::string> v;
  std::size_t p = 0;
  while (p < out.size()) {
    std::size_t e = out.find("\r\n", p);
    if (e == out.npos) {
      v.push_back(out.substr(p));
      break;
    }
    v.push_back(out.substr(p, e - p));
    p = e + 2;
  }
  if (p == out.size()) v.emplace_back();  // so v[size-2] is the last reply
  return v;
}

smtp::session_config cfg_default() {
  smtp::session_config c;
  c.hostname = "mx.test";
  return c;
}

const std::string ehlo = "EHLO client.test\r\n";
const std::string envelope_cmds = "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n";

}  // namespace

TEST(session, greeting_and_ehlo_capabilities) {
  auto r = run_all_splits(cfg_default(), ehlo);
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 9u);
  EXPECT_EQ(v[0], "220 mx.test ESMTP inlet");
  EXPECT_EQ(v[1], "250-mx.test");
  EXPECT_EQ(v[2], "250-PIPELINING");
  EXPECT_EQ(v[3], "250-SIZE 33554432");
  EXPECT_EQ(v[4], "250-8BITMIME");
  EXPECT_EQ(v[5], "250-SMTPUTF8");
  EXPECT_EQ(v[6], "250-CHUNKING");
  EXPECT_EQ(v[7], "250 ENHANCEDSTATUSCODES");
  EXPECT_TRUE(v[8].empty());
}

TEST(session, helo_transaction_delivers_exact_body) {
  std::string in = "HELO c\r\n" + envelope_cmds + "Subject: hi\r\n\r\nbody\r\n.\r\nQUIT\r\n";
  auto r = run_all_splits(cfg_default(), in);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], "Subject: hi\r\n\r\nbody\r\n");
  EXPECT_EQ(r.envelopes[0].mail_from, "a@x.test");
  EXPECT_EQ(r.envelopes[0].rcpt_to, inlet::smtp::recipient_list{"b@y.test"});
  EXPECT_EQ(r.envelopes[0].helo, "c");
  EXPECT_EQ(r.envelopes[0].proto, smtp::protocol::smtp);
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(v[1], "250 mx.test");
  EXPECT_EQ(v[2], "250 2.1.0 Ok");
  EXPECT_EQ(v[3], "250 2.1.5 Ok");
  EXPECT_EQ(v[4], "354 End data with <CR><LF>.<CR><LF>");
  EXPECT_EQ(v[5], "250 2.0.0 Ok: queued as ID1");
  EXPECT_EQ(v[6], "221 2.0.0 Bye");
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.close_reason, smtp::errc::client_quit);
}

TEST(session, dot_unstuffing) {
  std::string in = ehlo + envelope_cmds + "..leading dot\r\n..\r\n...\r\nx.y\r\n.x\r\n.\r\n";
  auto r = run_all_splits(cfg_default(), in);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], ".leading dot\r\n.\r\n..\r\nx.y\r\nx\r\n")
      << "a leading dot is removed from every line that has one";
  EXPECT_EQ(r.envelopes[0].proto, smtp::protocol::esmtp);
}

TEST(session, empty_message_and_two_messages_on_one_connection) {
  std::string in = ehlo + envelope_cmds + ".\r\n" + envelope_cmds + "second\r\n.\r\n";
  auto r = run_all_splits(cfg_default(), in);
  ASSERT_EQ(r.bodies.size(), 2u);
  EXPECT_EQ(r.bodies[0], "");
  EXPECT_EQ(r.bodies[1], "second\r\n");
}

TEST(session, only_crlf_dot_crlf_ends_the_data) {
  // SMTP smuggling look-alikes: each must stay inside the message.
  std::string tricky = "a\n.\nb\r.\rc\n.\r\nd\r\n.\ne\r\n.\rf\r\n";
  std::string in = ehlo + envelope_cmds + tricky + ".\r\nQUIT\r\n";
  auto r = run_all_splits(cfg_default(), in);
  ASSERT_EQ(r.bodies.size(), 1u);
  // The dots after CRLF are stuffing candidates and are removed; the others stay.
  EXPECT_EQ(r.bodies[0], "a\n.\nb\r.\rc\n.\r\nd\r\n\ne\r\n\rf\r\n");
  EXPECT_TRUE(r.closed);
}

TEST(session, smuggled_commands_after_fake_terminator_are_data) {
  std::string in = ehlo + envelope_cmds + "x\n.\nMAIL FROM:<evil@x.test>\r\n.\r\n";
  auto r = run_all_splits(cfg_default(), in);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], "x\n.\nMAIL FROM:<evil@x.test>\r\n");
}

TEST(session, bare_lf_in_body_rejected_when_configured) {
  auto cfg = cfg_default();
  cfg.reject_bare_lf_in_body = true;
  std::string in = ehlo + envelope_cmds + "a\nb\r\n.\r\nNOOP\r\n";
  auto r = run_all_splits(cfg, in);
  EXPECT_TRUE(r.bodies.empty());
  EXPECT_EQ(r.aborted, 1);
  EXPECT_THAT(r.output, HasSubstr("550 5.6.0"));
  EXPECT_THAT(r.output, HasSubstr("250 2.0.0 Ok\r\n"));  // NOOP still served
}

TEST(session, pipelined_replies_come_in_one_output) {
  smtp::server_session s(cfg_default());
  s.start();
  s.clear_output();
  std::string in =
      ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nRCPT TO:<c@y.test>\r\nDATA\r\n";
  auto st = s.consume(in);
  EXPECT_EQ(st.kind, step_kind::need_more);
  EXPECT_EQ(st.consumed, in.size());
  auto v = replies(std::string(s.output()));
  ASSERT_EQ(v.size(), 12u);
  EXPECT_EQ(v[7], "250 2.1.0 Ok");
  EXPECT_EQ(v[8], "250 2.1.5 Ok");
  EXPECT_EQ(v[9], "250 2.1.5 Ok");
  EXPECT_EQ(v[10], "354 End data with <CR><LF>.<CR><LF>");
}

TEST(session, delivery_is_asynchronous_and_pipelined_input_waits) {
  smtp::server_session s(cfg_default());
  s.start();
  std::string in = ehlo + envelope_cmds + "x\r\n.\r\nNOOP\r\n";
  std::string_view rest = in;
  std::string body;
  smtp::step st;
  do {
    st = s.consume(rest);
    rest.remove_prefix(st.consumed);
    if (st.kind == step_kind::body_data) body.append(st.data);
  } while (st.kind != step_kind::message_complete && st.kind != step_kind::need_more);
  ASSERT_EQ(st.kind, step_kind::message_complete);
  EXPECT_TRUE(s.awaiting_delivery());
  EXPECT_EQ(rest, "NOOP\r\n");
  std::string before(s.output());
  EXPECT_THAT(before, ::testing::Not(HasSubstr("queued")));  // no 250 before the store answers
  st = s.consume(rest);
  EXPECT_EQ(st.kind, step_kind::need_more);
  EXPECT_EQ(st.consumed, 0u);  // nothing is processed while delivering
  s.delivery_done({smtp::delivery_status::rejected(451, "4.3.0", "store failure"), {}});
  st = s.consume(rest);
  EXPECT_EQ(st.kind, step_kind::need_more);
  EXPECT_EQ(st.consumed, rest.size());
  auto v = replies(std::string(s.output()));
  EXPECT_EQ(v[v.size() - 3], "451 4.3.0 store failure");
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");
  EXPECT_EQ(body, "x\r\n");
}

TEST(session, rejection_from_delivery_hook_is_relayed) {
  auto r =
      run_all_splits(cfg_default(), ehlo + envelope_cmds + "spam\r\n.\r\n",
                     [](const smtp::envelope&, const std::string&) {
                       return smtp::delivery_result{
                           smtp::delivery_status::rejected(550, "5.7.1", "rejected by filter"), {}};
                     });
  EXPECT_THAT(r.output, HasSubstr("\r\n550 5.7.1 rejected by filter\r\n"));
}

// The queue ID is kept inline up to max_inline_queue_id bytes and formatted into the
// reply; a longer one travels as text. The wire reply is the same either way.
TEST(session, accepted_reply_names_the_queue_id_short_or_long) {
  const std::string short_id(22, 'a');
  const std::string edge_id(smtp::delivery_status::max_inline_queue_id, 'b');
  const std::string long_id(smtp::delivery_status::max_inline_queue_id + 1, 'c');
  EXPECT_EQ(smtp::delivery_status::accepted(short_id).queue_id(), short_id);
  EXPECT_TRUE(smtp::delivery_status::accepted(short_id).text.empty());
  EXPECT_EQ(smtp::delivery_status::accepted(long_id).text, "Ok: queued as " + long_id);
  for (const std::string& id : {short_id, edge_id, long_id, std::string("Q")}) {
    auto r = run_all_splits(cfg_default(), ehlo + envelope_cmds + "x\r\n.\r\n",
                            [&](const smtp::envelope&, const std::string&) {
                              return smtp::delivery_result{smtp::delivery_status::accepted(id),
                                                           {}};
                            });
    EXPECT_THAT(r.output, HasSubstr("\r\n250 2.0.0 Ok: queued as " + id + "\r\n")) << id;
  }
}

TEST(session, command_line_too_long) {
  auto cfg = cfg_default();
  std::string in = ehlo + "NOOP " + std::string(600, 'x') + "\r\nNOOP\r\n";
  auto r = run_all_splits(cfg, in);
  auto v = replies(r.output);
  EXPECT_EQ(v[v.size() - 3], "500 5.5.6 Error: line too long");
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");
}

TEST(session, command_line_limit_is_configurable) {
  auto cfg = cfg_default();
  cfg.max_command_line = 2000;
  std::string in = ehlo + "NOOP " + std::string(600, 'x') + "\r\n";
  auto r = run(cfg, {in});
  EXPECT_THAT(r.output, ::testing::EndsWith("250 2.0.0 Ok\r\n"));
}

TEST(session, sequence_errors) {
  std::string in = "MAIL FROM:<a@x.test>\r\n" + ehlo + "RCPT TO:<b@y.test>\r\nDATA\r\n" +
                   "MAIL FROM:<a@x.test>\r\nMAIL FROM:<a@x.test>\r\nDATA\r\n";
  auto r = run_all_splits(cfg_default(), in);
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 15u);
  EXPECT_EQ(v[1], "503 5.5.1 Error: send HELO/EHLO first");
  EXPECT_EQ(v[9], "503 5.5.1 Error: need MAIL command");
  EXPECT_EQ(v[10], "503 5.5.1 Error: need RCPT command");
  EXPECT_EQ(v[11], "250 2.1.0 Ok");
  EXPECT_EQ(v[12], "503 5.5.1 Error: nested MAIL command");
  EXPECT_EQ(v[13], "503 5.5.1 Error: need RCPT command");
}

TEST(session, unknown_and_unimplemented_commands) {
  auto r = run_all_splits(cfg_default(),
                          "FOO bar\r\nEXPN list\r\nAUTH PLAIN x\r\nHELP\r\nVRFY u\r\nNOOP\r\n");
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(v[1], "500 5.5.2 Error: command not recognized");
  EXPECT_EQ(v[2], "502 5.5.1 Error: command not implemented");
  EXPECT_EQ(v[3], "502 5.5.1 Error: command not implemented");
  EXPECT_THAT(v[4], ::testing::StartsWith("214 2.0.0 "));
  EXPECT_THAT(v[5], ::testing::StartsWith("252 2.0.0 "));
  EXPECT_EQ(v[6], "250 2.0.0 Ok");
}

TEST(session, commands_are_case_insensitive) {
  auto r = run_all_splits(cfg_default(),
                          "ehlo c\r\nmail from:<a@x.test>\r\nrcpt to:<b@y.test>\r\nrset\r\n");
  auto v = replies(r.output);
  EXPECT_EQ(v[v.size() - 4], "250 2.1.0 Ok");
  EXPECT_EQ(v[v.size() - 3], "250 2.1.5 Ok");
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");
}

// Verbs are matched with their case folded; bytes that fold next to letters ('@' and '`',
// '[' and '{', digits, a verb one byte long or short) are not verbs.
TEST(session, mixed_case_verbs_match_and_near_misses_do_not) {
  auto r = run_all_splits(cfg_default(),
                          "EhLo c\r\nNoOp\r\nNOO@\r\n@OOP\r\nnoo{\r\nNOOPS\r\nNOO\r\n"
                          "n0op\r\nqUiT\r\n");
  auto v = replies(r.output);
  ASSERT_GE(v.size(), 10u);  // replies() ends with an empty entry
  EXPECT_EQ(v[v.size() - 9], "250 2.0.0 Ok");
  for (std::size_t k = v.size() - 8; k < v.size() - 2; ++k)
    EXPECT_EQ(v[k], "500 5.5.2 Error: command not recognized") << k;
  EXPECT_THAT(v[v.size() - 2], ::testing::StartsWith("221 "));
}

TEST(session, bare_lf_nul_and_bare_cr_in_commands) {
  static const char raw[] = "NOOP\nNO\0OP\r\nNO\rOP\r\nNOOP\r\n";
  std::string in(raw, sizeof raw - 1);
  auto r = run_all_splits(cfg_default(), in);
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 6u);
  EXPECT_THAT(v[1], ::testing::StartsWith("500 5.5.2 Error: bare <LF>"));
  EXPECT_THAT(v[2], ::testing::StartsWith("500 5.5.2 Error: NUL"));
  EXPECT_THAT(v[3], ::testing::StartsWith("500 5.5.2 Error: NUL"));
  EXPECT_EQ(v[4], "250 2.0.0 Ok");
}

TEST(session, size_parameter_and_body_limit) {
  auto cfg = cfg_default();
  cfg.max_message_size = 100;
  std::string in = ehlo + "MAIL FROM:<a@x.test> SIZE=101\r\n" + "MAIL FROM:<a@x.test> SIZE=50\r\n" +
                   "RCPT TO:<b@y.test>\r\nDATA\r\n" + std::string(60, 'a') + "\r\n" +
                   std::string(60, 'b') + "\r\n.\r\n" + envelope_cmds + "small\r\n.\r\n";
  auto r = run_all_splits(cfg, in);
  EXPECT_THAT(r.output, HasSubstr("250-SIZE 100\r\n"));
  EXPECT_THAT(
      r.output,
      HasSubstr("552 5.3.4 Error: message size exceeds fixed maximum message size\r\n250 2.1.0"));
  EXPECT_THAT(r.output, HasSubstr("354 End data with <CR><LF>.<CR><LF>\r\n552 5.3.4"));
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], "small\r\n");
  EXPECT_EQ(r.aborted, 1);
}

TEST(session, body_exactly_at_limit_is_accepted) {
  auto cfg = cfg_default();
  cfg.max_message_size = 10;
  auto r = run(cfg, {ehlo + envelope_cmds + "12345678\r\n.\r\n"});
  ASSERT_EQ(r.bodies.size(), 1u);
}

TEST(session, mail_parameters) {
  std::string in = ehlo + "MAIL FROM:<a@x.test> BODY=8BITMIME SMTPUTF8 SIZE=10\r\nRSET\r\n" +
                   "MAIL FROM:<a@x.test> FOO=bar\r\n" + "MAIL FROM:<a@x.test> BODY=BINARYMIME\r\n" +
                   "MAIL FROM:<a@x.test> SIZE=abc\r\n" +
                   "MAIL FROM:<>\r\nRCPT TO:<b@y.test> NOTIFY=NEVER\r\n";
  auto r = run_all_splits(cfg_default(), in);
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 16u);
  EXPECT_EQ(v[8], "250 2.1.0 Ok");
  EXPECT_EQ(v[10], "555 5.5.4 Error: unsupported MAIL parameter");
  EXPECT_EQ(v[11], "555 5.5.4 Error: unsupported BODY type");
  EXPECT_EQ(v[12], "501 5.5.4 Error: bad SIZE parameter");
  EXPECT_EQ(v[13], "250 2.1.0 Ok");  // the null sender
  EXPECT_EQ(v[14], "555 5.5.4 Error: unsupported RCPT parameter");
}

TEST(session, envelope_records_mail_parameters) {
  auto r = run(cfg_default(), {ehlo + "MAIL FROM:<a@x.test> BODY=8BITMIME SMTPUTF8 SIZE=10\r\n"
                                      "RCPT TO:<b@y.test>\r\nDATA\r\nx\r\n.\r\n"});
  ASSERT_EQ(r.envelopes.size(), 1u);
  EXPECT_EQ(r.envelopes[0].body, smtp::body_type::eight_bit_mime);
  EXPECT_TRUE(r.envelopes[0].smtputf8);
  EXPECT_EQ(r.envelopes[0].declared_size, 10u);
}

TEST(session, params_need_ehlo) {
  auto r = run(cfg_default(), {"HELO c\r\nMAIL FROM:<a@x.test> SIZE=10\r\n"});
  EXPECT_THAT(r.output, HasSubstr("555 5.5.4"));
}

TEST(session, smtputf8_addresses) {
  std::string in = ehlo + "MAIL FROM:<j\xC3\xB6rg@x.test>\r\n" +
                   "MAIL FROM:<j\xC3\xB6rg@x.test> SMTPUTF8\r\nRCPT "
                   "TO:<\xE7\x94\xA8\xE6\x88\xB7@\xE4\xBE\x8B.test>\r\n"
                   "DATA\r\nSubject: \xC3\xA9t\xC3\xA9\r\n\r\nx\r\n.\r\n";
  auto r = run_all_splits(cfg_default(), in);
  EXPECT_THAT(r.output, HasSubstr("553 5.6.7"));
  ASSERT_EQ(r.envelopes.size(), 1u);
  EXPECT_EQ(r.envelopes[0].rcpt_to[0], "\xE7\x94\xA8\xE6\x88\xB7@\xE4\xBE\x8B.test");
}

TEST(session, bad_addresses) {
  std::string in =
      ehlo +
      "MAIL FROM:<a@x.test\r\nMAIL FROM:a@b c d\r\nMAIL FROM:<a@@x>\r\nMAIL FROM:<nodomain>\r\n" +
      "MAIL FROM:<@r1,@r2:a@x.test>\r\nRCPT TO:<>\r\nRCPT TO:<b@-bad>\r\nRCPT TO:<\"q "
      "u\"@y.test>\r\n";
  auto r = run_all_splits(cfg_default(), in);
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 17u);
  EXPECT_EQ(v[8], "501 5.1.7 Error: bad sender address syntax");
  EXPECT_EQ(v[9], "555 5.5.4 Error: unsupported MAIL parameter");  // "a@b" + params "c" "d"
  EXPECT_EQ(v[10], "501 5.1.7 Error: bad sender address syntax");
  EXPECT_EQ(v[11], "501 5.1.7 Error: sender address needs a domain");
  EXPECT_EQ(v[12], "250 2.1.0 Ok");  // source route accepted and dropped
  EXPECT_EQ(v[13], "501 5.1.3 Error: bad recipient address syntax");
  EXPECT_EQ(v[14], "501 5.1.3 Error: bad recipient address syntax");
  EXPECT_EQ(v[15], "250 2.1.5 Ok");  // quoted local part
}

TEST(session, recipient_domains_postmaster_and_limit) {
  auto cfg = cfg_default();
  cfg.domains = {"in.test", "Other.Test"};
  cfg.max_recipients = 3;
  std::string in = ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<a@elsewhere.test>\r\nDATA\r\n" +
                   "RCPT TO:<Postmaster>\r\nRCPT TO:<u@IN.test>\r\nRCPT TO:<v@other.test>\r\n" +
                   "RCPT TO:<w@in.test>\r\nDATA\r\nhi\r\n.\r\n";
  auto r = run_all_splits(cfg, in);
  auto v = replies(r.output);
  EXPECT_EQ(v[9], "550 5.1.1 Error: recipient address rejected: domain not served here");
  EXPECT_EQ(v[10], "554 5.5.1 Error: no valid recipients");
  EXPECT_EQ(v[11], "250 2.1.5 Ok");
  EXPECT_EQ(v[12], "250 2.1.5 Ok");
  EXPECT_EQ(v[13], "250 2.1.5 Ok");
  EXPECT_EQ(v[14], "452 4.5.3 Error: too many recipients");
  ASSERT_EQ(r.envelopes.size(), 1u);
  EXPECT_EQ(r.envelopes[0].rcpt_to,
            (inlet::smtp::recipient_list{"Postmaster", "u@IN.test", "v@other.test"}));
}

TEST(session, rset_clears_the_transaction) {
  auto r = run_all_splits(cfg_default(),
                          ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nRSET\r\nDATA\r\n");
  EXPECT_THAT(r.output,
              ::testing::EndsWith("250 2.0.0 Ok\r\n503 5.5.1 Error: need RCPT command\r\n"));
}

TEST(session, ehlo_without_argument) {
  auto r = run_all_splits(cfg_default(), "EHLO\r\nHELO \r\n");
  auto v = replies(r.output);
  EXPECT_EQ(v[1], "501 5.5.4 Syntax: EHLO hostname");
  EXPECT_EQ(v[2], "501 5.5.4 Syntax: HELO hostname");
}

TEST(session, bdat_chunks) {
  std::string in = ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\n" +
                   "BDAT 15\r\nQUIT\r\n.\r\nRSET\r\nBDAT 6 LAST\r\nDATA\r\nNOOP\r\n";
  auto r = run_all_splits(cfg_default(), in);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], "QUIT\r\n.\r\nRSET\r\nDATA\r\n") << "commands inside BDAT are data";
  EXPECT_TRUE(r.envelopes[0].chunked);
  auto v = replies(r.output);
  EXPECT_EQ(v[v.size() - 4], "250 2.0.0 15 octets received");
  EXPECT_EQ(v[v.size() - 3], "250 2.0.0 Ok: queued as ID1");
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");
  EXPECT_FALSE(r.closed);
}

TEST(session, bdat_zero_last_and_errors) {
  std::string in =
      ehlo + "BDAT 4\r\nNOOPMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 3\r\nabcDATA\r\n" +
      "RCPT TO:<c@y.test>\r\nBDAT x\r\nBDAT 0 LAST\r\n";
  auto r = run_all_splits(cfg_default(), in);
  auto v = replies(r.output);
  EXPECT_EQ(v[8], "503 5.5.1 Error: BDAT needs a transaction with recipients");
  EXPECT_EQ(v[9], "250 2.1.0 Ok");
  EXPECT_EQ(v[10], "250 2.1.5 Ok");
  EXPECT_EQ(v[11], "250 2.0.0 3 octets received");
  EXPECT_EQ(v[12], "503 5.5.1 Error: DATA after BDAT");
  EXPECT_EQ(v[13], "503 5.5.1 Error: RCPT after BDAT");
  EXPECT_EQ(v[14], "501 5.5.4 Syntax: BDAT size [LAST]");
  EXPECT_EQ(v[15], "250 2.0.0 Ok: queued as ID1");
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], "abc");
}

TEST(session, bdat_over_size_limit) {
  auto cfg = cfg_default();
  cfg.max_message_size = 8;
  std::string in =
      ehlo +
      "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 5\r\n12345BDAT 5 LAST\r\n67890NOOP\r\n";
  auto r = run_all_splits(cfg, in);
  auto v = replies(r.output);
  EXPECT_EQ(v[v.size() - 4], "250 2.0.0 5 octets received");
  EXPECT_EQ(v[v.size() - 3], "552 5.3.4 Error: message size exceeds fixed maximum message size");
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");
  EXPECT_TRUE(r.bodies.empty());
  EXPECT_EQ(r.aborted, 1);
}

TEST(session, lmtp_reply_per_recipient) {
  auto cfg = cfg_default();
  cfg.lmtp = true;
  std::string in =
      "EHLO c\r\nHELO c\r\nLHLO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\n"
      "RCPT TO:<c@y.test>\r\nDATA\r\nhi\r\n.\r\n";
  auto r = run_all_splits(cfg, in, [](const smtp::envelope& e, const std::string&) {
    smtp::delivery_result res;
    res.per_recipient.push_back(smtp::delivery_status::accepted("Q1"));
    res.per_recipient.push_back(smtp::delivery_status::rejected(452, "4.2.2", "mailbox full"));
    EXPECT_EQ(e.proto, smtp::protocol::lmtp);
    return res;
  });
  auto v = replies(r.output);
  EXPECT_EQ(r.bodies.size(), 1u) << r.output;
  EXPECT_EQ(v[0], "220 mx.test LMTP inlet");
  EXPECT_EQ(v[1], "500 5.5.2 Error: command not recognized");
  EXPECT_EQ(v[2], "500 5.5.2 Error: command not recognized");
  EXPECT_EQ(v[v.size() - 3], "250 2.0.0 <b@y.test> Ok: queued as Q1");
  EXPECT_EQ(v[v.size() - 2], "452 4.2.2 <c@y.test> mailbox full");
}

TEST(session, starttls_discards_pipelined_input) {
  auto cfg = cfg_default();
  cfg.starttls = true;
  std::string in = ehlo + "STARTTLS\r\nMAIL FROM:<injected@x.test>\r\n";
  smtp::server_session* seen = nullptr;
  auto r = run(cfg, {in}, accept_all, [&](smtp::server_session& s) { seen = &s; });
  EXPECT_THAT(r.output, HasSubstr("250-STARTTLS\r\n"));
  EXPECT_THAT(r.output, ::testing::EndsWith("220 2.0.0 Ready to start TLS\r\n<TLS>"));
  // after TLS: the session needs a new EHLO, STARTTLS is gone, nothing injected
  auto r2 = run(cfg, {ehlo + "STARTTLS\r\n", "MAIL FROM:<a@x.test>\r\nEHLO c\r\nSTARTTLS\r\n"});
  auto v = replies(r2.output.substr(r2.output.find("<TLS>") + 5));
  ASSERT_GE(v.size(), 3u);
  EXPECT_EQ(v[0], "503 5.5.1 Error: send HELO/EHLO first");
  EXPECT_THAT(r2.output.substr(r2.output.find("<TLS>")), ::testing::Not(HasSubstr("STARTTLS")));
  EXPECT_EQ(v[v.size() - 2], "503 5.5.1 Error: TLS already active");
}

// RFC 3207: without a certificate STARTTLS is not offered; asking for it is
// "502 command not implemented" (permanent), and the session goes on in clear.
TEST(session, starttls_without_tls_configured_is_502) {
  auto cfg = cfg_default();
  ASSERT_FALSE(cfg.starttls);
  auto r = run_all_splits(cfg, ehlo + "STARTTLS\r\nMAIL FROM:<a@x.test>\r\n");
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("STARTTLS\r\n")));
  auto v = replies(r.output);
  ASSERT_GE(v.size(), 4u);
  EXPECT_EQ(v[v.size() - 3], "502 5.5.1 Error: STARTTLS not available");
  EXPECT_EQ(v[v.size() - 2], "250 2.1.0 Ok");
  EXPECT_FALSE(r.closed);
}

TEST(session, starttls_session_discards_until_tls_started) {
  auto cfg = cfg_default();
  cfg.starttls = true;
  smtp::server_session s(cfg);
  s.start();
  std::string in = ehlo + "STARTTLS\r\nMAIL FROM:<x@y.test>\r\n";
  auto st = s.consume(in);
  ASSERT_EQ(st.kind, step_kind::start_tls);
  EXPECT_EQ(st.consumed, ehlo.size() + 10);
  s.clear_output();
  st = s.consume(std::string_view(in).substr(st.consumed));
  EXPECT_EQ(st.kind, step_kind::need_more);
  EXPECT_EQ(st.consumed, 22u);  // discarded
  EXPECT_TRUE(s.output().empty());
}

TEST(session, shutdown_when_idle_and_in_transaction) {
  smtp::server_session idle(cfg_default());
  idle.start();
  idle.clear_output();
  idle.shutdown();
  auto st = idle.consume("");
  EXPECT_EQ(st.kind, step_kind::close);
  EXPECT_EQ(st.reason, smtp::errc::shutting_down);
  EXPECT_THAT(std::string(idle.output()), ::testing::StartsWith("421 4.3.2"));

  smtp::server_session busy(cfg_default());
  busy.start();
  std::string in = ehlo + "MAIL FROM:<a@x.test>\r\n";
  st = busy.consume(in);
  busy.clear_output();
  busy.shutdown();
  EXPECT_FALSE(busy.closing());
  std::string rest = "RCPT TO:<b@y.test>\r\nDATA\r\nx\r\n.\r\n";
  std::string_view rv = rest;
  do {
    st = busy.consume(rv);
    rv.remove_prefix(st.consumed);
  } while (st.kind == step_kind::body_data);
  ASSERT_EQ(st.kind, step_kind::message_complete);
  busy.delivery_done({smtp::delivery_status::accepted("Z"), {}});
  st = busy.consume(rv);
  EXPECT_EQ(st.kind, step_kind::close);
  EXPECT_THAT(std::string(busy.output()),
              ::testing::EndsWith(
                  "250 2.0.0 Ok: queued as Z\r\n421 4.3.2 mx.test Service shutting down\r\n"));
}

TEST(session, too_many_errors_closes) {
  auto cfg = cfg_default();
  cfg.max_errors = 3;
  auto r = run_all_splits(cfg, "X\r\nY\r\nZ\r\nNOOP\r\n");
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.close_reason, smtp::errc::too_many_errors);
  EXPECT_THAT(r.output, ::testing::EndsWith("421 4.7.0 mx.test Error: too many errors\r\n"));
}

TEST(session, timeout_closes_with_421) {
  smtp::server_session s(cfg_default());
  s.start();
  s.clear_output();
  s.timeout();
  auto st = s.consume("NOOP\r\n");
  EXPECT_EQ(st.kind, step_kind::close);
  EXPECT_EQ(st.reason, smtp::errc::timeout);
  EXPECT_EQ(std::string(s.output()), "421 4.4.2 mx.test Error: timeout exceeded\r\n");
}

TEST(session, body_pieces_are_views_into_input_and_hold_back_at_most_two_bytes) {
  smtp::server_session s(cfg_default());
  s.start();
  std::string head = ehlo + envelope_cmds;
  auto st = s.consume(head);
  ASSERT_EQ(st.consumed, head.size());
  std::string chunk = "line one\r\n.";  // ends with a possible terminator start
  st = s.consume(chunk);
  EXPECT_EQ(st.kind, step_kind::body_data);
  EXPECT_EQ(st.data.data(), chunk.data());
  EXPECT_EQ(st.data, "line one\r\n");
  EXPECT_EQ(st.consumed, 10u);
  st = s.consume(std::string_view(chunk).substr(10));
  EXPECT_EQ(st.kind, step_kind::need_more);
  EXPECT_EQ(st.consumed, 0u);
  std::string more = ".\r";
  st = s.consume(more);
  EXPECT_EQ(st.kind, step_kind::need_more);
  EXPECT_EQ(st.consumed, 0u);
  std::string end = ".\r\n";
  st = s.consume(end);
  EXPECT_EQ(st.kind, step_kind::message_complete);
}

TEST(session, eight_bit_body_without_declaration_is_kept) {
  const std::string data("caf\xC3\xA9 \xFF\0x\r\n", 11);
  auto r = run_all_splits(cfg_default(), ehlo + envelope_cmds + data + ".\r\n");
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], data);
}

// RFC 5321 4.5.3.1.6: a text line is at most 1000 octets incl. CRLF. Counted on
// the content (a stuffed dot is not counted), any LF ends a line; a longer line
// refuses the whole message with 500 5.5.6 after its end.
TEST(session, text_line_limit_in_data) {
  auto cfg = cfg_default();
  cfg.max_text_line = 40;
  std::string at_limit(38, 'a');                    // 38 + CRLF = 40: accepted
  std::string over(39, 'b');                        // 41: refused
  std::string dotted = "." + std::string(38, 'c');  // stuffed: content is 38 + CRLF
  std::string in = ehlo + envelope_cmds + at_limit + "\r\n" + dotted + "\r\n.\r\n" + envelope_cmds +
                   "short\r\n" + over + "\r\nafter\r\n.\r\n" + envelope_cmds + "x\n" +
                   std::string(45, 'd') + "\r\n.\r\nNOOP\r\n";
  auto r = run_all_splits(cfg, in);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], at_limit + "\r\n" + std::string(38, 'c') + "\r\n");
  EXPECT_EQ(r.aborted, 2);
  auto v = replies(r.output);
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");  // NOOP: the session goes on
  EXPECT_EQ(v[v.size() - 3], "500 5.5.6 Error: line too long in message data");
  EXPECT_THAT(r.output, HasSubstr("354 End data with <CR><LF>.<CR><LF>\r\n500 5.5.6 Error: line "
                                  "too long in message data\r\n250 2.1.0"));
}

TEST(session, text_line_limit_default_and_off) {
  std::string line1000(998, 'x');  // 998 + CRLF = 1000 octets: the RFC's maximum
  auto r = run(cfg_default(), {ehlo + envelope_cmds + line1000 + "\r\n.\r\n" + envelope_cmds +
                               line1000 + "y\r\n.\r\n"});
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.aborted, 1);
  auto off = cfg_default();
  off.max_text_line = 0;
  std::string huge(100000, 'z');
  auto r2 = run(off, {ehlo + envelope_cmds + huge + "\r\n.\r\n"});
  ASSERT_EQ(r2.bodies.size(), 1u);
  EXPECT_EQ(r2.bodies[0], huge + "\r\n");
}

TEST(session, text_line_limit_in_bdat) {
  auto cfg = cfg_default();
  cfg.max_text_line = 20;
  std::string ok_body = std::string(10, 'a') + "\r\n" + std::string(18, 'b') + "\r\n";  // 12 + 20
  std::string long_line = std::string(15, 'c');  // split over two chunks: 15 + 6 + CRLF = 23
  std::string in = ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT " +
                   std::to_string(ok_body.size()) + " LAST\r\n" + ok_body +
                   "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nBDAT 15\r\n" + long_line +
                   "BDAT 8 LAST\r\ndddddd\r\nNOOP\r\n";
  auto r = run_all_splits(cfg, in);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], ok_body);
  EXPECT_EQ(r.aborted, 1);
  EXPECT_THAT(
      r.output,
      HasSubstr("250 2.0.0 15 octets received\r\n500 5.5.6 Error: line too long in message data\r\n"
                "250 2.0.0 Ok\r\n"));
}

TEST(session, shutdown_now_closes_even_inside_a_body) {
  smtp::server_session s(cfg_default());
  s.start();
  std::string in = ehlo + envelope_cmds + "half a bo";
  auto st = s.consume(in);
  while (st.kind != step_kind::need_more) {
    in.erase(0, st.consumed);
    st = s.consume(in);
  }
  EXPECT_TRUE(s.in_body());
  s.shutdown();  // graceful: the transaction may finish
  EXPECT_FALSE(s.closing());
  s.clear_output();
  s.shutdown_now();  // grace period over
  EXPECT_TRUE(s.closing());
  EXPECT_EQ(s.output(), "421 4.3.2 mx.test Service shutting down\r\n");
  auto c = s.consume("dy\r\n.\r\n");
  EXPECT_EQ(c.kind, step_kind::close);
  EXPECT_EQ(c.reason, smtp::make_error_code(smtp::errc::shutting_down));
}

TEST(session, shutdown_now_while_delivering_suppresses_the_late_reply) {
  smtp::server_session s(cfg_default());
  s.start();
  std::string in = ehlo + envelope_cmds + "body\r\n.\r\n";
  auto st = s.consume(in);
  while (st.kind != step_kind::message_complete) {
    ASSERT_NE(st.kind, step_kind::need_more);
    in.erase(0, st.consumed);
    st = s.consume(in);
  }
  EXPECT_TRUE(s.awaiting_delivery());
  s.clear_output();
  s.shutdown_now();
  s.delivery_done({smtp::delivery_status::accepted("LATE"), {}});
  EXPECT_EQ(s.output(), "421 4.3.2 mx.test Service shutting down\r\n");
  EXPECT_EQ(s.consume("").kind, step_kind::close);
}

// The DATA scan reads long spans a block at a time and short ones (a few bytes
// per call here) a line at a time: fed whole, split in two anywhere, and byte by
// byte, every body must give the same bodies, replies and refusals. Bodies dense
// in CR, LF and dots put terminator look-alikes, stuffed dots, bare LFs and long
// lines on every side of a 64-byte block edge.
TEST(session, data_scan_agrees_whole_split_and_byte_by_byte) {
  std::uint64_t seed = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (int round = 0; round < 24; ++round) {
    auto cfg = cfg_default();
    cfg.reject_bare_lf_in_body = round % 3 == 1;
    cfg.max_text_line = round % 4 == 2 ? 64 : round % 4 == 3 ? 90 : 1000;
    const std::size_t len = 130 + next() % 300;
    std::string body;
    const int density = 4 + round % 5;  // one special byte in `density`
    while (body.size() < len) {
      const auto r = next();
      if (r % density != 0) {
        body += static_cast<char>('a' + r % 26);
        continue;
      }
      switch ((r >> 8) % 6) {
        case 0:
          body += "\r\n";
          break;
        case 1:
          body += "\r\n.";
          break;
        case 2:
          body += '\n';
          break;
        case 3:
          body += '\r';
          break;
        case 4:
          body += '.';
          break;
        default:
          body += "\r\n.\r";
          break;
      }
      if ((r >> 16) % 29 == 0) body += std::string(70 + (r >> 24) % 40, 'x');  // a long line
    }
    const std::string in = ehlo + envelope_cmds + body + "\r\n.\r\nNOOP\r\n";
    run_all_splits(cfg, in);
  }
  // Clean bodies (CRLF lines, no dots) take the two-blocks-a-step path: line
  // lengths around the limits, one odd byte somewhere late in some of them.
  for (int round = 0; round < 12; ++round) {
    auto cfg = cfg_default();
    cfg.max_text_line = round % 3 == 0 ? 128 : round % 3 == 1 ? 160 : 1000;
    cfg.reject_bare_lf_in_body = round % 2 == 0;
    std::string body;
    while (body.size() < 1500) {
      const std::size_t n = 5 + next() % (round < 6 ? 120 : 170);
      body += std::string(n, static_cast<char>('a' + next() % 26)) + "\r\n";
    }
    if (round % 4 == 3) body.insert(1200 + next() % 200, "\n");
    if (round % 4 == 1) body += ".stuffed\r\n";
    run_all_splits(cfg, ehlo + envelope_cmds + body + ".\r\nNOOP\r\n");
  }
  // What follows the terminator in the same block is not body: a bare LF there
  // (in the next command) does not refuse the message.
  auto strict = cfg_default();
  strict.reject_bare_lf_in_body = true;
  auto after = run_all_splits(
      strict, ehlo + envelope_cmds + std::string(150, 'a') + "\r\n.\r\nNOOP\nNOOP\r\n");
  ASSERT_EQ(after.bodies.size(), 1u);
  // A clean message: the stuffed dots come out, the body is exact.
  std::string original, stuffed;
  for (int i = 0; i < 40; ++i) {
    std::string line = (i % 3 == 0 ? "." : "") + std::string(10 + i % 50, char('a' + i % 26));
    original += line + "\r\n";
    stuffed += (line.starts_with(".") ? "." : "") + line + "\r\n";
  }
  auto r = run_all_splits(cfg_default(), ehlo + envelope_cmds + stuffed + ".\r\n");
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0], original);
}

// Mailpit's --smtp-require-starttls: the transaction commands wait for TLS.
TEST(session, require_starttls_refuses_transaction_in_clear_text) {
  auto cfg = cfg_default();
  cfg.starttls = true;
  cfg.require_starttls = true;
  auto r = run_all_splits(cfg, ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\n" +
                                   "RSET\r\nNOOP\r\n");
  auto v = replies(r.output);
  ASSERT_GE(v.size(), 7u);
  const std::string refused = "530 5.7.0 Must issue a STARTTLS command first";
  EXPECT_EQ(v[v.size() - 6], refused);
  EXPECT_EQ(v[v.size() - 5], refused);
  EXPECT_EQ(v[v.size() - 4], refused);
  EXPECT_EQ(v[v.size() - 3], refused);
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");
  EXPECT_TRUE(r.envelopes.empty());
  // after STARTTLS the same transaction is delivered
  auto t = run(cfg, {ehlo + "STARTTLS\r\n", ehlo + envelope_cmds + "hi\r\n.\r\n"});
  ASSERT_EQ(t.envelopes.size(), 1u);
  EXPECT_TRUE(t.envelopes[0].tls);
  EXPECT_EQ(t.bodies[0], "hi\r\n");
  EXPECT_THAT(t.output, ::testing::Not(HasSubstr("530")));
  // without a certificate the flag cannot apply: nothing is refused
  cfg.starttls = false;
  auto c = run_all_splits(cfg, ehlo + envelope_cmds + "hi\r\n.\r\n");
  EXPECT_EQ(c.envelopes.size(), 1u);
}

// Mailpit's --smtp-allowed-recipients: a refused recipient gets 550 5.1.0.
TEST(session, recipient_filter_refuses_with_mailpits_reply) {
  auto cfg = cfg_default();
  cfg.recipient_allowed = [](std::string_view a) { return a.ends_with("@ok.test"); };
  auto r = run_all_splits(cfg, ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@no.test>\r\nDATA\r\n" +
                                   "RCPT TO:<c@ok.test>\r\nDATA\r\nhi\r\n.\r\n");
  auto v = replies(r.output);
  EXPECT_THAT(r.output,
              HasSubstr("550 5.1.0 Requested action not taken: mailbox unavailable\r\n"
                        "554 5.5.1 Error: no valid recipients\r\n250 2.1.5 Ok\r\n354 "));
  ASSERT_EQ(r.envelopes.size(), 1u);
  EXPECT_EQ(r.envelopes[0].rcpt_to, (inlet::smtp::recipient_list{"c@ok.test"}));
}

// --smtp-ignore-rejected-recipients: 250 for the refused, who are dropped; a
// message left with nobody is read, answered 250 and not delivered (DATA and BDAT).
TEST(session, ignored_rejected_recipients_are_dropped) {
  auto cfg = cfg_default();
  cfg.recipient_allowed = [](std::string_view a) { return a.ends_with("@ok.test"); };
  cfg.ignore_rejected_recipients = true;
  auto r = run_all_splits(
      cfg, ehlo + "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@no.test>\r\nRCPT TO:<c@ok.test>\r\n" +
               "DATA\r\none\r\n.\r\n" + "MAIL FROM:<a@x.test>\r\nRCPT TO:<d@no.test>\r\n" +
               "DATA\r\ntwo\r\n.\r\n" + "MAIL FROM:<a@x.test>\r\nRCPT TO:<e@no.test>\r\n" +
               "BDAT 5 LAST\r\nthree" + "NOOP\r\n");
  ASSERT_EQ(r.envelopes.size(), 1u);
  EXPECT_EQ(r.envelopes[0].rcpt_to, (inlet::smtp::recipient_list{"c@ok.test"}));
  EXPECT_EQ(r.bodies, (std::vector<std::string>{"one\r\n"}));
  EXPECT_EQ(r.aborted, 2);
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("550")));
  auto v = replies(r.output);
  ASSERT_GE(v.size(), 3u);
  EXPECT_EQ(v[v.size() - 3], "250 2.0.0 Ok: queued");  // the BDAT message, dropped
  EXPECT_EQ(v[v.size() - 2], "250 2.0.0 Ok");
}
