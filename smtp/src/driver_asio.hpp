// What the Asio models (coro, async-1n/nn/n2n, stackful) share, for any
// protocol plug P (driver_common.hpp): the connection object, accepting and
// admission, the registry of live connections, the deadline reaper, the
// graceful stop, the thread topology, the TLS context (TLS itself runs in the
// connection core) and the bridge from a call-out's answer back to the
// connection's strand. A model adds only its dispatcher: how it waits for an
// action to complete (completion handlers or a stackful fiber), in
// driver_coro.hpp and driver_stackful.hpp.
//
// Templates over the plug so that SMTP's path compiles to what it was before
// there were two protocols: no virtual call between driver and connection core.
//
// Internal to inlet::smtp and the protocols built on its drivers.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "driver_common.hpp"

namespace inlet::smtp::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

// ---------------------------------------------------------------- helpers (driver_asio.cpp)

/// Opens, binds and listens on every endpoint of `listen`, each acceptor with
/// an executor from `make_executor()`; appends them and their bound endpoints.
std::error_code open_listeners(const std::vector<listen_endpoint>& listen,
                               const std::function<asio::any_io_executor()>& make_executor,
                               std::vector<std::unique_ptr<tcp::acceptor>>& out,
                               std::vector<listen_endpoint>& bound);
/// Registers `n` sockets with the context's reactor at start (see the note in
/// driver_asio.cpp).
void reserve_socket_states(asio::io_context& ctx, std::size_t n);
/// A connection the server does not take: `reply` (may be empty), then
/// shutdown and close (a best-effort blocking send of one short line).
void refuse(tcp::socket& s, const std::string& reply);

// The accept operation's memory comes from the heap, not from Asio's
// per-thread recycling cache: a larger accept block left there would be
// taken by the new connection's first wait and held for as long as the
// connection idles (measured: ~100 bytes more per idle connection).
template <class T>
struct plain_allocator {
  using value_type = T;
  plain_allocator() = default;
  template <class U>
  plain_allocator(const plain_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const plain_allocator&, const plain_allocator&) noexcept { return true; }
};

// One connection of an Asio model. It holds only what must survive while the
// peer is silent: an idle connection is a pending readiness wait whose
// handler owns it (see connection::action::idle). There is no timer per
// connection: `deadline` is checked by the server's reaper.
//
// Ownership: a shared_ptr held by whatever waits for it (dispatcher, readiness
// handler); the registry holds a weak_ptr. Touched only on its strand, except
// the two deadlines, which the reaper reads from its own strand, and the
// admission slot it is (admission.hpp), whose wake() posts a cancel to the
// strand. The pending wait's deadline is kept as it is with and without slot
// pressure, so a flip of the pressure needs no work per connection: the
// reaper reads the one that applies.
template <class P>
struct call_slot;

template <class P>
struct asio_conn : std::enable_shared_from_this<asio_conn<P>>, slot {
  static constexpr clock::rep no_deadline = std::numeric_limits<clock::rep>::max();
  asio_conn(tcp::socket s, const P& plug, listener_kind kind)
      : sock(std::move(s)), conn(plug.open(kind)) {
    conn.set_slot(this);
  }
  ~asio_conn() override;
  void wake() noexcept override;
  tcp::socket sock;

  typename P::connection conn;
  // The pending wait's deadline (steady_clock ticks), without and with pressure.
  std::atomic<clock::rep> deadline{no_deadline}, deadline_pressed{no_deadline};
  bool armed = false;  // a wait, write or handshake the reaper may cancel is pending
  call_slot<P>* delivering = nullptr;  // the call-out in progress, if any

  /// The pending action's deadlines, for the reaper.
  void arm() noexcept {
    auto rep = [](clock::time_point t) {
      return t == clock::time_point::max() ? no_deadline : t.time_since_epoch().count();
    };
    deadline.store(rep(conn.deadline(false)), std::memory_order_relaxed);
    deadline_pressed.store(rep(conn.deadline(true)), std::memory_order_relaxed);
    armed = true;
  }
  void disarm() noexcept {
    deadline.store(no_deadline, std::memory_order_relaxed);
    deadline_pressed.store(no_deadline, std::memory_order_relaxed);
    armed = false;
  }
  clock::rep deadline_now(bool under_pressure) const noexcept {
    return (under_pressure ? deadline_pressed : deadline).load(std::memory_order_relaxed);
  }
};

// Results of socket operations as the connection's next action (each ends
// the wait the reaper was watching).
template <class P>
action after_read(asio_conn<P>& c, const error_code& ec, std::size_t n) {
  c.disarm();
  auto now = clock::now();
  if (!ec && n > 0) return c.conn.on_read(n, now);
  if (ec == asio::error::would_block || ec == asio::error::try_again)
    return c.conn.on_would_block(now);
  if (ec == asio::error::operation_aborted) return c.conn.on_interrupted(now);
  return c.conn.on_lost();  // peer closed or reset: an unfinished message is dropped
}

/// A non-blocking read.
template <class P>
action read_now(asio_conn<P>& c) {
  error_code ec;
  std::size_t n = c.sock.read_some(c.conn.read_buffers(), ec);
  return after_read(c, ec, n);
}

/// A readiness wait ended: read, or report why it ended.
template <class P>
action after_wait(asio_conn<P>& c, const error_code& ec) {
  return ec ? after_read(c, ec, 0) : read_now(c);
}

template <class P>
action after_write(asio_conn<P>& c, const error_code& ec) {
  c.disarm();
  if (!ec) return c.conn.on_written(clock::now());
  if (ec == asio::error::operation_aborted) return c.conn.on_interrupted(clock::now());
  return c.conn.on_lost();
}

/// Writes output() without waiting. True when that settled it (`next` is the
/// next action); false when the socket is full: the rest (`rest`) needs an
/// asynchronous write, whose deadline is armed. Replies are small, so this is
/// the usual case.
template <class P>
bool write_now(asio_conn<P>& c, asio::const_buffer& rest, action& next) {
  std::string_view out = c.conn.output();
  error_code ec;
  std::size_t done = c.sock.write_some(asio::buffer(out), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again)
    done = 0;
  else if (ec || done == out.size()) {
    next = after_write(c, ec);
    return true;
  }
  rest = asio::buffer(out) + done;
  c.arm();
  return false;
}

template <class P>
void asio_conn<P>::wake() noexcept {
  try {
    if (auto self = this->weak_from_this().lock())
      asio::post(sock.get_executor(), [self] {
        error_code ig;
        if (self->armed) self->sock.cancel(ig);  // the wait ends: on_interrupted sees the eviction
      });
  } catch (...) {  // no memory for the handler: the next wait sees the eviction
  }
}

template <class P>
class asio_server;

// A call-out's answer for one connection, in a slot that comes from a
// per-thread pool and goes back to it once the answer is taken: a delivery
// allocates nothing. The callback the hook gets holds the slot and its
// generation only (16 trivially copyable bytes, which std::function keeps
// inline); a stale copy of a callback (a second call, or one after the slot
// went on to another call-out) sees another generation and is ignored. The
// hook may answer inline (taken at once) or later from any thread: then the
// answer is posted to the connection's strand, the slot holding the
// connection until that handler has run (asio_server::resume_call).
// A slot is freed only with its thread's pool, when the I/O thread ends.
template <class P>
struct call_slot {
  /// The callback; any thread. Only the first call of generation `g` counts.
  void answer(std::uint64_t g, typename P::answer r);
  static call_slot* acquire();
  static void release(call_slot* s) noexcept;

  std::mutex m;
  std::uint64_t gen = 0;  // guarded by m
  bool inline_phase = true;
  bool answered = false;
  bool ready = false;  // on the strand: the later answer has arrived
  std::optional<typename P::answer> result;
  std::shared_ptr<asio_conn<P>> conn;   // only while a later answer is awaited
  asio::steady_timer* timer = nullptr;  // stackful: what the fiber waits on
  asio_server<P>* server = nullptr;
};

// Free call slots of this thread. Slots move between threads with their
// connections (async-1n runs a strand on any thread), so a pool may hold more
// than its thread started; each is freed when its thread ends.
template <class P>
struct call_slot_pool {
  std::vector<call_slot<P>*> free;
  call_slot_pool() = default;
  call_slot_pool(const call_slot_pool&) = delete;
  call_slot_pool& operator=(const call_slot_pool&) = delete;
  ~call_slot_pool() {
    for (call_slot<P>* s : free) delete s;
  }
};
template <class P>
call_slot_pool<P>& call_slots() {
  thread_local call_slot_pool<P> pool;
  return pool;
}

template <class P>
call_slot<P>* call_slot<P>::acquire() {
  auto& pool = call_slots<P>();
  if (pool.free.empty()) return new call_slot;
  call_slot* s = pool.free.back();
  pool.free.pop_back();
  return s;
}

template <class P>
void call_slot<P>::release(call_slot* s) noexcept {
  {
    std::lock_guard lk(s->m);
    ++s->gen;  // every callback of this call-out is stale from now
    s->inline_phase = true;
    s->answered = false;
    s->ready = false;
    s->result.reset();
    s->timer = nullptr;
  }
  s->conn.reset();
  try {
    call_slots<P>().free.push_back(s);
  } catch (...) {
    delete s;  // no memory to keep it
  }
}

template <class P>
asio_conn<P>::~asio_conn() {
  if (delivering) call_slot<P>::release(delivering);
  leave();
}

template <class P>
class asio_server : public model_driver {
 public:
  template <class... A>
  explicit asio_server(A&&... plug_args)
      : plug_(std::forward<A>(plug_args)...),
        cfg_(plug_.driver()),
        adm_(cfg_.limits, &cnt_.pressure),
        memory_(cfg_.release_memory) {
    plug_.bind(&stopping_, &cnt_.pressure);
  }
  std::error_code start() override;
  std::vector<listen_endpoint> local_endpoints() const override { return bound_; }
  void stop() override;
  void wait() override;
  server_stats stats() const override { return stats_of(cnt_, adm_); }
  P& plug() noexcept { return plug_; }

 protected:
  friend struct call_slot<P>;
  using conn_ptr = std::shared_ptr<asio_conn<P>>;
  /// Runs a connection that was just admitted, from its first action, on
  /// `ex` (the connection's strand).
  virtual void spawn(conn_ptr c, const asio::any_io_executor& ex) = 0;
  /// Starts the connection's call-out. True when the answer came inline:
  /// answered() takes it. False: the answer comes later, and resume_call()
  /// runs on the connection's strand when it has.
  bool call_out(const conn_ptr& c);
  /// The answer of a finished call-out, as the connection's next action.
  action answered(asio_conn<P>& c);
  /// A later answer has arrived (c->delivering->ready): go on with answered().
  virtual void resume_call(conn_ptr c) = 0;

  /// The close action: shut the socket, release the admission slot.
  void finish(asio_conn<P>& c);

  P plug_;
  const driver_config& cfg_;
  std::atomic<bool> stopping_{false};

 private:
  void accept_next(std::size_t i);
  void take(tcp::socket s, listener_kind kind);
  asio::io_context& next_ctx();
  clock::duration reap_period() const;
  void tick();
  bool reap();
  template <class F>
  void post_to_each(F f);

  driver_counters cnt_;
  admission adm_;
  memory_keeper memory_;  // the reaper's
  // The reaper's place in conns_ when a tick had more expirations than it
  // posts at once (reap_batch); the next tick, 10 ms later, goes on from it.
  typename std::list<std::weak_ptr<asio_conn<P>>>::iterator reap_at_;
  bool reap_more_ = false;
  std::unique_ptr<tls_context> tls_;  // when a certificate is configured
  std::vector<std::unique_ptr<asio::io_context>> ctxs_;
  std::vector<std::thread> threads_;
  // Keep every io_context running while the server lives (the per-core
  // contexts of async-nn/n2n have no work of their own until a connection lands).
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
  std::vector<listen_endpoint> bound_;
  std::atomic<std::size_t> rr_{0};
  std::optional<asio::steady_timer> reaper_;      // on a strand of ctxs_[0]; see reap()
  std::mutex mu_;                                 // guards conns_
  std::list<std::weak_ptr<asio_conn<P>>> conns_;  // pruned by reap()
};

template <class P>
void call_slot<P>::answer(std::uint64_t g, typename P::answer r) {
  std::unique_lock lk(m);
  if (g != gen || answered) return;  // the callback runs once; a later call is ignored
  answered = true;
  result = std::move(r);
  if (inline_phase) return;
  lk.unlock();
  // Only a later answer is posted: posting from inside the hook's call can
  // deadlock the strand in Asio 1.26 when many answers come inline in a row.
  // `conn` was set before the hook returned and stays until this handler runs.
  asio::post(conn->sock.get_executor(), [s = this] {
    s->ready = true;
    s->server->resume_call(std::move(s->conn));
  });
}

// ---------------------------------------------------------------- server

template <class P>
std::error_code asio_server<P>::start() {
  if (tls_context::load(cfg_.tls_cert, cfg_.tls_key, tls_))
    return make_error_code(errc::bad_config);
  plug_.use_tls(tls_.get());
  unsigned n = cfg_.threads ? cfg_.threads : std::max(1u, std::thread::hardware_concurrency());
  bool per_core = cfg_.model == io_model::async_nn || cfg_.model == io_model::async_n2n;
  std::size_t nctx = per_core ? n : 1;
  for (std::size_t i = 0; i < nctx; ++i)
    ctxs_.push_back(
        std::make_unique<asio::io_context>());  // hint 1 would not wake on cross-thread posts
  if (auto ec = open_listeners(
          cfg_.listen, [this] { return asio::any_io_executor(asio::make_strand(*ctxs_[0])); },
          acceptors_, bound_)) {
    acceptors_.clear();
    return ec;
  }
  for (auto& ctx : ctxs_) {
    guards_.push_back(asio::make_work_guard(*ctx));
    reserve_socket_states(*ctx,
                          std::min<std::size_t>(cfg_.max_connections, 65536) / ctxs_.size() + 64);
  }
  reaper_.emplace(asio::make_strand(*ctxs_[0]));
  tick();
  for (std::size_t i = 0; i < acceptors_.size(); ++i) {
    error_code nb;
    if (cfg_.accepts_per_event > 1)
      acceptors_[i]->non_blocking(true, nb);  // extra accepts must not block
    asio::post(acceptors_[i]->get_executor(), [this, i] { accept_next(i); });
  }
  unsigned per_ctx = nctx == 1 ? n : (cfg_.model == io_model::async_n2n ? 2 : 1);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t c = 0; c < ctxs_.size(); ++c)
    for (unsigned t = 0; t < per_ctx; ++t)
      threads_.emplace_back([this, c, cores, pin = cfg_.model == io_model::async_nn] {
        if (pin) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(static_cast<int>(c % cores), &set);
          pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        }
        ctxs_[c]->run();
      });
  return {};
}

template <class P>
asio::io_context& asio_server<P>::next_ctx() {
  return *ctxs_[rr_.fetch_add(1, std::memory_order_relaxed) % ctxs_.size()];
}

// One accept at a time per listener; after each, up to accepts_per_event - 1
// more by non-blocking accept before waiting again.
template <class P>
void asio_server<P>::accept_next(std::size_t i) {
  tcp::acceptor& acc = *acceptors_[i];
  auto on_accept = [this, i](error_code ec, tcp::socket s) {
    tcp::acceptor& a = *acceptors_[i];
    if (ec) {
      if (stopping_.load() || ec == asio::error::operation_aborted || !a.is_open()) return;
      return accept_next(i);  // EMFILE and friends: keep serving the others
    }
    take(std::move(s), kind_of(bound_[i]));
    for (unsigned k = 1; k < cfg_.accepts_per_event && !stopping_.load(); ++k) {
      tcp::socket more(asio::make_strand(next_ctx()));
      a.accept(more, ec);
      if (ec) break;  // would_block: the listen queue is empty
      take(std::move(more), kind_of(bound_[i]));
    }
    accept_next(i);
  };
  acc.async_accept(asio::make_strand(next_ctx()),
                   asio::bind_allocator(plain_allocator<void>(), std::move(on_accept)));
}

// A freshly accepted connection: limits (which may evict the slowest
// connection to make room), then its dispatcher.
template <class P>
void asio_server<P>::take(tcp::socket s, listener_kind kind) {
  cnt_.accepted.fetch_add(1, std::memory_order_relaxed);
  error_code ig;
  auto peer = s.remote_endpoint(ig);
  std::string ip = peer.address().to_string();
  if (stopping_.load()) {
    cnt_.refused.fetch_add(1, std::memory_order_relaxed);
    refuse(s, plug_.refusal(true, admit_result::full));
    return;
  }
  auto c = std::make_shared<asio_conn<P>>(std::move(s), plug_, kind);
  if (admit_result r = adm_.admit(*c, ip); !admitted(r)) {
    cnt_.refused.fetch_add(1, std::memory_order_relaxed);
    refuse(c->sock, plug_.refusal(false, r));
    return;
  }
  c->sock.set_option(tcp::no_delay(true), ig);
  c->sock.non_blocking(true, ig);
  c->conn.set_remote(std::move(ip), peer.port());
  {
    std::lock_guard lk(mu_);
    conns_.push_back(c);  // expired entries are pruned by reap()
  }
  auto ex = c->sock.get_executor();
  spawn(std::move(c), ex);
}

template <class P>
void asio_server<P>::finish(asio_conn<P>& c) {
  c.disarm();
  error_code ig;
  c.sock.shutdown(tcp::socket::shutdown_both, ig);  // io_uring: close alone leaves its ops pending
  c.sock.close(ig);
  adm_.release(c);
}

template <class P>
bool asio_server<P>::call_out(const conn_ptr& c) {
  call_slot<P>* s = call_slot<P>::acquire();
  c->delivering = s;
  s->server = this;
  const std::uint64_t g = s->gen;  // no answer can change it before release()
  plug_.call_out(c->conn, cnt_, [s, g](typename P::answer r) { s->answer(g, std::move(r)); });
  std::lock_guard lk(s->m);
  s->inline_phase = false;
  if (s->answered) return true;
  s->conn = c;  // kept alive until the answer's handler has run
  return false;
}

template <class P>
action asio_server<P>::answered(asio_conn<P>& c) {
  call_slot<P>* s = std::exchange(c.delivering, nullptr);
  action next = plug_.answered(c.conn, cnt_, std::move(*s->result), clock::now());
  call_slot<P>::release(s);
  return next;
}

// ---------------------------------------------------------------- deadlines

// One timer per server ticks every reap_period() and scans the registry; a
// connection whose wait is past its deadline gets a cancel posted to its
// strand (the dispatcher then calls on_interrupted(), and the connection
// decides what the deadline meant). Timeouts are late by at most one period
// (a quarter of the shortest timeout, 10 ms to 1 s), and a wait costs one
// relaxed store instead of arming a timer. The scan is O(connections) per
// tick; it also prunes connections that are gone. After stop() it ticks every
// 10 ms until the last connection has closed.
template <class P>
clock::duration asio_server<P>::reap_period() const {
  if (stopping_.load()) return std::chrono::milliseconds(10);  // notice the last close soon
  return std::clamp<clock::duration>(cfg_.shortest_timeout / 4, std::chrono::milliseconds(10),
                                     std::chrono::seconds(1));
}

template <class P>
void asio_server<P>::tick() {
  reaper_->expires_after(reap_more_ ? std::chrono::milliseconds(10) : reap_period());
  reaper_->async_wait([this](error_code ec) {
    if (ec && !stopping_.load()) return;  // stop() cancels the wait to shorten the period
    if (reap()) return tick();
    // Stopping and every connection is gone: only now may the io_contexts run
    // out of work. Released earlier, a context whose connections had all just
    // finished could return from run() while a handler stop() had posted to
    // it was still queued (it held a connection; wait() never returned).
    for (auto& g : guards_) g.reset();
  });
}

// Returns false when the server is stopping and no connection is left. A
// wait's deadline is read as it is under the pressure of now. Thousands of
// connections that arrived together expire together (a hostile wave cut by
// the pressure timeout): at most reap_batch cancels are posted per tick and
// the rest 10 ms later, so the clients being served are not queued behind
// one long burst of closes. After a wave, memory goes back to the system.
template <class P>
bool asio_server<P>::reap() {
  constexpr int reap_batch = 256;
  if (!reap_more_) memory_.tick(adm_.active(), clock::now());
  const clock::rep now = clock::now().time_since_epoch().count();
  const bool pressure = adm_.under_pressure();
  std::lock_guard lk(mu_);
  auto it = reap_more_ ? reap_at_ : conns_.begin();
  reap_more_ = false;
  for (int posted = 0; it != conns_.end();) {
    conn_ptr c = it->lock();
    if (!c) {
      it = conns_.erase(it);
      continue;
    }
    ++it;
    if (c->deadline_now(pressure) > now) continue;
    asio::post(c->sock.get_executor(), [this, c] {
      if (!c->armed ||
          clock::now().time_since_epoch().count() < c->deadline_now(adm_.under_pressure()))
        return;
      error_code ig;
      c->sock.cancel(ig);  // the wait ends with operation_aborted
    });
    if (++posted == reap_batch && it != conns_.end()) {
      reap_at_ = it;
      reap_more_ = true;
      break;
    }
  }
  return !(stopping_.load() && conns_.empty());
}

// ---------------------------------------------------------------- stop

template <class P>
template <class F>
void asio_server<P>::post_to_each(F f) {
  std::lock_guard lk(mu_);
  for (auto& w : conns_)
    if (auto c = w.lock()) asio::post(c->sock.get_executor(), [c, f] { f(*c); });
}

template <class P>
void asio_server<P>::stop() {
  if (stopping_.exchange(true)) return;
  for (auto& acc : acceptors_)
    asio::post(acc->get_executor(), [a = acc.get()] {
      error_code ig;
      a->close(ig);
    });
  if (reaper_) asio::post(reaper_->get_executor(), [this] { reaper_->cancel(); });
  // Each connection learns of the stop on its strand; the work guards stay
  // until the reaper has seen the last connection go (tick()).
  post_to_each([](asio_conn<P>& c) {
    bool cancel = c.conn.on_stop(clock::now());
    if (c.armed) c.arm();  // the grace may end the wait sooner
    error_code ig;
    if (cancel && c.armed) c.sock.cancel(ig);
  });
}

template <class P>
void asio_server<P>::wait() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace inlet::smtp::detail
