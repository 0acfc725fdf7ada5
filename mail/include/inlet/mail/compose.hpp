// The MIME composer: a message described by its fields (a draft: the send API's
// SendMessageParams, a sendmail command line) becomes RFC 5322 bytes and an envelope,
// ready to be ingested as if received over SMTP.
//
// Validation is apart from writing: validate() says what is wrong with a draft in words
// a client can act on; compose() writes any draft that validate() accepted and never
// fails. Readers of a wire format (the API's JSON) only fill a draft.
//
// Thread-safety: pure functions (compose() draws boundaries from a per-thread generator).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inlet::mail {

struct mailbox {
  std::string name;   ///< display name, UTF-8; may be empty
  std::string email;  ///< addr-spec
};

struct attachment {
  std::string filename;
  std::string content_type;  ///< "" : guessed from the file name
  std::string content_id;    ///< set: an inline part (multipart/related)
  std::string bytes;         ///< decoded content
};

struct draft {
  mailbox from;
  std::vector<mailbox> to, cc, reply_to;
  std::vector<std::string> bcc;  ///< envelope only
  std::string subject, text, html;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra header fields
  std::vector<attachment> attachments;
  std::vector<std::string> tags;  ///< passed through to the composed message
};

struct composed_message {
  std::string raw;                   ///< CRLF line ends, MIME
  std::string mail_from;             ///< from.email
  std::vector<std::string> rcpt_to;  ///< To, Cc and Bcc addresses
  std::vector<std::string> tags;     ///< the draft's tags
};

/// True when compose() can write `d`; else false and what is wrong in `error`: an address
/// that is not local@domain (or holds spaces, brackets, quotes), a line break in a name,
/// the subject, a header value, a file name, type or content ID; no recipient; an extra
/// header that the fields set (From, To, Content-Type, ...).
bool validate(const draft& d, std::string& error);

/// Writes a validated draft: From, To, Cc, Reply-To, Subject, Date (`now`), a Message-ID
/// at `id_domain` unless the extra headers hold one, MIME-Version; then the body as
/// multipart/mixed (files) > multipart/related (inline parts) > multipart/alternative
/// (text and HTML), each level only when needed; text as quoted-printable UTF-8.
composed_message compose(const draft& d, std::chrono::system_clock::time_point now,
                         std::string_view id_domain);

/// An addr-spec that may go into a header and an envelope.
bool valid_email(std::string_view e);

/// A Content-Type for a file name ("application/octet-stream" when unknown).
std::string guess_type(std::string_view filename);

/// Quoted-printable (RFC 2045) of UTF-8 text; line ends become CRLF.
std::string encode_quoted_printable(std::string_view text);

/// A header value safe to write: RFC 2047 "B" encoded words when it is not plain ASCII.
std::string encode_header_text(std::string_view text);

}  // namespace inlet::mail
