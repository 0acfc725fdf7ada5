// inlet::smtp::server: a facade over the I/O model chosen in server_config.
// Each model is a model_driver (driver_common.hpp) that runs the sans-io
// connection core (connection.hpp) in its own way of waiting: completion
// handlers (driver_coro.cpp), stackful fibers (driver_stackful.cpp), a
// thread or a process per connection (driver_thread.cpp, driver_process.cpp).
#include <inlet/smtp/server.hpp>

#include "driver_common.hpp"

namespace inlet::smtp {

bool parse_io_model(std::string_view name, io_model& out) noexcept {
  static constexpr std::pair<std::string_view, io_model> names[] = {
      {"coro", io_model::coro},         {"async-1n", io_model::async_1n},
      {"async-nn", io_model::async_nn}, {"async-n2n", io_model::async_n2n},
      {"thread", io_model::thread},     {"stackful", io_model::stackful},
      {"process", io_model::process},
  };
  for (auto& [n, m] : names)
    if (n == name) {
      out = m;
      return true;
    }
  return false;
}

std::string_view to_string(io_model m) noexcept {
  switch (m) {
    case io_model::coro:
      return "coro";
    case io_model::async_1n:
      return "async-1n";
    case io_model::async_nn:
      return "async-nn";
    case io_model::async_n2n:
      return "async-n2n";
    case io_model::thread:
      return "thread";
    case io_model::stackful:
      return "stackful";
    case io_model::process:
      return "process";
  }
  return "coro";
}

struct server::impl {
  server_config cfg;
  deliver_fn deliver;
  std::unique_ptr<detail::model_driver> driver;  // from start() on
  std::atomic<bool> started{false};
};

namespace {
std::unique_ptr<detail::model_driver> make_driver(const server_config& cfg, deliver_fn d) {
  switch (cfg.model) {
    case io_model::stackful:
      return detail::make_stackful_driver(cfg, std::move(d));
    case io_model::thread:
      return detail::make_thread_driver(cfg, std::move(d));
    case io_model::process:
      return detail::make_process_driver(cfg, std::move(d));
    case io_model::coro:
    case io_model::async_1n:
    case io_model::async_nn:
    case io_model::async_n2n:
      break;
  }
  return detail::make_coro_driver(cfg, std::move(d));
}
}  // namespace

server::server(server_config cfg, deliver_fn deliver) : impl_(std::make_unique<impl>()) {
  impl_->cfg = std::move(cfg);
  impl_->deliver = std::move(deliver);
}

server::~server() {
  if (impl_->driver) {
    stop();
    wait();
  }
}

std::error_code server::start() {
  if (impl_->started.exchange(true)) return make_error_code(errc::bad_config);
  if (impl_->cfg.listen.empty()) return make_error_code(errc::bad_config);
  auto d = make_driver(impl_->cfg, impl_->deliver);
  if (auto ec = d->start()) {
    impl_->started = false;
    return ec;
  }
  impl_->driver = std::move(d);
  return {};
}

std::vector<listen_endpoint> server::local_endpoints() const {
  return impl_->driver ? impl_->driver->local_endpoints() : std::vector<listen_endpoint>{};
}

void server::stop() {
  if (impl_->driver) impl_->driver->stop();
}

void server::wait() {
  if (impl_->driver) impl_->driver->wait();
}

server_stats server::stats() const {
  return impl_->driver ? impl_->driver->stats() : server_stats{};
}

}  // namespace inlet::smtp
