// Test-only minimal decoders (the product's decoders live in inlet::mime).
// Streaming: each feed() takes the next raw fragment and returns the decoded bytes
// that are complete so far, carrying partial escapes/quads to the next call.
#pragma once

#include <string>
#include <string_view>

namespace inlet::filter::test {

class qp_decoder {
 public:
  std::string feed(std::string_view in);
  std::string finish();  ///< flushes what is pending (a dangling '=' is kept literally)

 private:
  std::string pending_;  // "=", "=X", "=\r" or trailing blanks awaiting their line end
};

class base64_decoder {
 public:
  std::string feed(std::string_view in);

 private:
  unsigned acc_ = 0;
  int bits_ = 0;
};

/// Converts `in` from `charset` to UTF-8 with iconv; throws std::runtime_error on failure.
std::string to_utf8(std::string_view in, const char* charset);
/// Converts UTF-8 to `charset` (to build test inputs).
std::string from_utf8(std::string_view in, const char* charset);

/// Base64-encodes (76-column lines, CRLF) to build test inputs.
std::string base64_encode(std::string_view in);

}  // namespace inlet::filter::test
