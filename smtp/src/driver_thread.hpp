// The `thread` I/O model for any protocol plug: one accept thread, then a
// thread per connection running the connection core over a blocking socket
// (run_blocking).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "driver_blocking.hpp"

namespace inlet::smtp::detail {
// Internal linkage, as driver_coro.hpp's dispatcher: one instantiation per protocol,
// in the file that makes it.
namespace {

template <class P>
class thread_driver final : public blocking_server<P> {
  using base = blocking_server<P>;

 public:
  template <class... A>
  explicit thread_driver(A&&... plug_args) : base(nullptr, std::forward<A>(plug_args)...) {}
  std::error_code start() override {
    if (auto ec = this->prepare()) return ec;
    this->acceptor_ = std::thread([this] {
      this->listeners_.run([this] { memory_.tick(this->adm_.active(), clock::now()); },
                           [this](blocking_listeners::accepted a) { take(std::move(a)); });
    });
    return {};
  }
  void stop() override {
    if (this->stopping_.exchange(true)) return;
    this->listeners_.stop();
  }
  void wait() override {
    if (this->acceptor_.joinable()) this->acceptor_.join();
    this->adm_.wait_idle();
  }
  server_stats stats() const override { return stats_of(cnt_, this->adm_); }

 private:
  // The slot lives with the connection's thread; an eviction reaches it at
  // the thread's next poll tick (the connection's deadline() becomes now).
  void take(blocking_listeners::accepted a) {
    auto s = std::make_unique<slot>();
    if (!admit_blocking(a, this->plug_, this->adm_, cnt_, this->stopping_.load(), *s)) return;
    try {
      std::thread([this, a, s = s.get()] {
        this->serve(a, this->stopping_, cnt_, s);
        this->adm_.release(*s);  // last touch of *this: wait() may return right after
        delete s;
      }).detach();
      s.release();
    } catch (const std::system_error&) {
      ::close(a.fd);
      this->adm_.release(*s);
    }
  }

  driver_counters cnt_;
  memory_keeper memory_{this->cfg_.release_memory};  // the accept thread's
};

}  // namespace
}  // namespace inlet::smtp::detail
