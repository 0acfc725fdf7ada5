// The shared part of the Asio models; see driver_asio.hpp.
#include "driver_asio.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

namespace inlet::smtp::detail {
namespace {

// Opens, binds and listens on every endpoint of cfg.listen, each acceptor with
// an executor from `make_executor()`; appends them and their bound endpoints.
template <class MakeExecutor>
std::error_code open_listeners(const server_config& cfg, MakeExecutor make_executor,
                               std::vector<std::unique_ptr<tcp::acceptor>>& out,
                               std::vector<listen_endpoint>& bound) {
  for (const auto& l : cfg.listen) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(l.address, ec);
    if (ec) return std::make_error_code(std::errc::invalid_argument);
    auto acc = std::make_unique<tcp::acceptor>(make_executor());
    tcp::endpoint ep(addr, l.port);
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return std::error_code(ec.value(), std::system_category());
    auto local = acc->local_endpoint(ec);
    bound.push_back(
        listen_endpoint{local.address().to_string(), local.port(), l.lmtp, l.implicit_tls});
    out.push_back(std::move(acc));
  }
  return {};
}

// Asio's reactor keeps one small state per socket it ever registered at
// once, in a pool it never frees. Allocated one by one as connections
// arrive, those states end up scattered over the heap between the buffers
// and frames of the connections of that moment, and each pins its page long
// after the wave has gone (measured: ~4 KB of RSS per peak connection that
// malloc_trim cannot return). Registering `n` sockets at start, together,
// packs the states the server will need in a few contiguous pages instead.
// Done on the context's own threads once the server is listening, a chunk per turn: the
// server is ready at once (about 25 us a slot: a quarter of a second for 10,000) and a
// connection that arrives meanwhile waits at most one chunk.
void reserve_socket_states(asio::io_context& ctx, std::size_t n) {
  constexpr std::size_t chunk = 256;
  struct job {
    asio::io_context& ctx;
    std::size_t left;
    std::vector<tcp::socket> socks;
    void step(std::shared_ptr<job> self) {
      for (std::size_t i = 0; i < chunk && left > 0; ++i, --left) {
        error_code ec;
        tcp::socket s(ctx);
        s.open(tcp::v4(), ec);
        if (ec) {  // out of descriptors: as many as there were
          left = 0;
          break;
        }
        socks.push_back(std::move(s));
      }
      if (left > 0) asio::post(ctx, [self]() mutable { self->step(self); });
      // else: the sockets close as the job goes, their states staying in the reactor.
    }
  };
  auto j = std::make_shared<job>(job{ctx, n, {}});
  j->socks.reserve(n);
  asio::post(ctx, [j]() mutable { j->step(j); });
}

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

// A connection the server does not take: 421, then shutdown and close (a
// best-effort blocking send of one short line).
void refuse(tcp::socket& s, const server_config& cfg, bool stopping) {
  error_code ig;
  std::string r = stopping ? shutting_down_reply(cfg) : refusal_reply(cfg);
  boost::asio::write(s, boost::asio::buffer(r), ig);
  s.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ig);
  s.close(ig);
}

}  // namespace

// ---------------------------------------------------------------- results

void asio_conn::wake() noexcept {
  try {
    if (auto self = weak_from_this().lock())
      asio::post(sock.get_executor(), [self] {
        error_code ig;
        if (self->armed) self->sock.cancel(ig);  // the wait ends: on_interrupted sees the eviction
      });
  } catch (...) {  // no memory for the handler: the next wait sees the eviction
  }
}

action read_now(asio_conn& c) {
  error_code ec;
  std::size_t n = c.sock.read_some(c.conn.read_buffers(), ec);
  return after_read(c, ec, n);
}

action after_read(asio_conn& c, const error_code& ec, std::size_t n) {
  c.disarm();
  auto now = clock::now();
  if (!ec && n > 0) return c.conn.on_read(n, now);
  if (ec == asio::error::would_block || ec == asio::error::try_again)
    return c.conn.on_would_block(now);
  if (ec == asio::error::operation_aborted) return c.conn.on_interrupted(now);
  return c.conn.on_lost();  // peer closed or reset: an unfinished message is dropped
}

bool write_now(asio_conn& c, asio::const_buffer& rest, action& next) {
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

action after_write(asio_conn& c, const error_code& ec) {
  c.disarm();
  if (!ec) return c.conn.on_written(clock::now());
  if (ec == asio::error::operation_aborted) return c.conn.on_interrupted(clock::now());
  return c.conn.on_lost();
}

// ---------------------------------------------------------------- server

asio_server::asio_server(const server_config& cfg, deliver_fn d)
    : cfg_(cfg),
      hook_(std::move(d)),
      policy_(conn_policy::from(cfg_, &stopping_)),
      adm_(limits_of(cfg), &cnt_.pressure),
      memory_(cfg.release_memory) {
  policy_.pressure = &cnt_.pressure;
}

std::error_code asio_server::start() {
  if (tls_context::load(cfg_.tls_cert, cfg_.tls_key, tls_))
    return make_error_code(errc::bad_config);
  policy_.use(tls_.get(), cfg_);
  unsigned n = cfg_.threads ? cfg_.threads : std::max(1u, std::thread::hardware_concurrency());
  bool per_core = cfg_.model == io_model::async_nn || cfg_.model == io_model::async_n2n;
  std::size_t nctx = per_core ? n : 1;
  for (std::size_t i = 0; i < nctx; ++i)
    ctxs_.push_back(
        std::make_unique<asio::io_context>());  // hint 1 would not wake on cross-thread posts
  if (auto ec = open_listeners(
          cfg_, [this] { return asio::any_io_executor(asio::make_strand(*ctxs_[0])); }, acceptors_,
          bound_)) {
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

asio::io_context& asio_server::next_ctx() {
  return *ctxs_[rr_.fetch_add(1, std::memory_order_relaxed) % ctxs_.size()];
}

// One accept at a time per listener; after each, up to accepts_per_event - 1
// more by non-blocking accept before waiting again.
void asio_server::accept_next(std::size_t i) {
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
void asio_server::take(tcp::socket s, listener_kind kind) {
  cnt_.accepted.fetch_add(1, std::memory_order_relaxed);
  error_code ig;
  auto peer = s.remote_endpoint(ig);
  std::string ip = peer.address().to_string();
  if (stopping_.load()) {
    cnt_.refused.fetch_add(1, std::memory_order_relaxed);
    refuse(s, cfg_, true);
    return;
  }
  auto c = std::make_shared<asio_conn>(std::move(s), policy_, policy_.session(kind));
  if (!admitted(adm_.admit(*c, ip))) {
    cnt_.refused.fetch_add(1, std::memory_order_relaxed);
    refuse(c->sock, cfg_, false);
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

void asio_server::finish(asio_conn& c) {
  c.disarm();
  error_code ig;
  c.sock.shutdown(tcp::socket::shutdown_both, ig);  // io_uring: close alone leaves its ops pending
  c.sock.close(ig);
  adm_.release(c);
}

namespace {

// Free delivery slots of this thread. Slots move between threads with their
// connections (async-1n runs a strand on any thread), so a pool may hold more
// than its thread started; each is freed when its thread ends.
struct slot_pool {
  std::vector<delivery_slot*> free;
  slot_pool() = default;
  slot_pool(const slot_pool&) = delete;
  slot_pool& operator=(const slot_pool&) = delete;
  ~slot_pool() {
    for (delivery_slot* s : free) delete s;
  }
};
thread_local slot_pool slots;

}  // namespace

delivery_slot* delivery_slot::acquire() {
  if (slots.free.empty()) return new delivery_slot;
  delivery_slot* s = slots.free.back();
  slots.free.pop_back();
  return s;
}

void delivery_slot::release(delivery_slot* s) noexcept {
  {
    std::lock_guard lk(s->m);
    ++s->gen;  // every callback of this delivery is stale from now
    s->inline_phase = true;
    s->answered = false;
    s->ready = false;
    s->result.reset();
    s->timer = nullptr;
  }
  s->conn.reset();
  try {
    slots.free.push_back(s);
  } catch (...) {
    delete s;  // no memory to keep it
  }
}

void delivery_slot::answer(std::uint64_t g, delivery_result r) {
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
    s->server->resume_delivery(std::move(s->conn));
  });
}

asio_conn::~asio_conn() {
  if (delivering) delivery_slot::release(delivering);
  leave();
}

bool asio_server::deliver(const std::shared_ptr<asio_conn>& c) {
  delivery_slot* s = delivery_slot::acquire();
  c->delivering = s;
  if (!hook_) {
    s->result = sink_answer(cnt_);
    return true;
  }
  s->server = this;
  const std::uint64_t g = s->gen;  // no answer can change it before release()
  try {
    hook_(c->conn.take_message(), [s, g](delivery_result r) { s->answer(g, std::move(r)); });
  } catch (...) {
    s->answer(g, hook_failed());
  }
  std::lock_guard lk(s->m);
  s->inline_phase = false;
  if (s->answered) return true;
  s->conn = c;  // kept alive until the answer's handler has run
  return false;
}

action asio_server::delivered(asio_conn& c) {
  delivery_slot* s = std::exchange(c.delivering, nullptr);
  count(cnt_, *s->result);
  action next = c.conn.on_delivered(*s->result, clock::now());
  delivery_slot::release(s);
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
clock::duration asio_server::reap_period() const {
  if (stopping_.load()) return std::chrono::milliseconds(10);  // notice the last close soon
  auto shortest = std::min({cfg_.greeting_timeout, cfg_.command_timeout, cfg_.data_timeout,
                            cfg_.message_timeout, cfg_.shutdown_grace, cfg_.pressure_timeout});
  return std::clamp<clock::duration>(shortest / 4, std::chrono::milliseconds(10),
                                     std::chrono::seconds(1));
}

void asio_server::tick() {
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
bool asio_server::reap() {
  constexpr int reap_batch = 256;
  if (!reap_more_) memory_.tick(adm_.active(), clock::now());
  const clock::rep now = clock::now().time_since_epoch().count();
  const bool pressure = adm_.under_pressure();
  std::lock_guard lk(mu_);
  auto it = reap_more_ ? reap_at_ : conns_.begin();
  reap_more_ = false;
  for (int posted = 0; it != conns_.end();) {
    std::shared_ptr<asio_conn> c = it->lock();
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

template <class F>
void asio_server::post_to_each(F f) {
  std::lock_guard lk(mu_);
  for (auto& w : conns_)
    if (auto c = w.lock()) asio::post(c->sock.get_executor(), [c, f] { f(*c); });
}

void asio_server::stop() {
  if (stopping_.exchange(true)) return;
  for (auto& acc : acceptors_)
    asio::post(acc->get_executor(), [a = acc.get()] {
      error_code ig;
      a->close(ig);
    });
  if (reaper_) asio::post(reaper_->get_executor(), [this] { reaper_->cancel(); });
  // Each connection learns of the stop on its strand; the work guards stay
  // until the reaper has seen the last connection go (tick()).
  post_to_each([](asio_conn& c) {
    bool cancel = c.conn.on_stop(clock::now());
    if (c.armed) c.arm();  // the grace may end the wait sooner
    error_code ig;
    if (cancel && c.armed) c.sock.cancel(ig);
  });
}

void asio_server::wait() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

server_stats asio_server::stats() const {
  return stats_of(cnt_, adm_);
}

}  // namespace inlet::smtp::detail
