// inlet-hostile: runs inletd (a child process) and, for each attack in turn,
// a well-behaved client alone (baseline), then beside the attack, then alone
// again (recovery); prints per attack the good client's latencies against
// its baseline, its refusals, inletd's RSS before/peak/after and CPU, and
// whether it recovered. docs/benchmarks/hostile.md explains the figures.
//
// Why C++ and not Python asyncio: 15,000 hostile connections with a timer
// each are a few MB and a fraction of a core in one Asio thread (attack.cpp),
// while the good client runs on its own threads with blocking sockets, so
// its timestamps are not delayed by the attacker's event loop; in one
// asyncio loop the attacker's work would show up as the good client's
// latency, measuring the harness instead of the server.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "hostile.hpp"

namespace hostile {
namespace {

using namespace std::chrono_literals;

double secs(sclock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

// ---------------------------------------------------------------- inletd

// inletd as a child process on ports it picks (port 0); its stdout is read
// for the ports, then drained by a thread.
class server_proc {
 public:
  bool start(const options& o) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return false;
    std::vector<std::string> args = {o.inletd,
                                     "--smtp",
                                     "127.0.0.1:0",
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--max-store-bytes",
                                     std::to_string(o.max_store_bytes),
                                     "--max-messages",
                                     "1000000",
                                     "--quiet"};
    std::istringstream extra(o.inletd_args);
    for (std::string a; extra >> a;) args.push_back(a);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      if (o.pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        ::sched_setaffinity(0, sizeof set, &set);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::fprintf(stderr, "inlet-hostile: cannot run %s: %s\n", argv[0], std::strerror(errno));
      ::_exit(127);
    }
    ::close(out[1]);
    out_ = out[0];
    return pid_ > 0 && read_ports();
  }

  // SIGTERM, then the graceful stop (at most 40 s), then SIGKILL.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    auto until = sclock::now() + 40s;
    int st = 0;
    while (::waitpid(pid_, &st, WNOHANG) == 0) {
      if (sclock::now() > until) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    pid_ = -1;
    if (drain_.joinable()) drain_.join();
    ::close(out_);
  }
  ~server_proc() { stop(); }

  pid_t pid() const { return pid_; }
  std::uint16_t smtp_port = 0, http_port = 0;

 private:
  bool read_ports() {
    std::string buf;
    auto until = sclock::now() + 30s;
    while ((smtp_port == 0 || http_port == 0) && sclock::now() < until) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      char tmp[512];
      ssize_t n = ::read(out_, tmp, sizeof tmp);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<std::size_t>(n));
      for (std::size_t e; (e = buf.find('\n')) != std::string::npos; buf.erase(0, e + 1)) {
        std::string l = buf.substr(0, e);
        auto port_after = [&](const char* what) -> std::uint16_t {
          auto p = l.find(what);
          if (p == std::string::npos) return 0;
          auto colon = l.find(':', p + std::strlen(what));
          return static_cast<std::uint16_t>(std::atoi(l.c_str() + colon + 1));
        };
        if (auto p = port_after("smtp listening on 127.0.0.1")) smtp_port = p;
        if (auto p = port_after("http listening on 127.0.0.1")) http_port = p;
      }
    }
    drain_ = std::thread([fd = out_] {
      char tmp[4096];
      while (::read(fd, tmp, sizeof tmp) > 0) {
      }
    });
    return smtp_port != 0 && http_port != 0;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  std::thread drain_;
};

// ---------------------------------------------------------------- /proc

struct proc_sample {
  sclock::time_point t;
  long rss_kb = 0;
  long cpu_ticks = 0;
};

proc_sample sample_proc(pid_t pid) {
  proc_sample s;
  s.t = sclock::now();
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string l; std::getline(status, l);)
    if (l.starts_with("VmRSS:")) s.rss_kb = std::atol(l.c_str() + 6);
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  if (close != std::string::npos) {
    std::istringstream in(all.substr(close + 2));
    std::string f;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> f; ++i) {
      if (i == 14) utime = std::atol(f.c_str());
      if (i == 15) stime = std::atol(f.c_str());
    }
    s.cpu_ticks = utime + stime;
  }
  return s;
}

// Samples inletd's RSS and CPU every 200 ms while it runs.
class sampler {
 public:
  explicit sampler(pid_t pid) : pid_(pid), thread_([this] { run(); }) {}
  ~sampler() {
    stop_ = true;
    thread_.join();
  }
  std::vector<proc_sample> between(sclock::time_point a, sclock::time_point b) {
    std::lock_guard lk(mu_);
    std::vector<proc_sample> out;
    for (auto& s : samples_)
      if (s.t >= a && s.t <= b) out.push_back(s);
    return out;
  }
  proc_sample now() { return sample_proc(pid_); }

 private:
  void run() {
    while (!stop_) {
      auto s = sample_proc(pid_);
      {
        std::lock_guard lk(mu_);
        samples_.push_back(s);
      }
      std::this_thread::sleep_for(200ms);
    }
  }
  pid_t pid_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<proc_sample> samples_;
  std::thread thread_;
};

// ---------------------------------------------------------------- blocking client

// A blocking TCP client from 127.0.0.1 with a deadline on every step.
class bclient {
 public:
  ~bclient() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buf_.clear();
  }
  bool connect(std::uint16_t port, sclock::time_point deadline) {
    close();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return true;
    if (errno != EINPROGRESS) return false;
    if (!wait(POLLOUT, deadline)) return false;
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0;
  }
  bool send(std::string_view s, sclock::time_point deadline) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n > 0) {
        s.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait(POLLOUT, deadline)) continue;
      return false;
    }
    return true;
  }
  // The code of the next complete SMTP reply (multi-line replies skipped to
  // their last line), or 0 on EOF or timeout; `text` gets the last line.
  int reply(sclock::time_point deadline, std::string* text = nullptr) {
    for (;;) {
      for (std::size_t e; (e = buf_.find("\r\n")) != std::string::npos;) {
        std::string l = buf_.substr(0, e);
        buf_.erase(0, e + 2);
        if (l.size() >= 4 && l[3] == '-') continue;
        if (text) *text = l;
        return l.size() >= 3 ? std::atoi(l.substr(0, 3).c_str()) : 0;
      }
      if (!fill(deadline)) return 0;
    }
  }
  // Reads to EOF (HTTP with Connection: close); the status code, or 0.
  int http_status(sclock::time_point deadline) {
    while (fill(deadline)) {
    }
    if (!buf_.starts_with("HTTP/1.1 ")) return 0;
    return std::atoi(buf_.c_str() + 9);
  }
  const std::string& received() const { return buf_; }
  bool read_all(sclock::time_point deadline) {
    while (fill(deadline)) {
    }
    return true;
  }

 private:
  bool wait(short ev, sclock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - sclock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, ev, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
  }
  bool fill(sclock::time_point deadline) {
    if (!wait(POLLIN, deadline)) return false;
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }
  int fd_ = -1;
  std::string buf_;
};

std::string good_message(std::size_t size, std::uint64_t n) {
  std::string m = "From: good@client.test\r\nTo: inbox@good.test\r\nSubject: good " +
                  std::to_string(n) + "\r\nMessage-ID: <" + std::to_string(n) +
                  "@client.test>\r\n\r\n";
  std::string line(74, 'g');
  line += "\r\n";
  while (m.size() + line.size() < size) m += line;
  return m + ".\r\n";
}

// ---------------------------------------------------------------- good client

enum class probe : std::uint8_t { reuse, fresh, http };
constexpr const char* probe_name[] = {"reuse", "new-conn", "http"};

struct sample {
  sclock::time_point intended;
  double ms;  // latency from the intended start; < 0: failed
  probe p;
};

// The well-behaved client: 9 KB messages at good_rate on a reused
// connection, a new connection with one message every new_conn_every_s, and
// an HTTP probe (GET /api/v1/messages?limit=1, new connection) every
// http_probe_every_s. Open loop: latency counts from the intended start, so
// a stall is not hidden by sending less.
class good_client {
 public:
  good_client(const options& o, const target& t) : o_(o), t_(t) {
    threads_.emplace_back([this] { reuse_loop(); });
    threads_.emplace_back([this] { fresh_loop(); });
    threads_.emplace_back([this] { http_loop(); });
  }
  ~good_client() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  std::vector<sample> between(sclock::time_point a, sclock::time_point b, probe p) {
    std::lock_guard lk(mu_);
    std::vector<sample> out;
    for (auto& s : samples_)
      if (s.p == p && s.intended >= a && s.intended < b) out.push_back(s);
    return out;
  }
  std::uint64_t stored_bytes() const { return stored_.load(); }
  std::vector<sample> all() {
    std::lock_guard lk(mu_);
    return samples_;
  }

 private:
  void record(sclock::time_point intended, bool ok, probe p) {
    double ms = ok ? secs(sclock::now() - intended) * 1000 : -1;
    std::lock_guard lk(mu_);
    samples_.push_back({intended, ms, p});
  }
  bool open(bclient& c) {
    auto dl = sclock::now() + 10s;
    if (!c.connect(t_.smtp_port, dl) || c.reply(dl) != 220) return false;
    return c.send("EHLO good.client.test\r\n", dl) && c.reply(dl) == 250;
  }
  bool transaction(bclient& c, std::uint64_t n) {
    auto dl = sclock::now() + 10s;
    std::string msg = good_message(9 * 1024, n);
    if (!c.send("MAIL FROM:<good@client.test>\r\nRCPT TO:<inbox@good.test>\r\nDATA\r\n", dl))
      return false;
    if (c.reply(dl) != 250 || c.reply(dl) != 250 || c.reply(dl) != 354) return false;
    if (!c.send(msg, dl) || c.reply(dl) != 250) return false;
    stored_ += msg.size();
    return true;
  }
  void reuse_loop() {
    bclient c;
    bool up = false;
    auto period = std::chrono::duration_cast<sclock::duration>(
        std::chrono::duration<double>(1.0 / o_.good_rate));
    auto next = sclock::now();
    while (!stop_) {
      std::this_thread::sleep_until(next);
      auto intended = next;
      next += period;
      if (!up) up = open(c);
      bool ok = up && transaction(c, seq_++);
      if (!ok) up = false;
      record(intended, ok, probe::reuse);
      if (!ok) std::this_thread::sleep_for(100ms);
      if (sclock::now() - next > 5s) next = sclock::now();  // after a long stall, do not burst
    }
  }
  void fresh_loop() {
    auto period = std::chrono::duration_cast<sclock::duration>(
        std::chrono::duration<double>(o_.new_conn_every_s));
    auto next = sclock::now();
    while (!stop_) {
      std::this_thread::sleep_until(next);
      auto intended = next;
      next += period;
      bclient c;
      bool ok = open(c) && transaction(c, seq_++);
      if (ok) c.send("QUIT\r\n", sclock::now() + 1s);
      record(intended, ok, probe::fresh);
    }
  }
  void http_loop() {
    auto period = std::chrono::duration_cast<sclock::duration>(
        std::chrono::duration<double>(o_.http_probe_every_s));
    auto next = sclock::now();
    while (!stop_) {
      std::this_thread::sleep_until(next);
      auto intended = next;
      next += period;
      bclient c;
      auto dl = sclock::now() + 10s;
      bool ok = c.connect(t_.http_port, dl) &&
                c.send(
                    "GET /api/v1/messages?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: "
                    "close\r\n\r\n",
                    dl) &&
                c.http_status(dl) == 200;
      record(intended, ok, probe::http);
    }
  }

  const options& o_;
  target t_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> seq_{0}, stored_{0};
  std::mutex mu_;
  std::vector<sample> samples_;
  std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------- figures

struct lat {
  std::size_t n = 0, failed = 0;
  double p50 = 0, p99 = 0;
};

lat summarize(const std::vector<sample>& v) {
  lat r;
  std::vector<double> ok;
  for (auto& s : v) {
    if (s.ms < 0)
      ++r.failed;
    else
      ok.push_back(s.ms);
  }
  r.n = v.size();
  if (ok.empty()) return r;
  std::sort(ok.begin(), ok.end());
  auto at = [&](double q) {
    return ok[std::min(ok.size() - 1, static_cast<std::size_t>(std::ceil(q * ok.size())) - 1)];
  };
  r.p50 = at(0.50);
  r.p99 = at(0.99);
  return r;
}

struct result {
  std::string name;
  int connections = 0;
  lat base[3], attack[3], tail[3];
  std::uint64_t recovery_failed = 0;
  long rss_before = 0, rss_peak = 0, rss_after = 0;
  std::uint64_t store_before = 0, store_after = 0;
  double cpu_pct = 0;
  std::uint64_t h_attempts = 0, h_connected = 0, h_refused = 0, h_evicted = 0, h_timed_out = 0,
                h_closed = 0, h_failed = 0, h_messages = 0, h_responses = 0;
  std::int64_t h_peak_open = 0, h_open_end = 0;
  bool p99_ok = false, refusals_ok = false, rss_peak_ok = false, rss_after_ok = false,
       recovered = false;
};

// inlet_store_bytes from /metrics, or 0.
std::uint64_t store_bytes(const target& t) {
  bclient c;
  auto dl = sclock::now() + 10s;
  if (!c.connect(t.http_port, dl) ||
      !c.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", dl))
    return 0;
  c.read_all(dl);
  const std::string& r = c.received();
  auto p = r.find("\ninlet_store_bytes ");
  return p == std::string::npos ? 0 : std::stoull(r.substr(p + 19));
}

// Stores one heavy_size message and returns its ID (the newest message).
std::string store_heavy(const options& o, const target& t) {
  bclient c;
  auto dl = sclock::now() + 60s;
  std::string msg = "Subject: heavy\r\n\r\n";
  std::string line(998, 'h');
  line += "\r\n";
  while (msg.size() + line.size() < o.heavy_size) msg += line;
  msg += ".\r\n";
  if (!c.connect(t.smtp_port, dl) || c.reply(dl) != 220 || !c.send("EHLO heavy\r\n", dl) ||
      c.reply(dl) != 250 ||
      !c.send("MAIL FROM:<h@heavy.test>\r\nRCPT TO:<heavy@inbox.test>\r\nDATA\r\n", dl) ||
      c.reply(dl) != 250 || c.reply(dl) != 250 || c.reply(dl) != 354 || !c.send(msg, dl) ||
      c.reply(dl) != 250)
    return {};
  bclient h;
  if (!h.connect(t.http_port, dl) ||
      !h.send(
          "GET /api/v1/messages?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
          dl))
    return {};
  h.read_all(dl);
  const std::string& r = h.received();
  auto p = r.find("\"ID\":\"");
  if (p == std::string::npos) return {};
  return r.substr(p + 6, r.find('"', p + 6) - p - 6);
}

void fill_hostile(result& r, const hostile_counts& c) {
  r.h_attempts = c.attempts;
  r.h_connected = c.connected;
  r.h_refused = c.refused;
  r.h_evicted = c.evicted;
  r.h_timed_out = c.timed_out;
  r.h_closed = c.closed;
  r.h_failed = c.connect_failed;
  r.h_messages = c.messages;
  r.h_responses = c.responses;
  r.h_peak_open = c.peak_open;
  r.h_open_end = c.open;
}

// The goals of the issue, per attack (docs/benchmarks/hostile.md).
void judge(result& r, const options& o) {
  bool p99 = true;
  for (int p : {0, 1})
    if (r.base[p].p99 > 0)
      p99 = p99 && r.attack[p].p99 <= 2 * r.base[p].p99 && r.attack[p].n > r.attack[p].failed;
  r.p99_ok = p99;
  r.refusals_ok = r.attack[0].failed == 0 && r.attack[1].failed == 0;
  r.rss_peak_ok = r.rss_peak <= static_cast<long>((o.max_store_bytes >> 10) + (256 << 10));
  long stored_kb = static_cast<long>(
      r.store_after > r.store_before ? (r.store_after - r.store_before) >> 10 : 0);
  r.rss_after_ok = r.rss_after <= r.rss_before * 11 / 10 + stored_kb;
  bool tail = r.tail[0].failed == 0 && r.tail[1].failed == 0;
  for (int p : {0, 1})
    if (r.base[p].p99 > 0) tail = tail && r.tail[p].n > 0 && r.tail[p].p99 <= 2 * r.base[p].p99;
  r.recovered = tail && r.rss_after_ok;
}

struct phases {
  sclock::time_point base0, base1, attack1, rec1;
};

result run_attack(const options& o, const kind_info& k, server_proc& srv, sampler& smp) {
  result r;
  r.name = k.name;
  target t{srv.smtp_port, srv.http_port, {}};
  if (k.k == kind::heavy_reader) t.heavy_id = store_heavy(o, t);
  r.connections = k.k == kind::address_list   ? o.address_conns
                  : k.k == kind::heavy_reader ? o.heavy_conns
                                              : o.connections;
  good_client good(o, t);
  auto span = [](double s) {
    return std::chrono::duration_cast<sclock::duration>(std::chrono::duration<double>(s));
  };
  phases ph;
  ph.base0 = sclock::now() + span(o.warmup_s);
  std::this_thread::sleep_until(ph.base0);
  ph.base1 = ph.base0 + span(o.baseline_s);
  std::this_thread::sleep_until(ph.base1);
  r.rss_before = smp.now().rss_kb;
  r.store_before = store_bytes(t);
  auto cpu0 = smp.now();
  {
    engine e(o, k.k, t);
    e.start();
    ph.attack1 = ph.base1 + span(o.attack_s);
    std::this_thread::sleep_until(ph.attack1);
    fill_hostile(r, e.counts());
    auto cpu1 = smp.now();
    r.cpu_pct = 100.0 * static_cast<double>(cpu1.cpu_ticks - cpu0.cpu_ticks) /
                static_cast<double>(::sysconf(_SC_CLK_TCK)) / secs(cpu1.t - cpu0.t);
    e.stop();
  }
  ph.rec1 = sclock::now() + span(o.recover_s);
  std::this_thread::sleep_until(ph.rec1);
  r.rss_after = smp.now().rss_kb;
  r.store_after = store_bytes(t);
  for (auto& s : smp.between(ph.base1, sclock::now())) r.rss_peak = std::max(r.rss_peak, s.rss_kb);
  auto tail0 = ph.rec1 - std::min(span(10), span(o.recover_s / 2));
  for (int p = 0; p < 3; ++p) {
    r.base[p] = summarize(good.between(ph.base0, ph.base1, static_cast<probe>(p)));
    r.attack[p] = summarize(good.between(ph.base1, ph.attack1, static_cast<probe>(p)));
    r.tail[p] = summarize(good.between(tail0, ph.rec1, static_cast<probe>(p)));
  }
  r.recovery_failed = summarize(good.between(ph.attack1, ph.rec1, probe::reuse)).failed +
                      summarize(good.between(ph.attack1, ph.rec1, probe::fresh)).failed;
  judge(r, o);
  if (!o.samples.empty()) {
    std::ofstream f(o.samples, std::ios::app);
    for (auto& s : good.all())
      f << r.name << ',' << probe_name[static_cast<int>(s.p)] << ','
        << fmt("%.3f", secs(s.intended - ph.base1)) << ',' << fmt("%.3f", s.ms) << '\n';
    for (auto& s : smp.between(ph.base0, ph.rec1))
      f << r.name << ",rss_kb," << fmt("%.3f", secs(s.t - ph.base1)) << ',' << s.rss_kb << '\n';
  }
  return r;
}

// ---------------------------------------------------------------- report

void print_row(const result& r) {
  auto l = [](const lat& b, const lat& a) {
    return fmt("%.1f", b.p50) + "/" + fmt("%.1f", b.p99) + " -> " + fmt("%.1f", a.p50) + "/" +
           fmt("%.1f", a.p99);
  };
  std::printf(
      "| %s | %d | %s | %s | %s | %zu | %zu | %llu/%llu/%llu/%llu | %ld / %ld / %ld | %.0f | %s "
      "|\n",
      r.name.c_str(), r.connections, l(r.base[0], r.attack[0]).c_str(),
      l(r.base[1], r.attack[1]).c_str(), l(r.base[2], r.attack[2]).c_str(),
      r.attack[0].failed + r.attack[1].failed, r.attack[2].failed,
      static_cast<unsigned long long>(r.h_peak_open), static_cast<unsigned long long>(r.h_refused),
      static_cast<unsigned long long>(r.h_evicted),
      static_cast<unsigned long long>(r.h_timed_out + r.h_closed), r.rss_before >> 10,
      r.rss_peak >> 10, r.rss_after >> 10, r.cpu_pct, r.recovered ? "yes" : "no");
  std::fflush(stdout);
}

void print_header() {
  std::printf(
      "| attack | hostile conns | reuse p50/p99 ms (base -> attack) | new-conn p50/p99 ms | http "
      "p50/p99 ms | "
      "SMTP refusals | HTTP failures | hostile peak open/refused/evicted/closed | RSS MB "
      "before/peak/after | "
      "CPU %% | recovered |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
}

std::string json_lat(const lat& l) {
  return "{\"n\":" + std::to_string(l.n) + ",\"failed\":" + std::to_string(l.failed) +
         ",\"p50_ms\":" + fmt("%.3f", l.p50) + ",\"p99_ms\":" + fmt("%.3f", l.p99) + "}";
}

void write_json(const options& o, const std::vector<result>& rs) {
  std::ofstream f(o.json);
  f << "{\"connections\":" << o.connections << ",\"sources\":" << o.sources
    << ",\"one_subnet\":" << (o.one_subnet ? "true" : "false") << ",\"baseline_s\":" << o.baseline_s
    << ",\"attack_s\":" << o.attack_s << ",\"recover_s\":" << o.recover_s << ",\"inletd_args\":\""
    << o.inletd_args << "\",\"max_store_bytes\":" << o.max_store_bytes << ",\"results\":[";
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const result& r = rs[i];
    f << (i ? "," : "") << "{\"attack\":\"" << r.name << "\",\"connections\":" << r.connections;
    for (int p = 0; p < 3; ++p)
      f << ",\"" << probe_name[p] << "\":{\"baseline\":" << json_lat(r.base[p])
        << ",\"attack\":" << json_lat(r.attack[p]) << ",\"recovery_tail\":" << json_lat(r.tail[p])
        << "}";
    f << ",\"recovery_failed\":" << r.recovery_failed << ",\"rss_kb\":{\"before\":" << r.rss_before
      << ",\"peak\":" << r.rss_peak << ",\"after\":" << r.rss_after
      << "},\"store_bytes\":{\"before\":" << r.store_before << ",\"after\":" << r.store_after
      << "},\"cpu_pct\":" << fmt("%.1f", r.cpu_pct) << ",\"hostile\":{\"attempts\":" << r.h_attempts
      << ",\"connected\":" << r.h_connected << ",\"peak_open\":" << r.h_peak_open
      << ",\"open_at_end\":" << r.h_open_end << ",\"refused\":" << r.h_refused
      << ",\"evicted\":" << r.h_evicted << ",\"timed_out\":" << r.h_timed_out
      << ",\"closed\":" << r.h_closed << ",\"connect_failed\":" << r.h_failed
      << ",\"messages\":" << r.h_messages << ",\"responses\":" << r.h_responses
      << "},\"goals\":{\"p99\":" << r.p99_ok << ",\"refusals\":" << r.refusals_ok
      << ",\"rss_peak\":" << r.rss_peak_ok << ",\"rss_after\":" << r.rss_after_ok
      << "},\"recovered\":" << (r.recovered ? "true" : "false") << "}";
  }
  f << "]}\n";
}

// Raises the descriptor limit to the hard limit (inletd, a child, inherits
// it) and scales the hostile connections down to what it allows, saying so:
// the harness holds one descriptor per hostile connection, inletd one per
// accepted one, each under its own limit.
void fit_descriptors(options& o) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  constexpr rlim_t spare = 512;  // listeners, the good client, /proc, inletd's store and pipes
  if (rl.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(o.connections) + spare > rl.rlim_cur) {
    int fit = rl.rlim_cur > spare ? static_cast<int>(rl.rlim_cur - spare) : 1;
    std::printf("inlet-hostile: descriptor limit %llu: %d hostile connections, not %d\n",
                static_cast<unsigned long long>(rl.rlim_cur), fit, o.connections);
    o.connections = fit;
  }
}

int run(options& o) {
  fit_descriptors(o);
  std::vector<const kind_info*> todo;
  if (o.attacks.empty())
    for (auto& k : all_kinds()) todo.push_back(&k);
  for (auto& n : o.attacks) {
    auto* k = find_kind(n);
    if (!k) {
      std::fprintf(stderr, "inlet-hostile: unknown attack '%s'\n", n.c_str());
      return 2;
    }
    todo.push_back(k);
  }
  if (o.pin) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(1, &set);
    ::sched_setaffinity(0, sizeof set, &set);
  }
  std::printf(
      "inlet-hostile: %d hostile connections from %d sources (%s), baseline %.0f s, attack %.0f s, "
      "recovery %.0f s; inletd %s\n",
      o.connections, o.sources, o.one_subnet ? "one /24" : "one /24 each", o.baseline_s, o.attack_s,
      o.recover_s, o.inletd_args.c_str());
  print_header();
  std::vector<result> results;
  std::unique_ptr<server_proc> srv;
  std::unique_ptr<sampler> smp;
  bool ok = true;
  if (!o.samples.empty()) std::ofstream(o.samples) << "attack,probe,t_s,ms\n";
  // The soak: one inletd, the list again and again until soak_s is over,
  // inletd's RSS printed once a minute by its own thread.
  const auto soak_end = sclock::now() + std::chrono::duration_cast<sclock::duration>(
                                            std::chrono::duration<double>(o.soak_s));
  std::atomic<bool> soak_stop{false};
  std::thread soak_log;
  auto soak_over = [&] { return o.soak_s > 0 && sclock::now() >= soak_end; };
  for (int round = 0; o.soak_s > 0 ? !soak_over() : round < std::max(1, o.rounds); ++round)
    for (const kind_info* k : todo) {
      if (soak_over()) break;
      if (!srv || !o.one_server) {
        smp.reset();
        srv = std::make_unique<server_proc>();
        if (!srv->start(o)) {
          std::fprintf(stderr, "inlet-hostile: inletd did not start\n");
          return 1;
        }
        smp = std::make_unique<sampler>(srv->pid());
        if (o.soak_s > 0)
          soak_log = std::thread([&soak_stop, pid = srv->pid(), t0 = sclock::now(),
                                  t = target{srv->smtp_port, srv->http_port, {}}] {
            for (int minute = 0; !soak_stop; ++minute) {
              auto s = sample_proc(pid);
              std::printf("soak: minute %d rss_mb %.1f store_mb %.1f\n", minute,
                          static_cast<double>(s.rss_kb) / 1024,
                          static_cast<double>(store_bytes(t)) / (1 << 20));
              std::fflush(stdout);
              auto next = t0 + std::chrono::minutes(minute + 1);
              while (!soak_stop && sclock::now() < next) std::this_thread::sleep_for(200ms);
            }
          });
      }
      results.push_back(run_attack(o, *k, *srv, *smp));
      print_row(results.back());
      for (const lat* l :
           {&results.back().base[0], &results.back().attack[0], &results.back().tail[0]})
        if (l->n == l->failed) ok = false;  // the good client was never served in a phase
    }
  soak_stop = true;
  if (soak_log.joinable()) soak_log.join();
  smp.reset();
  if (srv) srv->stop();
  if (!o.json.empty()) write_json(o, results);
  if (o.smoke && !ok) {
    std::fprintf(stderr, "inlet-hostile: the good client was not served in some phase\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace hostile

int main(int argc, char** argv) {
  hostile::options o;
  CLI::App app{"inlet-hostile: inletd under hostile load beside a well-behaved client"};
  app.add_option("--inletd", o.inletd, "inletd binary")->capture_default_str();
  app.add_option("--inletd-args", o.inletd_args, "more inletd flags (one string)");
  app.add_option("--attack", o.attacks, "attacks to run (repeatable; default all)");
  app.add_option("--connections", o.connections, "hostile connections")->capture_default_str();
  app.add_option("--sources", o.sources, "hostile source addresses")
      ->capture_default_str()
      ->check(CLI::Range(1, 254));
  app.add_flag("--one-subnet", o.one_subnet,
               "hostile sources in one /24 (127.1.0.N), not one /24 each");
  app.add_option("--baseline", o.baseline_s, "seconds of good client alone")->capture_default_str();
  app.add_option("--duration", o.attack_s, "seconds of attack")->capture_default_str();
  app.add_option("--recover", o.recover_s, "seconds after the attack")->capture_default_str();
  app.add_option("--warmup", o.warmup_s, "seconds before the baseline")->capture_default_str();
  app.add_option("--ramp-rate", o.ramp_rate, "hostile connections opened per second")
      ->capture_default_str();
  app.add_option("--good-rate", o.good_rate, "good messages per second (reused connection)")
      ->capture_default_str();
  app.add_option("--new-conn-every", o.new_conn_every_s, "seconds between good new connections")
      ->capture_default_str();
  app.add_option("--trickle-ms", o.trickle_ms, "ms between trickled octets")->capture_default_str();
  app.add_option("--reconnect-ms", o.reconnect_ms, "ms before a closed hostile slot connects again")
      ->capture_default_str();
  app.add_option("--churn-rate", o.churn_rate, "churn attacks: connections per second")
      ->capture_default_str();
  app.add_option("--address-conns", o.address_conns, "address-list attack: connections")
      ->capture_default_str();
  app.add_option("--address-count", o.address_count, "address-list attack: addresses per message")
      ->capture_default_str();
  app.add_option("--address-form", o.address_form,
                 "address-list attack: bare, named, comment, encoded, group or mixed")
      ->check(CLI::IsMember({"bare", "named", "comment", "encoded", "group", "mixed"}))
      ->capture_default_str();
  app.add_option("--heavy-conns", o.heavy_conns, "heavy-reader attack: connections")
      ->capture_default_str();
  app.add_option("--heavy-size", o.heavy_size, "heavy-reader attack: message size")
      ->capture_default_str();
  app.add_option("--max-store-bytes", o.max_store_bytes, "inletd --max-store-bytes")
      ->capture_default_str();
  app.add_flag("--one-server", o.one_server, "one inletd for every attack");
  app.add_flag("--pin", o.pin, "inletd on CPU 0, the harness on CPU 1");
  app.add_option("--engine-nice", o.engine_nice,
                 "nice value of the hostile engine's thread (the good client's stays 0)")
      ->capture_default_str()
      ->check(CLI::Range(-20, 19));
  app.add_flag("--smoke", o.smoke, "exit 1 unless the good client was served in every phase");
  app.add_option("--json", o.json, "write the results as JSON");
  app.add_option("--samples", o.samples, "write every good-client latency and RSS sample (CSV)");
  app.add_option("--rounds", o.rounds,
                 "run the attacks this many times (with --one-server: a soak)")
      ->capture_default_str();
  app.add_option("--soak", o.soak_s,
                 "seconds: one inletd, the attacks again and again, its RSS printed each minute");
  CLI11_PARSE(app, argc, argv);
  if (o.soak_s > 0) o.one_server = true;
  std::signal(SIGPIPE, SIG_IGN);
  return hostile::run(o);
}
