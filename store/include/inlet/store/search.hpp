// Mailpit's search language, parsed once into a small query every store understands.
//
//   subject:"quarterly report" from:ann -is:read larger:1M after:2026-01-01 invoice
//
// A query is a conjunction of terms (every term must hold); a term is negated by a
// leading `-` or `!`. The memory store evaluates `matches()` directly; the PostgreSQL
// store compiles the same terms to SQL, and both are tested against one table of queries
// and expected results (store/test/search_cases.hpp), so `matches()` is the reference for
// what each term means. Where we differ from Mailpit, and why: store/DESIGN.md.
//
// Case: every comparison is case-insensitive through `fold_case` (ASCII, Latin-1,
// Latin Extended-A, Greek and Cyrillic capitals), applied to the query values by `parse`
// and to the message's fields by `prepared_fields` (or, for `summary.search_text`, by
// whoever fills it: it is stored folded).
//
// Thread-safety: plain values and pure functions (the time-zone database is loaded once,
// thread-safely, on first use).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "inlet/store/types.hpp"

namespace inlet::store::search {

/// Where a `match` term looks. Matching is a case-insensitive substring test unless
/// the field says otherwise. An address field holds each address as "name <address>"
/// (or the bare address when there is no name), so `to:ann`, `to:"ann smith"` and
/// `to:example.com` all find "Ann Smith <ann@example.com>".
enum class field : std::uint8_t {
  text,        ///< free words and "quoted phrases": summary.search_text
  to,          ///< To: names and addresses
  from,        ///< From: name and address
  cc,          ///< Cc: names and addresses
  bcc,         ///< Bcc (header or envelope-only recipients)
  reply_to,    ///< Reply-To: names and addresses
  addressed,   ///< any of From, To, Cc, Bcc, Reply-To (as Mailpit)
  subject,     ///< Subject:
  message_id,  ///< Message-ID, compared whole (case-insensitively; <> ignored)
  tag,         ///< a tag, compared whole (case-insensitively)
  // Not in Mailpit's language (Mailpit keeps no envelope sender; its `bcc:` already
  // finds envelope-only recipients): terms built by code, such as MailHog's search.
  envelope_from,  ///< the envelope sender (MAIL FROM), substring
  envelope_to,    ///< any envelope recipient (RCPT TO), substring
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
  larger,          ///< larger:SIZE — size > `bytes` (as Mailpit)
  smaller,         ///< smaller:SIZE — size < `bytes`
};

struct term {
  kind what = kind::match;
  field where = field::text;
  std::string value;        ///< match: folded UTF-8, quotes removed, whitespace collapsed
  time_point when{};        ///< after/before: the instant DATE starts in the query's zone
  std::uint64_t bytes = 0;  ///< larger/smaller
  bool negated = false;
  /// match: more fields to look in; the term holds when any of `where` and these
  /// matches the value (MailHog's "envelope sender, or else the From: header").
  std::vector<field> also;
  friend bool operator==(const term&, const term&) = default;
};

struct query {
  std::vector<term> terms;  ///< all must hold; empty matches every message
  bool empty() const noexcept { return terms.empty(); }
  friend bool operator==(const query&, const query&) = default;
};

/// Parses `text` in Mailpit's search language. `tz` is an IANA zone name for the dates of
/// after:/before: (empty or "UTC": UTC; "Local": the server's zone). On failure returns
/// store::errc::invalid_argument and, when `message` is given, says what is wrong in
/// words a user understands. Failures: an unknown zone, a date or a size that does not
/// read (Mailpit ignores those terms, which would widen a search-based delete to more
/// than was asked). A term with an empty value (`to:`) is ignored, as by Mailpit.
/// A date as the search language's before:/after: read it (YYYY-MM-DD, with a time and a
/// zone, a Unix time in seconds or milliseconds), in the zone `tz` ("" for UTC).
std::error_code read_date(std::string_view text, std::string_view tz, time_point& out,
                          std::string* message = nullptr);

std::error_code parse(std::string_view text, std::string_view tz, query& out,
                      std::string* message = nullptr);

/// Simple case folding of UTF-8 (see the file comment); every folded character keeps
/// its encoded length, so folding never changes a string's size. Invalid UTF-8 is left
/// as it is.
std::string fold_case(std::string_view utf8);
void fold_case_in_place(std::string& utf8) noexcept;

/// A message's searchable header fields, folded once (a store keeps one per message so
/// that a search does not fold every message again). One buffer; addresses of a field
/// are separated by '\n', which a query value never contains.
class prepared_fields {
 public:
  prepared_fields() = default;
  explicit prepared_fields(const stored_message& m);
  /// The folded text of field f (subject, from, to, cc, bcc, reply_to, message_id);
  /// empty for the others.
  std::string_view get(field f) const noexcept;
  /// Heap bytes held.
  std::size_t bytes() const noexcept { return buf_.capacity(); }

 private:
  std::string buf_;
  std::array<std::uint32_t, 8> end_{};  // end offset of field i in buf_ (index by field)
};

/// What matches() reads of a message beside the record: its folded header fields and its
/// search text, each asked for only when a term needs it (the memory store builds them
/// at the first search that does, and keeps them).
class match_source {
 public:
  virtual const prepared_fields& fields() const = 0;
  virtual std::string_view text() const = 0;

 protected:
  ~match_source() = default;
};

/// True when `m` satisfies every term of `q` (the reference semantics). Folds m's fields
/// on every call; a store that searches often passes them prepared. The first two read
/// the free text from m.summary.search_text.
bool matches(const query& q, const stored_message& m);
bool matches(const query& q, const stored_message& m, const prepared_fields& f);
bool matches(const query& q, const stored_message& m, const match_source& src);

/// Builds summary.search_text as the pipeline and the send API do: subject, the names and
/// addresses of every address field, `body_text` (the decoded text, or the HTML as text),
/// the attachment file names; folded, whitespace collapsed, at most `limit` bytes (cut at
/// a character boundary).
std::string build_search_text(const summary& s, std::string_view body_text, std::size_t limit);

/// Bytes of search text a store keeps per message.
inline constexpr std::size_t search_text_bytes = 8192;

/// summary.search_text of a message, derived from its bytes: build_search_text of the
/// summary and mime::body_text of `raw` (the first text/plain part, else the first
/// text/html part as words), at most search_text_bytes. Each store calls this itself for
/// a message put without a search text, so the caller never parses the body for it.
/// Costs about a MIME parse and a pass over the first 8 KiB of text: a store runs it off
/// the thread that answers the SMTP client (the memory store at the first search that
/// needs it, the file and PostgreSQL stores on their writer thread). Uses a parser of
/// its own per thread: safe on any number of threads at once.
std::string search_text_of(const summary& s, std::string_view raw);

/// For a store that writes the search text at insert (file, PostgreSQL): when
/// m.summary.search_text is empty, fills it with search_text_of(m.summary, m.raw).
void complete_search_text(new_message& m);

}  // namespace inlet::store::search
