// SMTP on the `stackful` model (driver_stackful.hpp).
#include "driver_stackful.hpp"

#include "connection.hpp"

namespace inlet::smtp::detail {

std::unique_ptr<model_driver> make_stackful_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<stackful_driver<smtp_plug>>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
