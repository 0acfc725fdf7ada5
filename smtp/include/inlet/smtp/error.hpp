// inlet::smtp error codes: one errc enum and one category for the library.
//
// These classify why a session ended or why a server operation failed; the
// on-the-wire SMTP replies (codes like 500 5.5.6) are produced by the session
// itself and are not error_codes.
#pragma once

#include <system_error>

namespace inlet::smtp {

enum class errc {
  ok = 0,
  client_quit,             ///< the client sent QUIT
  too_many_errors,         ///< the session hit max_errors and closed with 421
  timeout,                 ///< a timeout expired; 421 4.4.2 sent
  shutting_down,           ///< the server stopped; 421 4.3.2 sent
  too_many_connections,    ///< refused at accept time with 421 4.7.0
  connection_lost,         ///< the peer closed or reset the connection
  tls_failed,              ///< the TLS handshake after STARTTLS failed
  bad_config,              ///< the server configuration is invalid
  too_many_auth_failures,  ///< max_auth_failures failed AUTH attempts; 421 4.7.0 sent
  evicted,                 ///< every slot was taken: closed with 421 4.7.0 to make room
};

const std::error_category& smtp_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), smtp_category()};
}

}  // namespace inlet::smtp

template <>
struct std::is_error_code_enum<inlet::smtp::errc> : std::true_type {};
