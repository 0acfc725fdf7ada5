// The sans-io connection core; see connection.hpp for the actions and
// smtp/DESIGN.md ("The connection core") for the rules.
#include "connection.hpp"

#include <algorithm>
#include <utility>

namespace inlet::smtp::detail {

conn_policy conn_policy::from(const server_config& cfg, const std::atomic<bool>* stopping) {
  conn_policy p;
  p.greeting_timeout = cfg.greeting_timeout;
  p.command_timeout = cfg.command_timeout;
  p.data_timeout = cfg.data_timeout;
  p.message_timeout = cfg.message_timeout;
  p.shutdown_grace = cfg.shutdown_grace;
  p.pressure_timeout = cfg.pressure_timeout;
  p.min_data_rate = cfg.min_data_rate;
  p.reads_per_event = std::max(1u, cfg.reads_per_event);
  p.read_buffer_size = cfg.read_buffer_size;
  p.max_command_line = cfg.session.max_command_line;
  p.flat_receive_buffer = cfg.flat_receive_buffer;
  p.observer = &cfg.body_observer;
  p.stopping = stopping;
  p.use(nullptr, cfg);
  return p;
}

void conn_policy::use(const tls_context* ctx, const server_config& cfg) {
  tls = ctx;
  for (listener_kind k : {listener_kind::smtp, listener_kind::lmtp, listener_kind::smtps}) {
    session_config s = cfg.session;
    s.lmtp = k == listener_kind::lmtp;
    s.implicit_tls = k == listener_kind::smtps && ctx != nullptr;
    s.starttls = ctx != nullptr && !s.implicit_tls;
    auto& slot = k == listener_kind::lmtp ? lmtp_session
                 : k == listener_kind::smtps ? smtps_session
                                             : smtp_session;
    slot = std::make_shared<const session_config>(std::move(s));
  }
}

// ---------------------------------------------------------------- body

void body_collector::begin() {
  if (!factory_) return;
  obs_ = (*factory_)();
  if (obs_) obs_->begin();
}

void body_collector::add(std::string_view data, std::uint64_t session_body_size) {
  if (fed_ + data.size() != session_body_size) abort();  // an unfinished body was dropped
  if (fed_ == 0 && factory_) begin();
  fed_ += data.size();
  if (in_.flat()) {
    if (!obs_) {
      in_.piece(data);  // the baseline's copy: one growing string
      return;
    }
    obs_->data(in_.copy_flat_stable(data));
    return;
  }
  if (data.size() >= min_slice) {
    std::error_code ec;
    buffer::segment s = in_.buf().slice(data.data(), data.size(), ec);  // no copy
    if (!ec) {
      if (obs_)
        for (std::string_view piece : s.spans()) obs_->data(piece);
      body_.append(std::move(s));
      return;
    }
  }
  copies_.append(body_, data, [this](std::string_view copy) {
    if (obs_) obs_->data(copy);
  });
}

received_message body_collector::complete(envelope env, std::uint64_t session_body_size) {
  if (fed_ != session_body_size) abort();  // e.g. RSET, then BDAT 0 LAST
  if (fed_ == 0 && factory_) begin();      // an empty body is observed too
  received_message msg{std::move(env), in_.flat() ? in_.take_flat_body() : std::move(body_)};
  body_ = message_body{};
  copies_.reset();  // the body keeps what it refers to; an idle connection holds nothing
  if (obs_) obs_->end();
  msg.observer = std::move(obs_);
  fed_ = 0;
  return msg;
}

void body_collector::abort() noexcept {
  if (obs_) {
    obs_->abort();
    obs_.reset();
  }
  body_.clear();
  copies_.reset();
  in_.drop_flat_body();
  fed_ = 0;
}

// ---------------------------------------------------------------- connection

// What a connection holds only while busy: the receive buffer and the body
// collected from it (the collector refers to the buffer: declared after it,
// destroyed before it). Allocated when a connection wakes and freed when it
// goes idle, so each thread keeps up to 16 freed blocks for the next wakes
// instead of a malloc and free per idle period (connections of a thread are
// busy at the same time under load: one block would rarely be free).
struct connection::io_state {
  io_state(const conn_policy& p, std::string* flat);
  ~io_state();
  static void* operator new(std::size_t n);
  static void operator delete(void* p) noexcept;
  driver_input in;
  body_collector body;
  received_message msg;  // the message being delivered
  std::string wbuf;      // the reply being written (plain text)
};

namespace {
struct io_block_cache {
  static constexpr int capacity = 16;
  void* blocks[capacity];
  int n = 0;
  ~io_block_cache() {
    while (n > 0) ::operator delete(blocks[--n]);
  }
};
thread_local io_block_cache io_cache;

// The reply strings (the session's queue, the one being written) follow the same
// rule: an idle connection gives their capacity back to its thread, a waking one
// takes it, so replies do not grow a new string every message.
struct reply_buffer_cache {
  static constexpr int capacity = 32;
  static constexpr std::size_t first_capacity = 256;  // a pipelined batch's replies
  static constexpr std::size_t max_kept = 4096;
  std::string bufs[capacity];
  int n = 0;
  std::string take() {
    if (n > 0) return std::move(bufs[--n]);
    std::string s;
    s.reserve(first_capacity);
    return s;
  }
  void give(std::string&& s) noexcept {
    if (n == capacity || s.capacity() < first_capacity || s.capacity() > max_kept) return;
    s.clear();
    bufs[n++] = std::move(s);
  }
};
thread_local reply_buffer_cache reply_cache;
}  // namespace

connection::io_state::io_state(const conn_policy& p, std::string* flat)
    : in(p.read_buffer_size, p.max_command_line, flat),
      body(p.observer, in),
      wbuf(reply_cache.take()) {}

connection::io_state::~io_state() {
  reply_cache.give(std::move(wbuf));
}

void* connection::io_state::operator new(std::size_t n) {
  if (io_cache.n > 0) return io_cache.blocks[--io_cache.n];  // n is always sizeof(io_state)
  return ::operator new(n);
}

void connection::io_state::operator delete(void* p) noexcept {
  if (io_cache.n < io_block_cache::capacity)
    io_cache.blocks[io_cache.n++] = p;
  else
    ::operator delete(p);
}

std::string_view connection::plain_output() const noexcept {
  return io_ ? std::string_view(io_->wbuf) : std::string_view();
}

std::string& connection::reply_buffer() {
  return io().wbuf;
}

received_message connection::take_message() {
  return std::move(io().msg);
}

connection::connection(const conn_policy& p, std::shared_ptr<const session_config> cfg)
    : basic_connection(p), session_(std::move(cfg)) {}

connection::~connection() = default;

connection::io_state& connection::io() {
  if (!io_) {
    if (p_.flat_receive_buffer && !flat_storage_) flat_storage_ = std::make_unique<std::string>();
    io_ = std::make_unique<io_state>(p_, flat_storage_.get());
    if (session_.output().empty()) {  // the session's reply queue from the thread's cache
      std::string b = reply_cache.take();
      session_.take_output(b);
      reply_cache.give(std::move(b));
    }
  }
  return *io_;
}

driver_input& connection::input() {
  return io().in;
}

void connection::drop_input() noexcept {
  io_.reset();
}

action connection::start(clock::time_point now) {
  poll_stop(now);
  cmd_since_ = now;
  greeting_phase_ = true;
  // SMTPS: the handshake first, within the greeting timeout; the greeting after it.
  if (session_.config().implicit_tls && p_.tls != nullptr) return begin_handshake(now);
  session_.start();
  return advance(now);
}

// Feeds the session until it needs more input, or something else must happen
// first (a delivery, a write, a handshake, the close).
action connection::advance(clock::time_point now) {
  io_state& s = io();
  for (;;) {
    poll_stop(now);
    std::string_view view = s.in.view();
    const bool commands = !session_.in_body();
    step st = session_.consume(view);
    // Bytes taken without a line end and without a reply: the session is
    // discarding an over-long command line (a BDAT chunk is answered).
    if (st.consumed > 0)
      line_open_ = commands && st.kind == step_kind::need_more && view[st.consumed - 1] != '\n' &&
                   session_.output().empty();
    if (st.kind == step_kind::body_data) s.body.add(st.data, session_.body_size());  // no copy
    bool again = s.in.consumed(view, st.consumed, st.kind == step_kind::need_more);
    switch (st.kind) {
      case step_kind::body_data:
        continue;
      case step_kind::message_aborted:
        s.body.abort();
        continue;
      case step_kind::message_complete:
        s.msg = s.body.complete(session_.take_envelope(), session_.body_size());
        body_start_ = clock::time_point::max();
        return make(act::call_out, never());
      case step_kind::start_tls:
        return flush(then::handshake, now);
      case step_kind::close:
        return finish(st.reason, smtp_category(), now);
      case step_kind::need_more:
        if (again) continue;  // the next readable span follows
        return flush(then::input, now);
    }
  }
}

// The deadline of the next read. A command line must arrive whole within
// command_timeout (bytes trickled in do not extend it). A body must keep up
// min_data_rate (landed() moves body_progress_ by what each read brought, at
// that rate, up to now) and may fall behind by data_timeout; the whole body
// has message_timeout. Under pressure the command and data timeouts are at
// most pressure_timeout.
connection::limit connection::input_deadline(clock::time_point now) {
  if (session_.in_body()) {
    if (body_start_ == clock::time_point::max()) body_start_ = body_progress_ = now;
    limit l = after(body_progress_, p_.data_timeout);
    clock::time_point whole = body_start_ + p_.message_timeout;
    return {std::min(l.normal, whole), std::min(l.pressed, whole)};
  }
  body_start_ = clock::time_point::max();
  if ((!io_ || io_->in.empty()) && !first_read_ && !line_open_) {
    cmd_since_ = now;
    greeting_phase_ = false;
  }
  return after(cmd_since_, greeting_phase_ ? p_.greeting_timeout : p_.command_timeout);
}

// Before a wait: a body being received (or held between BDAT chunks) keeps
// its buffers; otherwise the connection is idle when nothing is pending.
bool connection::release_input() noexcept {
  bool in_message = session_.in_body() || (io_ && io_->body.holding());
  if (io_) io_->in.release_for_wait(in_message);
  return !in_message && (!io_ || io_->in.empty()) && session_.output().empty();
}

// Nothing is pending: give back the receive buffer, the body collector and
// the reply strings' capacity.
void connection::go_idle() noexcept {
  io_.reset();
  std::string none;
  session_.take_output(none);  // the session's reply buffer too
  reply_cache.give(std::move(none));
}

// A body read earns deadline credit at min_data_rate.
void connection::landed(std::size_t n, clock::time_point now) noexcept {
  first_read_ = false;
  if (session_.in_body() && body_start_ != clock::time_point::max()) {
    if (p_.min_data_rate == 0) {
      body_progress_ = now;
    } else {
      auto credit = std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(
          static_cast<std::uint64_t>(n) * 1'000'000'000ull / p_.min_data_rate));
      body_progress_ = std::min(now, body_progress_ + credit);
    }
  }
}

void connection::handshake_done(clock::time_point now) {
  session_.start();        // SMTPS: the greeting, now that it can be sent encrypted
  session_.tls_started();  // STARTTLS: a fresh session on the secured channel
  cmd_since_ = now;
  greeting_phase_ = false;
}

action connection::on_delivered(const delivery_result& r, clock::time_point now) {
  if (grace_over(now)) {  // the hook outlived the grace: its reply is not sent
    forced_ = true;
    session_.shutdown_now();
  }
  session_.delivery_done(r);
  cmd_since_ = now;
  greeting_phase_ = false;
  return advance(now);
}

}  // namespace inlet::smtp::detail
