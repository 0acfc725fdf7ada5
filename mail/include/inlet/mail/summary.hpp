// The summary of a received message: what a listing shows and searches, filled from one
// MIME parse (addresses, Subject, Date, Message-ID, snippet, attachments, inline parts),
// every string and list bounded so that hostile input costs a bounded record.
//
// Thread-safety: free functions; analyze() reuses per-thread scratch space and is not
// re-entered on a thread. Views: none kept; `out` owns what it is given.
#pragma once

#include <cstddef>
#include <inlet/filter/filter.hpp>
#include <inlet/mime/message.hpp>
#include <inlet/store/types.hpp>

namespace inlet::mail {

/// Bounds of what a summary keeps of hostile input.
struct summary_limits {
  static constexpr std::size_t addresses = 100;     ///< entries per address list
  static constexpr std::size_t field_bytes = 2048;  ///< a name, an address, a file name
  static constexpr std::size_t subject_bytes = 4096;
  static constexpr std::size_t snippet_chars = 200;
};

/// The calling thread's MIME parser. Reused for every message, it keeps the capacity of
/// its tables, so parsing allocates nothing once they have grown (mime/parser.hpp).
/// A result is valid until the thread's next parse.
inlet::mime::parser& thread_parser();

/// From one parse: fills `out` (addresses, Subject, Date, Message-ID, snippet,
/// attachments without inline parts, the inline part count; envelope recipients no
/// To/Cc/Bcc header names become Bcc, as Mailpit shows them), every list and string
/// bounded; and, when `scan` is given, feeds it the decoded unstructured headers and
/// every non-attachment text/* part as UTF-8. The search text is not filled: the
/// store derives it from the raw bytes (store::search::search_text_of).
void analyze(const inlet::mime::parsed_message& m, const inlet::store::recipient_list& rcpt_to,
             inlet::store::summary& out, inlet::filter::scan* scan);

/// Cuts `s` to at most `n` bytes, never inside a UTF-8 character.
void bound_utf8(std::string& s, std::size_t n);

}  // namespace inlet::mail
