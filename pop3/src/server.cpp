// The POP3 driver: C++20 coroutines on Asio, one per connection plus a
// watchdog, both on the connection's strand. The session decides everything;
// this file moves bytes, runs TLS through inlet::tls (memory BIO, as the SMTP
// core does) and calls the store. See docs/pop3.md.
//
// Admission is the SMTP listeners' (inlet/net/admission.hpp): each connection is
// a slot, idle while it waits for a command with nothing half read, and an
// evicted one is woken on its strand, says -ERR [SYS/TEMP] and closes.
//
// Deadlines: each socket wait sets `deadline_`; the watchdog sleeps until it and
// cancels the socket's pending operation when it has passed, and the waiting
// coroutine then sees `expired_`. A store call has no deadline here: the store
// bounds its own operations.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <inlet/net/admission.hpp>
#include <inlet/pop3/server.hpp>
#include <inlet/store/store.hpp>
#include <inlet/tls/engine.hpp>
#include <mutex>
#include <optional>
#include <thread>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace inlet::pop3 {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clock = std::chrono::steady_clock;
using boost::system::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct counters {
  std::atomic<std::uint64_t> accepted{0}, refused{0}, sign_ins{0}, retrieved{0}, deleted{0};
};

// Replies are written once this much is queued even when more commands wait
// (pipelined RETRs would otherwise pile up whole messages).
constexpr std::size_t flush_threshold = 64 * 1024;

class connection : public std::enable_shared_from_this<connection>, public net::slot {
 public:
  connection(tcp::socket sock, const server_config& cfg,
             std::shared_ptr<const session_config> scfg, const tls::tls_context* tls,
             store::store& st, counters& cnt, const net::admission& adm)
      : sock_(std::move(sock)),
        timer_(sock_.get_executor()),
        cfg_(cfg),
        tls_ctx_(tls),
        store_(st),
        cnt_(cnt),
        adm_(adm),
        session_(std::move(scfg)) {}
  ~connection() override { leave(); }  // before anything wake() may touch goes

  // Called by the admission with its lock held, from any thread: post only.
  void wake() noexcept override {
    if (auto self = weak_from_this().lock()) {
      try {
        asio::post(sock_.get_executor(), [self] {
          if (self->reading_) self->sock_.cancel();
        });
      } catch (...) {  // no memory for the handler: the connection is seen at its next wait
      }
    }
  }

  asio::awaitable<void> serve(net::admit_result admitted);
  asio::awaitable<void> watchdog();
  // On the strand: the server stops.
  void stop() {
    stopping_ = true;
    if (started_) session_.shutdown();  // else serve() does it after the greeting
    if (reading_) sock_.cancel();  // a read ends; a write or a store call finishes first
  }
  asio::any_io_executor executor() { return sock_.get_executor(); }

 private:
  void arm(std::chrono::milliseconds d) {
    deadline_ = clock::now() + d;
    if (timer_.expiry() > deadline_) timer_.cancel();  // wake the watchdog to re-arm
  }
  void disarm() { deadline_ = clock::time_point::max(); }
  asio::awaitable<bool> read_more();
  asio::awaitable<bool> write_plain(std::string_view data);
  asio::awaitable<bool> flush();
  asio::awaitable<bool> handshake();
  asio::awaitable<void> run_store_step(step_kind kind);
  void close();

  tcp::socket sock_;
  asio::steady_timer timer_;
  const server_config& cfg_;
  const tls::tls_context* tls_ctx_;
  store::store& store_;
  counters& cnt_;
  const net::admission& adm_;
  session session_;
  std::unique_ptr<tls::tls_engine> tls_;
  std::string in_;    // plain text not yet consumed by the session
  std::string wbuf_;  // replies being written
  clock::time_point deadline_ = clock::time_point::max();
  bool expired_ = false;
  bool closed_ = false;
  bool reading_ = false;
  bool stopping_ = false;
  bool started_ = false;  // the greeting is queued
};

asio::awaitable<void> connection::watchdog() {
  auto self = shared_from_this();
  while (!closed_) {
    timer_.expires_at(deadline_);
    co_await timer_.async_wait(use_tuple);
    if (closed_) break;
    if (clock::now() >= deadline_) {
      expired_ = true;
      disarm();
      error_code ignored;
      sock_.cancel(ignored);
    }
  }
}

asio::awaitable<bool> connection::write_plain(std::string_view data) {
  // Most replies fit the socket's send buffer: written at once, without a deadline or a
  // suspension; only what the socket does not take waits under write_timeout.
  error_code ec;
  std::size_t n = sock_.write_some(asio::buffer(data), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {}, n = 0;
  if (ec) co_return false;
  data.remove_prefix(n);
  if (data.empty()) co_return true;
  arm(cfg_.write_timeout);
  std::tie(ec, n) = co_await asio::async_write(sock_, asio::buffer(data), use_tuple);
  disarm();
  co_return !ec;
}

asio::awaitable<bool> connection::flush() {
  if (session_.output().empty()) co_return true;
  session_.take_output(wbuf_);
  if (!tls_) co_return co_await write_plain(wbuf_);
  if (tls_->write(wbuf_) != tls::tls_engine::status::ok) co_return false;
  bool ok = co_await write_plain(tls_->output());
  tls_->clear_output();
  co_return ok;
}

// Appends decrypted (or clear) input to in_; false when the peer is gone or
// the idle deadline passed (expired_). Reads land in in_'s spare room, so a read
// allocates nothing once in_ has grown to its working size.
asio::awaitable<bool> connection::read_more() {
  constexpr std::size_t chunk = 16 * 1024;
  for (;;) {
    const std::size_t had = in_.size();
    if (tls_) {
      in_.resize(had + chunk);
      std::size_t n = 0;
      auto st = tls_->read(std::span<char>(in_.data() + had, chunk), n);
      in_.resize(had + (st == tls::tls_engine::status::ok ? n : 0));
      if (st == tls::tls_engine::status::ok) co_return true;
      if (st == tls::tls_engine::status::failed) co_return false;
      if (!tls_->output().empty()) {  // post-handshake messages OpenSSL wants to send
        if (!co_await write_plain(tls_->output())) co_return false;
        tls_->clear_output();
      }
    }
    if (stopping_ || is_evicted()) co_return false;  // stop() or eviction while busy
    arm(adm_.under_pressure() ? std::min(cfg_.idle_timeout, cfg_.pressure_timeout)
                              : cfg_.idle_timeout);
    progress.store(clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    state.store(in_.empty() ? phase::idle : phase::waiting, std::memory_order_relaxed);
    reading_ = true;
    error_code ec;
    std::size_t n = 0;
    if (tls_) {
      std::tie(ec, n) = co_await sock_.async_read_some(tls_->read_space(), use_tuple);
      if (!ec) tls_->commit(n);
    } else {
      in_.resize(had + chunk);
      std::tie(ec, n) =
          co_await sock_.async_read_some(asio::buffer(in_.data() + had, chunk), use_tuple);
      in_.resize(had + (ec ? 0 : n));
    }
    reading_ = false;
    state.store(phase::busy, std::memory_order_relaxed);
    disarm();
    if (ec) co_return false;
    if (!tls_) co_return true;
  }
}

asio::awaitable<bool> connection::handshake() {
  tls_ = std::make_unique<tls::tls_engine>(*tls_ctx_);
  const auto until = clock::now() + cfg_.handshake_timeout;
  for (;;) {
    auto st = tls_->handshake();
    if (!tls_->output().empty()) {
      deadline_ = until;
      timer_.cancel();
      auto [ec, n] = co_await asio::async_write(sock_, asio::buffer(tls_->output()), use_tuple);
      (void)n;
      tls_->clear_output();
      if (ec) co_return false;
    }
    if (st == tls::tls_engine::status::ok) break;
    if (st == tls::tls_engine::status::failed) co_return false;
    deadline_ = until;
    timer_.cancel();
    auto [ec, n] = co_await sock_.async_read_some(tls_->read_space(), use_tuple);
    if (ec) co_return false;
    tls_->commit(n);
  }
  disarm();
  co_return true;
}

asio::awaitable<void> connection::run_store_step(step_kind kind) {
  // Keeps the io_context running while a store completes from its own thread.
  auto work = asio::make_work_guard(sock_.get_executor());
  if (kind == step_kind::list) {
    store::list_request req(0, session_.config().max_messages);
    auto [ec, page] = co_await store_.async_list(std::move(req), use_tuple);
    std::vector<maildrop_entry> entries;
    entries.reserve(page.messages.size());
    for (const auto& m : page.messages) entries.push_back({m->id.str(), m->size});
    if (!ec) cnt_.sign_ins.fetch_add(1, std::memory_order_relaxed);
    session_.list_done(ec, std::move(entries));
  } else if (kind == step_kind::fetch) {
    auto [ec, msg] = co_await store_.async_get(std::string(session_.fetch_id()), use_tuple);
    if (!ec && !msg) ec = store::make_error_code(store::errc::not_found);
    if (!ec) cnt_.retrieved.fetch_add(1, std::memory_order_relaxed);
    session_.fetch_done(ec, ec ? std::string_view{} : std::string_view(msg->raw));
  } else {
    auto which = store::selection::of_ids(session_.deletions());
    auto [ec, n] = co_await store_.async_remove(std::move(which), use_tuple);
    if (!ec) cnt_.deleted.fetch_add(n, std::memory_order_relaxed);
    session_.remove_done(ec, n);
  }
}

asio::awaitable<void> connection::serve(net::admit_result admitted) {
  auto self = shared_from_this();
  if (!net::admitted(admitted)) {  // over a limit: say so where the client can read it
    if (!tls_ctx_ || cfg_.tls == tls_mode::stls)
      co_await write_plain(
          admitted == net::admit_result::full ? "-ERR [SYS/TEMP] too many connections\r\n"
          : admitted == net::admit_result::over_ip
              ? "-ERR [SYS/TEMP] too many connections from your address\r\n"
              : "-ERR [SYS/TEMP] too many connections from your network\r\n");
    close();
    co_return;
  }
  if (tls_ctx_ && cfg_.tls == tls_mode::implicit && !co_await handshake()) {
    close();
    co_return;
  }
  session_.start();
  started_ = true;
  if (stopping_) session_.shutdown();
  for (;;) {
    step st = session_.consume(in_);
    in_.erase(0, st.consumed);
    switch (st.kind) {
      case step_kind::need_more:
        if (!co_await flush()) break;
        if (co_await read_more()) continue;
        if (is_evicted() && sock_.is_open()) {  // the slot is another client's now
          session_.evict();
          continue;
        }
        if (expired_) {  // RFC 1939 3: the autologout closes without a reply
          session_.timeout();
          continue;
        }
        if (stopping_ && sock_.is_open()) continue;  // the read was cancelled: 421-like -ERR
        break;
      case step_kind::list:
      case step_kind::fetch:
      case step_kind::remove:
        if (session_.output().size() >= flush_threshold && !co_await flush()) break;
        co_await run_store_step(st.kind);
        continue;
      case step_kind::start_tls:
        if (!co_await flush()) break;
        in_.clear();
        if (!co_await handshake()) break;
        session_.tls_started();
        continue;
      case step_kind::close:
        co_await flush();
        break;
    }
    break;
  }
  close();
}

void connection::close() {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  timer_.cancel();
  sock_.shutdown(tcp::socket::shutdown_both, ignored);
  sock_.close(ignored);
}

}  // namespace

struct server::impl {
  server_config cfg;
  store::store& messages;
  std::shared_ptr<const session_config> session_cfg;
  std::unique_ptr<tls::tls_context> tls;
  asio::io_context ctx;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor{ctx};
  std::vector<std::thread> threads;
  counters cnt;
  std::mutex mu;
  std::unordered_set<std::shared_ptr<connection>> live;
  net::admission adm;
  std::atomic<bool> stopping{false};
  bool started = false;

  impl(server_config c, store::store& m)
      : cfg(std::move(c)), messages(m), adm(cfg.admission) {}
  asio::awaitable<void> accept_loop();
  void launch(tcp::socket sock);
};

asio::awaitable<void> server::impl::accept_loop() {
  while (!stopping.load()) {
    auto strand = asio::any_io_executor(asio::make_strand(ctx));
    auto [ec, sock] = co_await acceptor.async_accept(strand, use_tuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      continue;  // EMFILE and friends: the next accept may work
    }
    launch(std::move(sock));
  }
}

void server::impl::launch(tcp::socket sock) {
  error_code peer_ec;
  const std::string ip = sock.remote_endpoint(peer_ec).address().to_string();
  error_code ignored;
  sock.set_option(tcp::no_delay(true), ignored);
  sock.non_blocking(true, ignored);  // write_plain tries a direct write first
  auto c = std::make_shared<connection>(std::move(sock), cfg, session_cfg, tls.get(), messages,
                                        cnt, adm);
  // A peer already gone has no address: it is closed at its first read.
  const net::admit_result admitted = adm.admit(*c, peer_ec ? std::string("?") : ip);
  (net::admitted(admitted) ? cnt.accepted : cnt.refused).fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mu);
    live.insert(c);
  }
  auto ex = c->executor();
  asio::co_spawn(ex, c->watchdog(), asio::detached);
  asio::co_spawn(ex, c->serve(admitted), [this, c](std::exception_ptr) {
    // An exception (bad_alloc) ends the connection alone; the socket closes with it.
    c->leave();
    std::lock_guard lock(mu);
    live.erase(c);
  });
  if (stopping.load()) asio::post(ex, [c] { c->stop(); });
}

net::admission_limits default_admission() noexcept {
  net::admission_limits l;
  l.max_total = 1000;
  l.max_per_ip = 1000;
  l.max_per_subnet = 0;
  l.pressure_at(75);
  return l;
}

server::server(server_config cfg, store::store& messages)
    : impl_(std::make_unique<impl>(std::move(cfg), messages)) {}

server::~server() {
  stop();
  wait();
}

std::error_code server::start() {
  impl& m = *impl_;
  if (m.started) return {};
  if (tls::tls_context::load(m.cfg.tls_cert, m.cfg.tls_key, m.tls))
    return make_error_code(errc::bad_config);
  session_config sc = m.cfg.session;
  sc.stls = m.tls && m.cfg.tls == tls_mode::stls;
  m.session_cfg = std::make_shared<const session_config>(std::move(sc));
  error_code ec;
  auto addr = asio::ip::make_address(m.cfg.address, ec);
  if (ec) return make_error_code(errc::bad_config);
  tcp::endpoint ep(addr, m.cfg.port);
  m.acceptor.open(ep.protocol(), ec);
  if (!ec) m.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return ec;
  m.work.emplace(m.ctx.get_executor());
  asio::co_spawn(m.acceptor.get_executor(), m.accept_loop(), asio::detached);
  unsigned n = m.cfg.threads ? m.cfg.threads : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) m.threads.emplace_back([&m] { m.ctx.run(); });
  m.started = true;
  return {};
}

std::string server::address() const {
  error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? std::string() : ep.address().to_string();
}

std::uint16_t server::port() const {
  error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void server::stop() {
  impl& m = *impl_;
  if (!m.started || m.stopping.exchange(true)) return;
  asio::post(m.acceptor.get_executor(), [&m] {
    error_code ignored;
    m.acceptor.close(ignored);
  });
  std::lock_guard lock(m.mu);
  for (const auto& c : m.live) asio::post(c->executor(), [c] { c->stop(); });
  m.work.reset();  // run() returns once the last connection is gone
}

void server::wait() {
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
  impl_->threads.clear();
}

server_stats server::stats() const {
  const counters& c = impl_->cnt;
  server_stats s;
  s.connections_accepted = c.accepted.load(std::memory_order_relaxed);
  s.connections_refused = c.refused.load(std::memory_order_relaxed);
  s.connections_evicted = impl_->adm.evicted();
  s.under_pressure = impl_->adm.under_pressure();
  s.active_connections = impl_->adm.active();
  s.sign_ins = c.sign_ins.load(std::memory_order_relaxed);
  s.messages_retrieved = c.retrieved.load(std::memory_order_relaxed);
  s.messages_deleted = c.deleted.load(std::memory_order_relaxed);
  return s;
}

}  // namespace inlet::pop3

namespace inlet::pop3 {

void server::append_metrics(std::string& out) const {
  const server_stats s = stats();
  char text[1024];
  std::snprintf(
      text, sizeof text,
      "# TYPE inlet_pop3_connections_total counter\ninlet_pop3_connections_total %llu\n"
      "# TYPE inlet_pop3_connections_refused_total counter\n"
      "inlet_pop3_connections_refused_total %llu\n"
      "# TYPE inlet_pop3_connections_evicted_total counter\n"
      "inlet_pop3_connections_evicted_total %llu\n"
      "# TYPE inlet_pop3_connections_active gauge\ninlet_pop3_connections_active %llu\n"
      "# TYPE inlet_pop3_sign_ins_total counter\ninlet_pop3_sign_ins_total %llu\n"
      "# TYPE inlet_pop3_messages_retrieved_total counter\n"
      "inlet_pop3_messages_retrieved_total %llu\n"
      "# TYPE inlet_pop3_messages_deleted_total counter\n"
      "inlet_pop3_messages_deleted_total %llu\n",
      static_cast<unsigned long long>(s.connections_accepted),
      static_cast<unsigned long long>(s.connections_refused),
      static_cast<unsigned long long>(s.connections_evicted),
      static_cast<unsigned long long>(s.active_connections),
      static_cast<unsigned long long>(s.sign_ins),
      static_cast<unsigned long long>(s.messages_retrieved),
      static_cast<unsigned long long>(s.messages_deleted));
  out += text;
}

}  // namespace inlet::pop3
