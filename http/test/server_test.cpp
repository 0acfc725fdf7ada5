// Loopback tests (label net): real HTTP over 127.0.0.1 with a Beast client. ctest's
// TIMEOUT bounds every test; each loop below is bounded in count.
#include "inlet/http/server.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#include <future>
#include <thread>

#include "inlet/store/memory_store.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = beast::http;
namespace st = inlet::store;
using tcp = asio::ip::tcp;

namespace {

struct client {
  asio::io_context io;
  tcp::socket sock{io};
  beast::flat_buffer buf;
  explicit client(std::uint16_t port) { sock.connect({asio::ip::make_address("127.0.0.1"), port}); }
  bh::response<bh::string_body> request(bh::verb v, std::string target, std::string body = {},
                                        bool keep_alive = true) {
    bh::request<bh::string_body> req{v, target, 11};
    req.set(bh::field::host, "127.0.0.1");
    req.keep_alive(keep_alive);
    req.body() = std::move(body);
    req.prepare_payload();
    bh::write(sock, req);
    return read();
  }
  // HEAD: the parser must be told that no body follows the headers.
  bh::response<bh::string_body> head(std::string target) {
    bh::request<bh::string_body> req{bh::verb::head, target, 11};
    req.set(bh::field::host, "127.0.0.1");
    bh::write(sock, req);
    bh::response_parser<bh::string_body> p;
    p.skip(true);
    bh::read(sock, buf, p);
    return p.release();
  }
  bh::response<bh::string_body> read() {
    bh::response_parser<bh::string_body> p;
    p.body_limit(64 << 20);
    bh::read(sock, buf, p);
    return p.release();
  }
  void send_raw(std::string_view bytes) { asio::write(sock, asio::buffer(bytes)); }
  // True when the server closed the connection (read hits EOF).
  bool closed_by_peer() {
    beast::error_code ec;
    char c;
    sock.read_some(asio::buffer(&c, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
};

st::new_message make(std::string raw, std::string rcpt = "box@example.com") {
  st::new_message m;
  m.envelope.rcpt_to = {std::move(rcpt)};
  m.envelope.mail_from = "s@example.org";
  m.summary.subject = "subject";
  m.raw = std::move(raw);
  return m;
}

struct ServerTest : ::testing::Test {
  st::memory_store store;
  std::unique_ptr<inlet::http::server> srv;
  void start(inlet::http::server_config cfg = {}) {
    cfg.address = "127.0.0.1";
    cfg.port = 0;
    cfg.threads = 2;
    srv = std::make_unique<inlet::http::server>(store, cfg);
    ASSERT_FALSE(srv->start());
    ASSERT_NE(srv->port(), 0);
    ASSERT_EQ(srv->address(), "127.0.0.1");
  }
  std::string put(std::string raw, std::string rcpt = "box@example.com") {
    std::error_code ec;
    return store.put_sync(make(std::move(raw), std::move(rcpt)), ec)->id;
  }
};

}  // namespace

TEST_F(ServerTest, KeepAliveListGetRawDelete) {
  start();
  std::string raw("Subject: x\r\n\r\n..dot\r\n\0\x80\xff end\r\n", 28);
  auto id = put(raw);
  put("second\r\n");
  client c(srv->port());
  auto list = c.request(bh::verb::get, "/api/v1/messages?limit=1");
  ASSERT_EQ(list.result_int(), 200u);
  EXPECT_NE(list.body().find("\"total\":2"), std::string::npos) << list.body();
  EXPECT_NE(list.body().find("\"count\":1"), std::string::npos);
  EXPECT_TRUE(list.keep_alive());

  auto r = c.request(bh::verb::get, "/api/v1/message/" + id + "/raw");  // same connection
  ASSERT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r.body(), raw);
  EXPECT_EQ(r[bh::field::content_type], "text/plain; charset=utf-8");

  EXPECT_EQ(c.request(bh::verb::get, "/api/v1/message/" + id).result_int(), 200u);
  EXPECT_EQ(c.request(bh::verb::get, "/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA").result_int(), 404u);
  EXPECT_EQ(c.request(bh::verb::patch, "/api/v1/messages").result_int(), 405u);
  auto d = c.request(bh::verb::delete_, "/api/v1/messages", R"({"IDs":[")" + id + "\"]}");
  EXPECT_EQ(d.result_int(), 200u);
  EXPECT_EQ(store.stats().messages, 1u);
  EXPECT_EQ(c.request(bh::verb::get, "/api/v1/message/" + id + "/raw").result_int(), 404u);
  auto last = c.request(bh::verb::delete_, "/api/v1/messages", "", false);
  EXPECT_EQ(last.result_int(), 200u);
  EXPECT_FALSE(last.keep_alive());
  EXPECT_EQ(store.stats().messages, 0u);
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ServerTest, HeadSendsHeadersOnlyAndKeepsTheConnectionInStep) {
  start();
  std::string raw = "Subject: head\r\n\r\nbody\r\n";
  auto id = put(raw);
  client c(srv->port());
  auto h = c.head("/api/v1/message/" + id + "/raw");
  ASSERT_EQ(h.result_int(), 200u);
  EXPECT_EQ(h[bh::field::content_length], std::to_string(raw.size()));
  EXPECT_TRUE(h.body().empty());
  // Had the server written the body, this GET would read those bytes as its status line.
  auto g = c.request(bh::verb::get, "/api/v1/message/" + id + "/raw");
  ASSERT_EQ(g.result_int(), 200u);
  EXPECT_EQ(g.body(), raw);
}

TEST_F(ServerTest, RequestSplitAtEveryOffsetOnOneConnection) {
  start();
  std::string raw("A\r\n\0B\r\n", 6);
  auto id = put(raw);
  const std::string reqs[] = {
      "GET /api/v1/message/" + id + "/raw HTTP/1.1\r\nHost: localhost\r\n\r\n",
      "DELETE /api/v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Length: 9\r\n\r\n{\"IDs\":[]",
  };
  client c(srv->port());
  c.sock.set_option(tcp::no_delay(true));
  // The raw GET at every split point; the server must see the two writes as one request.
  for (std::size_t k = 1; k < reqs[0].size(); ++k) {
    c.send_raw(std::string_view(reqs[0]).substr(0, k));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    c.send_raw(std::string_view(reqs[0]).substr(k));
    auto r = c.read();
    ASSERT_EQ(r.result_int(), 200u) << "split at " << k;
    ASSERT_EQ(r.body(), raw) << "split at " << k;
  }
  // A malformed JSON body split anywhere is still one 400 and deletes nothing.
  for (std::size_t k = 1; k < reqs[1].size(); ++k) {
    c.send_raw(std::string_view(reqs[1]).substr(0, k));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    c.send_raw(std::string_view(reqs[1]).substr(k));
    ASSERT_EQ(c.read().result_int(), 400u) << "split at " << k;
  }
  EXPECT_EQ(store.stats().messages, 1u);
}

TEST_F(ServerTest, LargeRawMessageRoundTrips) {
  start();
  std::string raw;
  for (int i = 0; raw.size() < 3 * 1024 * 1024; ++i) raw += "line " + std::to_string(i) + "\r\n";
  raw += std::string("\0\r\n.\r\n", 6);
  auto id = put(raw);
  client c(srv->port());
  auto r = c.request(bh::verb::get, "/api/v1/message/" + id + "/raw");
  EXPECT_EQ(r.body().size(), raw.size());
  EXPECT_TRUE(r.body() == raw);
}

// A large listing goes out in chunks (HTTP/1.1) or until the close (HTTP/1.0), never
// built whole; the bytes are the whole answer's, and the connection stays in step.
TEST_F(ServerTest, LargeListingIsStreamedWithTheSameBytes) {
  start();
  const std::string name(300, 'n');
  for (int i = 0; i < 60; ++i) {
    auto m = make("Subject: x\r\n\r\nx\r\n");
    for (int k = 0; k < 100; ++k)
      m.summary.to.push_back({name, "to" + std::to_string(k) + "@example.com"});
    std::error_code ec;
    store.put_sync(std::move(m), ec);
  }
  inlet::http::request q{bh::verb::get, "/api/v1/messages?limit=1000", 11};
  asio::io_context local;
  auto f = asio::co_spawn(local, srv->api().handle(q), asio::use_future);
  local.run();
  const std::string whole = f.get().body();
  ASSERT_GT(whole.size(), 1u << 20);
  client c(srv->port());
  auto r = c.request(bh::verb::get, "/api/v1/messages?limit=1000");
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r[bh::field::transfer_encoding], "chunked");
  EXPECT_TRUE(r.body() == whole);
  EXPECT_EQ(c.request(bh::verb::get, "/api/v1/messages?limit=1").result_int(), 200u);
  client old(srv->port());
  old.send_raw("GET /api/v1/messages?limit=1000 HTTP/1.0\r\nHost: localhost\r\n\r\n");
  std::string got;
  beast::error_code ec;
  asio::read(old.sock, asio::dynamic_buffer(got), ec);  // to the close
  auto body = got.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  EXPECT_EQ(got.find("chunked"), std::string::npos);
  EXPECT_TRUE(got.substr(body + 4) == whole);
}

TEST_F(ServerTest, LimitsAndMalformedRequests) {
  inlet::http::server_config cfg;
  cfg.body_limit = 100;
  cfg.header_limit = 1024;
  start(cfg);
  {
    client c(srv->port());
    auto r = c.request(bh::verb::delete_, "/api/v1/messages", std::string(200, ' '));
    EXPECT_EQ(r.result_int(), 413u);
    EXPECT_EQ(r.body(), "request body too large");
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    client c(srv->port());
    c.send_raw("GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + std::string(2000, 'a') +
               "\r\n\r\n");
    EXPECT_EQ(c.read().result_int(), 431u);
  }
  {
    client c(srv->port());
    c.send_raw("THIS IS NOT HTTP\r\n\r\n");
    auto r = c.read();
    EXPECT_EQ(r.result_int(), 400u);
    EXPECT_EQ(r.body(), "malformed request");
  }
  {
    client c(srv->port());  // a client that goes away mid-request does not hurt others
    c.send_raw("GET /api/v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\nabc");
  }
  client ok(srv->port());
  EXPECT_EQ(ok.request(bh::verb::get, "/api/v1/messages").result_int(), 200u);
  auto m = ok.request(bh::verb::get, "/metrics");
  EXPECT_NE(m.body().find("inlet_http_requests_total{code=\"413\"} 1"), std::string::npos)
      << m.body();
  EXPECT_NE(m.body().find("inlet_http_requests_total{code=\"431\"} 1"), std::string::npos);
}

TEST_F(ServerTest, IdleConnectionTimesOut) {
  inlet::http::server_config cfg;
  cfg.read_timeout = std::chrono::milliseconds(200);
  start(cfg);
  client c(srv->port());
  EXPECT_TRUE(c.closed_by_peer());  // nothing sent: closed after the read timeout
}

TEST_F(ServerTest, EventStreamDeliversNewMessages) {
  start();
  client c(srv->port());
  c.send_raw("GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n");
  std::string got;
  asio::read_until(c.sock, asio::dynamic_buffer(got), "retry: 3000\n\n");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Content-Type: text/event-stream"), std::string::npos);
  // The subscription is registered before the headers are written.
  auto id = put("Subject: live\r\n\r\nx\r\n");
  asio::read_until(c.sock, asio::dynamic_buffer(got), "}\n\n");
  auto pos = got.find("event: new\ndata: {\"Type\":\"new\",\"Data\":{\"ID\":\"" + id + "\"");
  EXPECT_NE(pos, std::string::npos) << got;
  EXPECT_NE(srv->api().metrics_text().find("inlet_http_event_clients 1\n"), std::string::npos);
  srv->stop();  // must not hang on the open stream
  EXPECT_TRUE(c.closed_by_peer());
}

// Mailpit's websocket: stats on open, then new/update/delete as the store changes from
// other threads, and stop() closes it.
TEST_F(ServerTest, WebsocketDeliversMailpitMessages) {
  start();
  asio::io_context io;
  beast::websocket::stream<tcp::socket> ws(io);
  ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), srv->port()));
  ws.handshake("127.0.0.1", "/api/events");
  beast::flat_buffer b;
  auto next = [&] {
    b.clear();
    ws.read(b);
    return beast::buffers_to_string(b.data());
  };
  EXPECT_EQ(next().rfind("{\"Type\":\"stats\"", 0), 0u);
  std::string id;
  std::thread writer([&] { id = put("Subject: over ws\r\n\r\nx\r\n"); });
  writer.join();
  std::string m;
  do m = next();
  while (m.rfind("{\"Type\":\"new\"", 0) != 0);
  EXPECT_NE(m.find("\"ID\":\"" + id + "\""), std::string::npos) << m;
  std::thread deleter([&] {
    std::promise<void> done;
    store.async_remove(st::selection::of_ids({id}),
                       [&](std::error_code, std::size_t) { done.set_value(); });
    done.get_future().wait();
  });
  deleter.join();
  do m = next();
  while (m.rfind("{\"Type\":\"delete\"", 0) != 0);
  EXPECT_EQ(m, "{\"Type\":\"delete\",\"Data\":{\"ID\":\"" + id + "\"}}");
  EXPECT_NE(srv->api().metrics_text().find("inlet_http_event_clients 1\n"), std::string::npos);
  srv->stop();  // must not hang on the open websocket
  beast::error_code ec;
  for (int i = 0; i < 100 && !ec; ++i) ws.read(b, ec);  // drains to the end
  EXPECT_TRUE(ec);
}

TEST_F(ServerTest, RunsOnCallersIoContext) {
  asio::io_context io;
  inlet::http::server_config cfg;
  cfg.io = &io;
  cfg.port = 0;
  inlet::http::server s(store, cfg);
  ASSERT_FALSE(s.start());
  EXPECT_EQ(s.start(), inlet::http::errc::already_started);
  std::thread t([&] { io.run(); });
  {
    client c(s.port());
    EXPECT_EQ(c.request(bh::verb::get, "/").result_int(), 200u);
  }
  s.stop();
  t.join();  // io.run() returns: every session and the acceptor finished
}

TEST_F(ServerTest, ManyClientsConcurrently) {
  start();
  for (int i = 0; i < 20; ++i)
    put("m" + std::to_string(i) + "\r\n", "b" + std::to_string(i % 3) + "@x");
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      client c(srv->port());
      for (int i = 0; i < 25; ++i) {
        auto r = c.request(bh::verb::get, "/api/v1/mailbox/b" + std::to_string((t + i) % 3) + "@x");
        if (r.result_int() == 200 && r.body().find("\"messages\":[") != std::string::npos) ++ok;
      }
    });
  }
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) put("w\r\n", "b1@x");
  });
  for (auto& th : ts) th.join();
  writer.join();
  EXPECT_EQ(ok.load(), 100);
}

TEST(ServerStart, BadAddressAndPortInUse) {
  st::memory_store store;
  inlet::http::server_config bad;
  bad.address = "not an address";
  inlet::http::server s1(store, bad);
  EXPECT_TRUE(s1.start());
  inlet::http::server_config cfg;
  cfg.port = 0;
  inlet::http::server a(store, cfg);
  ASSERT_FALSE(a.start());
  cfg.port = a.port();
  inlet::http::server b(store, cfg);
  EXPECT_TRUE(b.start());  // already bound by a
}

namespace {

// Waits (bounded) until `pred` holds; false if it never does within `limit`.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool metric_is(const inlet::http::server& s, std::string_view line) {
  return s.api().metrics_text().find(line) != std::string::npos;
}

}  // namespace

// At the cap, the connection that has waited longest for its client makes room for a new
// one, which is served.
TEST_F(ServerTest, FullServerClosesTheOldestIdleConnectionForANewClient) {
  inlet::http::server_config cfg;
  cfg.max_connections = 2;
  start(cfg);
  client idle1(srv->port());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // idle1 is the older
  client idle2(srv->port());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  client fresh(srv->port());
  auto r = fresh.request(bh::verb::get, "/livez");
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_TRUE(idle1.closed_by_peer());
  auto r2 = idle2.request(bh::verb::get, "/livez");  // the younger one was kept
  EXPECT_EQ(r2.result_int(), 200u);
}

// At the cap with every connection being answered (two clients that do not read a large
// answer), a new client gets 503 with a body, not a silent close.
TEST_F(ServerTest, FullServerAnswers503WhenNoConnectionWaits) {
  inlet::http::server_config cfg;
  cfg.max_connections = 2;
  start(cfg);
  auto id = put(std::string(24u << 20, 'x'));
  std::vector<std::unique_ptr<client>> stuck;
  for (int i = 0; i < 2; ++i) {
    stuck.push_back(std::make_unique<client>(srv->port()));
    stuck.back()->send_raw("GET /api/v1/message/" + id +
                           "/raw HTTP/1.1\r\nHost: localhost\r\n\r\n");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both are being answered
  client late(srv->port());
  late.send_raw("GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto r = late.read();
  EXPECT_EQ(r.result_int(), 503u);
  EXPECT_NE(r.body().find("\"Error\""), std::string::npos) << r.body();
  EXPECT_EQ(r[bh::field::retry_after], "1");
  EXPECT_TRUE(metric_is(*srv, "inlet_http_requests_total{code=\"503\"} 1\n"));
}

// An event-stream client that does not read is dropped once the events it has not taken
// exceed the byte bound, well before the server holds many megabytes for it.
TEST_F(ServerTest, EventStreamClientThatDoesNotReadIsDropped) {
  inlet::http::server_config cfg;
  cfg.event_max_behind_bytes = 64 * 1024;
  start(cfg);
  client c(srv->port());
  c.send_raw("GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n");
  ASSERT_TRUE(eventually([&] { return metric_is(*srv, "inlet_http_event_clients 1\n"); }));
  c.sock.set_option(asio::socket_base::receive_buffer_size(4096));
  // 600 events of ~8 KB (4.8 MB): more than the socket buffers take, fewer events than a
  // count-based queue limit of 1024 would drop on.
  const std::string subject(8000, 's');
  bool dropped = false;
  for (int i = 0; i < 600 && !dropped; ++i) {
    std::error_code ec;
    auto m = make("Subject: x\r\n\r\nx\r\n");
    m.summary.subject = subject;
    store.put_sync(std::move(m), ec);
    if (i % 50 == 49)
      dropped = eventually([&] { return metric_is(*srv, "inlet_http_event_clients 0\n"); },
                           std::chrono::milliseconds(200));
  }
  if (!dropped)
    dropped = eventually([&] { return metric_is(*srv, "inlet_http_event_clients 0\n"); });
  EXPECT_TRUE(dropped);
}

// Event streams are counted per client and in all: past its share a client gets 429,
// past the total everyone gets 503, each with Retry-After; a closed stream frees its
// place.
TEST_F(ServerTest, EventStreamsAreCappedPerClientAndInAll) {
  inlet::http::server_config cfg;
  cfg.max_event_streams_per_client = 2;
  cfg.max_event_streams = 3;
  cfg.event_ping =
      std::chrono::milliseconds(100);  // a stream notices its client's close by writing
  start(cfg);
  auto open = [&](client& c) { c.send_raw("GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n"); };
  auto status = [&](client& c) {
    std::string got;
    beast::error_code ec;
    asio::read_until(c.sock, asio::dynamic_buffer(got), "\r\n", ec);
    return got.substr(0, got.find("\r\n"));
  };
  auto a = std::make_unique<client>(srv->port());
  client b(srv->port()), c(srv->port());
  open(*a);
  EXPECT_EQ(status(*a), "HTTP/1.1 200 OK");
  open(b);
  EXPECT_EQ(status(b), "HTTP/1.1 200 OK");
  open(c);
  EXPECT_EQ(status(c), "HTTP/1.1 429 Too Many Requests");
  EXPECT_TRUE(c.closed_by_peer());
  a.reset();  // its place comes back once the server sees the close
  bool reopened = eventually([&] {
    client d(srv->port());
    open(d);
    return status(d) == "HTTP/1.1 200 OK";
  });
  EXPECT_TRUE(reopened);
  srv.reset();
  // The total: one stream in all.
  cfg.max_event_streams_per_client = 10;
  cfg.max_event_streams = 1;
  start(cfg);
  client e(srv->port()), f(srv->port());
  open(e);
  EXPECT_EQ(status(e), "HTTP/1.1 200 OK");
  open(f);
  EXPECT_EQ(status(f), "HTTP/1.1 503 Service Unavailable");
}

// Requests whose Host names another server get 403 over the wire too, the event stream
// included.
TEST_F(ServerTest, ForeignHostIsRefused) {
  start();
  put("Subject: x\r\n\r\nx\r\n");
  client c(srv->port());
  c.send_raw(
      "DELETE /api/v1/messages HTTP/1.1\r\nHost: rebound.example:8025\r\nContent-Length: "
      "0\r\n\r\n");
  EXPECT_EQ(c.read().result_int(), 403u);
  EXPECT_EQ(store.stats().messages, 1u);
  client e(srv->port());
  e.send_raw("GET /api/events HTTP/1.1\r\nHost: rebound.example\r\n\r\n");
  EXPECT_EQ(e.read().result_int(), 403u);
}
