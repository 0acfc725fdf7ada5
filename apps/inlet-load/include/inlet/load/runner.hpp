#pragma once
// The load run: T threads, each with its own io_context and its share of the connections,
// driving client_sessions over the prepared corpus. Closed loop (send as soon as a
// connection is ready) or open loop (a fixed total rate; latency from the intended time).
//
// Thread-safety: start(), live() and wait() are called from one controlling thread; the
// workers only share the read-only corpus and envelope, and relaxed atomic live counters.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "inlet/load/histogram.hpp"
#include "inlet/load/message.hpp"
#include "inlet/load/session.hpp"
#include "inlet/load/tls.hpp"

namespace inlet::load {

struct run_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 25;
  unsigned threads = 1;
  unsigned connections = 1;
  unsigned sources = 16;            // bind to 127.0.0.<first_source + i % sources>
  unsigned first_source = 1;
  session_config session;
  tls_options tls;                  // used when session.starttls
  double duration_s = 10;           // always > 0: the run stops by itself
  std::uint64_t count = 0;          // messages (ok + failed); 0: no count bound
  double rate = 0;                  // open loop, messages/s over all threads; 0: closed loop
  double reconnect_delay_s = 0.05;  // after a failed connect
  std::string helo = "load.inlet.test", from = "load@inlet.test", to = "rcpt@inlet.test";
  // Recipients spread over `to_count` mailboxes (`to` with "{n}" replaced by 0..N-1, or
  // its local part suffixed with the number when it has no "{n}"), `rcpts_per_message`
  // consecutive ones per message, so a sharded store is loaded as real mail loads it.
  std::uint32_t to_count = 1;
  std::uint32_t rcpts_per_message = 1;
};

// The envelopes of a run: one per first mailbox (see run_config::to_count).
std::vector<std::unique_ptr<envelope>> make_envelopes(const run_config& cfg);

// Mailbox `n` of the pattern `to` (see run_config::to_count).
std::string mailbox_of(const std::string& to, std::uint32_t n);

struct run_result {
  double seconds = 0;
  std::uint64_t messages_ok = 0, messages_failed = 0;
  std::uint64_t bytes_ok = 0;  // message bytes (CRLF-normalised, unstuffed) accepted with 2xx
  std::uint64_t connects = 0, connect_errors = 0, disconnects = 0;
  std::uint64_t pipelining_fallbacks = 0;  // connections where the server lacked an extension
  std::uint64_t tls_handshakes = 0;        // STARTTLS handshakes completed
  std::map<std::string, std::uint64_t> errors;  // reply code or error text -> count
  histogram latency;  // ns: closed loop data start -> 250; open loop intended time -> 250
  histogram service;  // ns: data start -> 250 (same as latency in closed loop)

  void merge(const run_result& o);
};

// Live counters of one worker, padded to a cache line (read by the progress line).
struct alignas(64) live_counters {
  std::atomic<std::uint64_t> ok{0}, failed{0}, bytes{0}, connections{0};
};

class runner {
 public:
  runner(run_config cfg, const prepared_corpus& corpus);
  ~runner();
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;

  void start();
  bool done() const noexcept;
  // Sum of every worker's live counters.
  struct snapshot { std::uint64_t ok, failed, bytes, connections; };
  snapshot live() const noexcept;
  // Joins the workers and returns the merged result.
  run_result wait();

  class worker;

 private:
  run_config cfg_;
  const prepared_corpus& corpus_;
  std::vector<std::unique_ptr<envelope>> envs_;
  std::unique_ptr<tls_context> tls_;  // when cfg_.session.starttls; shared by the workers
  std::vector<std::unique_ptr<worker>> workers_;
  std::vector<std::unique_ptr<live_counters>> live_;
  std::vector<std::thread> threads_;
  std::atomic<unsigned> running_{0};
  double started_at_ = 0;
};

}  // namespace inlet::load
