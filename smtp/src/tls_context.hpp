// The STARTTLS server context of every driver that offers STARTTLS, built from
// server_config::tls_cert / tls_key (PEM). One place, so the drivers cannot drift.
#pragma once

#include <inlet/smtp/error.hpp>
#include <inlet/smtp/server.hpp>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/system_error.hpp>

#include <optional>
#include <system_error>

namespace inlet::smtp::detail {

/// Leaves `out` empty when no certificate is configured; errc::bad_config when the
/// certificate or key cannot be loaded.
inline std::error_code make_tls_context(const server_config& cfg,
                                        std::optional<boost::asio::ssl::context>& out) {
  namespace ssl = boost::asio::ssl;
  out.reset();
  if (cfg.tls_cert.empty()) return {};
  try {
    out.emplace(ssl::context::tls_server);
    out->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3);
    out->use_certificate_chain_file(cfg.tls_cert);
    out->use_private_key_file(cfg.tls_key.empty() ? cfg.tls_cert : cfg.tls_key,
                              ssl::context::pem);
  } catch (const boost::system::system_error&) {
    out.reset();
    return make_error_code(errc::bad_config);
  }
  return {};
}

}  // namespace inlet::smtp::detail
