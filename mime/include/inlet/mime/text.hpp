// A message's text as words: what a reader sees of an HTML part, and what a search
// matches in a body. Both read a parsed_message only (no I/O, no state): safe on any
// number of threads at once.
#pragma once

#include <cstddef>
#include <inlet/mime/message.hpp>
#include <string>
#include <string_view>

namespace inlet::mime {

/// The words of an HTML document: tags, comments, scripts and styles dropped, entities
/// decoded (the common named ones and numeric &#N; / &#xN;), a line break at <br> and at
/// the end of a block (p, div, tr, h1-h6, li); runs of spaces collapsed, at most one empty
/// line in a row, no leading or trailing blanks.
std::string html_to_text(std::string_view html);

/// The text a search matches in a message's body: the first text/plain part that is not
/// an attachment decoded to UTF-8, else the first text/html part as html_to_text gives it
/// (of at most 2 * limit decoded bytes: markup shrinks). At most `limit` bytes, cut at a
/// character boundary; only about that much of the part is decoded. A part without
/// transfer encoding in ASCII or UTF-8 is not copied: the result then views the
/// message's input (or `scratch`, when the input is in pieces). Otherwise the result views
/// `scratch`. Empty for a message without a text part. Attachment names are not in it:
/// they are in the summary (summarize).
std::string_view body_text(const parsed_message& m, std::size_t limit, std::string& scratch);

}  // namespace inlet::mime
