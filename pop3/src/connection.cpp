// POP3's connection core; see connection.hpp for the actions and deadlines.
#include "connection.hpp"

#include <algorithm>
#include <utility>

namespace inlet::pop3::detail {

connection::connection(const conn_policy& p, listener_kind k)
    : basic_connection(p),
      session_(p.session),
      implicit_(k == listener_kind::smtps && p.implicit_tls && p.tls != nullptr) {}

connection::~connection() = default;

smtp::detail::driver_input& connection::input() {
  // Commands are short: one fragment per read (prepare(false)); the read size
  // matters only for the scratch window of a line split across fragments.
  if (!in_) in_ = std::make_unique<smtp::detail::driver_input>(4096, p_.max_command_line);
  return *in_;
}

void connection::begin_session(clock::time_point now) {
  session_.start();
  started_ = true;
  cmd_since_ = now;
  if (stop_seen_) session_.shutdown();  // the stop came during the handshake
}

action connection::start(clock::time_point now) {
  cmd_since_ = now;
  poll_stop(now);
  if (implicit_) return begin_handshake(now);  // POP3S: the handshake first, the greeting after it
  begin_session(now);
  return advance(now);
}

// Feeds the session until it needs more input, or something else must happen
// first (a store call, a write, a handshake, the close).
action connection::advance(clock::time_point now) {
  smtp::detail::driver_input& s = input();
  for (;;) {
    poll_stop(now);
    std::string_view view = s.view();
    step st = session_.consume(view);
    if (st.consumed > 0)
      line_open_ = st.kind == step_kind::need_more && view[st.consumed - 1] != '\n';
    bool again = s.consumed(view, st.consumed, st.kind == step_kind::need_more);
    switch (st.kind) {
      case step_kind::need_more:
        if (again) continue;  // the next readable span follows
        return flush(then::input, now);
      case step_kind::start_tls:
        return flush(then::handshake, now);
      case step_kind::close:
        return finish(st.reason, pop3_category(), now);
      case step_kind::list:
      case step_kind::fetch:
      case step_kind::remove:
        request_ = st.kind;
        // A long pipelined batch of RETRs is not held whole.
        if (session_.output().size() >= p_.flush_threshold) return flush(then::call_out, now);
        return make(act::call_out, never());
    }
  }
}

// A command must arrive whole within the idle timeout from when the
// connection began to wait for it (bytes trickled in do not extend it).
connection::limit connection::input_deadline(clock::time_point now) {
  if ((!in_ || in_->empty()) && !line_open_) cmd_since_ = now;
  return after(cmd_since_, p_.idle_timeout);
}

bool connection::release_input() noexcept {
  if (in_) in_->release_for_wait(false);
  return (!in_ || in_->empty()) && session_.output().empty();
}

void connection::go_idle() noexcept {
  in_.reset();
  trim_replies();
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

void connection::handshake_done(clock::time_point now) {
  if (!started_)
    begin_session(now);  // POP3S: the greeting, now that it can be sent encrypted
  else
    session_.tls_started();  // STLS: sign in afresh on the secured channel
  cmd_since_ = now;
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

}  // namespace inlet::pop3::detail
