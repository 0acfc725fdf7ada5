// inlet::mime error codes. Parsing never fails: everything the parser finds wrong
// with a message is recorded as a defect (an errc value plus a byte offset), and the
// parser still yields its best structure, as Python's email package does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace inlet::mime {

enum class errc {
  ok = 0,
  // structure
  start_boundary_not_found = 1,       // multipart body without its first boundary
  close_boundary_not_found,           // multipart ended without "--boundary--"
  no_boundary_in_multipart,           // multipart/* without a boundary parameter
  missing_header_body_separator,      // a non-header line ended the header block
  first_header_line_is_continuation,  // header block starts with whitespace
  invalid_header_name,                // line with no colon, or bad characters
  multipart_invariant_violation,      // message/rfc822 or multipart with a CTE that encodes
  // limits
  depth_limit = 20,
  part_limit,
  header_limit,
  line_too_long,  // a header line longer than options::max_line_length
  // bodies
  invalid_base64_characters = 40,
  invalid_base64_padding,
  invalid_quoted_printable,
  unknown_charset,
  invalid_multibyte_sequence,
  unknown_transfer_encoding,
  // fields
  invalid_address = 60,
  invalid_date,
  invalid_encoded_word,
};

const std::error_category& mime_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), mime_category()};
}

/// Python-email-like name of a defect ("StartBoundaryNotFoundDefect", ...).
std::string_view defect_name(errc e) noexcept;

/// One thing wrong with a message: what, where (byte offset into the whole message),
/// and in which part (index into parsed_message::parts()).
struct defect {
  errc code = errc::ok;
  std::size_t offset = 0;
  std::uint32_t part = 0;
};

}  // namespace inlet::mime

template <>
struct std::is_error_code_enum<inlet::mime::errc> : std::true_type {};
