// Parsing of MAIL/RCPT paths (RFC 5321 4.1.2) and their ESMTP parameters.
// Internal to inlet::smtp; views point into the command line being parsed.
#pragma once

#include <string_view>
#include <vector>

namespace inlet::smtp::detail {

struct parsed_path {
  std::string_view mailbox;  ///< local@domain, source route removed; empty for <>
  std::string_view local;
  std::string_view domain;
  bool null_path = false;    ///< "<>"
  bool has_domain = false;
  bool non_ascii = false;    ///< any octet >= 0x80 (needs SMTPUTF8)
  std::vector<std::string_view> params;  ///< "KEY=VALUE" or "KEY" after the path
};

/// Parses "<path> [params]" (angle brackets strongly preferred; a bare
/// address without spaces is tolerated). Returns false on a syntax error.
bool parse_path(std::string_view s, parsed_path& out);

}  // namespace inlet::smtp::detail
