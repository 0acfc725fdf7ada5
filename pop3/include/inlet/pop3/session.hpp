// inlet::pop3::session — the sans-io POP3 server protocol core (RFC 1939, with
// CAPA from RFC 2449 and STLS from RFC 2595).
//
// Feed it the bytes the client sent; it answers with steps and queues replies in
// an output buffer. It never touches a socket, a clock or the store: the driver
// reads the maildrop and the messages when a step asks, and hands the results
// back.
//
//   session s(cfg);
//   s.start();                                 // queues the +OK greeting
//   for (;;) {
//     auto st = s.consume(input);              // input: bytes not yet consumed
//     input.remove_prefix(st.consumed);
//     switch (st.kind) {
//       case step_kind::need_more: write s.output(); read more, appended; break;
//       case step_kind::list:   list the store; s.list_done(ec, entries); break;
//       case step_kind::fetch:  get s.fetch_id(); s.fetch_done(ec, raw); break;
//       case step_kind::remove: remove s.deletions(); s.remove_done(ec, n); break;
//       case step_kind::start_tls: write s.output(); drop `input`; handshake;
//                                  s.tls_started(); break;
//       case step_kind::close: write s.output(); close; return;
//     }
//   }
//
// Unconsumed input (an incomplete command line) must be kept by the driver and
// passed again, followed by new bytes. It never exceeds max_command_line: a
// longer line is consumed, discarded up to its LF and answered -ERR.
//
// Messages are numbered as Mailpit numbers them: 1 is the newest message of the
// listing taken at sign-in (at most max_messages of them). The listing stays
// fixed for the session (RFC 1939: message numbers do not change); a message
// removed from the store meanwhile answers RETR/TOP with -ERR.
//
// Thread-safety: none; one session belongs to one connection, used from one
// thread (or strand) at a time.
// Invalidation: output() is invalidated by every non-const call; fetch_id() and
// deletions() until the matching *_done() call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace inlet::pop3 {

/// USER/PASS check: true when `user` may sign in with `password`. Called inside
/// consume(), from many connections at once: thread-safe and quick.
using auth_verifier = std::function<bool(std::string_view user, std::string_view password)>;

/// Why a session closed (step::reason).
enum class errc {
  ok = 0,
  client_quit,       ///< QUIT
  too_many_errors,   ///< max_errors unknown or malformed commands
  auth_failures,     ///< max_auth_failures failed sign-ins
  shutdown,          ///< the server stops
  timeout,           ///< a driver deadline passed
  remove_failed,     ///< QUIT could not remove the deleted messages
  connection_lost,   ///< the peer went away (drivers)
  tls_failed,        ///< the TLS handshake failed (drivers)
  too_many_connections,  ///< refused at accept (drivers)
  evicted,           ///< the connection's slot was given to another client (drivers)
  bad_config,        ///< a certificate or address could not be used (server::start)
};
const std::error_category& pop3_category() noexcept;
inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), pop3_category()}; }

struct session_config {
  /// Shown in the greeting after the software's name ("+OK inlet (label) POP3
  /// server"), as Mailpit shows its --label; one line, no CR or LF.
  std::string label;
  /// Longest command line, octets including CRLF. RFC 2449 bounds a command at
  /// 255 octets; Mailpit reads lines of up to 512.
  std::size_t max_command_line = 512;
  /// Unknown or malformed commands before "-ERR too many errors" and close.
  std::size_t max_errors = 20;
  /// Failed PASS per connection before "-ERR" and close. 0 = no limit.
  std::size_t max_auth_failures = 3;
  /// The maildrop is the newest this many messages of the store (Mailpit: 100).
  std::size_t max_messages = 100;
  /// Offer STLS (the driver has a TLS context and the connection is plain).
  bool stls = false;
  /// Credentials; empty: every sign-in fails (Mailpit serves no POP3 without a
  /// password file).
  auth_verifier auth;
};

enum class step_kind : std::uint8_t {
  need_more,  ///< input used up: flush output, read more
  list,       ///< read the maildrop (newest max_messages), then list_done()
  fetch,      ///< read message fetch_id() whole, then fetch_done()
  remove,     ///< remove deletions() from the store, then remove_done()
  start_tls,  ///< flush output, drop buffered input, handshake, then tls_started()
  close,      ///< flush output, then close the connection
};

struct step {
  step_kind kind = step_kind::need_more;
  std::size_t consumed = 0;  ///< octets of the input used by this step
  std::error_code reason;    ///< close only: why (errc)
};

/// One message of the maildrop: its store ID (the UIDL) and size in octets.
struct maildrop_entry {
  std::string id;
  std::uint64_t size = 0;
};

class session {
 public:
  explicit session(session_config cfg);
  /// Shares one config among a server's sessions.
  explicit session(std::shared_ptr<const session_config> cfg);

  /// Queues the greeting.
  void start();

  /// Processes input; returns the next step. Call again with the rest of the
  /// input after every step except need_more and close; while a list, fetch or
  /// remove is outstanding it consumes nothing.
  step consume(std::string_view input);

  std::string_view output() const noexcept { return out_; }
  void clear_output() noexcept { out_.clear(); }
  /// Moves the queued replies into `dst` (its old content dropped; no copy).
  void take_output(std::string& dst) noexcept {
    dst.clear();
    dst.swap(out_);
  }

  /// The maildrop was read: entries newest first (more than max_messages are
  /// cut). An error refuses the sign-in (-ERR [SYS/TEMP], back to AUTHORIZATION).
  void list_done(std::error_code ec, std::vector<maildrop_entry> entries);
  /// The store ID the fetch step wants.
  std::string_view fetch_id() const noexcept;
  /// The message was read: `raw` is copied into the reply (dot-stuffed, line
  /// ends made CRLF). An error (not found: deleted meanwhile) answers -ERR.
  void fetch_done(std::error_code ec, std::string_view raw);
  /// The store IDs the remove step wants removed (the messages marked by DELE).
  const std::vector<std::string>& deletions() const noexcept { return deletions_; }
  /// The removal finished (QUIT): +OK, or -ERR when it failed (RFC 1939 6); close.
  void remove_done(std::error_code ec, std::size_t removed);

  /// The driver finished the TLS handshake after a start_tls step.
  void tls_started();
  /// The session's idle deadline passed: closes without a reply and without
  /// removing anything (RFC 1939 3, autologout). The next consume() returns close.
  void timeout();
  /// The server stops: "-ERR [SYS/TEMP]" is queued and the next consume()
  /// returns close; nothing marked is removed. A step in flight finishes first.
  void shutdown();
  /// Every slot is taken and this idle connection's was given to a new
  /// client: "-ERR [SYS/TEMP]" is queued and the next consume() returns close;
  /// nothing marked is removed. A step in flight finishes first.
  void evict();

  bool authenticated() const noexcept { return state_ == state::transaction; }
  bool tls_active() const noexcept { return tls_; }
  bool closing() const noexcept { return closing_; }
  /// True while a list, fetch or remove step waits for its *_done() call.
  bool awaiting() const noexcept { return state_ == state::waiting; }
  const std::string& user() const noexcept { return user_; }
  const session_config& config() const noexcept { return *cfg_; }
  /// Messages in the maildrop and how many are marked deleted.
  std::size_t message_count() const noexcept { return drop_.size(); }
  std::size_t marked_count() const noexcept { return marked_; }

 private:
  enum class state : std::uint8_t {
    fresh,          // before start()
    authorization,  // RFC 1939 AUTHORIZATION
    transaction,    // signed in, maildrop listed
    waiting,        // a list/fetch/remove step is outstanding
    tls_wait,       // STLS accepted, waiting for tls_started()
    done,           // closing
  };
  enum class pending : std::uint8_t { none, list, retr, top, quit };

  std::optional<step> command(std::string_view in, std::size_t& n);
  std::optional<step> dispatch(std::string_view line);
  std::optional<step> authorization_command(std::string_view cmd, std::string_view arg);
  std::optional<step> transaction_command(std::string_view cmd, std::string_view arg);
  void cmd_capa();
  void cmd_pass(std::string_view arg);
  void cmd_stat();
  void cmd_list(std::string_view arg, bool uidl);
  void cmd_dele(std::string_view arg);
  void cmd_rset();
  std::optional<step> cmd_retr(std::string_view arg, bool top);
  std::optional<step> cmd_quit();
  // The message named by `arg` (1-based, not deleted) or null after an -ERR.
  const maildrop_entry* message_arg(std::string_view arg, std::size_t* index = nullptr);
  void ok(std::string_view text);
  void err(std::string_view text);
  void error(std::string_view text);  // a client error: counted against max_errors
  step close_step(errc why);

  std::shared_ptr<const session_config> cfg_;
  std::string out_;
  state state_ = state::fresh;
  pending pending_ = pending::none;
  bool tls_ = false;
  bool closing_ = false;
  bool overlong_ = false;  // discarding the rest of an over-long line
  bool shutdown_pending_ = false;  // shutdown() while a step was in flight
  bool evict_pending_ = false;     // evict() while a step was in flight
  std::size_t errors_ = 0;
  std::size_t auth_failures_ = 0;
  std::string user_;           // USER argument, then the signed-in user
  bool user_given_ = false;
  std::vector<maildrop_entry> drop_;
  std::vector<bool> deleted_;  // marked by DELE, per message
  std::size_t marked_ = 0;
  std::uint64_t marked_octets_ = 0;
  std::uint64_t total_octets_ = 0;
  std::size_t fetch_index_ = 0;
  std::uint64_t top_lines_ = 0;
  std::vector<std::string> deletions_;
  errc close_reason_ = errc::ok;
};

/// Appends `raw` to `out` as a multi-line response body (RFC 1939 3): every line
/// ending becomes CRLF (a bare LF too), a line starting with '.' gets one more,
/// and the last line is ended. `body_lines` >= 0 (TOP): the header, the blank
/// line and at most that many body lines. Returns the octets of the message as
/// sent, without the stuffing.
std::uint64_t append_stuffed(std::string& out, std::string_view raw, std::int64_t body_lines = -1);

}  // namespace inlet::pop3

template <>
struct std::is_error_code_enum<inlet::pop3::errc> : std::true_type {};
