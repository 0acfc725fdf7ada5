// inlet::smtp::server: listeners, connection bookkeeping and the I/O models.
// The only Asio-heavy translation unit of inlet::smtp (compile cost, see
// environment.md). The protocol lives in server_session.cpp; each model here is
// a loop over server_session::consume().
#include <inlet/smtp/server.hpp>

#include "driver_buffer.hpp"
#include "driver_common.hpp"
#include "tls_context.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <condition_variable>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

namespace inlet::smtp {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clock = std::chrono::steady_clock;
using boost::system::error_code;
using detail::driver_input;

bool parse_io_model(std::string_view name, io_model& out) noexcept {
  static constexpr std::pair<std::string_view, io_model> names[] = {
      {"coro", io_model::coro},           {"async-1n", io_model::async_1n},
      {"async-nn", io_model::async_nn},   {"async-n2n", io_model::async_n2n},
      {"thread", io_model::thread},       {"stackful", io_model::stackful},
      {"process", io_model::process},
  };
  for (auto& [n, m] : names)
    if (n == name) {
      out = m;
      return true;
    }
  return false;
}

std::string_view to_string(io_model m) noexcept {
  switch (m) {
    case io_model::coro: return "coro";
    case io_model::async_1n: return "async-1n";
    case io_model::async_nn: return "async-nn";
    case io_model::async_n2n: return "async-n2n";
    case io_model::thread: return "thread";
    case io_model::stackful: return "stackful";
    case io_model::process: return "process";
  }
  return "coro";
}

namespace {

constexpr auto tok = asio::as_tuple(asio::use_awaitable);

// One connection of the async models, shaped for idle connections (see
// docs/buffer.md, "Idle connections"): it holds only what must survive while
// the peer is silent. The receive buffer, the message body and the coroutine
// frame exist only while the connection is busy: an idle connection is a
// pending readiness wait whose handler owns the connection, and the coroutine
// is spawned again when the socket becomes readable. There is no timer object
// per connection: `deadline` is checked by the server's reaper (one timer per
// server, see server::impl::reap). TLS state is allocated only by STARTTLS.
//
// Ownership: a shared_ptr held by the coroutine while busy, by the readiness
// handler while idle; the server's registry holds a weak_ptr. Touched only on
// its strand, except `deadline`, which the reaper reads from any thread.
struct async_conn {
  static constexpr clock::rep no_deadline = std::numeric_limits<clock::rep>::max();
  explicit async_conn(tcp::socket s, session_config cfg)
      : sock(std::move(s)), session(std::move(cfg)) {}
  tcp::socket sock;
  std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;
  server_session session;
  std::string wbuf;          // replies being written
  std::string ip;
  std::unique_ptr<std::string> flat_storage;  // --receive-buffer flat only: kept while idle
  std::atomic<clock::rep> deadline{no_deadline};  // of the current wait (steady_clock ticks)
  clock::time_point cmd_deadline{};  // the next command read's deadline (kept across idle)
  bool started = false;
  bool first_read = true;
  bool timed_out = false;
  bool reading = false;
  bool writing = false;  // a reply write with a deadline (a peer that stops reading)

  void arm(clock::time_point t) noexcept {
    deadline.store(t.time_since_epoch().count(), std::memory_order_relaxed);
    reading = true;
  }
  void arm_write(clock::time_point t) noexcept {
    deadline.store(t.time_since_epoch().count(), std::memory_order_relaxed);
    writing = true;
  }
  void disarm() noexcept {
    deadline.store(no_deadline, std::memory_order_relaxed);
    reading = writing = false;
  }
  // On the strand, when the reaper saw the deadline pass: the wait ends with
  // operation_aborted and the driver answers 421 4.4.2 (a read) or closes (a write).
  void expire() {
    if (!(reading || writing) ||
        clock::now().time_since_epoch().count() < deadline.load(std::memory_order_relaxed))
      return;
    timed_out = true;
    error_code ig;
    sock.cancel(ig);
  }
};

}  // namespace

struct server::impl {
  impl(server_config c, deliver_fn d)
      : cfg(std::move(c)), deliver(std::move(d)),
        adm(cfg.max_connections, cfg.max_connections_per_ip) {}

  server_config cfg;
  deliver_fn deliver;
  std::vector<std::unique_ptr<asio::io_context>> ctxs;
  std::vector<std::thread> threads;
  // Keep every io_context running while the server accepts (the per-core
  // contexts of async-nn/n2n have no work of their own until a connection lands).
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::vector<listen_endpoint> bound;
  std::vector<int> listen_fds;  // thread model: read by stop(), fixed after start()
  std::optional<asio::ssl::context> ssl;
  std::atomic<bool> stopping{false};
  std::atomic<bool> started{false};
  std::atomic<std::size_t> rr{0};

  detail::admission adm;             // total and per-IP connection limits
  std::mutex mu;                     // guards async_conns; stop_cv waits on it
  std::list<std::weak_ptr<async_conn>> async_conns;  // pruned by reap()

  detail::driver_counters cnt;  // accepted, refused, delivered, rejected, queue ids
  std::unique_ptr<detail::model_driver> ext;  // stackful, process: a driver in its own file
  std::thread grace_watch;                    // async models: enforces cfg.shutdown_grace
  std::condition_variable stop_cv;            // wakes grace_watch at stop()

  session_config session_cfg(bool lmtp) const {
    session_config s = cfg.session;
    s.lmtp = lmtp;
    s.starttls = ssl.has_value() && cfg.model != io_model::thread;  // thread: blocking loop, no TLS
    return s;
  }

  // The deliver hook and the counters, shared with the drivers in their own files.
  void call_deliver(received_message&& msg, delivery_callback done) {
    detail::call_deliver(deliver, cnt, std::move(msg), std::move(done));
  }
  void count(const delivery_result& r) { detail::count(cnt, r); }

  std::error_code bind_all();
  void start_async();
  asio::awaitable<void> accept_loop(tcp::acceptor& acc, bool lmtp);
  void take(tcp::socket s, bool lmtp);
  asio::awaitable<void> run_conn(std::shared_ptr<async_conn> c, std::optional<error_code> woke);
  void wait_idle(std::shared_ptr<async_conn> c);
  std::optional<asio::steady_timer> reaper;  // on ctxs[0]; see reap()
  clock::duration reap_period() const;
  void tick();
  bool reap();
  asio::awaitable<bool> flush(async_conn& c);
  asio::awaitable<delivery_result> deliver_async(std::shared_ptr<async_conn> c,
                                                 received_message msg);
  void stop_async();
  void watch_grace();
  template <class F>
  void post_to_each(F f);
  // thread model
  void start_threads();
  void stop_threads();
  void thread_accept_loop(tcp::acceptor& acc, bool lmtp);
  void thread_conn(int fd, bool lmtp, std::string ip, std::uint16_t port);
};

// ---------------------------------------------------------------- binding

std::error_code server::impl::bind_all() {
  if (auto ec = detail::make_tls_context(cfg, ssl)) return ec;
  unsigned n = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
  std::size_t nctx = 1;
  if (cfg.model == io_model::async_nn || cfg.model == io_model::async_n2n) nctx = n;
  for (std::size_t i = 0; i < nctx; ++i)
    ctxs.push_back(std::make_unique<asio::io_context>());  // hint 1 would not wake on cross-thread posts
  return detail::open_listeners(
      cfg, [this] { return asio::any_io_executor(asio::make_strand(*ctxs[0])); }, acceptors, bound);
}

// ---------------------------------------------------------------- async models

void server::impl::start_async() {
  for (auto& ctx : ctxs) guards.push_back(asio::make_work_guard(*ctx));
  grace_watch = std::thread([this] { watch_grace(); });
  reaper.emplace(asio::make_strand(*ctxs[0]));
  tick();
  for (std::size_t i = 0; i < acceptors.size(); ++i)
    asio::co_spawn(acceptors[i]->get_executor(), accept_loop(*acceptors[i], bound[i].lmtp),
                   asio::detached);
  unsigned n = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
  unsigned per_ctx = cfg.model == io_model::async_n2n ? 2 : 1;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (ctxs.size() == 1) per_ctx = n;
  for (std::size_t c = 0; c < ctxs.size(); ++c)
    for (unsigned t = 0; t < per_ctx; ++t)
      threads.emplace_back([this, c, cores, pin = cfg.model == io_model::async_nn] {
        if (pin) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(static_cast<int>(c % cores), &set);
          pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        }
        ctxs[c]->run();
      });
}

asio::awaitable<void> server::impl::accept_loop(tcp::acceptor& acc, bool lmtp) {
  error_code nb;
  if (cfg.accepts_per_event > 1) acc.non_blocking(true, nb);  // the extra accepts must not block
  auto next_ctx = [this]() -> asio::io_context& {
    return *ctxs[rr.fetch_add(1, std::memory_order_relaxed) % ctxs.size()];
  };
  for (;;) {
    auto [ec, s] = co_await acc.async_accept(asio::make_strand(next_ctx()), tok);
    if (ec) {
      if (stopping.load() || ec == asio::error::operation_aborted || !acc.is_open()) co_return;
      continue;  // EMFILE and friends: keep serving the others
    }
    take(std::move(s), lmtp);
    // Accepts per readiness: more connections may wait in the listen queue;
    // take up to accepts_per_event - 1 of them before going back to the loop.
    for (unsigned k = 1; k < cfg.accepts_per_event && !stopping.load(); ++k) {
      tcp::socket more(asio::make_strand(next_ctx()));
      acc.accept(more, ec);
      if (ec) break;  // would_block: the queue is empty (or EMFILE: next time)
      take(std::move(more), lmtp);
    }
  }
}

// A freshly accepted connection: limits, then its coroutine.
void server::impl::take(tcp::socket s, bool lmtp) {
  cnt.accepted.fetch_add(1, std::memory_order_relaxed);
  error_code ig;
  auto peer = s.remote_endpoint(ig);
  std::string ip = peer.address().to_string();
  if (stopping.load() || !adm.admit(ip)) {
    cnt.refused.fetch_add(1, std::memory_order_relaxed);
    detail::refuse(s, cfg, stopping.load());
    return;
  }
  s.set_option(tcp::no_delay(true), ig);
  auto c = std::make_shared<async_conn>(tcp::socket(std::move(s)), session_cfg(lmtp));
  c->ip = ip;
  c->session.set_remote(ip, peer.port());
  {
    std::lock_guard lk(mu);
    async_conns.push_back(c);  // expired entries are pruned by reap()
  }
  asio::co_spawn(c->sock.get_executor(), run_conn(c, std::nullopt), asio::detached);
}

// Writes the queued replies. They are moved out of the session first: stop()
// may queue a 421 while the write is in flight. A peer that stops reading (it
// pipelines and never takes our replies) must not hold the connection forever:
// the write has the command timeout, enforced by the reaper like a read; past
// it the connection is closed (no reply could reach that peer anyway).
asio::awaitable<bool> server::impl::flush(async_conn& c) {
  if (c.session.output().empty()) co_return true;
  c.session.take_output(c.wbuf);
  error_code ec;
  c.arm_write(clock::now() + cfg.command_timeout);
  if (c.tls)
    std::tie(ec, std::ignore) = co_await asio::async_write(*c.tls, asio::buffer(c.wbuf), tok);
  else
    std::tie(ec, std::ignore) = co_await asio::async_write(c.sock, asio::buffer(c.wbuf), tok);
  c.disarm();
  co_return !ec && !c.timed_out;
}

// Runs the deliver hook. An inline answer is taken at once (no post); a later
// one, from any thread, is posted to the connection's strand, which wakes the
// coroutine by cancelling a timer that exists only while the answer is
// pending (the connection object carries no timer).
asio::awaitable<delivery_result> server::impl::deliver_async(std::shared_ptr<async_conn> c,
                                                             received_message msg) {
  struct pending {
    std::mutex m;
    bool inline_phase = true;
    std::optional<delivery_result> result;
    asio::steady_timer* wake = nullptr;  // touched on the strand only
  };
  auto p = std::make_shared<pending>();
  // Only a weak reference travels with the callback: a copy of it kept alive
  // by the application after it was called must not keep the connection (and
  // its sockets) alive past the server.
  std::weak_ptr<async_conn> wc = c;
  call_deliver(std::move(msg), [p, wc](delivery_result r) {
    std::unique_lock lk(p->m);
    if (p->inline_phase) {
      p->result = std::move(r);
      return;
    }
    lk.unlock();
    auto conn = wc.lock();
    if (!conn) return;  // the connection is gone (server destroyed)
    asio::post(conn->sock.get_executor(), [p, r = std::move(r)]() mutable {
      p->result = std::move(r);
      if (p->wake) p->wake->cancel();
    });
  });
  {
    std::lock_guard lk(p->m);
    p->inline_phase = false;
  }
  if (!p->result) {
    asio::steady_timer wake(c->sock.get_executor(), clock::time_point::max());
    struct unhook {
      pending* p;
      ~unhook() { p->wake = nullptr; }  // also when the frame is destroyed while waiting
    } guard{p.get()};
    p->wake = &wake;
    while (!p->result) co_await wake.async_wait(tok);
  }
  co_return std::move(*p->result);
}

// The non-blocking read after the socket reported readable. A readiness
// report with nothing to read (EAGAIN) is `spurious`.
static std::size_t read_ready(async_conn& c, driver_input& in, bool bulk, error_code& ec,
                              bool& spurious) {
  std::size_t n = c.sock.read_some(in.prepare(bulk), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    ec = {};
    spurious = true;
  }
  return n;
}

enum class read_result { data, again, timeout, closed };

// What a finished wait-and-read means to the loop.
static read_result after_read(async_conn& c, driver_input& in, error_code ec, std::size_t n,
                              bool spurious) {
  c.disarm();
  if (spurious && !c.timed_out) return read_result::again;
  if (!ec && !spurious) {
    in.commit(n);
    c.first_read = false;
    return read_result::data;
  }
  if (c.timed_out) return read_result::timeout;
  if (ec == asio::error::operation_aborted && c.session.closing()) return read_result::again;  // stop(): 421 queued
  return read_result::closed;  // peer closed or reset: an unfinished message is dropped
}

// An idle connection: no coroutine, no buffer, no body, no reply string; one
// pending readiness wait whose handler owns the connection and spawns the
// coroutine again when the peer speaks (or stop()/the reaper cancel the wait).
void server::impl::wait_idle(std::shared_ptr<async_conn> c) {
  tcp::socket& sock = c->sock;
  sock.async_wait(tcp::socket::wait_read, [this, c = std::move(c)](error_code ec) mutable {
    auto ex = c->sock.get_executor();
    asio::co_spawn(ex, run_conn(std::move(c), ec), asio::detached);
  });
}

asio::awaitable<void> server::impl::run_conn(std::shared_ptr<async_conn> c,
                                             std::optional<error_code> woke) {
  server_session& s = c->session;
  if (cfg.flat_receive_buffer && !c->flat_storage) c->flat_storage = std::make_unique<std::string>();
  driver_input in(cfg.read_buffer_size, cfg.session.max_command_line, c->flat_storage.get());
  detail::body_collector body(cfg.body_observer, in);  // after `in`: dropped before it
  error_code ig;
  if (!c->started) {
    c->started = true;
    c->sock.non_blocking(true, ig);
    if (stopping.load()) s.shutdown();
    s.start();
    c->cmd_deadline = clock::now() + cfg.greeting_timeout;
  }
  auto body_deadline = clock::time_point::max();
  unsigned reads_left = cfg.reads_per_event > 1 ? cfg.reads_per_event - 1 : 0;
  bool open = true;
  if (woke) {  // respawned by wait_idle(): the readiness wait has completed
    error_code ec = *woke;
    bool spurious = false;
    std::size_t n = ec ? 0 : read_ready(*c, in, false, ec, spurious);
    read_result r = after_read(*c, in, ec, n, spurious);
    if (r == read_result::timeout) s.timeout();
    if (r == read_result::closed) open = false;
  }
  while (open) {
    if (!s.shutting_down() && stopping.load(std::memory_order_relaxed)) s.shutdown();
    std::string_view view = in.view();
    step st = s.consume(view);
    if (st.kind == step_kind::body_data) body.add(st.data, s.body_size());  // no copy
    bool again = in.consumed(view, st.consumed, st.kind == step_kind::need_more);
    switch (st.kind) {
      case step_kind::body_data: continue;
      case step_kind::message_aborted: body.abort(); continue;
      case step_kind::message_complete: {
        received_message msg = body.complete(s.take_envelope(), s.body_size());
        body_deadline = clock::time_point::max();
        delivery_result r = co_await deliver_async(c, std::move(msg));
        count(r);
        s.delivery_done(r);
        c->cmd_deadline = clock::now() + cfg.command_timeout;
        continue;
      }
      case step_kind::start_tls: {
        if (!co_await flush(*c)) open = false;
        in.clear();  // RFC 3207 4.2: discard whatever was pipelined after STARTTLS
        if (!open) break;
        c->tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(c->sock, *ssl);
        c->arm(clock::now() + cfg.command_timeout);  // the reaper cancels a stalled handshake
        auto [hec] = co_await c->tls->async_handshake(asio::ssl::stream_base::server, tok);
        c->disarm();
        if (hec || c->timed_out) open = false;
        else s.tls_started();
        c->cmd_deadline = clock::now() + cfg.command_timeout;
        continue;
      }
      case step_kind::close:
        co_await flush(*c);
        open = false;
        continue;
      case step_kind::need_more:
        if (again) continue;  // the next readable span follows
        break;
    }
    if (!open) break;
    if (!co_await flush(*c)) break;
    if (s.closing()) continue;  // stop() ran while we were writing: 421 is queued
    // Deadlines: a command line must arrive whole within command_timeout (bytes
    // trickled in do not extend it); a body read within data_timeout, the whole
    // body within message_timeout.
    clock::time_point deadline = c->cmd_deadline;
    if (s.in_body()) {
      if (body_deadline == clock::time_point::max()) body_deadline = clock::now() + cfg.message_timeout;
      deadline = std::min(clock::now() + cfg.data_timeout, body_deadline);
    } else {
      body_deadline = clock::time_point::max();
      if (in.empty() && !c->first_read) deadline = c->cmd_deadline = clock::now() + cfg.command_timeout;
    }
    std::size_t n = 0;
    error_code ec;
    bool would_block = false;  // a read just found the socket empty
    if (reads_left > 0 && !c->tls) {  // seed 003: read again before returning to the loop
      n = c->sock.read_some(in.prepare(s.in_body()), ec);
      if (!ec) {
        --reads_left;
        in.commit(n);
        c->first_read = false;
        continue;
      }
      if (ec != asio::error::would_block) {
        open = false;
        continue;
      }
      would_block = true;
    }
    reads_left = cfg.reads_per_event > 1 ? cfg.reads_per_event - 1 : 0;
    if (clock::now() >= deadline) {
      s.timeout();
      continue;
    }
    c->arm(deadline);
    bool spurious = false;
    if (c->tls) {
      // The SSL layer may hold decrypted or undecrypted bytes the TCP socket
      // does not show, so waiting for socket readability could stall: TLS
      // connections read directly into prepared space.
      std::tie(ec, n) = co_await c->tls->async_read_some(in.prepare(s.in_body()), tok);
    } else {
      // Wait for readability first and only then take fragments: an idle
      // connection holds no buffer memory. In a body more bytes are usually
      // there already: read speculatively first (what async_read_some does),
      // which saves a reactor round trip per read.
      bool got = false;
      if (s.in_body() && !would_block) {
        n = c->sock.read_some(in.prepare(true), ec);
        got = !ec || (ec != asio::error::would_block && ec != asio::error::try_again);
        if (!got) ec = {};
      }
      if (!got) in.release_for_wait(s.in_body() || body.holding());
      // Not idle while BDAT chunks of an unfinished message are held: the body
      // lives in this frame (and, flat, in `in`), so it waits here instead.
      if (!got && in.empty() && !s.in_body() && s.output().empty() && !body.holding()) {
        // Idle: give back the reply strings' capacity and let this frame go.
        std::string().swap(c->wbuf);
        std::string none;
        s.take_output(none);
        wait_idle(std::move(c));
        co_return;
      }
      if (!got) std::tie(ec) = co_await c->sock.async_wait(tcp::socket::wait_read, tok);
      if (!got && !ec) n = read_ready(*c, in, s.in_body(), ec, spurious);
    }
    read_result r = after_read(*c, in, ec, n, spurious);
    if (r == read_result::timeout) s.timeout();
    if (r == read_result::closed) open = false;
  }
  c->disarm();
  c->sock.shutdown(tcp::socket::shutdown_both, ig);
  c->sock.close(ig);
  adm.release(c->ip);
}

// Shutdown grace (async models): started with the server, it sleeps until
// stop(); if connections are still open cfg.shutdown_grace later, each gets
// shutdown_now() (421 4.3.2) and its pending I/O is cancelled; a connection
// still open 2 s after that (a client not reading our 421) is closed.
void server::impl::watch_grace() {
  {
    std::unique_lock lk(mu);
    stop_cv.wait(lk, [&] { return stopping.load(); });
  }
  if (adm.wait_idle_until(clock::now() + cfg.shutdown_grace)) return;
  post_to_each([](async_conn& c) {
    c.session.shutdown_now();
    error_code ig;
    c.sock.cancel(ig);
  });
  if (adm.wait_idle_until(clock::now() + std::chrono::seconds(2))) return;
  post_to_each([](async_conn& c) {
    error_code ig;
    c.sock.shutdown(tcp::socket::shutdown_both, ig);  // io_uring: close alone leaves its ops pending
    c.sock.close(ig);
  });
}

template <class F>
void server::impl::post_to_each(F f) {
  std::lock_guard lk(mu);
  for (auto& w : async_conns)
    if (auto c = w.lock()) asio::post(c->sock.get_executor(), [c, f] { f(*c); });
}

// Deadlines of the async models: one timer per server ticks every
// reap_period() and scans the registry; a connection whose wait is past its
// deadline gets expire() posted to its strand. Timeouts are therefore late by
// at most one period (a quarter of the shortest timeout, 10 ms to 1 s), and
// a read costs one relaxed store instead of arming a timer. The scan is
// O(connections) per tick: about 10,000 weak_ptr locks a second at 10,000
// connections. It also prunes connections that are gone. After stop() it
// keeps ticking until the last connection has closed.
clock::duration server::impl::reap_period() const {
  if (stopping.load()) return std::chrono::milliseconds(10);  // notice the last close soon
  auto shortest = std::min({cfg.greeting_timeout, cfg.command_timeout, cfg.data_timeout,
                            cfg.message_timeout});
  return std::clamp<clock::duration>(shortest / 4, std::chrono::milliseconds(10),
                                     std::chrono::seconds(1));
}

void server::impl::tick() {
  reaper->expires_after(reap_period());
  reaper->async_wait([this](error_code ec) {
    if (ec && !stopping.load()) return;  // stop() cancels the wait to shorten the period
    if (reap()) return tick();
    // Stopping and every connection is gone: only now may the io_contexts run
    // out of work. Releasing the guards earlier (in stop()) let a context whose
    // connections had all just finished return from run() while a handler that
    // stop() had posted to one of them was still queued there: the handler held
    // the connection, the reaper waited for it, and wait() never returned.
    for (auto& g : guards) g.reset();
  });
}

// Returns false when the server is stopping and no connection is left.
bool server::impl::reap() {
  const clock::rep now = clock::now().time_since_epoch().count();
  std::lock_guard lk(mu);
  for (auto it = async_conns.begin(); it != async_conns.end();) {
    std::shared_ptr<async_conn> c = it->lock();
    if (!c) {
      it = async_conns.erase(it);
      continue;
    }
    if (c->deadline.load(std::memory_order_relaxed) <= now)
      asio::post(c->sock.get_executor(), [c] { c->expire(); });
    ++it;
  }
  return !(stopping.load() && async_conns.empty());
}

void server::impl::stop_async() {
  for (auto& acc : acceptors) {
    asio::post(acc->get_executor(), [a = acc.get()] {
      error_code ig;
      a->close(ig);
    });
  }
  asio::post(reaper->get_executor(), [this] { reaper->cancel(); });
  {
    std::lock_guard lk(mu);
    stop_cv.notify_all();
  }
  // The work guards stay until the reaper has seen the last connection go
  // (tick()), so every handler posted here runs.
  post_to_each([](async_conn& c) {
    c.session.shutdown();
    error_code ig;
    if (c.session.closing() && c.reading) c.sock.cancel(ig);
  });
}


// ---------------------------------------------------------------- thread model
// Blocking sockets, one thread per connection. The session loop is in
// driver_thread.cpp (shared with the process model).


void server::impl::start_threads() {
  for (auto& acc : acceptors) listen_fds.push_back(acc->native_handle());
  for (std::size_t i = 0; i < acceptors.size(); ++i)
    threads.emplace_back([this, i] { thread_accept_loop(*acceptors[i], bound[i].lmtp); });
}

// The listening sockets stay open (closed by wait() after the accept threads
// are joined), so these fds cannot have been reused by anything else.
void server::impl::stop_threads() {
  for (int fd : listen_fds) ::shutdown(fd, SHUT_RDWR);  // wakes accept()
}

void server::impl::thread_accept_loop(tcp::acceptor& acc, bool lmtp) {
  while (!stopping.load()) {
    error_code ec;
    tcp::socket s = acc.accept(ec);
    if (ec) {
      if (stopping.load()) break;
      if (ec == asio::error::invalid_argument || ec == asio::error::bad_descriptor) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE: back off
      continue;
    }
    cnt.accepted.fetch_add(1, std::memory_order_relaxed);
    error_code ig;
    auto peer = s.remote_endpoint(ig);
    std::string ip = peer.address().to_string();
    if (stopping.load() || !adm.admit(ip)) {
      cnt.refused.fetch_add(1, std::memory_order_relaxed);
      detail::refuse(s, cfg, stopping.load());
      continue;
    }
    s.set_option(tcp::no_delay(true), ig);
    int fd = s.release(ig);
    try {
      std::thread(&impl::thread_conn, this, fd, lmtp, std::move(ip), peer.port()).detach();
    } catch (const std::system_error&) {
      ::close(fd);
      adm.release(ip);
    }
  }
}

void server::impl::thread_conn(int fd, bool lmtp, std::string ip, std::uint16_t port) {
  {
    timeval tv{0, 250000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    server_session s(session_cfg(lmtp));
    s.set_remote(ip, port);
    detail::blocking_env env{cfg, stopping, [this](received_message&& msg) {
      return detail::deliver_sync(deliver, cnt, std::move(msg));
    }};
    detail::run_blocking_session(fd, s, env);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  adm.release(ip);  // last touch of *this: wait() may return right after
}

// ---------------------------------------------------------------- server

server::server(server_config cfg, deliver_fn deliver)
    : impl_(std::make_unique<impl>(std::move(cfg), std::move(deliver))) {}

server::~server() {
  if (impl_->started.load()) {
    stop();
    wait();
  }
}

std::error_code server::start() {
  if (impl_->started.exchange(true)) return make_error_code(errc::bad_config);
  if (impl_->cfg.listen.empty()) return make_error_code(errc::bad_config);
  if (impl_->cfg.model == io_model::stackful || impl_->cfg.model == io_model::process) {
    impl_->ext = impl_->cfg.model == io_model::stackful
                     ? detail::make_stackful_driver(impl_->cfg, impl_->deliver)
                     : detail::make_process_driver(impl_->cfg, impl_->deliver);
    if (auto ec = impl_->ext->start()) {
      impl_->ext.reset();
      impl_->started = false;
      return ec;
    }
    return {};
  }
  if (auto ec = impl_->bind_all()) {
    impl_->acceptors.clear();
    impl_->started = false;
    return ec;
  }
  if (impl_->cfg.model == io_model::thread) impl_->start_threads();
  else impl_->start_async();
  return {};
}

std::vector<listen_endpoint> server::local_endpoints() const {
  if (impl_->ext) return impl_->ext->local_endpoints();
  return impl_->bound;
}

void server::stop() {
  if (impl_->stopping.exchange(true)) return;
  if (impl_->ext) return impl_->ext->stop();
  if (impl_->cfg.model == io_model::thread) impl_->stop_threads();
  else impl_->stop_async();
}

void server::wait() {
  if (impl_->ext) return impl_->ext->wait();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
  impl_->threads.clear();
  if (impl_->grace_watch.joinable()) impl_->grace_watch.join();
  if (impl_->cfg.model == io_model::thread) {
    for (auto& acc : impl_->acceptors) {
      error_code ig;
      acc->close(ig);
    }
    impl_->adm.wait_idle();
  }
}

server_stats server::stats() const {
  if (impl_->ext) return impl_->ext->stats();
  server_stats s;
  s.connections_accepted = impl_->cnt.accepted.load();
  s.connections_refused = impl_->cnt.refused.load();
  s.messages_delivered = impl_->cnt.delivered.load();
  s.messages_rejected = impl_->cnt.rejected.load();
  s.active_connections = impl_->adm.active();
  return s;
}

}  // namespace inlet::smtp
