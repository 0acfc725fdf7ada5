#include <inlet/smtp/error.hpp>

#include <string>

namespace inlet::smtp {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.smtp"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok: return "ok";
      case errc::client_quit: return "client sent QUIT";
      case errc::too_many_errors: return "too many protocol errors";
      case errc::timeout: return "timeout";
      case errc::shutting_down: return "server shutting down";
      case errc::too_many_connections: return "too many connections";
      case errc::connection_lost: return "connection lost";
      case errc::tls_failed: return "TLS handshake failed";
      case errc::bad_config: return "bad configuration";
      case errc::too_many_auth_failures: return "too many failed authentication attempts";
      case errc::evicted:
        return "closed to make room for another client";
    }
    return "unknown inlet.smtp error";
  }
};

}  // namespace

const std::error_category& smtp_category() noexcept {
  static const category c;
  return c;
}

}  // namespace inlet::smtp
