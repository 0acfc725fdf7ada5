// SMTP on the `thread` model (driver_thread.hpp).
#include "driver_thread.hpp"

#include "connection.hpp"

namespace inlet::smtp::detail {

std::unique_ptr<model_driver> make_thread_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<thread_driver<smtp_plug>>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
