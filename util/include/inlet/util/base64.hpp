// Base64 (RFC 4648 section 4, the standard alphabet, padded), one decoder whose
// strictness is a parameter, because its users disagree for good reasons: a SASL
// response must be exact (RFC 4954: anything else is 501), an HTTP Basic credential may
// end in stray whitespace, and a JSON attachment is often wrapped into lines.
// MIME bodies are not decoded here: mime::body_decoder streams them over fragments and
// forgives what real mail does wrong.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace inlet::util {

enum class base64_whitespace {
  reject,    ///< any character outside the alphabet and '=' is an error
  trailing,  ///< spaces, CR and LF at the end are dropped, elsewhere an error
  anywhere,  ///< ASCII whitespace anywhere is dropped (wrapped lines)
};

/// Decodes `in` into `out` (replaced). False on a character outside the alphabet, a length
/// that is not a multiple of 4, or padding anywhere but at the end; `out` is then
/// unspecified.
bool base64_decode(std::string_view in, std::string& out,
                   base64_whitespace ws = base64_whitespace::reject);

/// Encodes `bytes` on one line, padded.
std::string base64_encode(std::string_view bytes);

/// Encodes `bytes` in lines of 76 characters, each ended by CRLF (RFC 2045); "" for "".
std::string base64_encode_lines(std::string_view bytes);

}  // namespace inlet::util
