// inlet::smtp::detail::connection — the sans-io connection core every I/O
// model runs: server_session plus everything around it that is policy, not
// I/O. It owns the receive buffer, the body being collected, the reply being
// written and every deadline, and it says what to do next as an `action`:
//
//   read       read what the socket has now (non-blocking) into read_buffers()
//   wait       wait until the socket is readable, then read into
//              read_buffers(); `idle`: the connection holds no input, body or
//              reply (a driver may drop whatever it keeps per busy
//              connection, a fiber's stack)
//   write      write output() whole
//   call_out   hand the pending request to the server's hook (SMTP: the
//              deliver hook gets take_message()); the answer resumes it
//   close      close the socket; close_reason() says why
//
// STARTTLS is the connection's own business (tls.hpp): under TLS the driver
// reads and writes ciphertext through the same actions.
//
// The driver does that and reports the result: on_read(n) / on_would_block()
// for a read or wait, on_written(), on_delivered(result) for a call-out, on_interrupted()
// when a wait or write ended because its deadline
// passed or a stop cancelled it, on_lost() when the peer went away. Each
// returns the next action. A driver enforces action::deadline (read, wait,
// write, handshake) by cancelling the operation and calling on_interrupted();
// the connection decides what the deadline meant (421 4.4.2, the end of the
// shutdown grace, a peer that does not read). A graceful stop reaches each
// connection as on_stop(), which says whether the pending wait must be
// cancelled; deadline() then gives the wait's new deadline.
//
// Slot pressure (admission.hpp) reaches a connection as a flag it reads
// whenever it needs a deadline: under pressure the greeting, command, data
// and reply-write timeouts are cut to pressure_timeout, for waits already
// pending too (deadline() is computed from when the wait began). A body must
// also keep up min_data_rate: each read advances its deadline by what it
// brought, at that rate, never past now + data_timeout. An evicted connection
// (its slot given to another client) answers 421 4.7.0 and closes at its next
// wait: deadline() says "now" once the slot is marked.
//
// Time is a parameter (`now`), never read from a clock here: tests drive a
// connection with scripted bytes and a fake clock (connection_test.cpp).
//
// Thread-safety: none; one connection is used from one thread or strand at a
// time. Invalidation: read_buffers() until the next call; output() until
// on_written()/on_lost()/on_interrupted(); take_message() moves the message out.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <inlet/smtp/message.hpp>
#include <inlet/smtp/server.hpp>
#include <inlet/smtp/server_session.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "admission.hpp"
#include "conn_core.hpp"
#include "driver_buffer.hpp"
#include "driver_common.hpp"
#include "tls.hpp"

namespace inlet::smtp::detail {

/// The server-wide settings a connection follows (one per server, shared);
/// the time and channel ones (pressure, grace, TLS, stop) are core_policy's
/// (conn_core.hpp), under the same names.
struct conn_policy : core_policy {
  clock::duration greeting_timeout{std::chrono::minutes(5)};
  clock::duration command_timeout{std::chrono::minutes(5)};
  clock::duration data_timeout{std::chrono::minutes(3)};
  clock::duration message_timeout{std::chrono::minutes(10)};
  /// Body octets per second that keep a body's deadline where it is; 0: every
  /// body read restarts data_timeout.
  std::size_t min_data_rate = 500;
  std::size_t read_buffer_size = 64 * 1024;
  bool flat_receive_buffer = false;
  const body_observer_factory* observer = nullptr;  ///< null or empty: none
  /// The session configs of SMTP, LMTP and SMTPS listeners, shared by every connection.
  std::shared_ptr<const session_config> smtp_session, lmtp_session, smtps_session;

  static conn_policy from(const server_config& cfg, const std::atomic<bool>* stopping);
  /// Sets `tls` and the shared session configs (STARTTLS offered with a context).
  void use(const tls_context* ctx, const server_config& cfg);
  const std::shared_ptr<const session_config>& session(listener_kind k) const {
    return k == listener_kind::lmtp ? lmtp_session
           : k == listener_kind::smtps ? smtps_session
                                       : smtp_session;
  }
};

/// The body of the message being received, as every connection collects it:
/// the pieces of body_data steps (a slice of the receive buffer, or a copy in
/// flat mode), and the application's body_observer told about each, in order.
///
/// The observer is made from the factory when a body starts (its first piece,
/// or message_complete for an empty body) and leaves with the
/// received_message, or is aborted: on message_aborted, when the connection
/// ends, and when a new body starts while the old one was never finished. That
/// last case is how the session drops a BDAT body without a step (RSET between
/// chunks, or a new MAIL): a session counts the body octets of the current
/// message (body_size()), and every body_data piece is counted there first, so
/// a piece that does not add up to body_size() belongs to a new message.
///
/// Memory: a body piece of at least `min_slice` octets is referenced where it
/// was read (a slice of the receive fragment); a smaller one, or one that is
/// not in the receive buffer (the straddle window), is copied into a fragment
/// the collector fills (buffer::copy_appender). So a body pins fragments in
/// proportion to its octets however the client splits them: a trickle of
/// reads of a few bytes, or lines that each start with a stuffed dot, cost a
/// copy, not a fragment or a slice each (docs/buffer.md, "Pinned fragments").
///
/// Not thread-safe.
class body_collector {
 public:
  body_collector(const body_observer_factory* f, driver_input& in)
      : factory_(f != nullptr && *f ? f : nullptr), in_(in) {}
  ~body_collector() { abort(); }
  body_collector(const body_collector&) = delete;
  body_collector& operator=(const body_collector&) = delete;

  /// A body_data step: `data` (a view into in's current view) must be taken
  /// before in.consumed(). `session_body_size` = server_session::body_size().
  void add(std::string_view data, std::uint64_t session_body_size);
  /// message_complete: the body (and its observer, end() called).
  received_message complete(envelope env, std::uint64_t session_body_size);
  /// message_aborted, or the message is dropped: forget the body.
  void abort() noexcept;
  /// True while part of a body is held (BDAT chunks before the LAST one).
  bool holding() const noexcept { return fed_ > 0 || obs_ != nullptr; }

  /// Pieces shorter than this are copied, not referenced.
  static constexpr std::size_t min_slice = 256;

 private:
  void begin();
  const body_observer_factory* factory_;
  driver_input& in_;
  message_body body_;
  buffer::copy_appender copies_;  // small pieces of the current body
  body_observer_ptr obs_;
  std::uint64_t fed_ = 0;  // body octets taken for the current message
};

class connection : public basic_connection<connection, conn_policy, errc> {
 public:
  connection(const conn_policy& p, std::shared_ptr<const session_config> cfg);
  connection(const conn_policy& p, listener_kind k) : connection(p, p.session(k)) {}
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void set_remote(std::string address, std::uint16_t port) {
    session_.set_remote(std::move(address), port);
  }

  /// The greeting (or 421 4.3.2 when the server is already stopping).
  action start(clock::time_point now);

  // ---- results of the last action (the others: conn_core.hpp)
  action on_delivered(const delivery_result& r, clock::time_point now);

  // ---- what the action works on (read_buffers(), output(): conn_core.hpp;
  // read_buffers() is one fragment for commands, the read buffer size inside
  // a message body)
  received_message take_message();

  const server_session& session() const noexcept { return session_; }
  /// Does it hold a receive buffer or body now? (tests; idle connections do not)
  bool holds_input() const noexcept { return io_ != nullptr; }

 private:
  friend class basic_connection<connection, conn_policy, errc>;
  struct io_state;

  io_state& io();
  action advance(clock::time_point now);
  void go_idle() noexcept;

  // ---- the hooks basic_connection calls (conn_core.hpp)
  driver_input& input();
  bool body_reads() const noexcept { return session_.in_body(); }
  limit input_deadline(clock::time_point now);
  bool keep_reading() const noexcept { return session_.in_body(); }
  bool release_input() noexcept;
  void drop_input() noexcept;  // an unfinished message is dropped (its observer aborted)
  void landed(std::size_t n, clock::time_point now) noexcept;
  clock::time_point waiting_since() const noexcept {
    return session_.in_body() ? body_progress_ : cmd_since_;
  }
  std::string& reply_buffer();
  std::string_view plain_output() const noexcept;
  clock::duration write_timeout() const noexcept { return p_.command_timeout; }
  void handshake_started(clock::time_point now) noexcept {
    cmd_since_ = now;  // the whole handshake has the command timeout
  }
  void handshake_done(clock::time_point now);
  limit handshake_limit() const noexcept { return after(cmd_since_, p_.command_timeout); }
  void stop_session() {
    if (!session_.shutting_down()) session_.shutdown();
  }
  // The grace ran out: 421 4.3.2, the message being received is dropped. (An
  // eviction answers 421 4.7.0, a timeout 421 4.4.2: the session's evict() and
  // timeout().)
  void force_stop() { session_.shutdown_now(); }

  server_session session_;
  std::unique_ptr<io_state> io_;               // receive buffer and body: only while busy
  std::unique_ptr<std::string> flat_storage_;  // flat mode: the connection's buffer, kept idle

  // The next command (or the TLS handshake) is waited for since cmd_since_:
  // a line must arrive whole within the greeting (first) or command timeout.
  clock::time_point cmd_since_{};
  bool greeting_phase_ = true;
  // In a body: since when, and its credit (min_data_rate) time.
  clock::time_point body_start_ = clock::time_point::max();
  clock::time_point body_progress_{};

  bool first_read_ = true;
  // The last input consumed did not end a line: a partial line the session
  // discards (over max_command_line) leaves the input empty but is still
  // the same command, on the same deadline.
  bool line_open_ = false;
};

/// SMTP plugged into the drivers (driver_common.hpp, "A protocol plugged into
/// the drivers"): the connection above as the core, the deliver hook as the
/// call-out. Not copyable: the policy points into the config it holds.
class smtp_plug {
 public:
  using connection = detail::connection;
  using answer = delivery_result;

  smtp_plug(const server_config& cfg, deliver_fn hook)
      : cfg_(cfg),
        hook_(std::move(hook)),
        driver_(driver_config_of(cfg_)),
        policy_(conn_policy::from(cfg_, nullptr)) {}
  smtp_plug(const smtp_plug&) = delete;
  smtp_plug& operator=(const smtp_plug&) = delete;

  connection open(listener_kind k) const { return connection(policy_, k); }
  const driver_config& driver() const noexcept { return driver_; }
  void bind(const std::atomic<bool>* stopping, const std::atomic<bool>* pressure) noexcept {
    policy_.stopping = stopping;
    policy_.pressure = pressure;
  }
  void use_tls(const tls_context* ctx) { policy_.use(ctx, cfg_); }
  template <class Cb>
  void call_out(connection& c, driver_counters& cnt, Cb cb) {
    call_deliver(hook_, cnt, c.take_message(), std::move(cb));
  }
  action answered(connection& c, driver_counters& cnt, answer&& r, clock::time_point now) {
    count(cnt, r);
    return c.on_delivered(r, now);
  }
  std::string refusal(bool stopping, admit_result) const {
    return stopping ? shutting_down_reply(cfg_) : refusal_reply(cfg_);
  }

  const server_config& config() const noexcept { return cfg_; }
  conn_policy& policy() noexcept { return policy_; }

 private:
  const server_config cfg_;
  deliver_fn hook_;
  driver_config driver_;
  conn_policy policy_;
};

}  // namespace inlet::smtp::detail
