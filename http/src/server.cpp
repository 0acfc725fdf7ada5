// Beast sessions over C++20 coroutines. This is the one Asio/Beast-heavy translation unit
// of inlet::http; routing and JSON live in api.cpp and are tested without sockets.
#include "inlet/http/server.hpp"

#include <inlet/util/memory.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "http_stream.hpp"
#include "pressure.hpp"

namespace inlet::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = boost::beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {


using websocket_stream = beast::websocket::stream<detail::http_stream>;
using steady = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
      .count();
}

// One connection. Touched only on its strand, except `events` (its own mutex) and
// `waiting_since` (atomic: the acceptor reads it to choose a connection to close).
struct session {
  session(tcp::socket&& s, client_info c, asio::ssl::context* tls)
      : stream(std::move(s), tls), wake(stream.get_executor()), client(std::move(c)) {}
  detail::http_stream stream;  // plain, or TLS on an HTTPS server
  std::optional<websocket_stream> ws;  // the stream moves here when upgraded
  asio::steady_timer wake;             // event streams sleep on it; cancel() wakes them
  client_info client;
  bool stopped = false;
  bool sse = false;
  bool mailhog = false;  // MailHog's feed: each new message whole, no other event
  /// When the connection began to wait for its client (a request, or on an event stream);
  /// 0 while a request is being answered. The acceptor closes the oldest waiter when full.
  std::atomic<std::int64_t> waiting_since{0};
  void cancel() {
    if (ws)
      beast::get_lowest_layer(*ws).cancel();
    else
      stream.cancel();
  }
  detail::event_queue events;
};

template <class Socket>
client_info client_of(const Socket& sock) {
  beast::error_code ec;
  auto ep = sock.remote_endpoint(ec);
  if (ec) return {};
  auto a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  if (a.is_v4()) return client_info(a.to_string());
  // IPv6: one client per /64 (a host gets a whole prefix).
  auto bytes = a.to_v6().to_bytes();
  for (std::size_t i = 8; i < bytes.size(); ++i) bytes[i] = 0;
  return client_info(asio::ip::address_v6(bytes).to_string() + "/64");
}

// The answer to a connection past the cap when no waiting connection can make room. Sent
// with one non-blocking write on a fresh socket (it fits in any send buffer).
constexpr std::string_view full_answer =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    "Cache-Control: no-store\r\nRetry-After: 1\r\nConnection: close\r\n"
    "Content-Length: 39\r\n\r\n{\"Error\":\"too many connections, retry\"}";
static_assert(full_answer.size() - full_answer.find("\r\n\r\n") - 4 == 39);

template <class Socket>
void refuse(Socket& sock) {
  beast::error_code ec;
  sock.non_blocking(true, ec);
  // Take what the client already sent: closing with unread bytes would reset the
  // connection and could discard the answer before the client reads it.
  char sink[4096];
  for (int i = 0; i < 4 && !ec; ++i) sock.read_some(asio::buffer(sink), ec);
  sock.write_some(asio::buffer(full_answer), ec);
  sock.shutdown(Socket::shutdown_both, ec);
  sock.close(ec);
}

}  // namespace

struct server::impl : std::enable_shared_from_this<impl> {
  impl(store::store& s, server_config c) : store(s), cfg(std::move(c)), handler(s, cfg.api) {}

  store::store& store;
  server_config cfg;
  http::api handler;
  std::optional<asio::ssl::context> tls;  // HTTPS: cfg.tls_cert and cfg.tls_key
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
  std::atomic<std::size_t> live{0};  // sessions.size(), read without the lock
  bool accepting = false;
  // Connections closed since the last return of freed memory to the system.
  std::atomic<std::size_t> closed_since_trim{0};
  std::optional<asio::steady_timer> trim_timer;  // on the acceptor's strand

  // Event streams: one store subscription while any stream is open; each event is
  // serialised once and its text shared by every stream's queue.
  std::mutex streams_mutex;
  std::unordered_map<std::uint64_t, std::weak_ptr<session>> streams;
  std::uint64_t next_stream = 1;
  std::uint64_t store_subscription = 0;
  bool subscribed = false;

  /// A timeout shortened by slot pressure.
  std::chrono::milliseconds timeout(std::chrono::milliseconds base) const {
    return detail::pressure_timeout(base, cfg.min_timeout, live.load(std::memory_order_relaxed),
                                    cfg.max_connections);
  }
  /// At the cap: closes the connection that has waited for its client the longest. False
  /// when none waits (every connection is being answered).
  bool make_room();
  void on_event(const store::store_event& e);
  std::uint64_t add_stream(const std::shared_ptr<session>& s);
  void remove_stream(std::uint64_t id);
  // Counts an event stream in the gauge and the stream list while it lives.
  struct stream_registration {
    impl& owner;
    std::uint64_t id;
    ~stream_registration() {
      owner.remove_stream(id);
      owner.handler.event_clients().fetch_sub(1, std::memory_order_relaxed);
    }
  };

  // Event streams counted per client and in all, so that clients that open streams and
  // never read cannot make every new message cost thousands of wake-ups and writes.
  std::unordered_map<std::string, std::size_t> streams_per_client;  // under streams_mutex
  std::size_t streams_open = 0;                                     // under streams_mutex
  struct stream_slot {
    impl& owner;
    std::string key;
    bool status = false;   // held
    unsigned refused = 0;  // 429 (this client has its share) or 503 (the server has)
    stream_slot(impl& o, std::string k) : owner(o), key(std::move(k)) {
      std::lock_guard lk(owner.streams_mutex);
      if (owner.streams_open >= owner.cfg.max_event_streams) {
        refused = 503;
        return;
      }
      auto& n = owner.streams_per_client[key];
      if (n >= owner.cfg.max_event_streams_per_client) {
        refused = 429;
        return;
      }
      ++n;
      ++owner.streams_open;
      status = true;
    }
    ~stream_slot() {
      if (!status) return;
      std::lock_guard lk(owner.streams_mutex);
      --owner.streams_open;
      auto it = owner.streams_per_client.find(key);
      if (it != owner.streams_per_client.end() && --it->second == 0)
        owner.streams_per_client.erase(it);
    }
    stream_slot(const stream_slot&) = delete;
    stream_slot& operator=(const stream_slot&) = delete;
  };
  response stream_refusal(unsigned status, unsigned version) const {
    auto res = status == 429
                   ? handler.error(429, "too many event streams from this client", version)
                   : handler.error(503, "too many event streams, retry", version);
    res.set(bh::field::retry_after, "5");
    return res;
  }

  // Removes a session from the registry when its coroutine frame goes away (normally or
  // because the io_context was destroyed with the frame still suspended).
  struct registration {
    impl* owner;  // kept alive by the frame's shared_ptr
    std::uint64_t id;
    ~registration() {
      std::lock_guard lk(owner->sessions_mutex);
      owner->sessions.erase(id);
      owner->live.store(owner->sessions.size(), std::memory_order_relaxed);
      owner->sessions_cv.notify_all();
      owner->closed_since_trim.fetch_add(1, std::memory_order_relaxed);
    }
  };

  // Declared last: destroyed first, while everything its pending handlers touch is alive.
  std::unique_ptr<asio::io_context> own_io;

  // Each coroutine takes `self` as a parameter: a frame that is spawned but not yet
  // started already keeps the state alive.
  awaitable<void> accept_loop(std::shared_ptr<impl> self);
  /// A new connection: served, or (full, no one to close) answered 503 and closed.
  void admit(const std::shared_ptr<impl>& self, tcp::socket sock);
  static constexpr int accept_batch = 64;  // accepts per wake-up beyond the first
  awaitable<void> run_session(std::shared_ptr<impl> self, std::shared_ptr<session> s);
  awaitable<void> run_events(std::shared_ptr<session> s, unsigned version);
  awaitable<void> run_websocket(std::shared_ptr<session> s, request req);
  awaitable<void> read_websocket(std::shared_ptr<session> s);
  awaitable<bool> send(session& s, response& res);
  /// `keep` turns false when the connection cannot stay open (an HTTP/1.0 body of unknown
  /// length ends at the close).
  awaitable<bool> send_streamed(session& s, response& head, body_source& body, bool& keep);
  awaitable<void> trim_loop(std::shared_ptr<impl> self);
};

awaitable<void> server::impl::accept_loop(std::shared_ptr<impl> self) {
  beast::error_code nb;
  acceptor->non_blocking(true, nb);  // for the batch below; async_accept is unaffected
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
    admit(self, std::move(sock));
    // Then take what else waits in the listen queue, up to a bound, without going back
    // through the scheduler: when thousands of handlers are queued (event streams woken
    // by a new message), one accept per trip through them lets the listen queue fill and
    // new clients' SYNs be dropped.
    if (nb) continue;
    for (int i = 0; i < accept_batch; ++i) {
      beast::error_code aec;
      tcp::socket more(asio::make_strand(*io));
      acceptor->accept(more, aec);
      if (aec) break;  // would_block: the queue is empty; other errors: the async path
      admit(self, std::move(more));
    }
  }
  std::lock_guard lk(sessions_mutex);
  accepting = false;
  sessions_cv.notify_all();
}

void server::impl::admit(const std::shared_ptr<impl>& self, tcp::socket sock) {
  bool full;
  {
    std::lock_guard lk(sessions_mutex);
    if (stopped) {
      beast::error_code ignored;
      sock.close(ignored);
      return;
    }
    full = sessions.size() >= cfg.max_connections;
  }
  if (full && !make_room()) {
    handler.count(503);
    refuse(sock);
    return;
  }
  auto info = client_of(sock);
  // Answers go out in pieces (headers, then a streamed body in 64 KiB writes): without
  // TCP_NODELAY a piece's short tail waits for the client's delayed ACK.
  beast::error_code nd;
  sock.set_option(tcp::no_delay(true), nd);
  auto s = std::make_shared<session>(std::move(sock), std::move(info), tls ? &*tls : nullptr);
  auto ex = s->stream.get_executor();
  asio::co_spawn(ex, run_session(self, std::move(s)), asio::detached);
}

bool server::impl::make_room() {
  std::shared_ptr<session> oldest;
  std::int64_t oldest_since = 0;
  {
    std::lock_guard lk(sessions_mutex);
    // A few connections over the cap while chosen ones close; past that, refuse.
    if (sessions.size() >= cfg.max_connections + std::max<std::size_t>(8, cfg.max_connections / 16))
      return false;
    for (auto& [id, w] : sessions) {
      auto s = w.lock();
      if (!s) continue;
      auto since = s->waiting_since.load(std::memory_order_relaxed);
      if (since > 0 && (oldest_since == 0 || since < oldest_since)) {
        oldest_since = since;
        oldest = std::move(s);
      }
    }
    if (!oldest) return false;
    // Claimed: no other accept chooses it again.
    if (!oldest->waiting_since.compare_exchange_strong(oldest_since, 0)) return false;
  }
  asio::post(oldest->stream.get_executor(), [s = oldest] {
    s->stopped = true;
    s->cancel();
    s->wake.cancel();
  });
  return true;
}

awaitable<void> server::impl::trim_loop(std::shared_ptr<impl> self) {
  (void)self;
  auto& t = *trim_timer;
  for (;;) {
    t.expires_after(std::chrono::seconds(2));
    auto [ec] = co_await t.async_wait(use_tuple);
    if (ec || !acceptor->is_open()) co_return;
    // After a wave of connections has gone, give their freed buffers back to the system
    // (glibc keeps freed heap at the top of each arena otherwise).
    if (closed_since_trim.load(std::memory_order_relaxed) >= cfg.trim_after_closed &&
        live.load(std::memory_order_relaxed) * 4 <= cfg.max_connections) {
      closed_since_trim.store(0, std::memory_order_relaxed);
      inlet::util::release_free_heap();
    }
  }
}

awaitable<bool> server::impl::send(session& s, response& res) {
  s.stream.expires_after(cfg.write_timeout);
  auto [ec, n] = co_await bh::async_write(s.stream, res, use_tuple);
  co_return !ec;
}

// A body made piece by piece: the header, then each window as it is made (a chunk under
// HTTP/1.1 when the length is not known; plain bytes with Content-Length, or until the
// close under HTTP/1.0). One window is held at a time.
awaitable<bool> server::impl::send_streamed(session& s, response& head, body_source& body,
                                            bool& keep) {
  constexpr std::size_t window = 64 * 1024;
  const auto known = body.size();
  const bool chunked = !known && head.version() >= 11;
  bh::response<bh::empty_body> h{std::move(head.base())};
  if (known) {
    h.content_length(*known);
  } else {
    h.erase(bh::field::content_length);
    if (chunked)
      h.chunked(true);
    else
      h.keep_alive(false);  // HTTP/1.0: the body ends at the close
  }
  keep = keep && h.keep_alive();
  bh::response_serializer<bh::empty_body> sr{h};
  s.stream.expires_after(cfg.write_timeout);
  auto [hec, hn] = co_await bh::async_write_header(s.stream, sr, use_tuple);
  if (hec) co_return false;
  std::string piece;
  std::uint64_t sent = 0;
  for (;;) {
    piece.clear();
    bool more;
    try {
      more = body.next(piece, window);
    } catch (const std::exception&) {  // bad_alloc: the answer cannot be finished
      co_return false;
    }
    if (!more) break;
    if (piece.empty()) continue;
    sent += piece.size();
    s.stream.expires_after(cfg.write_timeout);
    beast::error_code ec;
    if (chunked)
      std::tie(ec, std::ignore) =
          co_await asio::async_write(s.stream, bh::make_chunk(asio::buffer(piece)), use_tuple);
    else
      std::tie(ec, std::ignore) =
          co_await asio::async_write(s.stream, asio::buffer(piece), use_tuple);
    if (ec) co_return false;
  }
  if (known && sent != *known) co_return false;  // the source lied: close, never desync
  if (chunked) {
    s.stream.expires_after(cfg.write_timeout);
    auto [ec, n] = co_await asio::async_write(s.stream, bh::make_chunk_last(), use_tuple);
    if (ec) co_return false;
  }
  co_return true;
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
    live.store(sessions.size(), std::memory_order_relaxed);
  }
  registration reg{this, id};
  if (s->stream.is_secure()) {  // HTTPS: the handshake within the first request's time
    s->stream.expires_after(timeout(cfg.read_timeout));
    auto [hec] = co_await s->stream.async_handshake(use_tuple);
    if (hec) {
      beast::error_code ignored;
      s->stream.socket().close(ignored);
      co_return;
    }
  }
  beast::flat_buffer buffer;
  for (std::size_t served = 0; !s->stopped; ++served) {
    bh::request_parser<bh::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.header_limit));
    parser.body_limit(cfg.body_limit);
    s->stream.expires_after(timeout(served == 0 ? cfg.read_timeout : cfg.idle_timeout));
    s->waiting_since.store(now_ns(), std::memory_order_relaxed);
    auto [ec, n] = co_await bh::async_read(s->stream, buffer, parser, use_tuple);
    s->waiting_since.store(0, std::memory_order_relaxed);  // busy: not a candidate any more
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
    if (buffer.capacity() > 64 * 1024) buffer.shrink_to_fit();  // a large body is gone
    if (const auto feed = handler.events_feed(req); feed != api::feed::none) {
      s->mailhog = feed == api::feed::mailhog;
      auto refusal = handler.screen(req, s->client);
      std::optional<stream_slot> slot;
      if (!refusal) {
        slot.emplace(*this, s->client.key);
        if (!slot->status) refusal = stream_refusal(slot->refused, req.version());
      }
      if (refusal) {
        refusal->keep_alive(false);
        handler.count(refusal->result_int());
        co_await send(*s, *refusal);
        break;
      }
      handler.count(200);
      if (beast::websocket::is_upgrade(req))
        co_await run_websocket(s, std::move(req));
      else
        co_await run_events(s, req.version());
      break;
    }
    auto rep = co_await handler.handle_streamed(std::move(req), s->client);
    auto& res = rep.res;
    bool keep = res.keep_alive() && served + 1 < cfg.max_requests_per_connection;
    res.keep_alive(keep);
    if (rep.body) {
      if (!co_await send_streamed(*s, res, *rep.body, keep)) break;
      rep.body.reset();
    } else if (!co_await send(*s, res)) {
      break;
    }
    if (!keep) break;
  }
  beast::error_code ignored;
  s->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  s->stream.socket().close(ignored);
}

std::uint64_t server::impl::add_stream(const std::shared_ptr<session>& s) {
  std::lock_guard lk(streams_mutex);
  auto id = next_stream++;
  streams.emplace(id, s);
  if (!subscribed) {
    subscribed = true;
    std::weak_ptr<impl> weak = shared_from_this();
    store_subscription = store.subscribe([weak](const store::store_event& e) {
      if (auto self = weak.lock()) self->on_event(e);
    });
  }
  return id;
}

void server::impl::remove_stream(std::uint64_t id) {
  std::lock_guard lk(streams_mutex);
  streams.erase(id);
  if (streams.empty() && subscribed) {
    subscribed = false;
    store.unsubscribe(store_subscription);
  }
}

void server::impl::on_event(const store::store_event& e) {
  std::vector<std::shared_ptr<session>> targets;
  {
    std::lock_guard lk(streams_mutex);
    targets.reserve(streams.size());
    for (auto& [id, w] : streams)
      if (auto s = w.lock()) targets.push_back(std::move(s));
  }
  if (targets.empty()) return;
  // Mailpit's websocket messages; over SSE one event each, named by its Type. Each text
  // is built once and shared by every queue.
  auto msgs = handler.event_messages(e);
  std::vector<std::shared_ptr<const std::string>> sse, ws;
  for (auto& [type, data] : msgs) {
    sse.push_back(
        std::make_shared<const std::string>("event: " + type + "\ndata: " + data + "\n\n"));
    ws.push_back(std::make_shared<const std::string>(std::move(data)));
  }
  // MailHog's feeds: a new message as its data.Message, built only when one listens.
  std::vector<std::shared_ptr<const std::string>> hog_sse, hog_ws;
  if (e.what == store::store_event::kind::created && e.message &&
      std::any_of(targets.begin(), targets.end(), [](const auto& s) { return s->mailhog; })) {
    std::string text = handler.mailhog_event(*e.message);
    if (!text.empty()) {
      hog_sse.push_back(std::make_shared<const std::string>("data: " + text + "\n\n"));
      hog_ws.push_back(std::make_shared<const std::string>(std::move(text)));
    }
  }
  if (msgs.empty() && hog_ws.empty()) return;
  const auto now = steady::now();
  for (auto& s : targets) {
    bool wake = true;
    const auto& mine = s->mailhog ? (s->sse ? hog_sse : hog_ws) : (s->sse ? sse : ws);
    if (mine.empty()) continue;
    const bool ok = s->events.push(mine, now, &wake);
    if (ok && !wake) continue;  // woken already for what it has not taken
    asio::post(s->stream.get_executor(), [s, ok] {
      if (!ok) {  // fallen behind: dropped (EventSource and Mailpit's UI reconnect)
        s->stopped = true;
        s->cancel();
      }
      s->wake.cancel();
    });
  }
}

awaitable<void> server::impl::run_events(std::shared_ptr<session> s, unsigned version) {
  s->sse = true;
  handler.event_clients().fetch_add(1, std::memory_order_relaxed);
  s->events.configure(cfg.event_max_behind_bytes, cfg.event_max_lag);
  stream_registration reg{*this, add_stream(s)};
  s->waiting_since.store(now_ns(), std::memory_order_relaxed);
  const auto write_limit = std::min(cfg.write_timeout, cfg.event_max_lag);

  std::string head = version == 10 ? "HTTP/1.0" : "HTTP/1.1";
  head +=
      " 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
      "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 3000\n\n";
  s->stream.expires_after(write_limit);
  auto [ec0, n0] = co_await asio::async_write(s->stream, asio::buffer(head), use_tuple);
  if (ec0) co_return;

  std::vector<std::shared_ptr<const std::string>> out;
  std::vector<asio::const_buffer> bufs;
  static const std::string ping = ": ping\n\n";
  for (;;) {
    out.clear();
    const bool overflow = s->events.take(out, steady::now());
    if (overflow || s->stopped) co_return;  // a slow client is dropped; EventSource retries
    if (out.empty()) {
      // Checking the queue and starting the wait happen on the strand without a
      // suspension in between, so a wake-up posted after the check cancels this wait.
      s->wake.expires_after(cfg.event_ping);
      auto [ec] = co_await s->wake.async_wait(use_tuple);
      if (s->stopped) co_return;
      if (ec) continue;  // woken: new events
      bufs.assign(1, asio::buffer(ping));
    } else {
      bufs.clear();
      for (auto& t : out) bufs.push_back(asio::buffer(*t));
    }
    // A write that makes no progress for event_max_lag counts as falling behind.
    s->stream.expires_after(write_limit);
    auto [ec, n] = co_await asio::async_write(s->stream, bufs, use_tuple);
    s->events.written();
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
  t.handshake_timeout = std::min(cfg.write_timeout, cfg.event_max_lag);
  t.idle_timeout = cfg.event_ping * 2;
  t.keep_alive_pings = true;
  w.set_option(t);
  w.text(true);
  w.read_message_max(64 * 1024);
  // Subscribed before the 101 goes out: a client that acts on the handshake (sends mail)
  // must see the events that action makes.
  handler.event_clients().fetch_add(1, std::memory_order_relaxed);
  s->events.configure(cfg.event_max_behind_bytes, cfg.event_max_lag);
  stream_registration reg{*this, add_stream(s)};
  auto [aec] = co_await w.async_accept(req, use_tuple);
  if (aec || s->stopped) co_return;
  s->waiting_since.store(now_ns(), std::memory_order_relaxed);
  asio::co_spawn(w.get_executor(), read_websocket(s), asio::detached);
  std::vector<std::shared_ptr<const std::string>> out;
  for (bool first = true;; first = false) {
    out.clear();
    const bool overflow = s->events.take(out, steady::now());
    if (overflow || s->stopped) break;  // a slow client is dropped; Mailpit's UI reconnects
    if (out.empty() && !first) {
      s->wake.expires_after(cfg.event_ping);
      auto [wec] = co_await s->wake.async_wait(use_tuple);
      (void)wec;  // woken (events) or idle (the websocket pings by itself): look again
      if (s->stopped) break;
      continue;
    }
    if (!s->mailhog) out.push_back(std::make_shared<const std::string>(handler.stats_message()));
    for (auto& text : out) {
      auto [ec, n] = co_await w.async_write(asio::buffer(*text), use_tuple);
      if (ec) co_return;
    }
    s->events.written();
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

namespace {

// The listen address is a Host name the server answers to (IP literals always are).
server_config with_listen_host(server_config cfg) {
  beast::error_code ec;
  asio::ip::make_address(cfg.address, ec);
  if (ec && !cfg.address.empty()) cfg.api.allowed_hosts.push_back(cfg.address);
  return cfg;
}

}  // namespace

server::server(store::store& store, server_config cfg)
    : impl_(std::make_shared<impl>(store, with_listen_host(std::move(cfg)))) {}

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
    if (im.cfg.threads == 0) im.cfg.threads = std::max(2u, std::thread::hardware_concurrency());
    im.own_io = std::make_unique<asio::io_context>(static_cast<int>(im.cfg.threads));
    im.io = im.own_io.get();
  }
  beast::error_code ec;
  if (!im.cfg.tls_cert.empty()) {  // HTTPS: TLS 1.2 and later, the chain and its key
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    if (ctx.use_certificate_chain_file(im.cfg.tls_cert, ec); ec) return ec;
    if (ctx.use_private_key_file(im.cfg.tls_key, asio::ssl::context::pem, ec); ec) return ec;
    im.tls.emplace(std::move(ctx));
  }
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
  im.trim_timer.emplace(im.acceptor->get_executor());
  if (im.cfg.trim_after_closed > 0)
    asio::co_spawn(im.acceptor->get_executor(), im.trim_loop(impl_), asio::detached);
  if (im.own_io) {
    std::size_t n = im.cfg.threads;
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
    self->trim_timer->cancel();
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
  im.trim_timer.reset();
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
