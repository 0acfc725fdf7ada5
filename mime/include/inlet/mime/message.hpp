// inlet::mime — the entry point for users of the parser.
//
//   #include <inlet/mime/message.hpp>
//   inlet::mime::parsed_message m = inlet::mime::parse(bytes);          // flat
//   inlet::mime::parsed_message m = inlet::mime::parse(pieces);         // chunked
//   inlet::mime::summary s = inlet::mime::summarize(m);
//   inlet::mime::for_each_text_part(m, [&](std::uint32_t part) {
//     inlet::mime::decode_text(m, part, [&](std::string_view utf8) { scan(utf8); });
//   });
//
// parse() never throws on bad input and never fails; see parser.hpp for the sans-io
// incremental parser, fields.hpp for structured fields, decode.hpp for decoders.
//
// Thread-safety: all functions here only read the parsed_message; many threads may
// summarise or decode the same message at once.
// Invalidation: a parsed_message refers to the input bytes; they must outlive it.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <inlet/mime/chunked_view.hpp>
#include <inlet/mime/decode.hpp>
#include <inlet/mime/error.hpp>
#include <inlet/mime/fields.hpp>
#include <inlet/mime/parser.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::mime {

parsed_message parse(std::string_view flat, const options& opt = {});
/// A parsed_message views its input: parsing a temporary string would dangle.
template <class S>
  requires std::same_as<S, std::string>
parsed_message parse(S&& temporary, const options& opt = {}) = delete;
parsed_message parse(const chunked_view& pieces, const options& opt = {});
parsed_message parse(std::span<const std::string_view> pieces, const options& opt = {});

struct attachment {
  std::string filename;      // decoded, "" if none
  std::string content_type;  // lower-case type/subtype
  std::size_t size = 0;      // decoded bytes
  std::uint32_t part = 0;    // index into parsed_message::parts()
};

struct summary {
  std::vector<mailbox> from, to, cc, bcc, reply_to;
  // How many addresses each list holds; more than the vector's size when summarize()
  // was asked to keep fewer.
  struct counts {
    std::size_t from = 0, to = 0, cc = 0, bcc = 0, reply_to = 0;
  } address_counts;
  std::optional<std::string> subject;
  std::optional<std::chrono::sys_seconds> date;
  std::optional<std::string> message_id;
  std::string snippet;  // ~200 characters of text, whitespace collapsed
  std::vector<attachment> attachments;
};

/// `max_addresses`: entries kept per address list (the rest are counted, not decoded).
summary summarize(const parsed_message& m, std::size_t snippet_chars = 200,
                  std::size_t max_addresses = static_cast<std::size_t>(-1));
/// The same, into `out`: every field is reset, and its vectors keep their capacity, so
/// a caller that summarises many messages with one `summary` does not allocate the
/// address lists again for each.
void summarize(const parsed_message& m, summary& out, std::size_t snippet_chars = 200,
               std::size_t max_addresses = static_cast<std::size_t>(-1));

/// Header value of a field: unfolded, encoded words decoded, UTF-8.
std::string header_value(const parsed_message& m, const header_field& h);
/// Decoded value of the first field `name` of part `p`, or nullopt.
std::optional<std::string> header_text(const parsed_message& m, std::uint32_t p,
                                       std::string_view name);

/// Per-part MIME facts, computed on demand from the part's headers.
std::optional<std::string> charset(const parsed_message& m, std::uint32_t p);      // lower case
std::optional<std::string> disposition(const parsed_message& m, std::uint32_t p);  // lower case
std::optional<std::string> filename(const parsed_message& m, std::uint32_t p);     // decoded
/// Decoded size of a leaf body; raw body size for multipart and message parts.
std::size_t decoded_size(const parsed_message& m, std::uint32_t p);
/// True for leaf parts that are attachments: a filename, or disposition attachment,
/// or a type other than text/* (and not multipart/message).
bool is_attachment(const parsed_message& m, std::uint32_t p);

/// Decodes a part's body (transfer encoding only) into a sink, piece by piece.
/// Returns the first body defect, or errc::ok.
errc decode_body(const parsed_message& m, std::uint32_t p, text_sink sink);
/// Decodes a text part to UTF-8 (transfer encoding, then charset) into a sink.
errc decode_text(const parsed_message& m, std::uint32_t p, text_sink sink);

/// Calls f(part index) for each leaf text/* part that is not an attachment, depth first
/// (including parts of nested messages).
template <class F>
void for_each_text_part(const parsed_message& m, F&& f) {
  for (std::uint32_t i = 0; i < m.parts().size(); ++i) {
    const part& p = m.parts()[i];
    if (p.kind == part_kind::leaf && p.main_type() == "text" && !is_attachment(m, i)) f(i);
  }
}

}  // namespace inlet::mime
