// The only Asio translation unit of inlet-load: workers and connections.
#include "inlet/load/runner.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <deque>
#include <thread>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace inlet::load {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {
std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        clock_type::now().time_since_epoch())
                                        .count());
}
}  // namespace

void run_result::merge(const run_result& o) {
  seconds = std::max(seconds, o.seconds);
  messages_ok += o.messages_ok;
  messages_failed += o.messages_failed;
  bytes_ok += o.bytes_ok;
  connects += o.connects;
  connect_errors += o.connect_errors;
  disconnects += o.disconnects;
  pipelining_fallbacks += o.pipelining_fallbacks;
  tls_handshakes += o.tls_handshakes;
  for (const auto& [k, v] : o.errors) errors[k] += v;
  latency.merge(o.latency);
  service.merge(o.service);
}

class connection;

class runner::worker {
 public:
  worker(const run_config& cfg, const prepared_corpus& corpus,
         const std::vector<std::unique_ptr<envelope>>& envs, const tls_context* tls,
         live_counters& live, unsigned index, std::uint64_t budget, double rate)
      : cfg_(cfg), corpus_(corpus), env_(*envs.front()), envs_(envs), tls_(tls), live_(live),
        budget_(budget), rate_(rate), deadline_(io_), rate_timer_(io_),
        next_msg_(std::uint64_t{index} * 7919), next_env_(std::uint64_t{index} * 104729) {}

  void add_connection(const tcp::endpoint& src);
  void run();

  // Called by connections.
  asio::io_context& io() noexcept { return io_; }
  const run_config& cfg() const noexcept { return cfg_; }
  const envelope& env() const noexcept { return env_; }
  const tls_context* tls() const noexcept { return tls_; }
  run_result& result() noexcept { return result_; }
  live_counters& live() noexcept { return live_; }
  const tcp::endpoint& target() const noexcept { return target_; }
  bool stopping() const noexcept { return stopping_; }
  void on_ready(connection& c, std::uint64_t now);
  void on_completed(bool ok, int code, std::uint64_t bytes, std::uint64_t intended,
                    std::uint64_t data_start, std::uint64_t now);
  void on_aborted(const std::string& why);
  void count_error(const std::string& key) { ++result_.errors[key]; }

 private:
  bool claim(std::uint64_t now, std::uint64_t& intended);
  void schedule_tokens();
  void stop();

  const run_config& cfg_;
  const prepared_corpus& corpus_;
  const envelope& env_;
  const std::vector<std::unique_ptr<envelope>>& envs_;
  const tls_context* tls_;
  live_counters& live_;
  std::uint64_t budget_;  // messages this worker may start; ~0 when unbounded
  double rate_;           // open loop: messages/s of this worker; 0 closed loop
  asio::io_context io_{1};
  tcp::endpoint target_;
  asio::steady_timer deadline_, rate_timer_;
  std::uint64_t next_msg_;               // index into the corpus (wraps)
  std::uint64_t next_env_;               // index into the envelopes (wraps)
  std::vector<std::unique_ptr<connection>> conns_;
  std::vector<connection*> idle_;        // open loop: ready connections waiting for a token
  std::deque<std::uint64_t> tokens_;     // open loop: intended send times not yet served
  std::uint64_t claimed_ = 0, completed_ = 0, issued_ = 0;
  std::uint64_t start_ns_ = 0;
  bool stopping_ = false;
  run_result result_;
  friend class connection;
};

class connection {
 public:
  connection(runner::worker& w, const tcp::endpoint& src)
      : w_(w), src_(src), sock_(w.io()), retry_(w.io()),
        session_(w.env(), w.cfg().session) {}

  void connect();
  void close_for_stop() {
    boost::system::error_code ignored;
    retry_.cancel();
    sock_.close(ignored);
  }
  void send(const prepared_message& m, const envelope& env, std::uint64_t intended,
            std::uint64_t now);
  bool ready() const noexcept { return open_ && session_.ready() && !close_after_write_; }
  void flush();
  bool in_idle = false;

 private:
  void on_connect(const boost::system::error_code& ec);
  void read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void apply(const session_output& out, std::uint64_t now);
  void on_write(const boost::system::error_code& ec);
  // Closes and reconnects; `delay`: after --reconnect-delay (a refused TLS handshake would
  // otherwise be retried in a tight loop).
  void drop(const std::string& why, bool delay = false);
  void start_tls();
  bool handle_tls_input(std::string_view cipher, std::uint64_t now);

  runner::worker& w_;
  tcp::endpoint src_;
  tcp::socket sock_;
  asio::steady_timer retry_;
  client_session session_;
  reply_parser parser_;
  std::array<char, 8192> rbuf_;
  std::vector<asio::const_buffer> out_, writing_;  // queued; in flight (kept alive)
  // STARTTLS: the channel, the plaintext of one read, and ciphertext queued / in flight.
  std::unique_ptr<tls_channel> tls_;
  std::string plain_, cipher_out_, cipher_writing_;
  bool open_ = false, write_busy_ = false, close_after_write_ = false;
  bool in_message_ = false, checked_ext_ = false, tls_pending_ = false;
  std::uint32_t gen_ = 0;  // incremented per connect; handlers of an older socket return
  std::uint64_t msg_bytes_ = 0, intended_ = 0, data_start_ = 0;
};

void connection::connect() {
  if (w_.stopping()) return;
  ++gen_;
  boost::system::error_code ec;
  sock_.close(ec);
  sock_.open(tcp::v4(), ec);
  if (!ec) {
    const int one = 1;
    ::setsockopt(sock_.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sock_.bind(src_, ec);
  }
  if (ec) {
    on_connect(ec);
    return;
  }
  sock_.async_connect(w_.target(), [this, g = gen_](const boost::system::error_code& e) {
    if (g == gen_) on_connect(e);
  });
}

void connection::on_connect(const boost::system::error_code& ec) {
  if (w_.stopping()) return;
  if (ec) {
    ++w_.result().connect_errors;
    w_.count_error("connect: " + ec.message());
    retry_.expires_after(std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(w_.cfg().reconnect_delay_s)));
    retry_.async_wait([this](const boost::system::error_code& e) {
      if (!e) connect();
    });
    return;
  }
  boost::system::error_code ignored;
  sock_.set_option(tcp::no_delay(true), ignored);
  ++w_.result().connects;
  w_.live().connections.fetch_add(1, std::memory_order_relaxed);
  open_ = true;
  write_busy_ = close_after_write_ = in_message_ = checked_ext_ = tls_pending_ = false;
  out_.clear();
  tls_.reset();
  cipher_out_.clear();
  parser_ = reply_parser{};
  session_.on_connected();
  read();
}

void connection::read() {
  sock_.async_read_some(asio::buffer(rbuf_),
                        [this, g = gen_](const boost::system::error_code& ec, std::size_t n) {
                          if (g == gen_) on_read(ec, n);
                        });
}

void connection::drop(const std::string& why, bool delay) {
  if (!open_) return;
  open_ = false;
  in_idle = false;
  w_.live().connections.fetch_sub(1, std::memory_order_relaxed);
  boost::system::error_code ignored;
  sock_.close(ignored);
  if (w_.stopping()) return;
  if (in_message_) {
    in_message_ = false;
    w_.on_aborted(why);
  }
  ++w_.result().disconnects;
  if (!delay) {
    connect();
    return;
  }
  retry_.expires_after(std::chrono::duration_cast<clock_type::duration>(
      std::chrono::duration<double>(w_.cfg().reconnect_delay_s)));
  retry_.async_wait([this](const boost::system::error_code& e) {
    if (!e) connect();
  });
}

void connection::on_read(const boost::system::error_code& ec, std::size_t n) {
  if (w_.stopping()) return;
  if (ec) {
    drop(ec == asio::error::eof ? "eof" : "read: " + ec.message());
    return;
  }
  const std::uint64_t now = now_ns();
  std::string_view bytes(rbuf_.data(), n);
  if (tls_) {
    if (!handle_tls_input(bytes, now)) return;
    bytes = plain_;
  }
  const auto perr = parser_.consume(bytes, [&](const reply& r) { apply(session_.on_reply(r), now); });
  if (perr) {
    w_.count_error("reply: " + perr.message());
    drop("bad reply");
    return;
  }
  if (!open_) return;
  if (tls_pending_) start_tls();
  if (!checked_ext_ && session_.ready()) {
    checked_ext_ = true;
    const auto& sc = w_.cfg().session;
    if ((sc.pipelining && !session_.server_pipelining()) || (sc.bdat && !session_.server_chunking()))
      ++w_.result().pipelining_fallbacks;
  }
  if (session_.ready() && !close_after_write_) w_.on_ready(*this, now);
  const std::uint32_t g = gen_;
  flush();                        // may drop the connection and start a new one
  if (open_ && g == gen_) read();
}

// Ciphertext in; plaintext of this read left in plain_. False when the connection dropped.
bool connection::handle_tls_input(std::string_view cipher, std::uint64_t now) {
  const bool was_established = tls_->established();
  plain_.clear();
  if (const auto ec = tls_->feed(cipher, plain_)) {
    w_.count_error(ec == errc::tls_closed ? "tls: closed by server" : "tls: " + tls_->last_error());
    drop("tls", true);
    return false;
  }
  if (!was_established && tls_->established()) {
    ++w_.result().tls_handshakes;
    apply(session_.on_tls_established(), now);  // EHLO again, encrypted
  }
  return true;
}

// After the 220 to STARTTLS: anything else the server sent in clear text is dropped with
// the parser's state (RFC 3207 5), and the handshake begins; flush() sends the ClientHello.
void connection::start_tls() {
  tls_pending_ = false;
  parser_ = reply_parser{};
  if (!w_.tls()) {
    w_.count_error("tls: no context");
    drop("tls", true);
    return;
  }
  tls_ = std::make_unique<tls_channel>(*w_.tls());
  if (const auto ec = tls_->handshake()) {
    w_.count_error("tls: " + tls_->last_error());
    drop("tls", true);
  }
}

void connection::send(const prepared_message& m, const envelope& env, std::uint64_t intended,
                      std::uint64_t now) {
  in_message_ = true;
  msg_bytes_ = m.raw.size();
  intended_ = intended;
  apply(session_.send(m, &env), now);
}

void connection::apply(const session_output& out, std::uint64_t now) {
  using ev = session_output::event;
  switch (out.ev) {
    case ev::message_ok:
    case ev::message_failed:
      in_message_ = false;
      w_.on_completed(out.ev == ev::message_ok, out.code, msg_bytes_, intended_, data_start_, now);
      break;
    case ev::connect_failed: w_.count_error("refused: " + std::to_string(out.code)); break;
    case ev::protocol_error: w_.count_error("unexpected: " + std::to_string(out.code)); break;
    case ev::start_tls: tls_pending_ = true; break;
    case ev::tls_refused:
      w_.count_error(out.code ? "starttls refused: " + std::to_string(out.code) : "starttls not offered");
      break;
    case ev::closed:
    case ev::none: break;
  }
  if (out.body_started) data_start_ = now;
  if (tls_ && tls_->established()) {
    // Encrypted at once: the views need not outlive this call, the records are queued.
    for (std::uint8_t i = 0; i < out.n_writes; ++i)
      if (tls_->write(out.writes[i])) {
        w_.count_error("tls: " + tls_->last_error());
        close_after_write_ = true;
        return;
      }
  } else {
    for (std::uint8_t i = 0; i < out.n_writes; ++i)
      out_.emplace_back(out.writes[i].data(), out.writes[i].size());
  }
  if (out.close) close_after_write_ = true;
}

void connection::flush() {
  if (write_busy_ || !open_) return;
  if (tls_) tls_->take_output(cipher_out_);
  if (out_.empty() && cipher_out_.empty()) {
    if (close_after_write_) drop("closed");
    return;
  }
  writing_.swap(out_);
  out_.clear();
  // Clear text (before STARTTLS) always precedes ciphertext: one gather write.
  cipher_writing_.swap(cipher_out_);
  cipher_out_.clear();
  if (!cipher_writing_.empty()) writing_.emplace_back(cipher_writing_.data(), cipher_writing_.size());
  write_busy_ = true;
  asio::async_write(sock_, writing_, [this, g = gen_](const boost::system::error_code& ec, std::size_t) {
    if (g == gen_) on_write(ec);
  });
}

void connection::on_write(const boost::system::error_code& ec) {
  write_busy_ = false;
  if (w_.stopping()) return;
  if (ec) {
    drop("write: " + ec.message());
    return;
  }
  flush();
}

void runner::worker::add_connection(const tcp::endpoint& src) {
  conns_.push_back(std::make_unique<connection>(*this, src));
}

bool runner::worker::claim(std::uint64_t now, std::uint64_t& intended) {
  if (stopping_ || claimed_ >= budget_) return false;
  if (rate_ > 0) {
    if (tokens_.empty()) return false;
    intended = tokens_.front();
    tokens_.pop_front();
  } else {
    intended = now;
  }
  ++claimed_;
  return true;
}

void runner::worker::on_ready(connection& c, std::uint64_t now) {
  std::uint64_t intended = 0;
  if (claim(now, intended)) {
    c.send(corpus_[next_msg_++], *envs_[next_env_++ % envs_.size()], intended, now);
    return;
  }
  if (rate_ > 0 && !c.in_idle && claimed_ < budget_) {
    c.in_idle = true;
    idle_.push_back(&c);
  }
}

void runner::worker::schedule_tokens() {
  if (stopping_) return;
  const std::uint64_t now = now_ns();
  const double period_ns = 1e9 / rate_;
  std::uint64_t next = start_ns_ + static_cast<std::uint64_t>(issued_ * period_ns);
  while (next <= now && issued_ < budget_) {
    tokens_.push_back(next);
    ++issued_;
    next = start_ns_ + static_cast<std::uint64_t>(issued_ * period_ns);
  }
  while (!tokens_.empty() && !idle_.empty()) {
    connection* c = idle_.back();
    idle_.pop_back();
    if (!c->in_idle) continue;  // stale hint: closed or already served
    c->in_idle = false;
    if (!c->ready()) continue;
    std::uint64_t intended = 0;
    if (!claim(now, intended)) break;
    c->send(corpus_[next_msg_++], *envs_[next_env_++ % envs_.size()], intended, now);
    c->flush();
  }
  if (issued_ >= budget_) return;
  rate_timer_.expires_at(clock_type::time_point(std::chrono::nanoseconds(next)));
  rate_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) schedule_tokens();
  });
}

void runner::worker::on_completed(bool ok, int code, std::uint64_t bytes, std::uint64_t intended,
                                  std::uint64_t data_start, std::uint64_t now) {
  ++completed_;
  if (ok) {
    ++result_.messages_ok;
    result_.bytes_ok += bytes;
    live_.ok.fetch_add(1, std::memory_order_relaxed);
    live_.bytes.fetch_add(bytes, std::memory_order_relaxed);
    result_.service.record(now - std::min(now, data_start));
    result_.latency.record(now - std::min(now, rate_ > 0 ? intended : data_start));
  } else {
    ++result_.messages_failed;
    live_.failed.fetch_add(1, std::memory_order_relaxed);
    ++result_.errors[std::to_string(code)];
  }
  if (completed_ >= budget_) stop();
}

void runner::worker::on_aborted(const std::string& why) {
  ++completed_;
  ++result_.messages_failed;
  live_.failed.fetch_add(1, std::memory_order_relaxed);
  ++result_.errors["connection lost mid-message: " + why];
  if (completed_ >= budget_) stop();
}

void runner::worker::stop() {
  if (stopping_) return;
  stopping_ = true;
  deadline_.cancel();
  rate_timer_.cancel();
  // Polite QUIT where a connection is idle would need replies; the run is over, close.
  for (auto& c : conns_) c->close_for_stop();
}

void runner::worker::run() {
  boost::system::error_code ec;
  target_ = tcp::endpoint(asio::ip::make_address(cfg_.host, ec), cfg_.port);
  if (ec) {
    count_error("bad host: " + cfg_.host);
    return;
  }
  start_ns_ = now_ns();
  deadline_.expires_after(std::chrono::duration_cast<clock_type::duration>(
      std::chrono::duration<double>(cfg_.duration_s)));
  deadline_.async_wait([this](const boost::system::error_code& e) {
    if (!e) stop();
  });
  if (budget_ == 0) return;
  for (auto& c : conns_) c->connect();
  if (rate_ > 0) schedule_tokens();
  io_.run();
  result_.seconds = static_cast<double>(now_ns() - start_ns_) / 1e9;
}

std::string mailbox_of(const std::string& to, std::uint32_t n) {
  const std::string num = std::to_string(n);
  if (auto at = to.find("{n}"); at != std::string::npos)
    return to.substr(0, at) + num + to.substr(at + 3);
  auto at = to.rfind('@');
  if (at == std::string::npos) return to + num;
  return to.substr(0, at) + num + to.substr(at);
}

std::vector<std::unique_ptr<envelope>> make_envelopes(const run_config& cfg) {
  std::vector<std::unique_ptr<envelope>> out;
  const std::uint32_t n = std::max<std::uint32_t>(1, cfg.to_count);
  const std::uint32_t k = std::clamp<std::uint32_t>(cfg.rcpts_per_message, 1,
                                                    static_cast<std::uint32_t>(envelope::max_recipients));
  if (n == 1 && k == 1) {  // the plain run: --to as given
    out.push_back(std::make_unique<envelope>(cfg.helo, cfg.from, cfg.to));
    return out;
  }
  out.reserve(n);
  for (std::uint32_t first = 0; first < n; ++first) {
    std::vector<std::string> to;
    for (std::uint32_t j = 0; j < std::min(k, n); ++j) to.push_back(mailbox_of(cfg.to, (first + j) % n));
    out.push_back(std::make_unique<envelope>(cfg.helo, cfg.from, to));
  }
  return out;
}

runner::runner(run_config cfg, const prepared_corpus& corpus)
    : cfg_(std::move(cfg)), corpus_(corpus), envs_(make_envelopes(cfg_)) {
  cfg_.threads = std::max(1u, std::min(cfg_.threads, std::max(1u, cfg_.connections)));
  cfg_.sources = std::max(1u, cfg_.sources);
  if (cfg_.session.starttls) tls_ = std::make_unique<tls_context>(cfg_.tls);
  const std::uint64_t unbounded = ~std::uint64_t{0};
  for (unsigned t = 0; t < cfg_.threads; ++t) {
    std::uint64_t budget = unbounded;
    if (cfg_.count) budget = cfg_.count / cfg_.threads + (t < cfg_.count % cfg_.threads ? 1 : 0);
    live_.push_back(std::make_unique<live_counters>());
    workers_.push_back(std::make_unique<worker>(cfg_, corpus_, envs_, tls_.get(), *live_.back(), t,
                                                budget, cfg_.rate / cfg_.threads));
  }
  for (unsigned i = 0; i < cfg_.connections; ++i) {
    const unsigned host = cfg_.first_source + i % cfg_.sources;
    const asio::ip::address_v4 a(
        (127u << 24) | ((host >> 16) & 0xff) << 16 | ((host >> 8) & 0xff) << 8 | (host & 0xff));
    workers_[i % cfg_.threads]->add_connection(tcp::endpoint(a, 0));
  }
}

runner::~runner() = default;

void runner::start() {
  using namespace std::chrono;
  started_at_ = duration<double>(steady_clock::now().time_since_epoch()).count();
  running_.store(static_cast<unsigned>(workers_.size()));
  for (auto& w : workers_) {
    threads_.emplace_back([this, wp = w.get()] {
      wp->run();
      running_.fetch_sub(1, std::memory_order_release);
    });
  }
}

bool runner::done() const noexcept { return running_.load(std::memory_order_acquire) == 0; }

runner::snapshot runner::live() const noexcept {
  snapshot s{0, 0, 0, 0};
  for (const auto& l : live_) {
    s.ok += l->ok.load(std::memory_order_relaxed);
    s.failed += l->failed.load(std::memory_order_relaxed);
    s.bytes += l->bytes.load(std::memory_order_relaxed);
    s.connections += l->connections.load(std::memory_order_relaxed);
  }
  return s;
}

run_result runner::wait() {
  for (auto& t : threads_) t.join();
  threads_.clear();
  run_result r;
  for (auto& w : workers_) r.merge(w->result());
  return r;
}

}  // namespace inlet::load
