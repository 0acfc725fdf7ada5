// POP3's connection core; see connection.hpp for the actions and deadlines.
#include "connection.hpp"

#include <algorithm>
#include <utility>

namespace inlet::pop3::detail {

using smtp::detail::tls_engine;

connection::connection(const conn_policy& p, listener_kind k)
    : p_(p),
      session_(p.session),
      reads_left_(std::max(1u, p.reads_per_event) - 1),
      implicit_(k == listener_kind::smtps && p.implicit_tls && p.tls != nullptr) {}

connection::~connection() = default;

smtp::detail::driver_input& connection::in() {
  // Commands are short: one fragment per read (prepare(false)); the read size
  // matters only for the scratch window of a line split across fragments.
  if (!in_) in_ = std::make_unique<smtp::detail::driver_input>(4096, p_.max_command_line);
  return *in_;
}

buffer::streambuf::mutable_buffers_type connection::read_buffers() {
  if (tls_) return tls_->read_space();
  return in().prepare(false);
}

std::string_view connection::output() const noexcept {
  if (tls_) return tls_->output();
  return wbuf_;
}

clock::time_point connection::deadline(bool under_pressure) const noexcept {
  if (op_ == act::call_out || op_ == act::close) return clock::time_point::max();
  clock::time_point d = under_pressure ? op_deadline_.pressed : op_deadline_.normal;
  if ((op_ == act::read || op_ == act::wait) && !forced_ && evicted()) d = clock::time_point::min();
  if (stop_seen_ && !forced_) d = std::min(d, force_at_);
  return d;
}

// Also tells the admission slot what the connection is doing: busy, or
// waiting for its client since when (the smaller, the slower).
action connection::make(act kind, limit deadline, bool idle) {
  op_ = kind;
  op_deadline_ = deadline;
  if (slot_ != nullptr) {
    if (kind == act::read || kind == act::wait) {
      slot_->progress.store(cmd_since_.time_since_epoch().count(), std::memory_order_relaxed);
      slot_->state.store(idle ? net::slot::phase::idle : net::slot::phase::waiting,
                         std::memory_order_relaxed);
    } else {
      slot_->state.store(net::slot::phase::busy, std::memory_order_relaxed);
    }
  }
  return action{kind, this->deadline(), idle};
}

action connection::close(errc why) {
  if (reason_ == errc::ok) reason_ = why;
  in_.reset();
  return make(act::close, limit{clock::time_point::max(), clock::time_point::max()});
}

void connection::begin_session(clock::time_point now) {
  session_.start();
  started_ = true;
  cmd_since_ = now;
  if (stop_seen_) session_.shutdown();  // the stop came during the handshake
}

action connection::start(clock::time_point now) {
  cmd_since_ = now;
  if (p_.stopping != nullptr && p_.stopping->load(std::memory_order_relaxed)) on_stop(now);
  if (implicit_) {  // POP3S: the handshake first, the greeting after it
    tls_ = std::make_unique<tls_engine>(*p_.tls);
    handshaking_ = true;
    hs_since_ = now;
    return handshake(now);
  }
  begin_session(now);
  return advance(now);
}

// Feeds the session until it needs more input, or something else must happen
// first (a store call, a write, a handshake, the close).
action connection::advance(clock::time_point now) {
  smtp::detail::driver_input& s = in();
  for (;;) {
    if (!stop_seen_ && p_.stopping != nullptr && p_.stopping->load(std::memory_order_relaxed))
      on_stop(now);
    std::string_view view = s.view();
    step st = session_.consume(view);
    if (st.consumed > 0)
      line_open_ = st.kind == step_kind::need_more && view[st.consumed - 1] != '\n';
    bool again = s.consumed(view, st.consumed, st.kind == step_kind::need_more);
    switch (st.kind) {
      case step_kind::need_more:
        if (again) continue;  // the next readable span follows
        return flush(then::input, now);
      case step_kind::list:
      case step_kind::fetch:
      case step_kind::remove:
        request_ = st.kind;
        if (session_.output().size() >= p_.flush_threshold) return flush(then::call_out, now);
        return make(act::call_out, limit{clock::time_point::max(), clock::time_point::max()});
      case step_kind::start_tls:
        return flush(then::handshake, now);
      case step_kind::close:
        if (reason_ == errc::ok && st.reason.category() == pop3_category())
          reason_ = static_cast<errc>(st.reason.value());
        return flush(then::close, now);
    }
  }
}

// Writes every queued reply, then goes on with `next`. A client that does not
// take them within write_timeout is closed (no reply could reach it).
action connection::flush(then next, clock::time_point now) {
  after_write_ = next;
  if (session_.output().empty() && (!tls_ || tls_->output().empty())) return on_written(now);
  session_.take_output(wbuf_);
  if (tls_ && tls_->write(wbuf_) != tls_engine::status::ok) return close(errc::tls_failed);
  if (forced_ || evicted()) return make(act::write, limit{now + p_.last_word_timeout,
                                                          now + p_.last_word_timeout});
  return make(act::write, after(now, p_.write_timeout));
}

action connection::on_written(clock::time_point now) {
  if (tls_) tls_->clear_output();
  switch (after_write_) {
    case then::close:
      return close(errc::client_quit);
    case then::call_out:
      return make(act::call_out, limit{clock::time_point::max(), clock::time_point::max()});
    case then::handshake:
      in().clear();  // RFC 2595 4: nothing pipelined after STLS is read
      tls_ = std::make_unique<tls_engine>(*p_.tls);
      handshaking_ = true;
      hs_since_ = now;
      return handshake(now);
    case then::handshake_more:
      return handshake(now);
    case then::decrypt:
      return decrypt(now);
    case then::input:
      if (session_.closing() || !session_.output().empty()) return advance(now);
      return need_input(now);
  }
  return close(errc::connection_lost);
}

// Everything sent so far is answered: read more. A command must arrive whole
// within the idle timeout from when the connection began to wait for it
// (bytes trickled in do not extend it).
action connection::need_input(clock::time_point now) {
  if ((!in_ || in_->empty()) && !line_open_) cmd_since_ = now;
  limit dl = after(cmd_since_, p_.idle_timeout);
  op_ = act::wait;
  op_deadline_ = dl;
  if (now >= deadline()) {  // passed already (pressure, eviction, the grace)
    would_block_ = false;
    expire(now);
    return advance(now);
  }
  bool waited_last = std::exchange(would_block_, false);
  if (!waited_last && reads_left_ > 0) {
    extra_read_ = true;
    return make(act::read, dl);
  }
  reads_left_ = std::max(1u, p_.reads_per_event) - 1;
  if (in_) in_->release_for_wait(false);
  bool idle = (!in_ || in_->empty()) && session_.output().empty();
  if (tls_) tls_->release_for_wait(idle);
  if (idle) {
    in_.reset();
    trim_replies();
  }
  return make(act::wait, dl, idle);
}

// An idle connection keeps no large reply buffer: a RETR's reply grew one of the
// two strings (ours and the session's, swapped at each flush) to the message's size.
void connection::trim_replies() noexcept {
  constexpr std::size_t keep = 4096;
  if (wbuf_.capacity() > keep) std::string().swap(wbuf_);
  std::string theirs;
  session_.take_output(theirs);  // empty: everything was written
  if (theirs.capacity() <= keep) session_.take_output(theirs);  // back, capacity and all
}

action connection::on_read(std::size_t n, clock::time_point now) {
  if (std::exchange(extra_read_, false)) --reads_left_;
  if (!tls_) {
    in().commit(n);
    return advance(now);
  }
  tls_->commit(n);
  return handshaking_ ? handshake(now) : decrypt(now);
}

action connection::on_would_block(clock::time_point now) {
  extra_read_ = false;
  would_block_ = true;
  return need_input(now);
}

// The TLS server handshake, one flight at a time, within handshake_timeout
// from its start; past it the connection closes silently.
action connection::handshake(clock::time_point now) {
  tls_engine::status st = tls_->handshake();
  if (st == tls_engine::status::failed) return close(errc::tls_failed);
  if (st == tls_engine::status::ok) {
    handshaking_ = false;
    if (!started_)
      begin_session(now);  // POP3S: the greeting, now that it can be sent encrypted
    else
      session_.tls_started();  // STLS: sign in afresh on the secured channel
    cmd_since_ = now;
  }
  if (!tls_->output().empty()) {
    after_write_ = st == tls_engine::status::ok ? then::decrypt : then::handshake_more;
    return make(act::write, after(hs_since_, p_.handshake_timeout));
  }
  if (st == tls_engine::status::ok) return decrypt(now);
  return make(act::wait, after(hs_since_, p_.handshake_timeout));
}

// Decrypts every record the ciphertext read so far completes into the
// receive buffer, then lets the session see it.
action connection::decrypt(clock::time_point now) {
  smtp::detail::driver_input& input = in();
  for (;;) {
    std::size_t got = 0;
    tls_engine::status st = tls_engine::status::ok;
    for (auto b : input.prepare(false)) {
      std::size_t off = 0;
      while (off < b.size() && st == tls_engine::status::ok) {
        std::size_t n = 0;
        st = tls_->read({static_cast<char*>(b.data()) + off, b.size() - off}, n);
        off += n;
      }
      got += off;
      if (st != tls_engine::status::ok) break;
    }
    input.commit(got);
    if (st == tls_engine::status::failed) return close(errc::connection_lost);
    if (st == tls_engine::status::want_read) break;
  }
  return advance(now);
}

action connection::on_answered(store_answer&& a, clock::time_point now) {
  if (grace_over(now)) forced_ = true;  // the stop's -ERR follows this answer at once
  switch (std::exchange(request_, step_kind::need_more)) {
    case step_kind::list:
      session_.list_done(a.ec, std::move(a.entries));
      break;
    case step_kind::fetch: {
      std::error_code ec = a.ec;
      if (!ec && !a.message) ec = store::make_error_code(store::errc::not_found);
      session_.fetch_done(ec, ec ? std::string_view{} : std::string_view(a.message->raw));
      break;
    }
    case step_kind::remove:
      session_.remove_done(a.ec, a.removed);
      break;
    default:
      break;
  }
  cmd_since_ = now;
  line_open_ = false;
  return advance(now);
}

// A wait's deadline passed: the end of the shutdown grace, an eviction, or
// the idle timeout.
void connection::expire(clock::time_point now) {
  if (grace_over(now)) {
    forced_ = true;
    session_.shutdown();
  } else if (evicted()) {
    session_.evict();  // -ERR [SYS/TEMP]; the slot is another client's now
  } else {
    session_.timeout();  // RFC 1939 3: the autologout closes without a reply
  }
}

action connection::on_interrupted(clock::time_point now) {
  if (handshaking_) return close(evicted() ? errc::evicted : errc::timeout);
  switch (op_) {
    case act::read:
    case act::wait:
      if (now >= deadline()) expire(now);
      return advance(now);  // a stop's -ERR (or the expiry's) is written, then close
    case act::write:
      return close(errc::timeout);
    case act::call_out:
    case act::close:
      break;
  }
  return close(errc::connection_lost);
}

action connection::on_lost(errc why) {
  return close(why);
}

bool connection::on_stop(clock::time_point now) {
  if (stop_seen_) return false;
  stop_seen_ = true;
  force_at_ = now + p_.shutdown_grace;
  if (started_) session_.shutdown();  // else when the handshake is done
  return (op_ == act::read || op_ == act::wait) && session_.closing();
}

}  // namespace inlet::pop3::detail
