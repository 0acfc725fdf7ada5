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
      listeners_.run([this] { memory_.tick(adm_.active(), clock::now()); },
                     [this](blocking_listeners::accepted a) { take(std::move(a)); });
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
  server_stats stats() const override { return stats_of(cnt_, adm_); }

 private:
  // The slot lives with the connection's thread; an eviction reaches it at
  // the thread's next poll tick (the connection's deadline() becomes now).
  void take(blocking_listeners::accepted a) {
    auto s = std::make_unique<slot>();
    if (!admit_blocking(a, cfg_, adm_, cnt_, stopping_.load(), *s)) return;
    try {
      std::thread([this, a, s = s.get()] {
        serve(a, stopping_, cnt_, s);
        adm_.release(*s);  // last touch of *this: wait() may return right after
        delete s;
      }).detach();
      s.release();
    } catch (const std::system_error&) {
      ::close(a.fd);
      adm_.release(*s);
    }
  }

  driver_counters cnt_;
  memory_keeper memory_{cfg_.release_memory};  // the accept thread's
};

}  // namespace

std::unique_ptr<model_driver> make_thread_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<thread_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
