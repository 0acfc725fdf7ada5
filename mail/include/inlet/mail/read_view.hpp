// A stored message's bytes seen the way Mailpit's API shows them: Text and HTML bodies,
// attachments and inline parts with Mailpit's part IDs ("1", "1.2", ...), the decoded
// bytes of one part, the header map, List-Unsubscribe, Return-Path.
//
// Part IDs: the children of a multipart are numbered from 1 under their parent's ID
// ("2" then "2.1", "2.2"); a message that is not multipart has one part, "1". An attached
// message (message/rfc822) is one attachment: its own parts are not listed.
//
// Thread-safety: a message_view is used by one thread; it owns its parse.
// Views: the view refers to the raw bytes given to it; they must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <inlet/mime/message.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inlet::mail {

struct checksums {
  std::string md5, sha1, sha256;  // lower-case hex of the decoded content
};

struct part_entry {
  std::string part_id;
  std::uint32_t index = 0;  // into parsed_message::parts()
  std::string filename;
  std::string content_type;
  std::string content_id;
  std::size_t size = 0;  // decoded bytes
  bool is_inline = false;
  checksums sums;  // filled by message_view::parts(true)
};

struct list_unsubscribe {
  std::string header;
  std::string header_post;
  std::vector<std::string> links;  // at most one mailto: and one http(s):
  std::string errors;
};

class message_view {
 public:
  explicit message_view(std::string_view raw);

  const inlet::mime::parsed_message& parsed() const noexcept { return msg_; }

  /// The first text/plain body of the message itself (not of an attached message), or,
  /// when there is none, the HTML body as text. UTF-8.
  std::string text() const;
  /// The first text/html body, UTF-8; "" when there is none.
  std::string html() const;
  bool has_html() const noexcept { return html_ != inlet::mime::no_index; }

  /// Attachments and inline parts, in part order; checksums computed when asked.
  std::vector<part_entry> parts(bool with_checksums) const;

  /// The decoded bytes of the part with this ID, and its entry; nullopt if no such part.
  /// Any part with an ID can be fetched, bodies included (as Mailpit serves them).
  std::optional<std::pair<part_entry, std::string>> part_content(std::string_view part_id) const;

  /// The top-level header fields, names in canonical case (Content-Type, Message-Id),
  /// sorted by name; values unfolded, not decoded, in order.
  std::vector<std::pair<std::string, std::vector<std::string>>> headers() const;

  list_unsubscribe unsubscribe() const;

  /// Return-Path: header without <>, or "" when absent.
  std::string return_path() const;

 private:
  inlet::mime::parsed_message msg_;
  std::vector<std::string> ids_;  // Mailpit part ID per part index ("" for the root multipart)
  std::uint32_t plain_ = inlet::mime::no_index;
  std::uint32_t html_ = inlet::mime::no_index;
};

/// Whether part `p` lies inside an attached message (a message/rfc822 part below the
/// root): such parts are not listed as the message's own.
bool inside_attached_message(const inlet::mime::parsed_message& m, std::uint32_t p);

/// Mailpit's part ID of every part (index by part index; "" for a multipart root).
std::vector<std::string> part_ids(const inlet::mime::parsed_message& m);

/// The attachments and inline parts of a parse (what Message.Attachments and
/// Message.Inline list): leaf parts that are attachments (mime::is_attachment) outside
/// attached messages, and attached messages themselves. The receive path counts the same.
std::vector<part_entry> list_parts(const inlet::mime::parsed_message& m,
                                   const std::vector<std::string>& ids, bool with_checksums);

/// Inline (shown by the HTML) rather than attached: disposition inline, or no disposition
/// and a Content-ID (a part of multipart/related).
bool is_inline_part(const inlet::mime::parsed_message& m, std::uint32_t p);

/// "content-type" -> "Content-Type", "MESSAGE-ID" -> "Message-Id".
std::string canonical_header_name(std::string_view name);

/// Lower-case hex MD5, SHA-1 and SHA-256 of `bytes`.
checksums checksums_of(std::string_view bytes);

}  // namespace inlet::mail
