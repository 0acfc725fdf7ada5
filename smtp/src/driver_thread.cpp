// The `thread` I/O model: one accept thread, then a thread per connection
// running the connection core over a blocking socket (run_blocking).
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "driver_blocking.hpp"

namespace inlet::smtp::detail {
namespace {

class thread_driver final : public model_driver {
 public:
  thread_driver(const server_config& cfg, deliver_fn d)
      : cfg_(cfg),
        hook_(std::move(d)),
        policy_(conn_policy::from(cfg_, &stopping_)),
        adm_(cfg.max_connections, cfg.max_connections_per_ip) {}
  std::error_code start() override {
    if (auto ec = tls_context::load(cfg_.tls_cert, cfg_.tls_key, tls_)) return ec;
    policy_.use(tls_.get(), cfg_);
    if (auto ec = listeners_.bind(cfg_)) return ec;
    acceptor_ = std::thread([this] {
      listeners_.run({}, [this](blocking_listeners::accepted a) { take(std::move(a)); });
    });
    return {};
  }
  std::vector<listen_endpoint> local_endpoints() const override { return listeners_.bound(); }
  void stop() override {
    if (stopping_.exchange(true)) return;
    listeners_.stop();
  }
  void wait() override {
    if (acceptor_.joinable()) acceptor_.join();
    adm_.wait_idle();
  }
  server_stats stats() const override { return stats_of(cnt_, adm_.active()); }

 private:
  void take(blocking_listeners::accepted a) {
    if (!admit_blocking(a, cfg_, adm_, cnt_, stopping_.load())) return;
    try {
      std::thread([this, a] { serve(a); }).detach();
    } catch (const std::system_error&) {
      ::close(a.fd);
      adm_.release(a.ip);
    }
  }
  void serve(const blocking_listeners::accepted& a) {
    {
      connection conn(policy_, policy_.session(a.lmtp));
      conn.set_remote(a.ip, a.port);
      run_blocking(a.fd, conn, stopping_, [this](received_message&& m) {
        return deliver_sync(hook_, cnt_, std::move(m));
      });
      ::shutdown(a.fd, SHUT_RDWR);
      ::close(a.fd);
    }
    adm_.release(a.ip);  // last touch of *this: wait() may return right after
  }

  const server_config cfg_;
  deliver_fn hook_;
  std::atomic<bool> stopping_{false};
  conn_policy policy_;
  admission adm_;
  driver_counters cnt_;
  std::unique_ptr<tls_context> tls_;
  blocking_listeners listeners_;
  std::thread acceptor_;
};

}  // namespace

std::unique_ptr<model_driver> make_thread_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<thread_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
