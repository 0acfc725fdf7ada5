// Unit tests of the sans-io POP3 session on scripted bytes, with a maildrop in a
// map standing in for the store. Whole sessions are fed whole, split at every
// offset and byte by byte; every feeding must give the same replies, the same
// removals and the same close.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <inlet/pop3/session.hpp>
#include <map>
#include <string>
#include <vector>

namespace pop3 = inlet::pop3;
using pop3::step_kind;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace {

// The maildrop, newest first, as the store would list it.
struct fake_store {
  std::vector<std::pair<std::string, std::string>> messages;  // id, raw
  std::error_code list_error, fetch_error, remove_error;
  std::vector<std::string> removed;
  std::vector<std::string> fetched;
};

struct run_result {
  std::string output;
  std::vector<std::string> removed;
  std::vector<std::string> fetched;
  bool closed = false;
  std::error_code reason;
  bool operator==(const run_result&) const = default;
};

struct hooks {
  std::function<void(pop3::session&)> at_tls;  // default: tls_started() at once
  std::function<void(pop3::session&)> at_fetch;  // before fetch_done
};

// A minimal driver: keeps unconsumed input, appends each fragment, answers the
// store steps from `st`.
run_result run(const pop3::session_config& cfg, fake_store st,
               const std::vector<std::string>& fragments, hooks h = {}) {
  pop3::session s(cfg);
  s.start();
  run_result r;
  std::string pending;
  for (const std::string& f : fragments) {
    pending += f;
    for (int guard = 0;; ++guard) {
      EXPECT_LT(guard, 100000) << "no progress";
      if (guard >= 100000) return r;
      auto step = s.consume(pending);
      EXPECT_LE(step.consumed, pending.size());
      EXPECT_LE(pending.size() - step.consumed, cfg.max_command_line);
      pending.erase(0, step.consumed);
      bool more = true;
      switch (step.kind) {
        case step_kind::need_more: more = false; break;
        case step_kind::list: {
          std::vector<pop3::maildrop_entry> e;
          for (auto& [id, raw] : st.messages) e.push_back({id, raw.size()});
          s.list_done(st.list_error, std::move(e));
          break;
        }
        case step_kind::fetch: {
          std::string id(s.fetch_id());
          r.fetched.push_back(id);
          if (h.at_fetch) h.at_fetch(s);
          std::string raw;
          std::error_code ec = st.fetch_error;
          bool found = false;
          for (auto& [mid, mraw] : st.messages)
            if (mid == id) raw = mraw, found = true;
          if (!found && !ec) ec = std::make_error_code(std::errc::no_such_file_or_directory);
          s.fetch_done(ec, raw);
          break;
        }
        case step_kind::remove:
          for (auto& id : s.deletions()) r.removed.push_back(id);
          s.remove_done(st.remove_error, st.remove_error ? 0 : s.deletions().size());
          break;
        case step_kind::start_tls:
          pending.clear();  // RFC 2595: nothing sent before the handshake counts
          if (h.at_tls)
            h.at_tls(s);
          else
            s.tls_started();
          break;
        case step_kind::close:
          r.closed = true;
          r.reason = step.reason;
          r.output += s.output();
          return r;
      }
      r.output += s.output();
      s.clear_output();
      if (!more) break;
    }
  }
  return r;
}

std::vector<std::string> whole(const std::string& s) { return {s}; }

// Every split into two fragments, and byte by byte, must agree with `whole`.
void expect_all_splits_agree(const pop3::session_config& cfg, const fake_store& st,
                             const std::string& script, const hooks& h = {}) {
  run_result base = run(cfg, st, whole(script), h);
  for (std::size_t i = 1; i < script.size(); ++i) {
    run_result r = run(cfg, st, {script.substr(0, i), script.substr(i)}, h);
    ASSERT_EQ(r, base) << "split at " << i << "\n" << r.output << "\n---\n" << base.output;
  }
  std::vector<std::string> bytes;
  for (char c : script) bytes.emplace_back(1, c);
  ASSERT_EQ(run(cfg, st, bytes, h), base);
}

pop3::session_config config() {
  pop3::session_config c;
  c.auth = [](std::string_view u, std::string_view p) { return u == "alice" && p == "s3cret pw"; };
  return c;
}

fake_store three() {
  fake_store s;
  s.messages = {
      {"idC", "Subject: c\r\n\r\nthird\r\n"},
      {"idB", "Subject: b\r\n\r\n.dot line\r\n..two\r\nend\r\n"},
      {"idA", "Subject: a\nX: y\n\nbare lf\nlast"},
  };
  return s;
}

const std::string login = "USER alice\r\nPASS s3cret pw\r\n";

TEST(pop3_session, greeting_and_capa) {
  auto cfg = config();
  cfg.label = "dev\r\nbox";
  auto r = run(cfg, three(), whole("CAPA\r\n"));
  EXPECT_THAT(r.output, StartsWith("+OK inlet (dev  box) POP3 server ready\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK capability list follows\r\nTOP\r\nUSER\r\nUIDL\r\n"));
  EXPECT_THAT(r.output, Not(HasSubstr("STLS")));
  EXPECT_THAT(r.output, EndsWith("IMPLEMENTATION inlet\r\n.\r\n"));
  cfg.stls = true;
  EXPECT_THAT(run(cfg, three(), whole("CAPA\r\n")).output, HasSubstr("\r\nSTLS\r\n"));
  EXPECT_FALSE(r.closed);
}

TEST(pop3_session, sign_in_and_stat_list_uidl) {
  auto r = run(config(), three(), whole(login + "STAT\r\nLIST\r\nLIST 2\r\nUIDL\r\nuidl 3\r\n"));
  const std::size_t a = three().messages[2].second.size(), b = three().messages[1].second.size(),
                    c = three().messages[0].second.size();
  const std::string total = std::to_string(a + b + c);
  EXPECT_THAT(r.output, HasSubstr("+OK send PASS\r\n+OK signed in, 3 messages (" + total +
                                  " octets)\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK 3 " + total + "\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK 3 messages (" + total + " octets)\r\n1 " +
                                  std::to_string(c) + "\r\n2 " + std::to_string(b) + "\r\n3 " +
                                  std::to_string(a) + "\r\n.\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK 2 " + std::to_string(b) + "\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK unique-id listing follows\r\n1 idC\r\n2 idB\r\n3 idA\r\n.\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK 3 idA\r\n"));
  EXPECT_FALSE(r.closed);
}

TEST(pop3_session, retr_stuffs_dots_and_makes_crlf) {
  auto r = run(config(), three(), whole(login + "RETR 2\r\nRETR 3\r\n"));
  std::string b = "Subject: b\r\n\r\n.dot line\r\n..two\r\nend\r\n";
  EXPECT_THAT(r.output, HasSubstr("+OK " + std::to_string(b.size()) +
                                  " octets\r\nSubject: b\r\n\r\n..dot line\r\n...two\r\nend\r\n.\r\n"));
  // Bare LFs become CRLF and the unended last line is ended; the size counts that.
  std::string a = "Subject: a\r\nX: y\r\n\r\nbare lf\r\nlast\r\n";
  EXPECT_THAT(r.output, HasSubstr("+OK " + std::to_string(a.size()) + " octets\r\n" + a + ".\r\n"));
  EXPECT_EQ(r.fetched, (std::vector<std::string>{"idB", "idA"}));
}

TEST(pop3_session, top_sends_header_and_n_lines) {
  fake_store st;
  st.messages = {{"id1", "A: 1\r\nB: 2\r\n\r\nl1\r\n.l2\r\nl3\r\n"}};
  auto r = run(config(), st, whole(login + "TOP 1 0\r\nTOP 1 2\r\nTOP 1 99\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK top of message follows\r\nA: 1\r\nB: 2\r\n\r\n.\r\n"));
  EXPECT_THAT(r.output,
              HasSubstr("+OK top of message follows\r\nA: 1\r\nB: 2\r\n\r\nl1\r\n..l2\r\n.\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK top of message follows\r\nA: 1\r\nB: 2\r\n\r\nl1\r\n..l2\r\n"
                                  "l3\r\n.\r\n"));
}

TEST(pop3_session, dele_marks_rset_unmarks_quit_removes) {
  auto r = run(config(), three(),
               whole(login + "DELE 1\r\nDELE 1\r\nRETR 1\r\nLIST 1\r\nSTAT\r\nLIST\r\nRSET\r\n"
                             "STAT\r\nDELE 3\r\nDELE 2\r\nNOOP\r\nQUIT\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK message marked for deletion\r\n-ERR message already "
                                  "deleted\r\n-ERR message already deleted\r\n-ERR message "
                                  "already deleted\r\n+OK 2 "));
  EXPECT_THAT(r.output, HasSubstr("+OK 2 messages"));
  EXPECT_THAT(r.output, HasSubstr("+OK maildrop has 3 messages"));
  EXPECT_THAT(r.output, HasSubstr("+OK\r\n+OK inlet POP3 server signing off (2 messages deleted)"));
  EXPECT_EQ(r.removed, (std::vector<std::string>{"idB", "idA"}));  // in maildrop order
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.reason, pop3::errc::client_quit);
}

TEST(pop3_session, quit_without_marks_or_before_sign_in_removes_nothing) {
  auto r = run(config(), three(), whole(login + "QUIT\r\n"));
  EXPECT_TRUE(r.removed.empty());
  EXPECT_THAT(r.output, EndsWith("+OK inlet POP3 server signing off\r\n"));
  EXPECT_TRUE(r.closed);
  r = run(config(), three(), whole("QUIT\r\n"));
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.reason, pop3::errc::client_quit);
  // Marked, then the connection drops (no QUIT): nothing is removed (RFC 1939 6).
  r = run(config(), three(), whole(login + "DELE 1\r\n"));
  EXPECT_TRUE(r.removed.empty());
  EXPECT_FALSE(r.closed);
}

TEST(pop3_session, transaction_capa_and_deleted_messages_leave_the_listings) {
  auto cfg = config();
  cfg.stls = true;
  auto r = run(cfg, three(), whole(login + "DELE 2\r\nCAPA\r\nUIDL\r\nLIST\r\nUIDL 2\r\n"
                                           "TOP 2 0\r\nAPOP x y\r\n"));
  std::string after = r.output.substr(r.output.find("marked for deletion"));
  EXPECT_THAT(after, HasSubstr("+OK capability list follows\r\n"));
  EXPECT_THAT(after, Not(HasSubstr("STLS")));  // RFC 2595: only before sign-in
  EXPECT_THAT(after, HasSubstr("+OK unique-id listing follows\r\n1 idC\r\n3 idA\r\n.\r\n"));
  EXPECT_THAT(after, HasSubstr("+OK 2 messages (50 octets)\r\n1 21\r\n3 29\r\n.\r\n"));
  EXPECT_THAT(after, HasSubstr("-ERR message already deleted\r\n-ERR message already deleted\r\n"
                               "-ERR already signed in\r\n"));
  EXPECT_TRUE(r.fetched.empty());
}

TEST(pop3_session, a_whole_session_agrees_on_every_split) {
  auto cfg = config();
  cfg.stls = true;
  expect_all_splits_agree(cfg, three(),
                          "CAPA\r\nuser alice\r\npass wrong\r\nUSER alice\r\nPASS s3cret pw\r\n"
                          "STAT\r\nLIST\r\nUIDL\r\nLIST 2\r\nRETR 2\r\nTOP 3 1\r\nBOGUS\r\n"
                          "DELE 1\r\nRSET\r\nDELE 3\nNOOP\r\nQUIT\r\n");
}

TEST(pop3_session, stls_discards_input_until_the_handshake) {
  auto cfg = config();
  cfg.stls = true;
  std::string script = "STLS\r\nUSER alice\r\nPASS s3cret pw\r\nQUIT\r\n";
  // The pipelined sign-in after STLS is dropped by the driver (fed in one piece).
  auto r = run(cfg, three(), whole(script));
  EXPECT_THAT(r.output, HasSubstr("+OK begin TLS negotiation\r\n"));
  EXPECT_THAT(r.output, Not(HasSubstr("signed in")));
  EXPECT_FALSE(r.closed);
  // Fed while the handshake runs: discarded by the session itself.
  pop3::session s(cfg);
  s.start();
  auto st = s.consume("STLS\r\n");
  EXPECT_EQ(st.kind, step_kind::start_tls);
  EXPECT_EQ(s.consume("USER alice\r\n").consumed, 12u);
  s.clear_output();
  s.tls_started();
  EXPECT_TRUE(s.tls_active());
  st = s.consume("CAPA\r\nSTLS\r\n");
  EXPECT_EQ(st.kind, step_kind::need_more);
  EXPECT_THAT(std::string(s.output()), Not(HasSubstr("STLS\r\n")));
  EXPECT_THAT(std::string(s.output()), HasSubstr("-ERR TLS already active"));
  // Split at every offset with the handshake in between.
  expect_all_splits_agree(cfg, three(), "CAPA\r\nSTLS\r\n");
}

TEST(pop3_session, stls_refused_when_not_offered_or_signed_in) {
  auto r = run(config(), three(), whole("STLS\r\n"));
  EXPECT_THAT(r.output, HasSubstr("-ERR STLS not available"));
  auto cfg = config();
  cfg.stls = true;
  r = run(cfg, three(), whole(login + "STLS\r\n"));
  EXPECT_THAT(r.output, HasSubstr("-ERR STLS only before sign-in"));
  r = run(cfg, three(), whole("STLS now\r\n"));
  EXPECT_THAT(r.output, HasSubstr("-ERR STLS takes no argument"));
}

TEST(pop3_session, bad_input_gets_err) {
  auto cfg = config();
  cfg.max_errors = 100;
  auto r = run(cfg, three(),
               whole("STAT\r\nRETR 1\r\nPASS x\r\nUSER\r\nAPOP a b\r\nAUTH PLAIN\r\n\r\nHELLO\r\n"
                     "NOOPS\r\n" +
                     login +
                     "RETR\r\nRETR x\r\nRETR 0\r\nRETR 4\r\nRETR -1\r\nRETR 1 2\r\nLIST 1 2\r\n"
                     "TOP 1\r\nTOP 1 x\r\nTOP x 1\r\nDELE 99999999999999999999\r\nUSER bob\r\n"
                     "STAT 1\r\nNOOP x\r\nRSET 1\r\n"));
  const char* errors[] = {
      "-ERR sign in first\r\n-ERR sign in first\r\n-ERR send USER first\r\n-ERR USER needs a name",
      "-ERR not supported, use USER and PASS\r\n-ERR not supported, use USER and PASS\r\n"
      "-ERR unknown command\r\n-ERR unknown command\r\n-ERR unknown command\r\n",
      "-ERR message number required\r\n-ERR message number required\r\n-ERR no such message\r\n"
      "-ERR no such message\r\n-ERR message number required\r\n-ERR RETR takes one message "
      "number\r\n-ERR message number required\r\n",
      "-ERR TOP needs a message number and a line count\r\n-ERR TOP needs a message number and a "
      "line count\r\n-ERR message number required\r\n-ERR message number required\r\n"
      "-ERR already signed in\r\n-ERR STAT takes no argument\r\n-ERR NOOP takes no argument\r\n"
      "-ERR RSET takes no argument\r\n"};
  for (const char* e : errors) EXPECT_THAT(r.output, HasSubstr(e));
  EXPECT_TRUE(r.fetched.empty());
  EXPECT_FALSE(r.closed);
}

TEST(pop3_session, overlong_line_is_refused_and_the_session_goes_on) {
  auto cfg = config();
  cfg.max_command_line = 32;
  std::string script = "USER " + std::string(100, 'x') + "\r\nNOOP\r\nUSER " + std::string(26, 'y') +
                       "\r\n" + login + "NOOP\r\n";
  auto r = run(cfg, three(), whole(script));
  EXPECT_THAT(r.output, HasSubstr("-ERR line too long\r\n-ERR sign in first\r\n-ERR line too long\r\n"
                                  "+OK send PASS\r\n+OK signed in"));
  EXPECT_THAT(r.output, EndsWith("+OK\r\n"));
  expect_all_splits_agree(cfg, three(), script);
  // A line of exactly the limit (CRLF included) is taken.
  r = run(cfg, three(), whole("USER " + std::string(25, 'z') + "\r\n"));
  EXPECT_THAT(r.output, HasSubstr("+OK send PASS"));
}

TEST(pop3_session, too_many_errors_close) {
  auto cfg = config();
  cfg.max_errors = 3;
  auto r = run(cfg, three(), whole("X\r\nY\r\nZ\r\nCAPA\r\n"));
  EXPECT_THAT(r.output, EndsWith("-ERR unknown command\r\n-ERR unknown command\r\n"
                                 "-ERR too many errors, closing\r\n"));
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.reason, pop3::errc::too_many_errors);
}

TEST(pop3_session, failed_sign_ins_are_limited) {
  auto cfg = config();
  cfg.max_auth_failures = 2;
  std::string script = "USER alice\r\nPASS no\r\nUSER alice\r\nPASS s3cret\r\n" + login;
  auto r = run(cfg, three(), whole(script));
  EXPECT_THAT(r.output, HasSubstr("-ERR [AUTH] invalid user name or password\r\n+OK send PASS\r\n"
                                  "-ERR [AUTH] too many failed sign-ins, closing\r\n"));
  EXPECT_THAT(r.output, Not(HasSubstr("signed in")));
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.reason, pop3::errc::auth_failures);
  // PASS is for the user named just before: a second PASS needs USER again.
  r = run(config(), three(), whole("USER alice\r\nPASS no\r\nPASS s3cret pw\r\n"));
  EXPECT_THAT(r.output, HasSubstr("-ERR send USER first"));
  // No verifier: nobody signs in.
  pop3::session_config none;
  r = run(none, three(), whole(login));
  EXPECT_THAT(r.output, HasSubstr("-ERR [AUTH]"));
}

TEST(pop3_session, maildrop_is_the_newest_max_messages) {
  auto cfg = config();
  cfg.max_messages = 2;
  auto r = run(cfg, three(), whole(login + "UIDL\r\nRETR 3\r\n"));
  EXPECT_THAT(r.output, HasSubstr("1 idC\r\n2 idB\r\n.\r\n"));
  EXPECT_THAT(r.output, HasSubstr("-ERR no such message"));
}

TEST(pop3_session, store_errors) {
  auto st = three();
  st.list_error = std::make_error_code(std::errc::io_error);
  auto r = run(config(), st, whole(login + "STAT\r\n" + login));
  EXPECT_THAT(r.output, HasSubstr("-ERR [SYS/TEMP] maildrop unavailable\r\n-ERR sign in first\r\n"));
  EXPECT_FALSE(r.closed);

  st = three();
  st.fetch_error = std::make_error_code(std::errc::io_error);
  r = run(config(), st, whole(login + "RETR 1\r\nNOOP\r\n"));
  EXPECT_THAT(r.output, HasSubstr("-ERR no such message\r\n+OK\r\n"));

  st = three();
  st.remove_error = std::make_error_code(std::errc::io_error);
  r = run(config(), st, whole(login + "DELE 1\r\nQUIT\r\nNOOP\r\n"));
  EXPECT_THAT(r.output, EndsWith("-ERR [SYS/TEMP] some deleted messages not removed\r\n"));
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.reason, pop3::errc::remove_failed);
}

TEST(pop3_session, message_removed_from_the_store_meanwhile) {
  pop3::session s(config());
  s.start();
  ASSERT_EQ(s.consume(login).kind, step_kind::list);
  s.list_done({}, {{"gone", 10}});
  s.clear_output();
  ASSERT_EQ(s.consume("RETR 1\r\n").kind, step_kind::fetch);
  EXPECT_EQ(s.fetch_id(), "gone");
  EXPECT_TRUE(s.awaiting());
  EXPECT_EQ(s.consume("NOOP\r\n").consumed, 0u);  // nothing while the fetch is out
  s.fetch_done(std::make_error_code(std::errc::no_such_file_or_directory), {});
  EXPECT_EQ(s.output(), "-ERR no such message\r\n");
}

TEST(pop3_session, timeout_closes_silently_and_removes_nothing) {
  pop3::session s(config());
  s.start();
  ASSERT_EQ(s.consume(login).kind, step_kind::list);
  s.list_done({}, {{"a", 1}});
  ASSERT_EQ(s.consume("DELE 1\r\n").kind, step_kind::need_more);
  s.clear_output();
  s.timeout();
  auto st = s.consume("QUIT\r\n");
  EXPECT_EQ(st.kind, step_kind::close);
  EXPECT_EQ(st.reason, pop3::errc::timeout);
  EXPECT_EQ(s.output(), "");
}

TEST(pop3_session, shutdown_waits_for_the_step_in_flight) {
  pop3::session s(config());
  s.start();
  s.shutdown();
  auto st = s.consume("");
  EXPECT_EQ(st.kind, step_kind::close);
  EXPECT_THAT(std::string(s.output()), EndsWith("-ERR [SYS/TEMP] server shutting down\r\n"));

  hooks h;
  h.at_fetch = [](pop3::session& x) { x.shutdown(); };
  auto r = run(config(), three(), whole(login + "DELE 2\r\nRETR 1\r\nQUIT\r\n"), h);
  EXPECT_THAT(r.output, EndsWith("third\r\n.\r\n-ERR [SYS/TEMP] server shutting down\r\n"));
  EXPECT_TRUE(r.removed.empty());
  EXPECT_EQ(r.reason, pop3::errc::shutdown);
}

TEST(pop3_session, eviction_waits_for_the_step_in_flight_and_removes_nothing) {
  pop3::session s(config());
  s.start();
  s.clear_output();
  s.evict();
  auto st = s.consume("USER alice\r\n");
  EXPECT_EQ(st.kind, step_kind::close);
  EXPECT_EQ(st.reason, pop3::errc::evicted);
  EXPECT_EQ(s.output(), "-ERR [SYS/TEMP] too many connections, closing an idle one\r\n");

  hooks h;
  h.at_fetch = [](pop3::session& x) { x.evict(); };
  auto r = run(config(), three(), whole(login + "DELE 2\r\nRETR 1\r\nQUIT\r\n"), h);
  EXPECT_THAT(r.output, EndsWith("third\r\n.\r\n-ERR [SYS/TEMP] too many connections, "
                                 "closing an idle one\r\n"));
  EXPECT_TRUE(r.removed.empty());
  EXPECT_EQ(r.reason, pop3::errc::evicted);
}

TEST(pop3_stuffing, line_ends_and_dots) {
  auto stuffed = [](std::string_view raw, std::int64_t lines = -1) {
    std::string out;
    std::uint64_t n = pop3::append_stuffed(out, raw, lines);
    return std::make_pair(out, n);
  };
  EXPECT_EQ(stuffed(""), std::make_pair(std::string(), std::uint64_t{0}));
  EXPECT_EQ(stuffed("a\r\n"), std::make_pair(std::string("a\r\n"), std::uint64_t{3}));
  EXPECT_EQ(stuffed("a"), std::make_pair(std::string("a\r\n"), std::uint64_t{3}));
  EXPECT_EQ(stuffed("a\r"), std::make_pair(std::string("a\r\n"), std::uint64_t{3}));
  EXPECT_EQ(stuffed("\n\n"), std::make_pair(std::string("\r\n\r\n"), std::uint64_t{4}));
  EXPECT_EQ(stuffed(".\r\n."), std::make_pair(std::string("..\r\n..\r\n"), std::uint64_t{6}));
  EXPECT_EQ(stuffed("a\r\n.\r\nb"), std::make_pair(std::string("a\r\n..\r\nb\r\n"),
                                                    std::uint64_t{9}));
  EXPECT_EQ(stuffed("x.\r\n\n.y\n"), std::make_pair(std::string("x.\r\n\r\n..y\r\n"),
                                                    std::uint64_t{10}));
  // A bare CR inside a line stays data (it cannot end the response: only CRLF.CRLF does).
  EXPECT_EQ(stuffed("a\rb\r\n").first, "a\rb\r\n");
  // TOP: no blank line means the whole message is header.
  EXPECT_EQ(stuffed("H: 1\r\nH: 2", 0).first, "H: 1\r\nH: 2\r\n");
  EXPECT_EQ(stuffed("H: 1\n\n1\n2\n3\n", 2).first, "H: 1\r\n\r\n1\r\n2\r\n");
}

}  // namespace
