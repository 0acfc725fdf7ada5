// inlet::pop3::detail::connection — POP3's connection core: pop3::session
// on the connection core SMTP's uses too (smtp/src/conn_core.hpp, which owns
// the deadlines, pressure, eviction, the stop, TLS and the read/wait choice),
// run by the SMTP server's I/O drivers through the same actions:
//
//   read / wait   read into read_buffers() (wait: after readability; idle:
//                 nothing is held, the receive buffer was given back)
//   write         write output() whole
//   call_out      the session asked the store (list, fetch or remove):
//                 request() says which; the plug (plug.hpp) asks the store
//                 and on_answered() resumes the connection, possibly from a
//                 later turn of the strand
//   close         close the socket; close_reason() says why
//
// Deadlines (docs/pop3.md): a command must arrive whole within idle_timeout
// (RFC 1939's autologout: closed without a reply, nothing removed); the TLS
// handshake (implicit TLS or after STLS) within handshake_timeout; a batch of
// replies must be taken within write_timeout. Under slot pressure each is cut
// to pressure_timeout. An evicted connection answers "-ERR [SYS/TEMP] ..." at
// its next wait (deadline() says "now" once the slot is marked). A stop
// answers every connection waiting for a command at once; one in the middle
// of a store call finishes it first, within shutdown_grace.
//
// Replies are written whenever the session needs input, before a TLS
// handshake, at close, and before a store call once flush_threshold octets
// are queued (a long pipelined batch of RETRs is not held whole).
//
// Time is a parameter, never read from a clock here (tests drive it with
// scripted bytes and a fake clock: pop3/test/connection_test.cpp).
// Thread-safety: none; one connection is used from one thread or strand at a
// time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <inlet/pop3/session.hpp>
#include <inlet/store/store.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "conn_core.hpp"
#include "driver_buffer.hpp"
#include "driver_common.hpp"
#include "tls.hpp"

namespace inlet::pop3::detail {

using clock = std::chrono::steady_clock;
using smtp::detail::act;
using smtp::detail::action;
using smtp::detail::listener_kind;

/// The server-wide settings a connection follows (one per server, shared);
/// pressure, grace, TLS and the stop are core_policy's (smtp/src/conn_core.hpp).
struct conn_policy : smtp::detail::core_policy {
  clock::duration idle_timeout{std::chrono::minutes(10)};
  clock::duration handshake_timeout{std::chrono::seconds(30)};
  clock::duration write_timeout{std::chrono::seconds(60)};
  /// Queued replies past this are written before the next store call.
  std::size_t flush_threshold = 64 * 1024;
  std::shared_ptr<const session_config> session;
  bool implicit_tls = false;  ///< implicit TLS listeners (listener_kind::smtps): a handshake first
};

/// The store's answer to a call-out.
struct store_answer {
  std::error_code ec;
  std::vector<maildrop_entry> entries;  ///< list
  store::message_ptr message;           ///< fetch
  std::size_t removed = 0;              ///< remove
};

class connection
    : public smtp::detail::basic_connection<connection, conn_policy, errc> {
 public:
  connection(const conn_policy& p, listener_kind k);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void set_remote(std::string, std::uint16_t) noexcept {}  // POP3 answers nobody by address

  /// The greeting (or the implicit-TLS handshake first).
  action start(clock::time_point now);

  // The other results (on_read, on_written, ...) and deadline(): conn_core.hpp.
  /// The store answered the call-out request() asked for.
  action on_answered(store_answer&& a, clock::time_point now);

  /// The call-out's request: list, fetch (session().fetch_id()) or remove
  /// (session().deletions()).
  step_kind request() const noexcept { return request_; }

  const session& protocol() const noexcept { return session_; }
  bool holds_input() const noexcept { return in_ != nullptr; }

 private:
  friend class smtp::detail::basic_connection<connection, conn_policy, errc>;

  action advance(clock::time_point now);
  void begin_session(clock::time_point now);
  void trim_replies() noexcept;

  // ---- the hooks basic_connection calls (smtp/src/conn_core.hpp)
  smtp::detail::driver_input& input();
  bool body_reads() const noexcept { return false; }  // commands are short
  limit input_deadline(clock::time_point now);
  bool keep_reading() const noexcept { return false; }
  bool release_input() noexcept;
  void drop_input() noexcept { in_.reset(); }
  void go_idle() noexcept;
  void landed(std::size_t, clock::time_point) noexcept {}
  clock::time_point waiting_since() const noexcept { return cmd_since_; }
  std::string& reply_buffer() noexcept { return wbuf_; }
  std::string_view plain_output() const noexcept { return wbuf_; }
  clock::duration write_timeout() const noexcept { return p_.write_timeout; }
  void handshake_started(clock::time_point now) noexcept { hs_since_ = now; }
  void handshake_done(clock::time_point now);
  limit handshake_limit() const noexcept { return after(hs_since_, p_.handshake_timeout); }
  void stop_session() {
    if (started_) session_.shutdown();  // else when the handshake is done
  }
  // The grace ran out: the stop's -ERR whatever the state. (An eviction answers
  // -ERR [SYS/TEMP]; the idle timeout is RFC 1939's autologout, no reply.)
  void force_stop() { session_.shutdown(); }

  session session_;
  std::unique_ptr<smtp::detail::driver_input> in_;  // only while busy
  std::string wbuf_;                                // the replies being written

  clock::time_point cmd_since_{};  // the command being waited for, since
  clock::time_point hs_since_{};   // the TLS handshake, since
  step_kind request_ = step_kind::need_more;
  bool implicit_ = false;
  bool started_ = false;    // the session's greeting is queued
  bool line_open_ = false;  // the input consumed so far did not end a line
};

}  // namespace inlet::pop3::detail
