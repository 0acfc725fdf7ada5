// SMTP AUTH (RFC 4954; PLAIN RFC 4616, LOGIN) and the policy hook of the sans-io
// session, on scripted bytes. Each script is fed whole, split at every offset
// and byte by byte; every feeding must give the same replies and envelopes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <inlet/smtp/server_session.hpp>
#include <optional>
#include <string>
#include <vector>

namespace smtp = inlet::smtp;
using smtp::step_kind;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

std::string b64(std::string_view in) {
  static constexpr char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    unsigned n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += t[n >> 18 & 63];
    out += t[n >> 12 & 63];
    out += i + 1 < in.size() ? t[n >> 6 & 63] : '=';
    out += i + 2 < in.size() ? t[n & 63] : '=';
  }
  return out;
}

std::string plain(std::string_view authz, std::string_view user, std::string_view pass) {
  std::string m(authz);
  m += '\0';
  m += user;
  m += '\0';
  m += pass;
  return b64(m);
}

struct run_result {
  std::string output;
  std::vector<std::string> auth_users;  // envelope.auth_user of each delivered message
  bool closed = false;
  std::error_code reason;
  bool operator==(const run_result&) const = default;
};

// A minimal driver; "<TLS>" in the output marks where STARTTLS completed.
run_result run(const smtp::session_config& cfg, const std::vector<std::string>& fragments) {
  smtp::server_session s(cfg);
  s.start();
  run_result r;
  std::string pending;
  for (const std::string& f : fragments) {
    pending += f;
    for (;;) {
      auto st = s.consume(pending);
      pending.erase(0, st.consumed);
      if (st.kind == step_kind::need_more) break;
      if (st.kind == step_kind::close) {
        r.closed = true;
        r.reason = st.reason;
        r.output += s.output();
        return r;
      }
      if (st.kind == step_kind::message_complete) {
        r.auth_users.push_back(s.take_envelope().auth_user);
        s.delivery_done({smtp::delivery_status::accepted("ID1"), {}});
      }
      if (st.kind == step_kind::start_tls) {
        r.output += s.output();
        s.clear_output();
        r.output += "<TLS>";
        pending.clear();
        s.tls_started();
      }
    }
  }
  r.output += s.output();
  return r;
}

run_result run_all_splits(const smtp::session_config& cfg, const std::string& in) {
  run_result whole = run(cfg, {in});
  for (std::size_t i = 0; i <= in.size(); ++i) {
    run_result r = run(cfg, {in.substr(0, i), in.substr(i)});
    EXPECT_EQ(r, whole) << "split at " << i;
    if (!(r == whole)) return whole;
  }
  std::vector<std::string> bytes;
  for (char c : in) bytes.emplace_back(1, c);
  EXPECT_EQ(run(cfg, bytes), whole) << "byte by byte";
  return whole;
}

std::vector<std::string> replies(const std::string& out) {
  std::vector<std::string> v;
  for (std::size_t p = 0; p < out.size();) {
    std::size_t e = out.find("\r\n", p);
    if (e == out.npos) e = out.size();
    v.push_back(out.substr(p, e - p));
    p = e + 2;
  }
  return v;
}

// alice/secret and bob/"p a:ss" sign in; the verifier records what it was given.
struct verifier_log {
  std::vector<std::pair<std::string, std::string>> calls;
};

smtp::session_config auth_cfg(verifier_log* log = nullptr, bool insecure = true) {
  smtp::session_config c;
  c.hostname = "mx.test";
  c.auth_allow_insecure = insecure;
  c.auth = [log](std::string_view u, std::string_view p) {
    if (log) log->calls.emplace_back(u, p);
    return (u == "alice" && p == "secret") || (u == "bob" && p == "p a:ss");
  };
  return c;
}

const std::string ehlo = "EHLO client.test\r\n";
const std::string mail = "MAIL FROM:<a@x.test>\r\nRCPT TO:<b@y.test>\r\nDATA\r\nhi\r\n.\r\n";

}  // namespace

TEST(auth, plain_with_initial_response_records_the_user_on_the_envelope) {
  verifier_log log;
  auto r = run_all_splits(auth_cfg(&log), ehlo + "AUTH PLAIN " + plain("", "alice", "secret") +
                                              "\r\n" + mail + "QUIT\r\n");
  auto v = replies(r.output);
  EXPECT_THAT(r.output, HasSubstr("250-AUTH PLAIN LOGIN\r\n"));
  EXPECT_THAT(r.output, HasSubstr("\r\n235 2.7.0 Authentication successful\r\n"));
  ASSERT_EQ(r.auth_users, std::vector<std::string>{"alice"});
  ASSERT_FALSE(log.calls.empty());
  EXPECT_EQ(log.calls.back(), (std::pair<std::string, std::string>{"alice", "secret"}));
}

TEST(auth, plain_without_initial_response_gets_an_empty_challenge) {
  auto r = run_all_splits(auth_cfg(),
                          ehlo + "AUTH PLAIN\r\n" + plain("", "bob", "p a:ss") + "\r\n" + mail);
  EXPECT_THAT(r.output, HasSubstr("\r\n334 \r\n235 2.7.0 Authentication successful\r\n"));
  EXPECT_EQ(r.auth_users, std::vector<std::string>{"bob"});
}

TEST(auth, plain_authzid_must_be_empty_or_the_user) {
  auto ok = run(auth_cfg(), {ehlo + "AUTH PLAIN " + plain("alice", "alice", "secret") + "\r\n"});
  EXPECT_THAT(ok.output, HasSubstr("235 2.7.0"));
  auto other = run(auth_cfg(), {ehlo + "AUTH PLAIN " + plain("bob", "alice", "secret") + "\r\n"});
  EXPECT_THAT(other.output, HasSubstr("535 5.7.8"));
}

TEST(auth, login_with_and_without_initial_response) {
  auto r = run_all_splits(
      auth_cfg(), ehlo + "AUTH LOGIN\r\n" + b64("alice") + "\r\n" + b64("secret") + "\r\n" + mail);
  auto v = replies(r.output);
  EXPECT_THAT(r.output, HasSubstr("\r\n334 VXNlcm5hbWU6\r\n334 UGFzc3dvcmQ6\r\n"
                                  "235 2.7.0 Authentication successful\r\n"));
  EXPECT_EQ(r.auth_users, std::vector<std::string>{"alice"});
  auto r2 = run_all_splits(
      auth_cfg(), ehlo + "auth login " + b64("bob") + "\r\n" + b64("p a:ss") + "\r\n" + mail);
  EXPECT_THAT(r2.output, Not(HasSubstr("VXNlcm5hbWU6")));
  EXPECT_THAT(r2.output, HasSubstr("\r\n334 UGFzc3dvcmQ6\r\n235 2.7.0"));
  EXPECT_EQ(r2.auth_users, std::vector<std::string>{"bob"});
}

TEST(auth, star_cancels_and_the_session_goes_on) {
  auto r = run_all_splits(auth_cfg(), ehlo + "AUTH LOGIN\r\n" + b64("alice") + "\r\n*\r\n" +
                                          "AUTH PLAIN\r\n*\r\n" + mail);
  EXPECT_THAT(r.output,
              HasSubstr("334 UGFzc3dvcmQ6\r\n501 5.7.0 Error: authentication cancelled\r\n"
                        "334 \r\n501 5.7.0 Error: authentication cancelled\r\n"
                        "250 2.1.0 Ok\r\n"));
  EXPECT_EQ(r.auth_users, std::vector<std::string>{""});  // delivered, not authenticated
}

TEST(auth, base64_errors_are_501) {
  for (std::string bad : {"YWxpY2U", "YW=xpY2U", "Y===", "@@@@", "YWxp Y2U="}) {
    auto r = run(auth_cfg(), {ehlo + "AUTH LOGIN\r\n" + bad + "\r\nNOOP\r\n"});
    EXPECT_THAT(r.output, HasSubstr("501 5.5.2 Error: cannot decode response\r\n250 2.0.0 Ok\r\n"))
        << bad;
  }
  // PLAIN with one NUL, with an empty user, with three NULs.
  for (std::string bad : {b64(std::string("alice\0secret", 12)), plain("", "", "secret"),
                          b64(std::string("\0alice\0se\0cret", 15))}) {
    auto r = run(auth_cfg(), {ehlo + "AUTH PLAIN " + bad + "\r\n"});
    EXPECT_THAT(r.output, HasSubstr("501 5.5.2 Error: malformed PLAIN response\r\n")) << bad;
  }
}

TEST(auth, bad_credentials_535_and_too_many_failures_close) {
  auto cfg = auth_cfg();
  cfg.max_auth_failures = 3;
  std::string wrong = "AUTH PLAIN " + plain("", "alice", "wrong") + "\r\n";
  auto r = run_all_splits(cfg, ehlo + wrong + wrong + wrong + "NOOP\r\n");
  auto v = replies(r.output);
  EXPECT_EQ(std::count(v.begin(), v.end(), "535 5.7.8 Error: authentication credentials invalid"),
            3);
  EXPECT_EQ(v.back(), "421 4.7.0 mx.test Error: too many failed authentication attempts");
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.reason, smtp::errc::too_many_auth_failures);
  // Unknown user, and a success after failures below the limit.
  auto r2 = run(cfg, {ehlo + "AUTH PLAIN " + plain("", "mallory", "secret") + "\r\n" + wrong +
                      "AUTH PLAIN " + plain("", "alice", "secret") + "\r\n"});
  EXPECT_THAT(r2.output, HasSubstr("535 5.7.8"));
  EXPECT_THAT(r2.output, HasSubstr("235 2.7.0"));
  EXPECT_FALSE(r2.closed);
}

TEST(auth, sequence_and_syntax_errors) {
  const std::string ok = "AUTH PLAIN " + plain("", "alice", "secret") + "\r\n";
  auto r = run(auth_cfg(), {ok});  // before EHLO
  EXPECT_THAT(r.output, HasSubstr("503 5.5.1 Error: send EHLO first"));
  r = run(auth_cfg(), {"HELO c\r\n" + ok});  // AUTH is an ESMTP extension
  EXPECT_THAT(r.output, HasSubstr("503 5.5.1 Error: send EHLO first"));
  r = run(auth_cfg(), {ehlo + ok + ok});
  EXPECT_THAT(r.output, HasSubstr("235 2.7.0"));
  EXPECT_THAT(r.output, HasSubstr("503 5.5.1 Error: already authenticated"));
  r = run(auth_cfg(), {ehlo + "MAIL FROM:<a@x.test>\r\n" + ok});
  EXPECT_THAT(r.output, HasSubstr("503 5.5.1 Error: AUTH not permitted during a mail transaction"));
  r = run(auth_cfg(), {ehlo + "AUTH\r\nAUTH  \r\n"});
  EXPECT_EQ(replies(r.output)[replies(r.output).size() - 2],
            "501 5.5.4 Syntax: AUTH mechanism [initial-response]");
  r = run(auth_cfg(), {ehlo + "AUTH CRAM-MD5\r\n"});
  EXPECT_THAT(r.output, HasSubstr("504 5.5.4 Error: unrecognized authentication type"));
}

TEST(auth, not_offered_without_a_verifier_or_on_lmtp) {
  smtp::session_config c;
  auto r = run(c, {ehlo + "AUTH PLAIN " + plain("", "alice", "secret") + "\r\n"});
  EXPECT_THAT(r.output, Not(HasSubstr("AUTH")));
  EXPECT_THAT(r.output, HasSubstr("502 5.5.1 Error: command not implemented"));
  auto l = auth_cfg();
  l.lmtp = true;
  l.auth_required = true;
  r = run(l, {"LHLO c\r\nAUTH PLAIN " + plain("", "alice", "secret") + "\r\n" + mail});
  EXPECT_THAT(r.output, Not(HasSubstr("250-AUTH")));
  EXPECT_THAT(r.output, HasSubstr("502 5.5.1"));
  EXPECT_EQ(r.auth_users.size(), 1u);  // not required either
}

TEST(auth, plain_text_refused_until_tls_unless_allowed) {
  auto c = auth_cfg(nullptr, /*insecure=*/false);
  c.starttls = true;
  const std::string ok = "AUTH PLAIN " + plain("", "alice", "secret") + "\r\n";
  auto r = run(c, {ehlo + ok, "STARTTLS\r\n", ehlo + ok + mail});
  std::string before = r.output.substr(0, r.output.find("<TLS>"));
  std::string after = r.output.substr(r.output.find("<TLS>"));
  EXPECT_THAT(before, Not(HasSubstr("250-AUTH")));
  EXPECT_THAT(before,
              HasSubstr("538 5.7.11 Error: encryption required for requested authentication "
                        "mechanism"));
  EXPECT_THAT(after, HasSubstr("250-AUTH PLAIN LOGIN\r\n"));
  EXPECT_THAT(after, HasSubstr("235 2.7.0"));
  EXPECT_EQ(r.auth_users, std::vector<std::string>{"alice"});
}

TEST(auth, starttls_forgets_an_earlier_authentication) {
  auto c = auth_cfg();
  c.starttls = true;
  c.auth_required = true;
  auto r = run(c, {ehlo + "AUTH PLAIN " + plain("", "alice", "secret") + "\r\n", "STARTTLS\r\n",
                   ehlo + "MAIL FROM:<a@x.test>\r\n"});
  std::string after = r.output.substr(r.output.find("<TLS>"));
  EXPECT_THAT(after, HasSubstr("530 5.7.0 Error: authentication required"));
}

TEST(auth, required_auth_refuses_mail_with_530) {
  auto c = auth_cfg();
  c.auth_required = true;
  auto r = run_all_splits(c, ehlo + "MAIL FROM:<a@x.test>\r\nAUTH LOGIN " + b64("alice") + "\r\n" +
                                 b64("secret") + "\r\n" + mail);
  auto v = replies(r.output);
  EXPECT_THAT(r.output, HasSubstr("\r\n530 5.7.0 Error: authentication required\r\n334 "));
  EXPECT_EQ(r.auth_users, std::vector<std::string>{"alice"});
}

TEST(auth, response_line_over_the_command_limit_ends_the_exchange) {
  auto c = auth_cfg();
  c.max_command_line = 64;
  std::string long_line(100, 'Q');
  auto r = run_all_splits(c, ehlo + "AUTH PLAIN\r\n" + long_line + "\r\nNOOP\r\n");
  EXPECT_THAT(r.output, HasSubstr("334 \r\n500 5.5.6 Error: line too long\r\n250 2.0.0 Ok\r\n"));
}

TEST(auth, shutdown_during_the_exchange_closes) {
  smtp::server_session s(auth_cfg());
  s.start();
  std::string in = ehlo + "AUTH LOGIN\r\n";
  auto st = s.consume(in);
  EXPECT_EQ(st.kind, step_kind::need_more);
  s.shutdown();
  EXPECT_TRUE(s.closing());
  EXPECT_THAT(std::string(s.output()), HasSubstr("334 VXNlcm5hbWU6\r\n421 4.3.2"));
}

// ---------------------------------------------------------------- policy hook

TEST(policy, refuses_mail_rcpt_and_auth_with_its_reply) {
  std::vector<std::pair<smtp::policy_stage, std::string>> asked;
  auto c = auth_cfg();
  c.policy = [&asked](smtp::policy_stage st,
                      std::string_view arg) -> std::optional<smtp::delivery_status> {
    asked.emplace_back(st, arg);
    if (arg == "bad@x.test")
      return smtp::delivery_status::rejected(451, "4.1.0", "Chaos sender error");
    if (arg == "nobody@y.test")
      return smtp::delivery_status::rejected(550, "5.1.0", "no such user");
    if (st == smtp::policy_stage::auth)
      return smtp::delivery_status::rejected(454, "", "try later");
    return std::nullopt;
  };
  auto r = run(c, {ehlo +
                   "MAIL FROM:<bad@x.test>\r\nMAIL FROM:<a@x.test>\r\n"
                   "RCPT TO:<nobody@y.test>\r\nDATA\r\nRCPT TO:<b@y.test>\r\nRSET\r\n"
                   "AUTH PLAIN " +
                   plain("", "alice", "secret") + "\r\nMAIL FROM:<>\r\n"});
  auto v = replies(r.output);
  ASSERT_EQ(v.size(), 17u) << r.output;
  EXPECT_EQ(v[9], "451 4.1.0 Chaos sender error");
  EXPECT_EQ(v[10], "250 2.1.0 Ok");
  EXPECT_EQ(v[11], "550 5.1.0 no such user");
  EXPECT_EQ(v[12], "554 5.5.1 Error: no valid recipients");  // every RCPT refused
  EXPECT_EQ(v[13], "250 2.1.5 Ok");
  EXPECT_EQ(v[15], "454 try later");  // before the exchange: no 334
  EXPECT_EQ(v[16], "250 2.1.0 Ok");
  using ps = smtp::policy_stage;
  std::vector<std::pair<ps, std::string>> want = {
      {ps::mail, "bad@x.test"}, {ps::mail, "a@x.test"}, {ps::rcpt, "nobody@y.test"},
      {ps::rcpt, "b@y.test"},   {ps::auth, "PLAIN"},    {ps::mail, ""}};
  EXPECT_EQ(asked, want);
}

TEST(policy, not_asked_about_commands_that_fail_anyway) {
  int calls = 0;
  smtp::session_config c;
  c.domains = {"y.test"};
  c.policy = [&calls](smtp::policy_stage,
                      std::string_view) -> std::optional<smtp::delivery_status> {
    ++calls;
    return std::nullopt;
  };
  auto r = run(c, {ehlo + "MAIL FROM:<bad address>\r\nMAIL FROM:<a@x.test>\r\n"
                          "RCPT TO:<b@elsewhere.test>\r\n"});
  EXPECT_THAT(r.output, HasSubstr("501 5.1.7"));
  EXPECT_THAT(r.output, HasSubstr("550 5.1.1"));
  EXPECT_EQ(calls, 1);  // only the valid MAIL
}
