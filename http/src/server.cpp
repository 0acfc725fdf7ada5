// Beast sessions over C++20 coroutines. This is the one Asio/Beast-heavy translation unit
// of inlet::http; routing and JSON live in api.cpp and are tested without sockets.
#include "inlet/http/server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace inlet::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = boost::beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// One connection. Touched only on its strand, except `queue_`/`overflow_` (mutex).
using websocket_stream = beast::websocket::stream<beast::tcp_stream>;

struct session {
  explicit session(tcp::socket&& s) : stream(std::move(s)), wake(stream.get_executor()) {}
  beast::tcp_stream stream;
  std::optional<websocket_stream> ws;  // the stream moves here when upgraded
  asio::steady_timer wake;             // event streams sleep on it; cancel() wakes them
  bool stopped = false;
  void cancel() {
    if (ws)
      beast::get_lowest_layer(*ws).cancel();
    else
      stream.cancel();
  }

  std::mutex queue_mutex;
  std::deque<std::string> queue;
  bool overflow = false;
};

}  // namespace

struct server::impl : std::enable_shared_from_this<impl> {
  impl(store::store& s, server_config c) : store(s), cfg(std::move(c)), handler(s, cfg.api) {}

  store::store& store;
  server_config cfg;
  http::api handler;
  asio::io_context* io = nullptr;
  std::optional<tcp::acceptor> acceptor;
  tcp::endpoint bound;
  std::vector<std::thread> threads;
  bool started = false;
  bool stopped = false;

  std::mutex sessions_mutex;
  std::condition_variable sessions_cv;
  std::uint64_t next_session = 1;
  std::unordered_map<std::uint64_t, std::weak_ptr<session>> sessions;
  bool accepting = false;

  // Removes a session from the registry when its coroutine frame goes away (normally or
  // because the io_context was destroyed with the frame still suspended).
  struct registration {
    impl* owner;  // kept alive by the frame's shared_ptr
    std::uint64_t id;
    ~registration() {
      std::lock_guard lk(owner->sessions_mutex);
      owner->sessions.erase(id);
      owner->sessions_cv.notify_all();
    }
  };

  // Declared last: destroyed first, while everything its pending handlers touch is alive.
  std::unique_ptr<asio::io_context> own_io;

  // Each coroutine takes `self` as a parameter: a frame that is spawned but not yet
  // started already keeps the state alive.
  awaitable<void> accept_loop(std::shared_ptr<impl> self);
  awaitable<void> run_session(std::shared_ptr<impl> self, std::shared_ptr<session> s);
  awaitable<void> run_events(std::shared_ptr<session> s, unsigned version);
  awaitable<void> run_websocket(std::shared_ptr<session> s, request req);
  awaitable<void> read_websocket(std::shared_ptr<session> s);
  // Subscribes a stream's session to the store: each event becomes queued messages
  // (SSE frames or websocket texts, by `frame`) and a wake-up on the session's strand.
  std::uint64_t subscribe(const std::shared_ptr<session>& s, bool sse);
  awaitable<bool> send(session& s, response& res);
};

awaitable<void> server::impl::accept_loop(std::shared_ptr<impl> self) {
  for (;;) {
    auto [ec, sock] = co_await acceptor->async_accept(asio::make_strand(*io), use_tuple);
    if (!acceptor->is_open()) break;
    if (ec) {
      if (ec == asio::error::operation_aborted) break;
      // EMFILE and friends: back off briefly instead of spinning.
      asio::steady_timer t(acceptor->get_executor(), std::chrono::milliseconds(50));
      co_await t.async_wait(use_tuple);
      continue;
    }
    auto s = std::make_shared<session>(std::move(sock));
    {
      std::lock_guard lk(sessions_mutex);
      if (stopped || sessions.size() >= cfg.max_connections) {
        handler.count(503);
        beast::error_code ignored;
        s->stream.socket().close(ignored);
        continue;
      }
    }
    auto ex = s->stream.get_executor();
    asio::co_spawn(ex, run_session(self, std::move(s)), asio::detached);
  }
  std::lock_guard lk(sessions_mutex);
  accepting = false;
  sessions_cv.notify_all();
}

awaitable<bool> server::impl::send(session& s, response& res) {
  s.stream.expires_after(cfg.write_timeout);
  auto [ec, n] = co_await bh::async_write(s.stream, res, use_tuple);
  co_return !ec;
}

awaitable<void> server::impl::run_session(std::shared_ptr<impl> self, std::shared_ptr<session> s) {
  (void)self;  // held by the frame
  std::uint64_t id;
  {
    std::lock_guard lk(sessions_mutex);
    if (stopped) {  // accepted just before stop(): not in the list stop() cancelled
      beast::error_code ignored;
      s->stream.socket().close(ignored);
      co_return;
    }
    id = next_session++;
    sessions.emplace(id, s);
  }
  registration reg{this, id};
  beast::flat_buffer buffer;
  for (std::size_t served = 0; !s->stopped; ++served) {
    bh::request_parser<bh::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.header_limit));
    parser.body_limit(cfg.body_limit);
    s->stream.expires_after(served == 0 ? cfg.read_timeout : cfg.idle_timeout);
    auto [ec, n] = co_await bh::async_read(s->stream, buffer, parser, use_tuple);
    if (ec) {
      std::optional<response> err;
      if (ec == bh::error::body_limit)
        err = handler.error(413, "request body too large");
      else if (ec == bh::error::header_limit)
        err = handler.error(431, "request header too large");
      else if (ec.category() == bh::make_error_code(bh::error::bad_target).category() &&
               ec != bh::error::end_of_stream && ec != bh::error::partial_message)
        err = handler.error(400, "malformed request");
      if (err && !s->stopped) {
        handler.count(err->result_int());
        co_await send(*s, *err);
      }
      break;
    }
    auto req = parser.release();
    if (handler.is_events_request(req)) {
      if (!handler.authorized(req)) {
        auto res = handler.error(401, "authentication required", req.version(), false);
        res.set(bh::field::www_authenticate, "Basic realm=\"Login\"");
        handler.count(401);
        co_await send(*s, res);
        break;
      }
      handler.count(200);
      if (beast::websocket::is_upgrade(req))
        co_await run_websocket(s, std::move(req));
      else
        co_await run_events(s, req.version());
      break;
    }
    auto res = co_await handler.handle(std::move(req));
    bool keep = res.keep_alive() && served + 1 < cfg.max_requests_per_connection;
    res.keep_alive(keep);
    if (!co_await send(*s, res) || !keep) break;
  }
  beast::error_code ignored;
  s->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  s->stream.socket().close(ignored);
}

namespace {

// Unsubscribes an event stream when its frame goes away.
struct subscription {
  store::store& st;
  std::uint64_t handle;
  std::atomic<std::int64_t>& gauge;
  ~subscription() {
    st.unsubscribe(handle);
    gauge.fetch_sub(1, std::memory_order_relaxed);
  }
};

}  // namespace

std::uint64_t server::impl::subscribe(const std::shared_ptr<session>& sp, bool sse) {
  auto self = shared_from_this();
  std::weak_ptr<session> weak = sp;
  const std::size_t limit = cfg.event_queue_limit;
  return store.subscribe([self, weak, limit, sse](const store::store_event& e) {
    auto s = weak.lock();
    if (!s) return;
    // Mailpit's websocket messages; over SSE one event each, named by its Type.
    auto msgs = self->handler.event_messages(e);
    if (msgs.empty()) return;
    {
      std::lock_guard lk(s->queue_mutex);
      for (auto& [type, data] : msgs) {
        if (s->queue.size() >= limit) {
          s->overflow = true;
          break;
        }
        s->queue.push_back(sse ? "event: " + type + "\ndata: " + data + "\n\n" : std::move(data));
      }
    }
    asio::post(s->stream.get_executor(), [s] { s->wake.cancel(); });
  });
}

awaitable<void> server::impl::run_events(std::shared_ptr<session> s, unsigned version) {
  handler.event_clients().fetch_add(1, std::memory_order_relaxed);
  subscription sub{store, subscribe(s, true), handler.event_clients()};

  std::string head = version == 10 ? "HTTP/1.0" : "HTTP/1.1";
  head +=
      " 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
      "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 3000\n\n";
  s->stream.expires_after(cfg.write_timeout);
  auto [ec0, n0] = co_await asio::async_write(s->stream, asio::buffer(head), use_tuple);
  if (ec0) co_return;

  for (;;) {
    std::string out;
    bool overflow;
    {
      std::lock_guard lk(s->queue_mutex);
      for (auto& e : s->queue) out += e;
      s->queue.clear();
      overflow = s->overflow;
    }
    if (overflow || s->stopped) co_return;  // a slow client is dropped; EventSource retries
    if (out.empty()) {
      // Checking the queue and starting the wait happen on the strand without a
      // suspension in between, so a wake-up posted after the check cancels this wait.
      s->wake.expires_after(cfg.event_ping);
      auto [ec] = co_await s->wake.async_wait(use_tuple);
      if (s->stopped) co_return;
      if (ec) continue;  // woken: new events
      out = ": ping\n\n";
    }
    s->stream.expires_after(cfg.write_timeout);
    auto [ec, n] = co_await asio::async_write(s->stream, asio::buffer(out), use_tuple);
    if (ec) co_return;
  }
}

// Mailpit's /api/events: a websocket on which the server sends JSON texts ({"Type",
// "Data"}) and a "stats" message after each batch; the client's messages are read and
// ignored (the read loop also answers pings and notices a close).
awaitable<void> server::impl::run_websocket(std::shared_ptr<session> s, request req) {
  namespace ws = beast::websocket;
  s->ws.emplace(std::move(s->stream));
  auto& w = *s->ws;
  beast::get_lowest_layer(w).expires_never();  // the websocket's own timeouts from here
  ws::stream_base::timeout t{};
  t.handshake_timeout = cfg.write_timeout;
  t.idle_timeout = cfg.event_ping * 2;
  t.keep_alive_pings = true;
  w.set_option(t);
  w.text(true);
  w.read_message_max(64 * 1024);
  auto [aec] = co_await w.async_accept(req, use_tuple);
  if (aec || s->stopped) co_return;
  handler.event_clients().fetch_add(1, std::memory_order_relaxed);
  subscription sub{store, subscribe(s, false), handler.event_clients()};
  asio::co_spawn(w.get_executor(), read_websocket(s), asio::detached);
  for (bool first = true;; first = false) {
    std::deque<std::string> out;
    bool overflow;
    {
      std::lock_guard lk(s->queue_mutex);
      out.swap(s->queue);
      overflow = s->overflow;
    }
    if (overflow || s->stopped) break;  // a slow client is dropped; Mailpit's UI reconnects
    if (out.empty() && !first) {
      s->wake.expires_after(cfg.event_ping);
      auto [wec] = co_await s->wake.async_wait(use_tuple);
      (void)wec;  // woken (events) or idle (the websocket pings by itself): look again
      if (s->stopped) break;
      continue;
    }
    out.push_back(handler.stats_message());
    for (auto& text : out) {
      auto [ec, n] = co_await w.async_write(asio::buffer(text), use_tuple);
      if (ec) co_return;
    }
  }
  if (!s->stopped) {
    auto [cec] = co_await w.async_close(ws::close_code::going_away, use_tuple);
    (void)cec;
  }
}

awaitable<void> server::impl::read_websocket(std::shared_ptr<session> s) {
  beast::flat_buffer buf;
  for (;;) {
    auto [ec, n] = co_await s->ws->async_read(buf, use_tuple);
    if (ec) break;
    buf.consume(buf.size());
    if (buf.capacity() > 64 * 1024) buf.shrink_to_fit();
  }
  s->stopped = true;  // closed or failed: the writer ends too
  s->wake.cancel();
}

server::server(store::store& store, server_config cfg)
    : impl_(std::make_shared<impl>(store, std::move(cfg))) {}

server::~server() {
  stop();
}

const http::api& server::api() const noexcept {
  return impl_->handler;
}

std::error_code server::start() {
  auto& im = *impl_;
  if (im.started) return errc::already_started;
  if (im.cfg.io) {
    im.io = im.cfg.io;
  } else {
    im.own_io = std::make_unique<asio::io_context>(static_cast<int>(im.cfg.threads));
    im.io = im.own_io.get();
  }
  beast::error_code ec;
  auto addr = asio::ip::make_address(im.cfg.address, ec);
  if (ec) return ec;
  tcp::endpoint ep(addr, im.cfg.port);
  tcp::acceptor acc(asio::make_strand(*im.io));
  if (acc.open(ep.protocol(), ec); ec) return ec;
  if (acc.set_option(asio::socket_base::reuse_address(true), ec); ec) return ec;
  if (acc.bind(ep, ec); ec) return ec;
  if (acc.listen(asio::socket_base::max_listen_connections, ec); ec) return ec;
  im.bound = acc.local_endpoint(ec);
  if (ec) return ec;
  im.acceptor.emplace(std::move(acc));
  im.started = true;
  im.accepting = true;
  asio::co_spawn(im.acceptor->get_executor(), im.accept_loop(impl_), asio::detached);
  if (im.own_io) {
    std::size_t n = im.cfg.threads == 0 ? 1 : im.cfg.threads;
    for (std::size_t i = 0; i < n; ++i) im.threads.emplace_back([io = im.io] { io->run(); });
  }
  return {};
}

void server::stop() {
  auto& im = *impl_;
  if (!im.started || im.stopped) return;
  std::vector<std::shared_ptr<session>> live;
  {
    std::lock_guard lk(im.sessions_mutex);
    im.stopped = true;
    for (auto& [id, w] : im.sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  asio::post(im.acceptor->get_executor(), [self = impl_] {
    beast::error_code ignored;
    self->acceptor->close(ignored);
  });
  for (auto& s : live) {
    asio::post(s->stream.get_executor(), [s] {
      s->stopped = true;
      s->cancel();
      s->wake.cancel();
    });
  }
  live.clear();
  if (!im.own_io) return;  // the caller's threads finish the sessions
  {
    // Sessions see the cancellation at their next suspension; give them a bounded time.
    std::unique_lock lk(im.sessions_mutex);
    im.sessions_cv.wait_for(lk, std::chrono::seconds(5),
                            [&] { return im.sessions.empty() && !im.accepting; });
  }
  im.own_io->stop();
  for (auto& t : im.threads) t.join();
  im.threads.clear();
  im.acceptor.reset();  // before its io_context
  im.own_io.reset();    // destroys any frame still suspended (releases its references)
  im.io = nullptr;
}

std::string server::address() const {
  return impl_->bound.address().to_string();
}
std::uint16_t server::port() const {
  return impl_->bound.port();
}

}  // namespace inlet::http
