// inlet::smtp::server_session — the sans-io SMTP/LMTP server protocol core.
//
// Feed it the bytes the client sent; it answers with steps (what happened) and
// queues replies in an output buffer. It never touches a socket, a thread or a
// clock: drivers (the I/O models) do that and all run this same core.
//
//   session s(cfg);
//   s.start();                               // queues the 220 greeting
//   write(s.output()); s.clear_output();
//   for (;;) {
//     auto st = s.consume(input);            // input: bytes not yet consumed
//     input.remove_prefix(st.consumed);
//     switch (st.kind) {
//       case step_kind::need_more: flush output; read more, appended to input; break;
//       case step_kind::body_data: append st.data to the body; break;
//       case step_kind::message_complete: deliver s.take_envelope() + body; later
//                                         s.delivery_done(result); break;
//       case step_kind::message_aborted: drop the body collected so far; break;
//       case step_kind::start_tls: flush; handshake; s.tls_started(); break;
//       case step_kind::close: flush; close; return;
//     }
//   }
//
// Zero copy: body_data pieces are views INTO the input passed to that consume()
// call (stuffed dots are simply left out between pieces). The session never
// copies the body. Unconsumed input (an incomplete command line, or at most the
// two bytes ".\r" of a possible terminator) must be kept by the driver and passed
// again, followed by new bytes, on the next call.
//
// Thread-safety: none; one session belongs to one connection and is used from
// one thread (or strand) at a time.
// Invalidation: step::data points into the caller's input and lives as long as
// that input. output() is invalidated by every non-const call.
#pragma once

#include <inlet/smtp/error.hpp>
#include <inlet/smtp/message.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::smtp {

/// The commands the application's policy hook is asked about.
enum class policy_stage : std::uint8_t {
  mail,  ///< MAIL FROM; the argument is the sender address (empty: null sender)
  rcpt,  ///< RCPT TO; the argument is the recipient address
  auth,  ///< AUTH; the argument is the mechanism ("PLAIN", "LOGIN")
};

/// SMTP AUTH credential check (RFC 4954): true when `user` may sign in with
/// `password`. Called synchronously inside server_session::consume(), on the
/// connection's thread, by many connections at once: it must be thread-safe and
/// should be quick (an in-memory check; a bcrypt entry costs milliseconds).
using auth_verifier = std::function<bool(std::string_view user, std::string_view password)>;

/// Policy hook: asked when MAIL or RCPT would otherwise be accepted, and when
/// AUTH names a usable mechanism (before the exchange). A status fails the
/// command with that reply (code 4xx/5xx; `enhanced` may be empty); nullopt
/// goes on normally. Same threading rules as auth_verifier.
using policy_hook =
    std::function<std::optional<delivery_status>(policy_stage stage, std::string_view arg)>;

/// Policy and limits of one session. Defaults follow RFC 5321 4.5.3.
struct session_config {
  std::string hostname = "localhost";       ///< name in the greeting and EHLO reply
  /// Shown in the greeting after the software's name ("220 host ESMTP inlet (label)"),
  /// as Mailpit shows its --label; one line, no CR or LF.
  std::string label;
  bool lmtp = false;                        ///< speak LMTP (RFC 2033) instead of SMTP
  std::size_t max_command_line = 512;       ///< octets incl. CRLF (RFC 5321 4.5.3.1.4)
  /// SIZE limit, octets of body; 0: none (advertised as "SIZE 0", RFC 1870).
  std::uint64_t max_message_size = 32u << 20;
  std::size_t max_recipients = 100;         ///< 452 4.5.3 past it
  std::vector<std::string> domains;         ///< accepted domains; empty = every domain
  std::size_t max_errors = 20;              ///< protocol errors before 421 and close
  bool chunking = true;                     ///< offer CHUNKING/BDAT (RFC 3030)
  bool smtputf8 = true;                     ///< offer SMTPUTF8 (RFC 6531)
  bool starttls = false;                    ///< offer STARTTLS (driver has a TLS context)
  /// The connection is TLS from its first byte (SMTPS): the session starts secured, and
  /// the driver runs the handshake before start().
  bool implicit_tls = false;
  bool reject_bare_lf_in_body = false;      ///< see docs/smtp.md, "hostile input"
  /// Longest text line of a message body, octets incl. CRLF (RFC 5321
  /// 4.5.3.1.6); counted on the message content (after dot-unstuffing, so DATA
  /// and BDAT agree), any LF ends a line. A longer line: the body is read to its
  /// end, then refused with 500 5.5.6 and nothing is delivered. 0 = no limit.
  std::size_t max_text_line = 1000;

  /// SMTP AUTH, PLAIN and LOGIN (RFC 4954, 4616). Empty (default): AUTH is not
  /// offered and answers 502. SMTP listeners only; an LMTP session ignores it.
  /// An AUTH command or SASL response line is bounded by max_command_line like
  /// any command (512 octets carry PLAIN credentials of some 370 octets).
  auth_verifier auth;
  /// MAIL before a successful AUTH gets 530 5.7.0 (needs `auth`).
  bool auth_required = false;
  /// Offer PLAIN and LOGIN without TLS. Otherwise AUTH is offered only after
  /// STARTTLS and answers 538 5.7.11 before it (RFC 4954 section 4).
  bool auth_allow_insecure = false;
  /// Failed authentications (535) per connection; at this many the session
  /// answers 421 4.7.0 and closes. 0 = no limit.
  std::size_t max_auth_failures = 3;
  /// Optional policy hook (see policy_hook); empty: none.
  policy_hook policy;

  /// Mailpit's --smtp-require-starttls: before STARTTLS, MAIL, RCPT, DATA, RSET
  /// and AUTH get 530 5.7.0 (needs `starttls`; SMTP only).
  bool require_starttls = false;
  /// Mailpit's --smtp-allowed-recipients: false refuses RCPT with 550 5.1.0.
  /// Same threading rules as auth_verifier. Empty: every recipient.
  std::function<bool(std::string_view address)> recipient_allowed;
  /// Mailpit's --smtp-ignore-rejected-recipients: a recipient refused by
  /// recipient_allowed gets 250 and is dropped; a message left without
  /// recipients is read, answered 250 and discarded.
  bool ignore_rejected_recipients = false;
};

enum class step_kind : std::uint8_t {
  need_more,         ///< all usable input consumed; flush output, read more
  body_data,         ///< data is a piece of the message body (view into input)
  message_complete,  ///< the body is complete; deliver, then call delivery_done()
  message_aborted,   ///< the body was refused (size, policy): drop what was collected
  start_tls,         ///< flush output, run the TLS handshake, then tls_started()
  close,             ///< flush output, then close the connection
};

struct step {
  step_kind kind = step_kind::need_more;
  std::size_t consumed = 0;  ///< octets of the input used by this step
  std::string_view data;     ///< body_data only: view into the input
  std::error_code reason;    ///< close only: why (errc)
};

class server_session {
 public:
  explicit server_session(session_config cfg);
  /// Shares one config among many sessions (a server's connections): a
  /// session then holds a pointer instead of its own copy.
  explicit server_session(std::shared_ptr<const session_config> cfg);

  /// Queue the greeting (220, or 421 4.3.2 if shutdown() came first).
  void start();

  /// Process input; returns the next step. Call again with the rest of the input
  /// after every step except need_more and close.
  step consume(std::string_view input);

  /// Replies queued so far (several when the client pipelines).
  std::string_view output() const noexcept { return out_; }
  void clear_output() noexcept { out_.clear(); }
  /// Moves the queued replies into `dst` (its old content is dropped; buffers
  /// are swapped, no copy). Drivers write `dst` while the session goes on.
  void take_output(std::string& dst) noexcept {
    dst.clear();
    dst.swap(out_);
  }

  /// After message_complete: the transaction's envelope (moved out).
  envelope take_envelope();
  /// Total body octets of the completed (or current) message.
  std::uint64_t body_size() const noexcept { return body_size_; }

  /// The delivery hook answered: queue the reply (one per recipient for LMTP)
  /// and continue with the next command.
  void delivery_done(const delivery_result& r);

  /// The driver completed the TLS handshake after a start_tls step. Until then
  /// every byte fed to consume() is discarded (RFC 3207 section 4.2).
  void tls_started();

  /// A driver timeout fired: queues 421 4.4.2; the next consume() returns close.
  void timeout();

  /// Graceful stop: a transaction in flight finishes; new commands get
  /// 421 4.3.2. If no transaction is in flight, 421 is queued now and the next
  /// consume() returns close.
  void shutdown();

  /// The server needs this connection's slot for another client: queues
  /// 421 4.7.0 whatever the state (a message being received is dropped); the
  /// next consume() returns close.
  void evict();

  /// The shutdown grace period ran out: queues 421 4.3.2 whatever the state
  /// (a message being received is dropped) and the next consume() returns
  /// close. While delivering, the driver must still call delivery_done() or
  /// drop the session; the reply then is not sent.
  void shutdown_now();

  /// True between MAIL and the end of the transaction (incl. delivery).
  bool in_transaction() const noexcept;
  /// True while waiting for delivery_done().
  bool awaiting_delivery() const noexcept { return state_ == state::delivering; }
  /// True while reading a DATA or BDAT body.
  bool in_body() const noexcept { return state_ == state::data || state_ == state::bdat; }
  bool closing() const noexcept { return closing_; }
  bool shutting_down() const noexcept { return shutdown_; }
  bool tls_active() const noexcept { return tls_; }
  /// The user of a successful AUTH on this connection; empty if none.
  const std::string& auth_user() const noexcept { return auth_user_; }
  const session_config& config() const noexcept { return *cfg_; }

  /// The driver sets the peer address copied into every envelope.
  void set_remote(std::string address, std::uint16_t port);
  const std::string& remote_address() const noexcept { return remote_address_; }

 private:
  enum class state : std::uint8_t {
    fresh,       // before start()
    init,        // greeted, no EHLO/HELO yet
    ready,       // after EHLO/HELO, no transaction
    mail,        // MAIL accepted
    rcpt,        // MAIL + at least one RCPT accepted
    data,        // reading a DATA body
    bdat,        // reading a BDAT chunk
    delivering,  // waiting for delivery_done()
    tls_wait,    // STARTTLS accepted, waiting for tls_started()
    auth,        // AUTH accepted, waiting for a SASL response line
  };
  // Which SASL response the auth state waits for.
  enum class sasl : std::uint8_t { plain, login_user, login_password };
  enum class line_state : std::uint8_t { mid, cr, bol };

  // Inner steps: n = octets used; nullopt = progress made, continue the loop.
  std::optional<step> consume_command(std::string_view in, std::size_t& n);
  std::optional<step> consume_data(std::string_view in, std::size_t& n);
  std::optional<step> consume_bdat(std::string_view in, std::size_t& n);
  void dispatch(std::string_view line);
  void cmd_helo(std::string_view arg, bool extended);
  void cmd_mail(std::string_view arg);
  void cmd_rcpt(std::string_view arg);
  void cmd_data(std::string_view arg);
  void cmd_bdat(std::string_view arg);
  void cmd_rset(std::string_view arg);
  void cmd_starttls(std::string_view arg);
  void cmd_auth(std::string_view arg);
  void sasl_response(std::string_view line);
  void sasl_plain(std::string_view b64);
  void sasl_login_user(std::string_view b64);
  void sasl_check(std::string_view user, std::string_view password);
  void sasl_end();
  bool auth_offered() const noexcept;
  bool policy_refused(policy_stage stage, std::string_view arg);
  void finish_body();
  void count_text_lines(std::string_view content);
  void reset_transaction();
  void reply(int code, std::string_view enhanced, std::string_view text,
             std::string_view more = {});
  void error_reply(int code, std::string_view enhanced, std::string_view text);
  void close_with(int code, std::string_view enhanced, std::string_view text, errc why);
  bool domain_accepted(std::string_view domain) const;
  bool starttls_missing() const noexcept;
  bool discard_recipientless();

  std::shared_ptr<const session_config> cfg_;
  std::string out_;
  state state_ = state::fresh;
  line_state line_ = line_state::bol;
  bool extended_ = false;       // EHLO/LHLO seen: ESMTP
  bool tls_ = false;
  bool closing_ = false;
  bool shutdown_ = false;
  bool overlong_ = false;       // discarding an over-long command line
  bool body_too_big_ = false;   // discarding a body past max_message_size
  bool body_bad_ = false;       // body rejected by policy (bare LF)
  bool body_long_ = false;      // a text line over max_text_line
  bool bdat_last_ = false;
  bool bdat_failed_ = false;    // BDAT chunk consumed but transaction invalid
  state bdat_prev_ = state::init;
  std::size_t rcpt_rejected_ = 0;
  std::size_t rcpt_dropped_ = 0;  // refused but answered 250 (ignore_rejected_recipients)
  std::size_t errors_ = 0;
  std::uint64_t bdat_left_ = 0;
  std::uint64_t body_size_ = 0;
  std::size_t line_len_ = 0;    // octets of the current body line so far
  std::error_code close_reason_;
  envelope env_;
  recipient_list lmtp_rcpts_;  // LMTP: recipients of the message being delivered
  std::string remote_address_;
  std::uint16_t remote_port_ = 0;
  sasl sasl_ = sasl::plain;
  std::size_t auth_failures_ = 0;
  std::string auth_user_;  // signed in as (empty: not authenticated)
  std::string sasl_user_;  // LOGIN: the user name, until the password arrives
};

}  // namespace inlet::smtp
