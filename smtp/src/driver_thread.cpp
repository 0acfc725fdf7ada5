// The `thread` I/O model: one accept thread, then a thread per connection
// running the connection core over a blocking socket (run_blocking).
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "driver_blocking.hpp"

namespace inlet::smtp::detail {
namespace {

class thread_driver final : public blocking_server {
 public:
  thread_driver(const server_config& cfg, deliver_fn d)
      : blocking_server(cfg, std::move(d), nullptr) {}
  std::error_code start() override {
    if (auto ec = prepare()) return ec;
    acceptor_ = std::thread([this] {
      listeners_.run({}, [this](blocking_listeners::accepted a) { take(std::move(a)); });
    });
    return {};
  }
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
      std::thread([this, a] {
        serve(a, stopping_, cnt_);
        adm_.release(a.ip);  // last touch of *this: wait() may return right after
      }).detach();
    } catch (const std::system_error&) {
      ::close(a.fd);
      adm_.release(a.ip);
    }
  }

  driver_counters cnt_;
};

}  // namespace

std::unique_ptr<model_driver> make_thread_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<thread_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
