// Error codes of inlet::buffer.
#pragma once

#include <system_error>

namespace inlet::buffer {

enum class errc {
  ok = 0,
  out_of_range = 1,       // a position or pointer range outside the data
  scratch_too_small = 2,  // a straddling token does not fit the caller's scratch area
  max_size_exceeded = 3,  // the streambuf would grow beyond max_size()
};

const std::error_category& buffer_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), buffer_category()};
}

}  // namespace inlet::buffer

template <>
struct std::is_error_code_enum<inlet::buffer::errc> : std::true_type {};
