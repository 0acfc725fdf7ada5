// inlet::outbound::smtp_client_session — the sans-io SMTP client protocol core, the
// counterpart of inlet::smtp::server_session: feed it the server's bytes, write what it
// queues in output(); it never touches a socket, a clock or a thread. The driver
// (smtp_client in smtp_relay.hpp) does the I/O, TLS and timeouts.
//
//   smtp_client_session s(opts);
//   s.submit({id, from, rcpt, &raw});          // any time; transactions run in order
//   loop: write(s.output()); s.clear_output();
//         s.receive(bytes_read);
//         if (s.wants_tls()) { handshake; s.tls_started(); }
//         for (auto& r : s.take_results()) ...  // one per submitted message, in order
//         if (s.failed()) close (s.error() says why; unfinished messages get results)
//
// Greeting, EHLO (HELO when EHLO is refused), STARTTLS when required, AUTH PLAIN, LOGIN
// or CRAM-MD5, then per message MAIL, RCPT..., DATA, the dot-stuffed body. With RFC 2920
// PIPELINING offered, MAIL, every RCPT and DATA go in one write, and the next message's
// commands follow the previous body's final dot in the same write: one round trip per
// message. MAIL carries SIZE= (RFC 1870), BODY=8BITMIME (RFC 6152) for a body with 8-bit
// octets and SMTPUTF8 (RFC 6531) for a non-ASCII address, each when the server offers it. Without it, one command per round trip. A failed transaction is followed by
// RSET. With all_recipients (Mailpit's forward-smtp-errors) DATA waits for every RCPT
// reply, so a refused recipient ends the transaction before any data.
//
// Limits: a reply line is at most kMaxReplyLine octets and a reply kMaxReplyLines lines;
// past either, or on a line that is not "ddd[ -]text", the session fails.
//
// Thread-safety: none; one session per connection, one thread at a time.
// Lifetime: a submitted message's data must stay alive until its result is taken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::outbound {

/// One complete server reply.
struct smtp_reply {
  int code = 0;
  std::string enhanced;            ///< "5.1.1" when the first line carries one, else ""
  std::vector<std::string> lines;  ///< each line's text after "ddd-" / "ddd " (enhanced kept)
  bool positive() const noexcept { return code >= 200 && code < 400; }
  /// "550 5.1.1 no such user": the code and the first line's text.
  std::string first_line() const;
};

/// Incremental reply parser: bytes in, whole replies out.
class smtp_reply_parser {
 public:
  static constexpr std::size_t kMaxReplyLine = 1000;  // octets, CRLF included
  static constexpr std::size_t kMaxReplyLines = 100;

  enum class status { more, reply, error };
  /// Consumes from the front of `in` up to the end of one reply (then `reply` and `out`
  /// holds it), or all of `in` (more). error: a malformed or over-long reply; the parser
  /// stays in error.
  status parse(std::string_view& in, smtp_reply& out);
  const std::string& error() const noexcept { return error_; }

 private:
  status fail(std::string why);
  std::string line_;  // a line not yet ended
  smtp_reply cur_;
  std::string error_;
};

struct smtp_client_options {
  std::string helo_name = "localhost";
  bool require_starttls = false;  ///< STARTTLS before anything else; fail when not offered
  bool tls_active = false;        ///< implicit TLS (the driver handshook before the greeting)
  std::string auth = "none";      ///< none (pick among the offered), plain, login, cram-md5
  std::string username;           ///< empty: no AUTH
  std::string password;
};

struct outgoing_message {
  std::uint64_t id = 0;
  std::string mail_from;
  std::vector<std::string> rcpt;
  const std::string* data = nullptr;  ///< the message as stored (not dot-stuffed)
  bool all_recipients = false;        ///< a refused recipient fails the message (no DATA)
};

struct send_result {
  std::uint64_t id = 0;
  bool ok = false;
  std::string error;                   ///< why not, for the log ("" when ok)
  smtp_reply reply;                    ///< the refusal (code 0 when the connection failed)
  std::vector<std::string> refused;    ///< recipients the server refused (ok or not)
  bool data_sent = false;              ///< its body went out: never resend it
};

class smtp_client_session {
 public:
  explicit smtp_client_session(smtp_client_options opts);

  /// Queues a transaction; it starts when the session is ready and the pipeline allows.
  void submit(outgoing_message m);
  /// Bytes from the server (plain text: after TLS decryption).
  void receive(std::string_view bytes);
  /// Says QUIT once every submitted message has its result.
  void quit();

  /// What to write to the server.
  const std::string& output() const noexcept { return out_; }
  void clear_output() noexcept { out_.clear(); }

  /// STARTTLS was accepted: handshake now (output() is empty), then tls_started().
  bool wants_tls() const noexcept { return state_ == state::tls_wait; }
  void tls_started();

  /// Results of finished messages since the last call, in submission order.
  std::vector<send_result> take_results();

  /// The session is over (a protocol error, a refused greeting, EHLO or AUTH, or the
  /// connection lost via connection_lost()); every unfinished message got a result.
  bool failed() const noexcept { return state_ == state::failed; }
  const std::string& error() const noexcept { return error_; }
  /// QUIT answered.
  bool closed() const noexcept { return state_ == state::closed; }
  /// Greeting, EHLO, TLS and AUTH are done.
  bool ready() const noexcept { return state_ == state::ready; }
  /// Messages submitted without a result yet.
  std::size_t pending() const noexcept { return txns_.size(); }
  /// Replies still due (a message's, or an RSET's after a failed one).
  bool awaiting() const noexcept { return !txns_.empty() || !replies_.empty(); }

  /// The driver lost the connection (or timed out): fails the session and every
  /// unfinished message (data_sent says which may have arrived anyway).
  void connection_lost(std::string why);

  bool pipelining() const noexcept { return pipelining_; }
  bool offers_starttls() const noexcept { return starttls_offered_; }
  const std::vector<std::string>& auth_mechanisms() const noexcept { return auth_mechs_; }

  /// `data` dot-stuffed, bare LF as CRLF, ended with CRLF "." CRLF, appended to `out`.
  static void append_stuffed(std::string& out, std::string_view data);

 private:
  enum class state { greeting, ehlo, helo, starttls, tls_wait, auth, ready, quit, closed, failed };
  enum class expect { mail, rcpt, data, body, rset };
  struct txn {
    outgoing_message msg;
    std::size_t written = 0;  // of MAIL, RCPT x n, DATA
    std::size_t outstanding = 0;
    std::size_t accepted = 0;
    bool failed = false;
    bool body_written = false;
    bool done = false;
    send_result result;
  };
  struct pending_reply {
    expect kind;
    std::uint64_t id;
  };

  void on_reply(const smtp_reply& r);
  void on_ehlo(const smtp_reply& r);
  void after_hello();
  void start_auth();
  void on_auth(const smtp_reply& r);
  void on_txn_reply(const smtp_reply& r);
  void pump();
  void write_commands(txn& t);
  void finish(txn& t);
  void fail(std::string why);
  txn* find(std::uint64_t id);

  smtp_client_options opts_;
  smtp_reply_parser parser_;
  std::string out_;
  state state_ = state::greeting;
  std::string error_;
  bool pipelining_ = false, starttls_offered_ = false, esmtp_ = true, quit_asked_ = false;
  bool size_ = false, eightbit_ = false, smtputf8_ = false;  // MAIL parameters offered
  std::vector<std::string> auth_mechs_;
  std::string mech_;
  int auth_step_ = 0;
  std::deque<txn> txns_;
  std::deque<pending_reply> replies_;
  std::vector<send_result> results_;
};

}  // namespace inlet::outbound
