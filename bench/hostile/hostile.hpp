// bench/hostile: inletd under hostile load beside a well-behaved client.
// What the two translation units share: the attack kinds, the options, the
// hostile engine (attack.cpp, Asio, one thread) and the counters it keeps.
// docs/benchmarks/hostile.md says what each attack does and what is measured.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hostile {

using sclock = std::chrono::steady_clock;

enum class kind : std::uint8_t {
  slowloris,     ///< a command line, one byte every trickle_ms, never ending
  idle_ehlo,     ///< EHLO, then silence
  long_command,  ///< a command line of 1000 octets a second, never ending
  long_data,     ///< inside DATA, a body line of 1000 octets a second, never ending
  data_trickle,  ///< inside DATA, one byte every trickle_ms
  churn_fin,     ///< connect and close at once (FIN), again and again
  churn_rst,     ///< connect and reset at once (RST), again and again
  address_list,  ///< messages with address_count addresses in To:, back to back
  slow_http,     ///< HTTP request headers, one byte every trickle_ms
  sse_no_read,   ///< GET /api/events, then never read
  heavy_reader,  ///< GET a 30 MB message's raw bytes, again and again
};

struct kind_info {
  kind k;
  const char* name;
  bool http;  ///< targets the HTTP listener
};
const std::vector<kind_info>& all_kinds();
const kind_info* find_kind(std::string_view name);

struct options {
  std::string inletd = "build/bin/inletd";
  std::string inletd_args;
  std::vector<std::string> attacks;  ///< names; empty = all
  int connections = 15000;           ///< hostile connections kept open (slot attacks)
  int sources = 32;                  ///< hostile source addresses
  bool one_subnet = false;           ///< 127.1.0.1..N (one /24) instead of 127.1.N.1 (N /24s)
  double baseline_s = 10, attack_s = 30, recover_s = 30, warmup_s = 1;
  double ramp_rate = 5000;  ///< hostile connections opened per second
  double good_rate = 20;    ///< messages per second on the good client's reused connection
  double new_conn_every_s = 2;
  double http_probe_every_s = 0.5;
  int trickle_ms = 2000;
  int reconnect_ms = 1000;
  double churn_rate = 3000;  ///< connections per second (churn attacks)
  int address_conns = 32, address_count = 80000;
  /// address-list attack: how each address is written: "bare" (u1@h.test), "named"
  /// (User 1 <u1@h.test>), "comment" (u1@h.test (User 1)), "encoded" (an RFC 2047 name),
  /// "group" (every other one a group of one), "mixed" (the five in turn)
  std::string address_form = "bare";
  int heavy_conns = 4;
  std::size_t heavy_size = std::size_t{30} << 20;
  std::size_t max_store_bytes = std::size_t{256} << 20;
  bool one_server = false;  ///< one inletd for every attack (default: one each)
  bool pin = false;         ///< inletd on CPU 0, the harness on CPU 1
  int engine_nice = 0;      ///< the hostile engine's thread's nice value (the good client's: 0)
  bool smoke = false;   ///< exit 1 unless every phase of every attack saw the good client served
  std::string json;     ///< write the results here
  std::string samples;  ///< write every good-client sample here (CSV), for plots
  int rounds = 1;       ///< run the list of attacks this many times (a soak: with one_server)
  double soak_s = 0;  ///< > 0: one inletd, the list again and again for this long, RSS each minute
};

/// What the hostile side saw (relaxed counters: written by the engine's
/// thread, read by the reporter).
struct hostile_counts {
  std::atomic<std::uint64_t> attempts{0}, connected{0}, connect_failed{0};
  std::atomic<std::uint64_t> refused{0};    ///< 421 at the greeting, 503 from HTTP
  std::atomic<std::uint64_t> evicted{0};    ///< 421 4.7.0 ... closing a slow one
  std::atomic<std::uint64_t> timed_out{0};  ///< 421 4.4.2
  std::atomic<std::uint64_t> closed{0};     ///< any other close by the server
  std::atomic<std::uint64_t> messages{0};   ///< 250 after DATA (address lists)
  std::atomic<std::uint64_t> responses{0};  ///< complete HTTP responses (heavy reader)
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::int64_t> open{0}, peak_open{0};
};

struct target {
  std::uint16_t smtp_port = 0, http_port = 0;
  std::string heavy_id;  ///< the message the heavy reader fetches
};

/// One attack: keeps its connections going on its own thread until stop().
class engine {
 public:
  engine(const options& o, kind k, const target& t);
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  void start();
  void stop();  ///< closes every hostile connection, joins the thread
  const hostile_counts& counts() const noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

/// The hostile source address number i (0-based): 127.1.i.1, or 127.1.0.(i+1).
std::string hostile_source(const options& o, int i);

/// A message whose To: holds `count` addresses, folded into lines under 80 octets.
std::string address_list_message(int count, const std::string& form = "bare");

}  // namespace hostile
