// The hostile engine: `connections` slots, each running one attack's script
// over a TCP connection; when the server closes or refuses one, the slot
// connects again after reconnect_ms (churn: at once). New connections are
// paced by a token bucket (ramp_rate, or churn_rate for the churn attacks),
// so 15,000 connections open in seconds, not in one burst that would only
// measure the listen queue. One io_context, one thread.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <deque>
#include <thread>

#include "hostile.hpp"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace hostile {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

const std::vector<kind_info>& all_kinds() {
  static const std::vector<kind_info> k = {
      {kind::slowloris, "slowloris", false},       {kind::idle_ehlo, "idle-ehlo", false},
      {kind::long_command, "long-command", false}, {kind::long_data, "long-data", false},
      {kind::data_trickle, "data-trickle", false}, {kind::churn_fin, "churn-fin", false},
      {kind::churn_rst, "churn-rst", false},       {kind::address_list, "address-list", false},
      {kind::slow_http, "slow-http", true},        {kind::sse_no_read, "sse-no-read", true},
      {kind::heavy_reader, "heavy-reader", true},
  };
  return k;
}

const kind_info* find_kind(std::string_view name) {
  for (const auto& k : all_kinds())
    if (name == k.name) return &k;
  return nullptr;
}

std::string hostile_source(const options& o, int i) {
  if (o.one_subnet) return "127.1.0." + std::to_string(1 + i % 254);
  return "127.1." + std::to_string(i % 256) + ".1";
}

std::string address_list_message(int count, const std::string& form) {
  static constexpr const char* forms[] = {"bare", "named", "comment", "encoded", "group"};
  std::string m = "From: list@hostile.test\r\nSubject: many recipients\r\nTo: ";
  std::size_t line = 4;
  for (int i = 0; i < count; ++i) {
    const std::string n = std::to_string(i);
    const std::string f = form == "mixed" ? forms[i % 5] : form;
    std::string a;
    if (f == "named")
      a = "User " + n + " <u" + n + "@h.test>";
    else if (f == "comment")
      a = "u" + n + "@h.test (User " + n + ")";
    else if (f == "encoded")
      a = "=?utf-8?q?J=C3=BCrgen_" + n + "?= <u" + n + "@h.test>";
    else if (f == "group" && i % 2 == 0)
      a = "g" + n + ": u" + n + "@h.test;";
    else
      a = "u" + n + "@h.test";
    if (i + 1 < count) a += ',';
    if (line + a.size() > 76) {
      m += "\r\n ";
      line = 1;
    }
    m += a;
    line += a.size();
  }
  m += "\r\n\r\nbody\r\n.\r\n";
  return m;
}

namespace {

const char* const envelope = "MAIL FROM:<x@hostile.test>\r\nRCPT TO:<y@inbox.test>\r\nDATA\r\n";

// One hostile connection attempt; the slot makes a new one after it ends.
struct conn : std::enable_shared_from_this<conn> {
  conn(asio::io_context& io, int s) : slot(s), sock(io), timer(io) {}
  int slot;
  tcp::socket sock;
  asio::steady_timer timer;
  std::array<char, 4096> rbuf{};
  std::string line;      // the reply line being read
  bool greeted = false;  // the first reply or status line was seen
  bool ended = false;
  bool open = false;             // connected and counted in hostile_counts::open
  std::size_t content_left = 0;  // heavy reader: body octets still to come
  bool in_headers = true;
  std::string headers;
};

}  // namespace

struct engine::impl {
  impl(const options& o, kind k, const target& t) : opt(o), k(k), tgt(t) {
    for (int i = 0; i < o.sources; ++i)
      sources.push_back(asio::ip::make_address_v4(hostile_source(o, i)));
    if (k == kind::address_list) message = address_list_message(o.address_count, o.address_form);
    if (k == kind::heavy_reader)
      request = "GET /api/v1/message/" + t.heavy_id +
                "/raw HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n";
    slots.resize(static_cast<std::size_t>(slot_count()));  // holds each slot's connection
  }

  int slot_count() const {
    if (k == kind::address_list) return opt.address_conns;
    if (k == kind::heavy_reader) return opt.heavy_conns;
    return opt.connections;
  }
  bool churn() const { return k == kind::churn_fin || k == kind::churn_rst; }
  bool http() const {
    return k == kind::slow_http || k == kind::sse_no_read || k == kind::heavy_reader;
  }

  void start_all() {
    for (int i = 0; i < slot_count(); ++i) queue.push_back(i);
    pace();
  }

  // Token bucket: every 10 ms, rate/100 new connections from the queue.
  void pace() {
    if (stopping) return;
    double rate = churn() ? opt.churn_rate : opt.ramp_rate;
    tokens = std::min(tokens + rate / 100.0, std::max(1.0, rate / 10.0));
    while (tokens >= 1.0 && !queue.empty()) {
      int s = queue.front();
      queue.pop_front();
      tokens -= 1.0;
      launch(s);
    }
    pacer.expires_after(10ms);
    pacer.async_wait([this](error_code ec) {
      if (!ec) pace();
    });
  }

  void launch(int s) {
    auto c = std::make_shared<conn>(io, s);
    slots[static_cast<std::size_t>(s)] = c;
    cnt.attempts.fetch_add(1, std::memory_order_relaxed);
    error_code ec;
    c->sock.open(tcp::v4(), ec);
    if (ec) return end(c, opt.reconnect_ms, &cnt.connect_failed);
    int one = 1;
    ::setsockopt(c->sock.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    if (k == kind::sse_no_read) {
      int small = 4096;  // a subscriber that does not read: its window fills soon
      ::setsockopt(c->sock.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    }
    c->sock.bind(tcp::endpoint(sources[static_cast<std::size_t>(s) % sources.size()], 0), ec);
    if (ec) return end(c, opt.reconnect_ms, &cnt.connect_failed);
    tcp::endpoint to(asio::ip::make_address_v4("127.0.0.1"),
                     http() ? tgt.http_port : tgt.smtp_port);
    c->sock.async_connect(to, [this, c](error_code e) { connected(c, e); });
  }

  void connected(const std::shared_ptr<conn>& c, error_code ec) {
    if (c->ended) return;
    if (ec) return end(c, opt.reconnect_ms, &cnt.connect_failed);
    cnt.connected.fetch_add(1, std::memory_order_relaxed);
    c->open = true;
    std::int64_t now_open = cnt.open.fetch_add(1, std::memory_order_relaxed) + 1;
    if (now_open > cnt.peak_open.load(std::memory_order_relaxed))
      cnt.peak_open.store(now_open, std::memory_order_relaxed);
    c->greeted = false;
    if (churn()) {
      if (k == kind::churn_rst) {
        linger l{1, 0};  // close() sends RST
        ::setsockopt(c->sock.native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
      }
      return end(c, 0, nullptr);
    }
    c->sock.non_blocking(true, ec);
    read(c);  // an event subscriber reads the status line only (see read())
    begin(c);
  }

  // The first bytes of each script; the trickles go on in tick().
  void begin(const std::shared_ptr<conn>& c) {
    switch (k) {
      case kind::slowloris:
        return tick(c, "EHLO ", 1);
      case kind::idle_ehlo:
        return put(c, "EHLO idle.hostile.test\r\n");
      case kind::long_command:
        return tick(c, "EHLO ", 1000);
      case kind::long_data:
        return tick(c, std::string("EHLO h\r\n") + envelope, 1000);
      case kind::data_trickle:
        return tick(c, std::string("EHLO h\r\n") + envelope, 1);
      case kind::address_list:
        return put(c, std::string("EHLO h\r\n") + envelope);
      case kind::slow_http:
        return tick(c, "GET /api/v1/messages?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", 1);
      case kind::sse_no_read:
        return put(
            c, "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n");
      case kind::heavy_reader:
        return put(c, request);
      case kind::churn_fin:
      case kind::churn_rst:
        return;
    }
  }

  // Sends `first`, then `each` octets of filler every period (trickle_ms for
  // one octet, 1 s for 1000), never a line end.
  void tick(const std::shared_ptr<conn>& c, const std::string& first, std::size_t each) {
    if (c->ended || stopping) return;
    put(c, first.empty() ? std::string(each, each == 1 ? 'a' : 'x') : first);
    auto period =
        each == 1 ? std::chrono::milliseconds(opt.trickle_ms) : std::chrono::milliseconds(1000);
    c->timer.expires_after(period);
    c->timer.async_wait([this, c, each](error_code ec) {
      if (!ec) tick(c, {}, each);
    });
  }

  // A small write without waiting (a full socket drops it: these are
  // trickles); a large one (an address-list message) asynchronously.
  void put(const std::shared_ptr<conn>& c, const std::string& data) {
    if (data.size() <= 4096) {
      error_code ec;
      c->sock.write_some(asio::buffer(data), ec);
      return;
    }
    asio::async_write(c->sock, asio::buffer(data), [this, c](error_code ec, std::size_t) {
      if (ec && !c->ended) end(c, opt.reconnect_ms, &cnt.closed);
    });
  }

  void read(const std::shared_ptr<conn>& c) {
    c->sock.async_read_some(asio::buffer(c->rbuf), [this, c](error_code ec, std::size_t n) {
      if (c->ended) return;
      if (ec) return end(c, opt.reconnect_ms, &cnt.closed);
      cnt.bytes_in.fetch_add(n, std::memory_order_relaxed);
      if (k == kind::heavy_reader)
        heavy(c, std::string_view(c->rbuf.data(), n));
      else
        for (char ch : std::string_view(c->rbuf.data(), n)) {
          if (ch != '\n') {
            if (c->line.size() < 200) c->line += ch;
            continue;
          }
          if (!reply(c)) return;
          c->line.clear();
        }
      // An event subscriber that was let in never reads again; a refused one (429, 503)
      // has been ended above and tries again, as EventSource does.
      if (k == kind::sse_no_read && c->greeted) return;
      read(c);
    });
  }

  // One reply or status line. False when it ended the connection.
  bool reply(const std::shared_ptr<conn>& c) {
    const std::string& l = c->line;
    bool first = !std::exchange(c->greeted, true);
    if (first && (l.starts_with("421") || l.starts_with("HTTP/1.1 503") ||
                  l.starts_with("HTTP/1.0 503") || l.starts_with("HTTP/1.1 429"))) {
      end(c, opt.reconnect_ms, &cnt.refused);
      return false;
    }
    if (l.starts_with("421 4.7.0") && l.find("slow") != std::string::npos) {
      end(c, opt.reconnect_ms, &cnt.evicted);
      return false;
    }
    if (l.starts_with("421 4.4.2")) {
      end(c, opt.reconnect_ms, &cnt.timed_out);
      return false;
    }
    if (k == kind::address_list) {
      if (l.starts_with("354")) put(c, message);
      if (l.starts_with("250 2.0.0")) {
        cnt.messages.fetch_add(1, std::memory_order_relaxed);
        put(c, envelope);
      }
      if (l.starts_with("5") || l.starts_with("4")) put(c, "RSET\r\n" + std::string(envelope));
    }
    return true;
  }

  // The heavy reader: headers, then Content-Length octets, then the next request.
  void heavy(const std::shared_ptr<conn>& c, std::string_view data) {
    while (!data.empty()) {
      if (c->in_headers) {
        c->headers.append(data);
        auto e = c->headers.find("\r\n\r\n");
        if (e == std::string::npos) return;
        std::string rest = c->headers.substr(e + 4);
        auto cl = c->headers.find("Content-Length: ");
        c->content_left =
            cl == std::string::npos || cl > e ? 0 : std::stoull(c->headers.substr(cl + 16));
        c->in_headers = false;
        c->headers.clear();
        body(c, rest);
        return;
      }
      std::size_t take = std::min(data.size(), c->content_left);
      c->content_left -= take;
      data.remove_prefix(take);
      if (c->content_left == 0) done_response(c);
    }
  }
  void body(const std::shared_ptr<conn>& c, std::string_view rest) {
    std::size_t take = std::min(rest.size(), c->content_left);
    c->content_left -= take;
    if (c->content_left == 0) done_response(c);
  }
  void done_response(const std::shared_ptr<conn>& c) {
    cnt.responses.fetch_add(1, std::memory_order_relaxed);
    c->in_headers = true;
    put(c, request);
  }

  // The connection ended (counted in `why`); the slot tries again later.
  void end(const std::shared_ptr<conn>& c, int delay_ms, std::atomic<std::uint64_t>* why) {
    if (c->ended) return;
    c->ended = true;
    if (why != nullptr) why->fetch_add(1, std::memory_order_relaxed);
    error_code ig;
    c->timer.cancel();
    if (c->sock.is_open()) c->sock.close(ig);
    if (std::exchange(c->open, false)) cnt.open.fetch_sub(1, std::memory_order_relaxed);
    if (stopping) return;
    int s = c->slot;
    if (delay_ms <= 0) {
      queue.push_back(s);
      return;
    }
    auto t = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(delay_ms));
    t->async_wait([this, t, s](error_code ec) {
      if (!ec && !stopping) queue.push_back(s);
    });
  }

  void stop_all() {
    stopping = true;
    pacer.cancel();
    for (auto& c : slots)
      if (c) {
        error_code ig;
        c->timer.cancel();
        c->ended = true;
        if (std::exchange(c->open, false)) cnt.open.fetch_sub(1, std::memory_order_relaxed);
        c->sock.close(ig);
      }
  }

  const options& opt;
  kind k;
  target tgt;
  asio::io_context io{1};
  asio::steady_timer pacer{io};
  std::vector<asio::ip::address_v4> sources;
  // Each slot's current connection, held here: a subscriber that never reads
  // has no pending handler to keep it alive.
  std::vector<std::shared_ptr<conn>> slots;
  std::deque<int> queue;
  double tokens = 0;
  bool stopping = false;
  std::string message, request;
  hostile_counts cnt;
  std::thread thread;
};

engine::engine(const options& o, kind k, const target& t)
    : impl_(std::make_unique<impl>(o, k, t)) {}

engine::~engine() {
  stop();
}

void engine::start() {
  impl* p = impl_.get();
  asio::post(p->io, [p] { p->start_all(); });
  p->thread = std::thread([p] {
    // A nicer engine yields its core to the good client's threads sooner
    // (both run in this process, on one core with --pin); it still gets
    // whatever the good client does not use.
    if (p->opt.engine_nice != 0)
      ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), p->opt.engine_nice);
    p->io.run();
  });
}

void engine::stop() {
  impl* p = impl_.get();
  if (!p->thread.joinable()) return;
  asio::post(p->io, [p] {
    p->stop_all();
    p->io.stop();
  });
  p->thread.join();
}

const hostile_counts& engine::counts() const noexcept {
  return impl_->cnt;
}

}  // namespace hostile
