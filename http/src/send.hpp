// POST /api/v1/send: a JSON message (Mailpit's SendMessageParams) to RFC 5322 bytes and
// an envelope, ready to be stored as if received over SMTP.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "inlet/store/types.hpp"

namespace inlet::http::detail {

struct composed_message {
  std::string raw;                   ///< CRLF line ends, MIME
  std::string mail_from;             ///< From.Email
  std::vector<std::string> rcpt_to;  ///< To, Cc and Bcc addresses
  std::vector<std::string> tags;     ///< Tags, as given
};

/// Builds the message, or says what is wrong with the request in `error` (and returns
/// false). `now` is the Date: header; `id_domain` the right side of the Message-ID made
/// when the request gives none.
bool compose_message(const boost::json::value& body, std::chrono::system_clock::time_point now,
                     std::string_view id_domain, composed_message& out, std::string& error);

/// Quoted-printable (RFC 2045) of UTF-8 text; line ends become CRLF.
std::string encode_quoted_printable(std::string_view text);

/// Base64 in lines of 76 characters, CRLF-separated.
std::string encode_base64_lines(std::string_view bytes);

/// A header value safe to write: RFC 2047 "B" encoded words when it is not plain ASCII.
std::string encode_header_text(std::string_view text);

}  // namespace inlet::http::detail
