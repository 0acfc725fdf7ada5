// POST /api/v1/send: Mailpit's SendMessageParams (JSON) read into a mail::draft, which
// the mail library validates and writes.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <inlet/mail/compose.hpp>
#include <string>
#include <string_view>

namespace inlet::http::detail {

using inlet::mail::composed_message;
using inlet::mail::encode_header_text;
using inlet::mail::encode_quoted_printable;

/// Reads the JSON shape into `out`: unknown fields, wrong types, missing From, Content
/// that is not base64 are errors (false, `error` says which). Keys match
/// case-insensitively, as Mailpit's JSON decoder does. Does not validate the values.
bool read_send_request(const boost::json::value& body, inlet::mail::draft& out, std::string& error);

/// read_send_request, mail::validate and mail::compose in one.
bool compose_message(const boost::json::value& body, std::chrono::system_clock::time_point now,
                     std::string_view id_domain, composed_message& out, std::string& error);

}  // namespace inlet::http::detail
