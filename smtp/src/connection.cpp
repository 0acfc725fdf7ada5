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

std::string_view connection::output() const noexcept {
  if (tls_) return tls_->output();
  return io_ ? std::string_view(io_->wbuf) : std::string_view();
}

received_message connection::take_message() {
  return std::move(io().msg);
}

connection::connection(const conn_policy& p, std::shared_ptr<const session_config> cfg)
    : p_(p), session_(std::move(cfg)), reads_left_(p.reads_per_event - 1) {}

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

buffer::streambuf::mutable_buffers_type connection::read_buffers() {
  if (tls_) return tls_->read_space();
  return io().in.prepare(session_.in_body());
}

// Computed when asked, so that a change of slot pressure or an eviction
// reaches a wait that is already pending (the driver re-arms it).
clock::time_point connection::deadline(bool under_pressure) const noexcept {
  if (op_ == act::call_out || op_ == act::close) return clock::time_point::max();
  clock::time_point d = under_pressure ? op_deadline_.pressed : op_deadline_.normal;
  if ((op_ == act::read || op_ == act::wait) && !forced_ && evicted()) d = clock::time_point::min();
  if (stop_seen_ && !forced_) d = std::min(d, force_at_);
  return d;
}

connection::limit connection::after(clock::time_point base,
                                    clock::duration timeout) const noexcept {
  return {base + timeout, base + std::min(timeout, p_.pressure_timeout)};
}

// Also tells the admission slot what the connection is doing: busy, or
// waiting for its client since when (the smaller, the slower).
action connection::make(act kind, limit deadline, bool idle) {
  op_ = kind;
  op_deadline_ = deadline;
  if (slot_ != nullptr) {
    if (kind == act::read || kind == act::wait) {
      clock::time_point since = session_.in_body() ? body_progress_ : cmd_since_;
      slot_->progress.store(since.time_since_epoch().count(), std::memory_order_relaxed);
      slot_->state.store(idle ? slot::phase::idle : slot::phase::waiting,
                         std::memory_order_relaxed);
    } else {
      slot_->state.store(slot::phase::busy, std::memory_order_relaxed);
    }
  }
  return action{kind, this->deadline(), idle};
}

action connection::close(errc why) {
  if (reason_ == errc::ok) reason_ = why;
  io_.reset();  // an unfinished message is dropped here (its observer aborted)
  return make(act::close, clock::time_point::max());
}

action connection::start(clock::time_point now) {
  if (p_.stopping != nullptr && p_.stopping->load(std::memory_order_relaxed)) on_stop(now);
  cmd_since_ = now;
  greeting_phase_ = true;
  if (session_.config().implicit_tls && p_.tls != nullptr) {
    // SMTPS: the handshake first, within the greeting timeout; the greeting after it.
    tls_ = std::make_unique<tls_engine>(*p_.tls);
    handshaking_ = true;
    return handshake(now);
  }
  session_.start();
  return advance(now);
}

// Feeds the session until it needs more input, or something else must happen
// first (a delivery, a write, a handshake, the close).
action connection::advance(clock::time_point now) {
  io_state& s = io();
  for (;;) {
    if (!stop_seen_ && p_.stopping != nullptr && p_.stopping->load(std::memory_order_relaxed))
      on_stop(now);
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
        return make(act::call_out, clock::time_point::max());
      case step_kind::start_tls:
        return flush(then::handshake, now);
      case step_kind::close:
        if (reason_ == errc::ok && st.reason.category() == smtp_category())
          reason_ = static_cast<errc>(st.reason.value());
        return flush(then::close, now);
      case step_kind::need_more:
        if (again) continue;  // the next readable span follows
        return flush(then::input, now);
    }
  }
}

// Writes the queued replies (all of them: one write per batch of pipelined
// commands, RFC 2920), then goes on with `next`. A peer that does not take
// our replies within the command timeout is closed (no reply could reach it).
action connection::flush(then next, clock::time_point now) {
  after_write_ = next;
  if (session_.output().empty() && (!tls_ || tls_->output().empty())) return on_written(now);
  std::string& wbuf = io().wbuf;
  session_.take_output(wbuf);  // a stop may queue a 421 while this is written
  if (tls_ && tls_->write(wbuf) != tls_engine::status::ok) return close(errc::tls_failed);
  if (forced_ || evicted()) return make(act::write, now + p_.last_word_timeout);  // the last word
  return make(act::write, after(now, p_.command_timeout));
}

action connection::on_written(clock::time_point now) {
  if (tls_) tls_->clear_output();
  switch (after_write_) {
    case then::close:
      return close(errc::client_quit);
    case then::handshake:
      io().in.clear();  // RFC 3207 4.2: discard whatever was pipelined after STARTTLS
      tls_ = std::make_unique<tls_engine>(*p_.tls);
      handshaking_ = true;
      cmd_since_ = now;  // the whole handshake has the command timeout
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

// The deadline of the next read. A command line must arrive whole within
// command_timeout (bytes trickled in do not extend it). A body must keep up
// min_data_rate (on_read moves body_progress_ by what each read brought, at
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

// Everything sent so far is handled and answered: read more. Plain TCP reads
// first without waiting when more bytes are likely there (reads_per_event,
// inside a body); otherwise it waits for readability, holding nothing when
// nothing is pending (idle).
action connection::need_input(clock::time_point now) {
  limit dl = input_deadline(now);
  op_ = act::wait;
  op_deadline_ = dl;
  if (now >= deadline()) {  // passed already (a body below the rate, pressure, eviction, the grace)
    would_block_ = false;
    expire(now);
    return advance(now);
  }
  bool waited_last = std::exchange(would_block_, false);
  if (!waited_last) {
    if (reads_left_ > 0) {
      extra_read_ = true;
      return make(act::read, dl);
    }
    if (session_.in_body()) return make(act::read, dl);
  }
  reads_left_ = p_.reads_per_event - 1;
  bool in_message = session_.in_body() || (io_ && io_->body.holding());
  if (io_) io_->in.release_for_wait(in_message);
  bool idle = !in_message && (!io_ || io_->in.empty()) && session_.output().empty();
  if (tls_) tls_->release_for_wait(idle);
  if (idle) go_idle();
  return make(act::wait, dl, idle);
}

// Nothing is pending: give back the receive buffer, the body collector and
// the reply strings' capacity.
void connection::go_idle() noexcept {
  io_.reset();
  std::string none;
  session_.take_output(none);  // the session's reply buffer too
  reply_cache.give(std::move(none));
}

action connection::on_read(std::size_t n, clock::time_point now) {
  first_read_ = false;
  if (std::exchange(extra_read_, false)) --reads_left_;
  if (session_.in_body() && body_start_ != clock::time_point::max()) {
    if (p_.min_data_rate == 0) {
      body_progress_ = now;
    } else {
      auto credit = std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(
          static_cast<std::uint64_t>(n) * 1'000'000'000ull / p_.min_data_rate));
      body_progress_ = std::min(now, body_progress_ + credit);
    }
  }
  if (!tls_) {
    io().in.commit(n);
    return advance(now);
  }
  tls_->commit(n);
  return handshaking_ ? handshake(now) : decrypt(now);
}

// The TLS server handshake, one flight at a time: write what OpenSSL
// produced, wait for the client's next flight. It has one deadline, the
// command timeout from STARTTLS on; past it the connection closes silently.
action connection::handshake(clock::time_point now) {
  tls_engine::status st = tls_->handshake();
  if (st == tls_engine::status::failed) return close(errc::tls_failed);
  if (st == tls_engine::status::ok) {
    handshaking_ = false;
    session_.start();        // SMTPS: the greeting, now that it can be sent encrypted
    session_.tls_started();  // STARTTLS: a fresh session on the secured channel
    cmd_since_ = now;
    greeting_phase_ = false;
  }
  if (!tls_->output().empty()) {
    after_write_ = st == tls_engine::status::ok ? then::decrypt : then::handshake_more;
    return make(act::write, after(cmd_since_, p_.command_timeout));
  }
  if (st == tls_engine::status::ok) return decrypt(now);
  return make(act::wait, after(cmd_since_, p_.command_timeout));
}

// Decrypts every record the ciphertext read so far completes into the
// receive buffer, then lets the session see it.
action connection::decrypt(clock::time_point now) {
  driver_input& in = io().in;
  for (;;) {
    std::size_t got = 0;
    tls_engine::status st = tls_engine::status::ok;
    for (auto b : in.prepare(session_.in_body())) {
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
    if (st == tls_engine::status::failed) return close(errc::connection_lost);
    if (st == tls_engine::status::want_read) break;
  }
  return advance(now);
}

action connection::on_would_block(clock::time_point now) {
  extra_read_ = false;
  would_block_ = true;
  return need_input(now);
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

void connection::expire(clock::time_point now) {
  if (grace_over(now)) {
    forced_ = true;
    session_.shutdown_now();  // 421 4.3.2; the message being received is dropped
  } else if (evicted()) {
    session_.evict();  // 421 4.7.0; the slot is another client's now
  } else {
    session_.timeout();  // 421 4.4.2
  }
}

action connection::on_interrupted(clock::time_point now) {
  if (handshaking_) return close(evicted() ? errc::evicted : errc::timeout);
  switch (op_) {
    case act::read:
    case act::wait:
      if (now >= deadline()) expire(now);
      return advance(now);  // a stop's 421 (or the expiry's) is written, then close
    case act::write:        // the peer does not read our replies
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
  if (!session_.shutting_down()) session_.shutdown();
  return (op_ == act::read || op_ == act::wait) && session_.closing();
}

}  // namespace inlet::smtp::detail
