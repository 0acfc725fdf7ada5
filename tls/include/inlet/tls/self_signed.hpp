// Throwaway self-signed certificates: Mailpit's `sans:NAME,...` (inletd makes one at
// start for SMTP, POP3 or HTTPS) and every test and benchmark that needs a TLS server.
// ECDSA P-256 (made in microseconds, unlike RSA), SHA-256, the names as subjectAltName
// entries (DNS names or IP literals; the first is also the CN), serverAuth only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace inlet::tls {

struct self_signed_pem {
  std::string certificate;  ///< PEM
  std::string private_key;  ///< PEM (PKCS #8)
};

/// A certificate valid from an hour ago for `days` days. nullopt and `error` when `names`
/// is empty or OpenSSL fails.
std::optional<self_signed_pem> make_self_signed(const std::vector<std::string>& names,
                                                int days, std::string& error);

/// Both PEMs to files (created or truncated; the key readable by its owner only).
bool write_pem_files(const self_signed_pem& pem, const std::string& cert_path,
                     const std::string& key_path, std::string& error);

}  // namespace inlet::tls
