// Mailpit's search language, parsed once into a small query every store understands.
//
//   subject:"quarterly report" from:ann -is:read larger:1M after:2026-01-01 invoice
//
// A query is a conjunction of terms (every term must hold); a term is negated by a
// leading `-` or `!`. The memory store evaluates `matches()` directly; the PostgreSQL
// store compiles the same terms to SQL, and both are tested against one table of queries
// and expected results, so `matches()` is the reference for what each term means.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "inlet/store/types.hpp"

namespace inlet::store::search {

/// Where a `match` term looks. Matching is a case-insensitive substring test unless
/// the field says otherwise.
enum class field : std::uint8_t {
  text,        ///< free words and "quoted phrases": summary.search_text
  to,          ///< To: names and addresses
  from,        ///< From: name and address
  cc,          ///< Cc: names and addresses
  bcc,         ///< Bcc (header or envelope-only recipients)
  reply_to,    ///< Reply-To: names and addresses
  addressed,   ///< any of To, Cc, Bcc, Reply-To (and the envelope recipients)
  subject,     ///< Subject:
  message_id,  ///< Message-ID, compared whole (case-insensitively)
  tag,         ///< a tag, compared whole (case-insensitively)
};

enum class kind : std::uint8_t {
  match,           ///< `field` contains (or equals) `value`
  is_read,         ///< is:read
  is_unread,       ///< is:unread
  is_tagged,       ///< is:tagged — at least one tag
  has_attachment,  ///< has:attachment / has:attachments
  has_inline,      ///< has:inline / has:inlines
  after,           ///< after:DATE — received at or after `when`
  before,          ///< before:DATE — received before `when`
  larger,          ///< larger:SIZE — size >= `bytes`
  smaller,         ///< smaller:SIZE — size < `bytes`
};

struct term {
  kind what = kind::match;
  field where = field::text;
  std::string value;        ///< match: lower-cased UTF-8, quotes removed
  time_point when{};        ///< after/before: the instant DATE starts in the query's zone
  std::uint64_t bytes = 0;  ///< larger/smaller
  bool negated = false;
  friend bool operator==(const term&, const term&) = default;
};

struct query {
  std::vector<term> terms;  ///< all must hold; empty matches every message
  bool empty() const noexcept { return terms.empty(); }
  friend bool operator==(const query&, const query&) = default;
};

/// Parses `text` in Mailpit's search language. `tz` is an IANA zone name for the dates of
/// after:/before: (empty: UTC). On failure returns an error (store::errc::invalid_argument)
/// and, when `message` is given, says what is wrong in words a user understands.
std::error_code parse(std::string_view text, std::string_view tz, query& out,
                      std::string* message = nullptr);

/// True when `m` satisfies every term of `q` (the reference semantics).
bool matches(const query& q, const stored_message& m);

}  // namespace inlet::store::search
