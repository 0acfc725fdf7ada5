// inlet::pop3::detail::connection — POP3's connection core: pop3::session
// plus the policy around it, run by the SMTP server's I/O drivers through
// the same actions as SMTP's core (smtp/src/connection.hpp):
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

#include "driver_buffer.hpp"
#include "driver_common.hpp"
#include "tls.hpp"

namespace inlet::pop3::detail {

using clock = std::chrono::steady_clock;
using smtp::detail::act;
using smtp::detail::action;
using smtp::detail::listener_kind;

/// The server-wide settings a connection follows (one per server, shared).
struct conn_policy {
  clock::duration idle_timeout{std::chrono::minutes(10)};
  clock::duration handshake_timeout{std::chrono::seconds(30)};
  clock::duration write_timeout{std::chrono::seconds(60)};
  clock::duration pressure_timeout{std::chrono::seconds(10)};
  /// After a stop: how long a store call in flight may take to be answered.
  clock::duration shutdown_grace{std::chrono::seconds(30)};
  /// A last reply (eviction, the end of the grace) may take this long to be written.
  clock::duration last_word_timeout{std::chrono::seconds(2)};
  unsigned reads_per_event = 1;
  std::size_t max_command_line = 512;
  /// Queued replies past this are written before the next store call.
  std::size_t flush_threshold = 64 * 1024;
  std::shared_ptr<const session_config> session;
  const smtp::detail::tls_context* tls = nullptr;  ///< null: no TLS
  bool implicit_tls = false;  ///< implicit TLS listeners (listener_kind::smtps): a handshake first
  const std::atomic<bool>* stopping = nullptr;  ///< the server's stop flag, polled
  const std::atomic<bool>* pressure = nullptr;  ///< slot pressure (admission)
};

/// The store's answer to a call-out.
struct store_answer {
  std::error_code ec;
  std::vector<maildrop_entry> entries;  ///< list
  store::message_ptr message;           ///< fetch
  std::size_t removed = 0;              ///< remove
};

class connection {
 public:
  connection(const conn_policy& p, listener_kind k);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void set_remote(std::string, std::uint16_t) noexcept {}  // POP3 answers nobody by address
  void set_slot(net::slot* s) noexcept { slot_ = s; }

  /// The greeting (or the implicit-TLS handshake first).
  action start(clock::time_point now);

  action on_read(std::size_t n, clock::time_point now);
  action on_would_block(clock::time_point now);
  action on_written(clock::time_point now);
  /// The store answered the call-out request() asked for.
  action on_answered(store_answer&& a, clock::time_point now);
  action on_interrupted(clock::time_point now);
  action on_lost(errc why = errc::connection_lost);
  /// Graceful stop (once): true when the pending wait must be cancelled.
  bool on_stop(clock::time_point now);

  buffer::streambuf::mutable_buffers_type read_buffers();
  std::string_view output() const noexcept;
  /// The call-out's request: list, fetch (session().fetch_id()) or remove
  /// (session().deletions()).
  step_kind request() const noexcept { return request_; }

  clock::time_point deadline() const noexcept { return deadline(pressured()); }
  clock::time_point deadline(bool under_pressure) const noexcept;
  act pending() const noexcept { return op_; }
  std::error_code close_reason() const noexcept {
    return reason_ == errc::ok ? std::error_code{} : make_error_code(reason_);
  }
  bool tls() const noexcept { return tls_ != nullptr && !handshaking_; }
  const session& protocol() const noexcept { return session_; }
  bool holds_input() const noexcept { return in_ != nullptr; }

 private:
  enum class then : std::uint8_t { input, call_out, handshake, handshake_more, decrypt, close };
  struct limit {
    clock::time_point normal, pressed;
  };

  smtp::detail::driver_input& in();
  action advance(clock::time_point now);
  action need_input(clock::time_point now);
  action flush(then next, clock::time_point now);
  action handshake(clock::time_point now);
  action decrypt(clock::time_point now);
  action close(errc why);
  action make(act kind, limit deadline, bool idle = false);
  limit after(clock::time_point base, clock::duration timeout) const noexcept {
    return {base + timeout, base + std::min(timeout, p_.pressure_timeout)};
  }
  bool pressured() const noexcept {
    return p_.pressure != nullptr && p_.pressure->load(std::memory_order_relaxed);
  }
  bool evicted() const noexcept { return slot_ != nullptr && slot_->is_evicted(); }
  bool grace_over(clock::time_point now) const noexcept {
    return stop_seen_ && !forced_ && now >= force_at_;
  }
  void begin_session(clock::time_point now);
  void expire(clock::time_point now);
  void trim_replies() noexcept;

  const conn_policy& p_;
  session session_;
  std::unique_ptr<smtp::detail::driver_input> in_;  // only while busy
  std::string wbuf_;                                // the replies being written
  std::unique_ptr<smtp::detail::tls_engine> tls_;
  net::slot* slot_ = nullptr;

  errc reason_ = errc::ok;
  limit op_deadline_{clock::time_point::max(), clock::time_point::max()};
  clock::time_point cmd_since_{};    // the command being waited for, since
  clock::time_point hs_since_{};     // the TLS handshake, since
  clock::time_point force_at_ = clock::time_point::max();  // the end of the shutdown grace
  unsigned reads_left_ = 0;
  act op_ = act::close;
  then after_write_ = then::input;
  step_kind request_ = step_kind::need_more;
  bool implicit_ = false;
  bool started_ = false;  // the session's greeting is queued
  bool handshaking_ = false;
  bool line_open_ = false;  // the input consumed so far did not end a line
  bool would_block_ = false;
  bool extra_read_ = false;
  bool stop_seen_ = false;
  bool forced_ = false;
};

}  // namespace inlet::pop3::detail
