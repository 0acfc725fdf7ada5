// What the blocking models (thread, process) share: listeners polled by one
// accept thread, admission of an accepted socket, and the dispatcher that runs
// the connection core's actions over a blocking socket with poll() ticks.
//
// Internal to inlet::smtp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "connection.hpp"
#include "driver_common.hpp"

namespace inlet::smtp::detail {

/// Runs `conn` over blocking socket `fd` until it closes. Waits with poll() in
/// ticks of at most 250 ms, so deadlines and `stopping` are seen within one
/// tick; reads and writes never block (MSG_DONTWAIT). `deliver` is synchronous.
void run_blocking(int fd, connection& conn, const std::atomic<bool>& stopping,
                  const std::function<delivery_result(received_message&&)>& deliver);

/// The listening sockets of a blocking model and the loop of its accept
/// thread. Thread-safety: bind() and run() from one thread; stop() from any.
class blocking_listeners {
 public:
  blocking_listeners() = default;
  ~blocking_listeners();
  blocking_listeners(const blocking_listeners&) = delete;
  blocking_listeners& operator=(const blocking_listeners&) = delete;

  std::error_code bind(const server_config& cfg);
  const std::vector<listen_endpoint>& bound() const noexcept { return bound_; }

  struct accepted {
    int fd;
    std::string ip;
    std::uint16_t port;
    listener_kind kind;
  };
  /// Until stop(): polls the listeners (50 ms ticks, `on_tick` each round),
  /// accepts bursts of up to 64 and passes each socket to `take`, which owns
  /// it. Closes the listeners before it returns.
  void run(const std::function<void()>& on_tick, const std::function<void(accepted)>& take);
  /// Makes run() return (async-signal-safe: a write to a pipe).
  void stop() noexcept;

 private:
  struct listener {
    int fd;
    listener_kind kind;
  };
  std::error_code bind_one(const listen_endpoint& l);
  std::vector<listener> listeners_;
  std::vector<listen_endpoint> bound_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopped_{false};
};

/// Counts the connection and admits `s` for it (which may evict the slowest
/// connection); past the limits (or while stopping) answers 421 on `fd` and
/// closes it, returning false.
bool admit_blocking(const blocking_listeners::accepted& a, const server_config& cfg, admission& adm,
                    driver_counters& cnt, bool stopping, slot& s);

/// What the thread and process drivers share: the config, the deliver hook,
/// the connection policy, the limits, STARTTLS, the listeners and the accept
/// thread. `conn_stop` is the flag connections watch (the process model's
/// children have their own); null: this server's `stopping_`.
class blocking_server : public model_driver {
 public:
  blocking_server(const server_config& cfg, deliver_fn d, const std::atomic<bool>* conn_stop);
  std::vector<listen_endpoint> local_endpoints() const override { return listeners_.bound(); }

 protected:
  /// Loads the STARTTLS context and binds the listeners.
  std::error_code prepare();
  /// Runs the connection of `a` on the calling thread to its end, then
  /// closes the socket. Deliveries are counted in `cnt`; the connection keeps
  /// `s` (its admission slot, or null) current.
  void serve(const blocking_listeners::accepted& a, const std::atomic<bool>& stop,
             driver_counters& cnt, slot* s);

  const server_config cfg_;
  deliver_fn hook_;
  std::atomic<bool> stopping_{false};
  conn_policy policy_;
  admission adm_;
  std::unique_ptr<tls_context> tls_;
  blocking_listeners listeners_;
  std::thread acceptor_;
};

}  // namespace inlet::smtp::detail
