// Error codes of inlet::store.
#pragma once

#include <system_error>

namespace inlet::store {

enum class errc {
  ok = 0,
  too_large = 1,         ///< one message exceeds the store's byte bound
  not_found = 2,         ///< no message with that ID
  unavailable = 3,       ///< the backend cannot take requests (closed, connection lost)
  invalid_argument = 4,  ///< a malformed request (a search that does not parse, ...)
  timeout = 5,           ///< the backend did not answer in time
  corrupt = 6,           ///< the store's file is damaged or truncated
  foreign_file = 7,      ///< the file is not a store's (another format or application)
};

const std::error_category& store_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), store_category()};
}

}  // namespace inlet::store

template <>
struct std::is_error_code_enum<inlet::store::errc> : std::true_type {};
