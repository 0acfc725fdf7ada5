// inlet::smtp::detail::basic_connection — the protocol-independent half of a
// connection core (CRTP), shared by SMTP's core (connection.hpp) and POP3's
// (pop3/src/connection.hpp). It owns the time and channel policy: the
// deadline pair {normal, pressed} and what slot pressure, an eviction and a
// stop's grace do to it, the admission slot's state, the stop bookkeeping,
// the TLS handshake and the decryption into the receive buffer, the
// read/wait choice (reads_per_event), writing the queued replies, close().
//
// The protocol (Derived) keeps what is its own and gives the core these, as
// private members it befriends the core for:
//   session_                  its session: output(), take_output(), closing()
//   advance(now)              feed the session; the next action
//   force_stop()              the grace ran out: the session's last reply now
//   input()                   the receive buffer (made on demand)
//   body_reads()              true: read_buffers() hands out a body-sized span
//   input_deadline(now)       the deadline of the next read
//   keep_reading()            read again before waiting (a body streams in)
//   release_input()           before a wait: give buffers back; true when idle
//   go_idle()                 nothing is held: drop what a busy one keeps
//   drop_input()              close: drop the input (and a body being read)
//   landed(n, now)            n octets were read (before they are decoded)
//   waiting_since()           for the slot: since when the client is waited for
//   reply_buffer()            the string the replies are written from
//   plain_output()            what output() is without TLS
//   write_timeout()           how long a batch of replies may take to be taken
//   handshake_started(now)    a TLS handshake begins
//   handshake_done(now)       it completed: greeting or a fresh session
//   handshake_limit()         its deadline
//   stop_session()            the stop reached the connection: tell the session
//
// Static dispatch only: every hook is inlined into the protocol's own
// translation unit, so SMTP's hot path pays no virtual call and no allocation.
// Thread-safety: none (as the connection).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "admission.hpp"
#include "driver_buffer.hpp"
#include "driver_common.hpp"
#include "tls.hpp"

namespace inlet::smtp::detail {

/// The settings the shared core reads; each protocol's conn_policy adds its own.
struct core_policy {
  /// Under slot pressure every wait and write deadline is at most this.
  clock::duration pressure_timeout{std::chrono::seconds(10)};
  /// After a stop: how long a transaction or store call may still take.
  clock::duration shutdown_grace{std::chrono::seconds(30)};
  /// A last reply (eviction, the end of the grace) may take this long to be written.
  clock::duration last_word_timeout{std::chrono::seconds(2)};
  unsigned reads_per_event = 1;
  std::size_t max_command_line = 512;
  const tls_context* tls = nullptr;             ///< null: no TLS
  const std::atomic<bool>* stopping = nullptr;  ///< the server's stop flag, polled; null: never
  const std::atomic<bool>* pressure = nullptr;  ///< slot pressure (admission.hpp); null: never
};

template <class Derived, class Policy, class Errc>
class basic_connection {
 public:
  /// The admission slot this connection keeps current (progress, state) and
  /// whose eviction it obeys. Null (tests, the process model's children): none.
  void set_slot(slot* s) noexcept { slot_ = s; }

  /// Space to read into (read, wait): ciphertext space under TLS.
  buffer::streambuf::mutable_buffers_type read_buffers() {
    if (tls_) return tls_->read_space();
    return self().input().prepare(self().body_reads());
  }
  std::string_view output() const noexcept {
    if (tls_) return tls_->output();
    return cself().plain_output();
  }

  /// The pending action's deadline (max when it has none), under the slot
  /// pressure of now, or as it is with and without pressure. Computed when
  /// asked, so a change of pressure or an eviction reaches a pending wait.
  clock::time_point deadline() const noexcept { return deadline(pressured()); }
  clock::time_point deadline(bool under_pressure) const noexcept {
    if (op_ == act::call_out || op_ == act::close) return clock::time_point::max();
    clock::time_point d = under_pressure ? op_deadline_.pressed : op_deadline_.normal;
    if ((op_ == act::read || op_ == act::wait) && !forced_ && evicted())
      d = clock::time_point::min();
    if (stop_seen_ && !forced_) d = std::min(d, force_at_);
    return d;
  }
  act pending() const noexcept { return op_; }
  std::error_code close_reason() const noexcept {
    return reason_ == Errc::ok ? std::error_code{} : make_error_code(reason_);
  }
  bool tls() const noexcept { return tls_ != nullptr && !handshaking_; }

  /// n > 0 octets landed in read_buffers().
  action on_read(std::size_t n, clock::time_point now) {
    if (std::exchange(extra_read_, false)) --reads_left_;
    self().landed(n, now);
    if (!tls_) {
      self().input().commit(n);
      return self().advance(now);
    }
    tls_->commit(n);
    return handshaking_ ? handshake(now) : decrypt(now);
  }
  /// A read found nothing.
  action on_would_block(clock::time_point now) {
    extra_read_ = false;
    would_block_ = true;
    return need_input(now);
  }
  action on_written(clock::time_point now) {
    if (tls_) tls_->clear_output();
    switch (after_write_) {
      case then::close:
        return close(Errc::client_quit);
      case then::call_out:
        return make(act::call_out, never());
      case then::handshake:
        self().input().clear();  // nothing pipelined after STARTTLS / STLS is read
        return begin_handshake(now);
      case then::handshake_more:
        return handshake(now);
      case then::decrypt:
        return decrypt(now);
      case then::input:
        if (self().session_.closing() || !self().session_.output().empty())
          return self().advance(now);
        return need_input(now);
    }
    return close(Errc::connection_lost);
  }
  /// The pending wait or write was cancelled: its deadline passed, or
  /// on_stop() asked for it.
  action on_interrupted(clock::time_point now) {
    if (handshaking_) return close(evicted() ? Errc::evicted : Errc::timeout);
    switch (op_) {
      case act::read:
      case act::wait:
        if (now >= deadline()) expire(now);
        return self().advance(now);  // a stop's reply (or the expiry's) is written, then close
      case act::write:               // the peer does not read our replies
        return close(Errc::timeout);
      case act::call_out:
      case act::close:
        break;
    }
    return close(Errc::connection_lost);
  }
  /// The peer went away, an I/O error, or the handshake failed: close.
  action on_lost(Errc why = Errc::connection_lost) { return close(why); }
  /// Graceful stop (once; later calls do nothing). True when the pending
  /// wait must be cancelled (then on_interrupted()); deadline() may have
  /// moved earlier (the grace).
  bool on_stop(clock::time_point now) {
    if (stop_seen_) return false;
    stop_seen_ = true;
    force_at_ = now + p_.shutdown_grace;
    self().stop_session();
    return (op_ == act::read || op_ == act::wait) && self().session_.closing();
  }

 protected:
  // What follows a write.
  enum class then : std::uint8_t { input, call_out, handshake, handshake_more, decrypt, close };
  // A deadline as it is, and as it is under slot pressure.
  struct limit {
    clock::time_point normal, pressed;
  };

  explicit basic_connection(const Policy& p) noexcept
      : p_(p), reads_left_(std::max(1u, p.reads_per_event) - 1) {}
  ~basic_connection() = default;
  basic_connection(const basic_connection&) = delete;
  basic_connection& operator=(const basic_connection&) = delete;

  static constexpr limit never() noexcept {
    return {clock::time_point::max(), clock::time_point::max()};
  }
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
  // The server's stop flag, polled: a connection accepted as the stop begins
  // may miss on_stop().
  void poll_stop(clock::time_point now) {
    if (!stop_seen_ && p_.stopping != nullptr && p_.stopping->load(std::memory_order_relaxed))
      on_stop(now);
  }
  // A wait's deadline passed: the end of the shutdown grace, an eviction (the
  // slot is another client's now), or the protocol's timeout; the session
  // says which reply that is.
  void expire(clock::time_point now) {
    if (grace_over(now)) {
      forced_ = true;
      self().force_stop();
    } else if (evicted()) {
      self().session_.evict();
    } else {
      self().session_.timeout();
    }
  }
  // The session closes: keep its reason (its own error category) unless one
  // is set, write its last replies, then close.
  action finish(const std::error_code& why, const std::error_category& cat,
                clock::time_point now) {
    if (reason_ == Errc::ok && why.category() == cat) reason_ = static_cast<Errc>(why.value());
    return flush(then::close, now);
  }

  // Also tells the admission slot what the connection is doing: busy, or
  // waiting for its client since when (the smaller, the slower).
  action make(act kind, limit deadline, bool idle = false) {
    op_ = kind;
    op_deadline_ = deadline;
    if (slot_ != nullptr) {
      if (kind == act::read || kind == act::wait) {
        slot_->progress.store(cself().waiting_since().time_since_epoch().count(),
                              std::memory_order_relaxed);
        slot_->state.store(idle ? slot::phase::idle : slot::phase::waiting,
                           std::memory_order_relaxed);
      } else {
        slot_->state.store(slot::phase::busy, std::memory_order_relaxed);
      }
    }
    return action{kind, this->deadline(), idle};
  }
  action close(Errc why) {
    if (reason_ == Errc::ok) reason_ = why;
    self().drop_input();
    return make(act::close, never());
  }

  // Writes every queued reply (one write per batch of pipelined commands),
  // then goes on with `next`. A peer that does not take them within the
  // protocol's write timeout is closed (no reply could reach it).
  action flush(then next, clock::time_point now) {
    after_write_ = next;
    if (self().session_.output().empty() && (!tls_ || tls_->output().empty()))
      return on_written(now);
    std::string& wbuf = self().reply_buffer();
    self().session_.take_output(wbuf);  // a stop may queue its reply while this is written
    if (tls_ && tls_->write(wbuf) != tls_engine::status::ok) return close(Errc::tls_failed);
    if (forced_ || evicted()) {  // the last word
      clock::time_point last = now + p_.last_word_timeout;
      return make(act::write, limit{last, last});
    }
    return make(act::write, after(now, cself().write_timeout()));
  }

  // Everything sent so far is handled and answered: read more. Plain TCP
  // reads first without waiting when more bytes are likely there
  // (reads_per_event, or the protocol keeps reading a body); otherwise it
  // waits for readability, holding nothing when nothing is pending (idle).
  action need_input(clock::time_point now) {
    limit dl = self().input_deadline(now);
    op_ = act::wait;
    op_deadline_ = dl;
    if (now >= deadline()) {  // passed already (a slow body, pressure, eviction, the grace)
      would_block_ = false;
      expire(now);
      return self().advance(now);
    }
    bool waited_last = std::exchange(would_block_, false);
    if (!waited_last) {
      if (reads_left_ > 0) {
        extra_read_ = true;
        return make(act::read, dl);
      }
      if (cself().keep_reading()) return make(act::read, dl);
    }
    reads_left_ = std::max(1u, p_.reads_per_event) - 1;
    bool idle = self().release_input();
    if (tls_) tls_->release_for_wait(idle);
    if (idle) self().go_idle();
    return make(act::wait, dl, idle);
  }

  action begin_handshake(clock::time_point now) {
    tls_ = std::make_unique<tls_engine>(*p_.tls);
    handshaking_ = true;
    self().handshake_started(now);
    return handshake(now);
  }
  // The TLS server handshake, one flight at a time: write what OpenSSL
  // produced, wait for the client's next flight, all within one deadline;
  // past it the connection closes silently.
  action handshake(clock::time_point now) {
    tls_engine::status st = tls_->handshake();
    if (st == tls_engine::status::failed) return close(Errc::tls_failed);
    if (st == tls_engine::status::ok) {
      handshaking_ = false;
      self().handshake_done(now);
    }
    if (!tls_->output().empty()) {
      after_write_ = st == tls_engine::status::ok ? then::decrypt : then::handshake_more;
      return make(act::write, cself().handshake_limit());
    }
    if (st == tls_engine::status::ok) return decrypt(now);
    return make(act::wait, cself().handshake_limit());
  }
  // Decrypts every record the ciphertext read so far completes into the
  // receive buffer, then lets the session see it.
  action decrypt(clock::time_point now) {
    driver_input& in = self().input();
    for (;;) {
      std::size_t got = 0;
      tls_engine::status st = tls_engine::status::ok;
      for (auto b : in.prepare(self().body_reads())) {
        std::size_t off = 0;
        while (off < b.size() && st == tls_engine::status::ok) {
          std::size_t n = 0;
          st = tls_->read({static_cast<char*>(b.data()) + off, b.size() - off}, n);
          off += n;
        }
        got += off;
        if (st != tls_engine::status::ok) break;
      }
      in.commit(got);
      if (st == tls_engine::status::failed) return close(Errc::connection_lost);
      if (st == tls_engine::status::want_read) break;
    }
    return self().advance(now);
  }

  const Policy& p_;
  std::unique_ptr<tls_engine> tls_;  // implicit TLS, or after STARTTLS / STLS
  slot* slot_ = nullptr;
  Errc reason_ = Errc::ok;
  limit op_deadline_ = never();
  clock::time_point force_at_ = clock::time_point::max();  // the end of the shutdown grace
  unsigned reads_left_ = 0;  // extra reads before waiting (reads_per_event)
  act op_ = act::close;
  then after_write_ = then::input;
  bool handshaking_ = false;
  bool would_block_ = false;  // the last read found nothing: wait next
  bool extra_read_ = false;   // the pending read is one of reads_per_event's
  bool stop_seen_ = false;
  bool forced_ = false;  // the grace ran out: the session was stopped at once

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
  const Derived& cself() const noexcept { return static_cast<const Derived&>(*this); }
};

}  // namespace inlet::smtp::detail
