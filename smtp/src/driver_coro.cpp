// SMTP on the event-driven Asio models (driver_coro.hpp).
#include "driver_coro.hpp"

#include "connection.hpp"

namespace inlet::smtp::detail {

std::unique_ptr<model_driver> make_coro_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<coro_driver<smtp_plug>>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
