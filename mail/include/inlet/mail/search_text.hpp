// The text free-text search looks in (store::summary::search_text): subject, names and
// addresses, the start of the body as text, attachment names; folded, whitespace
// collapsed, bounded.
//
// A store needs it only once a search asks, so it is not made on the receive path:
// ingest hands the store this function with each message (new_message::build_search_text,
// a store::search_text_builder), and the store calls it at most once per message, off
// the path that answers the SMTP client. The store names no code above it.
//
// Thread-safety: search_text_of may run on any number of threads at once.
#pragma once

#include <cstddef>
#include <inlet/store/types.hpp>
#include <string>
#include <string_view>

namespace inlet::mail {

/// Bytes of search text kept per message.
inline constexpr std::size_t search_text_bytes = 8192;

/// summary.search_text of a message: the summary's words, then the first
/// search_text_bytes of the first text/plain part (else of the first text/html part, as
/// text) and the attachment names. Parses `raw` with its own per-thread parser; a part
/// without transfer encoding in ASCII or UTF-8 is read in place.
std::string search_text_of(const inlet::store::summary& s, std::string_view raw);

}  // namespace inlet::mail
