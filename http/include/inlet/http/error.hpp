// Error codes of inlet::http (one enum, one category).
#pragma once

#include <system_error>

namespace inlet::http {

enum class errc {
  ok = 0,
  bad_request = 1,         ///< malformed query, path or body
  not_found = 2,           ///< no such path or message
  method_not_allowed = 3,  ///< path exists, method does not
  payload_too_large = 4,   ///< body over the configured limit
  header_too_large = 5,    ///< request header over the configured limit
  already_started = 6,
};

const std::error_category& http_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), http_category()};
}

}  // namespace inlet::http

template <>
struct std::is_error_code_enum<inlet::http::errc> : std::true_type {};
