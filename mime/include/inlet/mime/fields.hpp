// Structured header fields, parsed on demand from a raw (folded) value.
//
// All functions take the raw value as stored in the header index (after the colon,
// folding kept), never throw on bad input, and return their best reading. Results are
// owned strings in UTF-8: encoded words (RFC 2047) are decoded, and bytes that are not
// valid UTF-8 (raw 8-bit headers) become U+FFFD.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::mime {

struct mailbox {
  std::string name;     // decoded display name, "" if none
  std::string address;  // addr-spec (local@domain), quotes kept only where needed
  friend bool operator==(const mailbox&, const mailbox&) = default;
};

/// Unfolds (drops the CRLF of each fold), trims, and makes the bytes valid UTF-8.
std::string unfold(std::string_view raw);

/// An unstructured field (Subject, Comments, ...): unfolded, encoded words decoded
/// (adjacent encoded words in one charset are joined before conversion).
std::string decode_unstructured(std::string_view raw);

/// RFC 5322 3.4 address-list, leniently: groups (members flattened), quoted strings,
/// comments, obsolete routes and phrases, RFC 6532 UTF-8, RFC 2047 display names.
/// `defect` is set when something had to be guessed.
std::vector<mailbox> parse_address_list(std::string_view raw, bool* defect = nullptr);
/// The same, keeping the first `keep` addresses; `*total` (if given) is how many the
/// list holds. The rest are walked, not decoded: what bounds the work of a huge list.
std::vector<mailbox> parse_address_list(std::string_view raw, std::size_t keep, std::size_t* total,
                                        bool* defect = nullptr);
/// The same, into `out`: cleared first, its capacity reused (a caller parsing many
/// lists keeps one vector and allocates only when a list is longer than before).
void parse_address_list(std::string_view raw, std::size_t keep, std::size_t* total, bool* defect,
                        std::vector<mailbox>& out);

/// RFC 5322 3.3 date-time (with obsolete forms: 2-digit years, named and military
/// zones, comments) converted to UTC. nullopt when no date can be read.
std::optional<std::chrono::sys_seconds> parse_date(std::string_view raw);

/// Formats as YYYY-MM-DDTHH:MM:SSZ.
std::string format_iso8601(std::chrono::sys_seconds t);

/// Message-ID / Content-ID: the id without angle brackets.
std::optional<std::string> parse_message_id(std::string_view raw);
/// In-Reply-To / References: every id, in order.
std::vector<std::string> parse_message_id_list(std::string_view raw);

struct mime_parameter {
  std::string name;      // lower case, RFC 2231 section suffixes removed
  std::string value;     // decoded (RFC 2231 percent-encoding + charset, or RFC 2047)
  std::string charset;   // RFC 2231 charset, if given
  std::string language;  // RFC 2231 language, if given
};

/// Content-Type or Content-Disposition: a lower-case value ("text/plain", "attachment")
/// and its parameters, with RFC 2231 continuations joined.
struct mime_field {
  std::string value;
  std::vector<mime_parameter> params;
  const mime_parameter* find(std::string_view name) const noexcept;
};

/// value is "" when the type is not of the form type/subtype.
mime_field parse_content_type(std::string_view raw);
mime_field parse_content_disposition(std::string_view raw);

/// Received: the clauses of RFC 5321 4.4 trace fields, and the date after ';'.
struct received_field {
  std::string from, by, via, with, id, for_;
  std::optional<std::chrono::sys_seconds> date;
};
received_field parse_received(std::string_view raw);

}  // namespace inlet::mime
