// The `stackful` I/O model: one io_context, N threads, a stackful coroutine
// (boost::asio::spawn + yield_context, Boost.Context fibers) per connection on
// its own strand. The loop is the coro driver's, written with `yield[ec]`
// instead of co_await: same session core, same features (STARTTLS,
// reads-per-event, timeouts, limits, graceful stop with grace, LMTP).
//
// Stacks: 256 KiB per connection, protected_fixedsize_stack (mmap with a
// guard page: an overflow faults instead of corrupting a neighbour). Only
// the touched pages are resident; the deliver hook runs on this stack (inletd
// parses and filters there), hence the generous size.
#include "driver_buffer.hpp"
#include "driver_common.hpp"
#include "tls_context.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/spawn.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <list>
#include <optional>
#include <thread>

namespace inlet::smtp::detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

constexpr std::size_t stack_size = 256 * 1024;

// One connection. Held by its fiber (shared_ptr) and weakly by the registry;
// touched only on its strand.
struct sconn {
  sconn(tcp::socket s, session_config cfg)
      : sock(std::move(s)), timer(sock.get_executor()), wake(sock.get_executor()),
        session(std::move(cfg)) {}
  tcp::socket sock;
  std::optional<asio::ssl::stream<tcp::socket&>> tls;
  asio::steady_timer timer;  // deadline of the current read or handshake
  asio::steady_timer wake;   // wakes the fiber when a delivery answers
  server_session session;
  std::string wbuf;          // replies being written
  std::string ip;
  bool timed_out = false;
  bool reading = false;
  unsigned write_gen = 0;      // flush(): which write the timer is watching
  bool write_expired = false;  // flush(): the peer did not take our replies in time
};

// A fiber's exception must not escape into io_context::run(); the connection
// is closed by its RAII guard either way.
struct ignore_exception {
  void operator()(std::exception_ptr) const noexcept {}
};

class stackful_driver final : public model_driver {
 public:
  stackful_driver(const server_config& cfg, deliver_fn d)
      : cfg_(cfg), hook_(std::move(d)), adm_(cfg.max_connections, cfg.max_connections_per_ip) {}
  ~stackful_driver() override {
    if (started_) {
      stop();
      wait();
    }
  }
  std::error_code start() override;
  std::vector<listen_endpoint> local_endpoints() const override { return bound_; }
  void stop() override;
  void wait() override;
  server_stats stats() const override;

 private:
  std::error_code bind();
  void accept_loop(tcp::acceptor& acc, bool lmtp, asio::yield_context y);
  void take(tcp::socket s, bool lmtp);
  void run(const std::shared_ptr<sconn>& c, asio::yield_context y);
  bool flush(const std::shared_ptr<sconn>& c, asio::yield_context& y);
  bool read(sconn& c, driver_input& in, bool in_message, bool& would_block, asio::yield_context& y);
  delivery_result deliver(const std::shared_ptr<sconn>& c, received_message msg,
                          asio::yield_context& y);
  void watch_grace();
  template <class F>
  void post_to_each(F f);

  server_config cfg_;
  deliver_fn hook_;
  asio::io_context ctx_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
  std::vector<listen_endpoint> bound_;
  std::optional<asio::ssl::context> ssl_;
  std::vector<std::thread> threads_;
  std::thread grace_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  admission adm_;
  driver_counters cnt_;
  std::mutex mu_;  // guards conns_; stop_cv_ waits on it
  std::condition_variable stop_cv_;
  std::list<std::weak_ptr<sconn>> conns_;
};

std::error_code stackful_driver::bind() {
  if (auto ec = make_tls_context(cfg_, ssl_)) return ec;
  return open_listeners(cfg_, [this] { return asio::any_io_executor(asio::make_strand(ctx_)); },
                        acceptors_, bound_);
}

std::error_code stackful_driver::start() {
  if (auto ec = bind()) {
    acceptors_.clear();
    return ec;
  }
  started_ = true;
  guard_.emplace(ctx_.get_executor());
  for (std::size_t i = 0; i < acceptors_.size(); ++i)
    asio::spawn(
        acceptors_[i]->get_executor(),
        [this, i](asio::yield_context y) { accept_loop(*acceptors_[i], bound_[i].lmtp, y); },
        ignore_exception{});
  unsigned n = cfg_.threads ? cfg_.threads : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < n; ++t) threads_.emplace_back([this] { ctx_.run(); });
  grace_ = std::thread([this] { watch_grace(); });
  return {};
}

void stackful_driver::accept_loop(tcp::acceptor& acc, bool lmtp, asio::yield_context y) {
  error_code nb;
  if (cfg_.accepts_per_event > 1) acc.non_blocking(true, nb);  // the extra accepts must not block
  for (;;) {
    error_code ec;
    tcp::socket s(asio::make_strand(ctx_));
    acc.async_accept(s, y[ec]);
    if (ec) {
      if (stopping_.load() || ec == asio::error::operation_aborted || !acc.is_open()) return;
      continue;  // EMFILE and friends: keep serving the others
    }
    take(std::move(s), lmtp);
    // Accepts per readiness (as in the coroutine driver).
    for (unsigned k = 1; k < cfg_.accepts_per_event && !stopping_.load(); ++k) {
      tcp::socket more(asio::make_strand(ctx_));
      acc.accept(more, ec);
      if (ec) break;  // would_block: the listen queue is empty
      take(std::move(more), lmtp);
    }
  }
}

void stackful_driver::take(tcp::socket s, bool lmtp) {
  cnt_.accepted.fetch_add(1, std::memory_order_relaxed);
  error_code ig;
  auto peer = s.remote_endpoint(ig);
  std::string ip = peer.address().to_string();
  if (stopping_.load() || !adm_.admit(ip)) {
    cnt_.refused.fetch_add(1, std::memory_order_relaxed);
    refuse(s, cfg_, stopping_.load());
    return;
  }
  s.set_option(tcp::no_delay(true), ig);
  auto c = std::make_shared<sconn>(std::move(s), session_for(cfg_, lmtp, ssl_.has_value()));
  c->ip = ip;
  c->session.set_remote(ip, peer.port());
  {
    std::lock_guard lk(mu_);
    for (auto it = conns_.begin(); it != conns_.end();)
      it = it->expired() ? conns_.erase(it) : std::next(it);
    conns_.push_back(c);
  }
  asio::spawn(
      c->sock.get_executor(), std::allocator_arg,
      boost::context::protected_fixedsize_stack(stack_size),
      [this, c](asio::yield_context cy) { run(c, cy); }, ignore_exception{});
}

bool stackful_driver::flush(const std::shared_ptr<sconn>& cp, asio::yield_context& y) {
  sconn& c = *cp;
  if (c.session.output().empty()) return true;
  c.session.take_output(c.wbuf);  // stop() may queue a 421 while we write
  error_code ec;
  // A peer that stops reading gets the command timeout for our write, then is
  // closed (as in the coroutine driver). The timer is free: reads arm it only
  // after a flush. `write_gen` tells a stale expiry (one that fired as the
  // write completed) from this write's.
  const unsigned gen = ++c.write_gen;
  c.write_expired = false;
  c.timer.expires_after(cfg_.command_timeout);
  c.timer.async_wait([cp, gen](error_code e) {
    if (e || cp->write_gen != gen) return;
    cp->write_expired = true;
    error_code ig;
    cp->sock.cancel(ig);
  });
  if (c.tls) asio::async_write(*c.tls, asio::buffer(c.wbuf), y[ec]);
  else asio::async_write(c.sock, asio::buffer(c.wbuf), y[ec]);
  ++c.write_gen;  // this write is over: a late expiry is ignored
  c.timer.cancel();
  return !ec && !c.write_expired;
}

// The delivery answer: taken at once when the hook answers inline; a later
// answer, from any thread, is posted to the strand and wakes the fiber by
// cancelling its `wake` timer (as the coro driver does).
delivery_result stackful_driver::deliver(const std::shared_ptr<sconn>& c, received_message msg,
                                         asio::yield_context& y) {
  struct pending {
    std::mutex m;
    bool inline_phase = true;
    std::optional<delivery_result> result;
  };
  auto p = std::make_shared<pending>();
  std::weak_ptr<sconn> wc = c;
  call_deliver(hook_, cnt_, std::move(msg), [p, wc](delivery_result r) {
    std::unique_lock lk(p->m);
    if (p->inline_phase) {
      p->result = std::move(r);
      return;
    }
    lk.unlock();
    auto conn = wc.lock();
    if (!conn) return;
    asio::post(conn->sock.get_executor(), [p, wc, r = std::move(r)]() mutable {
      p->result = std::move(r);
      if (auto c2 = wc.lock()) c2->wake.cancel();
    });
  });
  {
    std::lock_guard lk(p->m);
    p->inline_phase = false;
  }
  while (!p->result) {
    error_code ec;
    c->wake.expires_at(clock::time_point::max());
    c->wake.async_wait(y[ec]);
  }
  return std::move(*p->result);
}

// One wait for input (the deadline timer is armed by the caller). Plain TCP
// waits for readability first, so an idle connection holds no fragment; TLS
// reads directly (the SSL layer may hold bytes the socket does not show).
// Returns false when the connection is to be dropped (peer closed, error).
bool stackful_driver::read(sconn& c, driver_input& in, bool in_message, bool& would_block,
                           asio::yield_context& y) {
  server_session& s = c.session;
  error_code ec;
  std::size_t n = 0;
  bool spurious = false;
  c.reading = true;
  if (c.tls) {
    n = c.tls->async_read_some(in.prepare(s.in_body()), y[ec]);
  } else {
    bool got = false;
    if (s.in_body() && !would_block) {  // in a body more bytes are usually there
      n = c.sock.read_some(in.prepare(true), ec);
      got = !ec || (ec != asio::error::would_block && ec != asio::error::try_again);
      if (!got) ec = {};
    }
    if (!got) {
      in.release_for_wait(in_message);
      c.sock.async_wait(tcp::socket::wait_read, y[ec]);
      if (!ec) {
        n = c.sock.read_some(in.prepare(s.in_body()), ec);
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
          ec = {};
          spurious = true;
        }
      }
    }
  }
  c.reading = false;
  c.timer.cancel();
  would_block = false;
  if (spurious && !c.timed_out) return true;
  if (!ec && !spurious) {
    in.commit(n);
    return true;
  }
  if (c.timed_out) {
    s.timeout();
    return true;
  }
  return ec == asio::error::operation_aborted && s.closing();  // stop(): 421 queued
}

void stackful_driver::run(const std::shared_ptr<sconn>& c, asio::yield_context y) {
  struct closer {  // runs on every exit path, exceptions included
    stackful_driver& d;
    sconn& c;
    ~closer() {
      error_code ig;
      c.sock.shutdown(tcp::socket::shutdown_both, ig);
      c.sock.close(ig);
      d.adm_.release(c.ip);
    }
  } guard{*this, *c};
  server_session& s = c->session;
  driver_input in(cfg_.read_buffer_size, cfg_.session.max_command_line);
  body_collector body(cfg_.body_observer, in);  // after `in`: dropped before it
  error_code ig;
  c->sock.non_blocking(true, ig);
  if (stopping_.load()) s.shutdown();
  s.start();
  auto deadline = clock::now() + cfg_.greeting_timeout;
  auto body_deadline = clock::time_point::max();
  const unsigned extra_reads = cfg_.reads_per_event > 1 ? cfg_.reads_per_event - 1 : 0;
  unsigned reads_left = extra_reads;
  bool first_read = true;
  for (;;) {
    if (!s.shutting_down() && stopping_.load(std::memory_order_relaxed)) s.shutdown();
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
        delivery_result r = deliver(c, std::move(msg), y);
        count(cnt_, r);
        s.delivery_done(r);
        deadline = clock::now() + cfg_.command_timeout;
        continue;
      }
      case step_kind::start_tls: {
        if (!flush(c, y)) return;
        in.clear();  // RFC 3207 4.2: discard whatever was pipelined after STARTTLS
        c->tls.emplace(c->sock, *ssl_);
        c->timer.expires_after(cfg_.command_timeout);
        c->timer.async_wait([c](error_code e) {
          error_code ig2;
          if (!e) c->sock.cancel(ig2);
        });
        error_code hec;
        c->tls->async_handshake(asio::ssl::stream_base::server, y[hec]);
        c->timer.cancel();
        if (hec) return;
        s.tls_started();
        deadline = clock::now() + cfg_.command_timeout;
        continue;
      }
      case step_kind::close: flush(c, y); return;
      case step_kind::need_more:
        if (again) continue;  // the next readable span follows
        break;
    }
    if (!flush(c, y)) return;
    if (s.closing()) continue;  // stop() ran while we were writing: 421 is queued
    // Deadlines as the coro driver: a command line whole within
    // command_timeout; a body read within data_timeout, the body within
    // message_timeout.
    if (s.in_body()) {
      if (body_deadline == clock::time_point::max()) body_deadline = clock::now() + cfg_.message_timeout;
      deadline = std::min(clock::now() + cfg_.data_timeout, body_deadline);
    } else {
      body_deadline = clock::time_point::max();
      if (in.empty() && !first_read) deadline = clock::now() + cfg_.command_timeout;
    }
    bool would_block = false;
    if (reads_left > 0 && !c->tls) {  // seed 003: read again before returning to the loop
      error_code ec;
      std::size_t n = c->sock.read_some(in.prepare(s.in_body()), ec);
      if (!ec) {
        --reads_left;
        in.commit(n);
        first_read = false;
        continue;
      }
      if (ec != asio::error::would_block) return;
      would_block = true;
    }
    reads_left = extra_reads;
    if (clock::now() >= deadline) {
      s.timeout();
      continue;
    }
    c->timer.expires_at(deadline);
    c->timer.async_wait([c](error_code e) {
      if (!e) {
        c->timed_out = true;
        error_code ig2;
        c->sock.cancel(ig2);
      }
    });
    std::size_t before = in.buf().size();
    if (!read(*c, in, s.in_body() || body.holding(), would_block, y)) return;
    if (in.buf().size() > before) first_read = false;
  }
}

template <class F>
void stackful_driver::post_to_each(F f) {
  std::lock_guard lk(mu_);
  for (auto& w : conns_)
    if (auto c = w.lock()) asio::post(c->sock.get_executor(), [c, f] { f(*c); });
}

void stackful_driver::stop() {
  if (stopping_.exchange(true)) return;
  for (auto& acc : acceptors_)
    asio::post(acc->get_executor(), [a = acc.get()] {
      error_code ig;
      a->close(ig);
    });
  // Post first, then drop the guard: a posted handler is work, so the context
  // cannot run out of work (and return from run()) with one still queued.
  post_to_each([](sconn& c) {
    c.session.shutdown();
    error_code ig;
    if (c.session.closing() && c.reading) c.sock.cancel(ig);
  });
  {
    std::lock_guard lk(mu_);
    stop_cv_.notify_all();
    guard_.reset();
  }
}

// Sleeps until stop(); then gives the connections cfg.shutdown_grace to
// finish, forces 421 4.3.2 on the rest, and closes what is left 2 s later.
void stackful_driver::watch_grace() {
  {
    std::unique_lock lk(mu_);
    stop_cv_.wait(lk, [&] { return stopping_.load(); });
  }
  if (adm_.wait_idle_until(clock::now() + cfg_.shutdown_grace)) return;
  post_to_each([](sconn& c) {
    c.session.shutdown_now();
    error_code ig;
    c.sock.cancel(ig);
  });
  if (adm_.wait_idle_until(clock::now() + std::chrono::seconds(2))) return;
  post_to_each([](sconn& c) {
    error_code ig;
    c.sock.close(ig);
  });
}

void stackful_driver::wait() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  if (grace_.joinable()) grace_.join();
}

server_stats stackful_driver::stats() const {
  server_stats s;
  s.connections_accepted = cnt_.accepted.load();
  s.connections_refused = cnt_.refused.load();
  s.messages_delivered = cnt_.delivered.load();
  s.messages_rejected = cnt_.rejected.load();
  s.active_connections = adm_.active();
  return s;
}

}  // namespace

std::unique_ptr<model_driver> make_stackful_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<stackful_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
