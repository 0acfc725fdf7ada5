// Message-level scanning over already-decoded text streams.
//
// What is scanned (the caller, inlet::mime in inletd, decides and decodes):
//   - Subject and the other unstructured headers, RFC 2047-decoded to UTF-8;
//   - every text/* part that is not an attachment, after transfer decoding
//     (quoted-printable, base64) and charset conversion to UTF-8;
//   - text/html is scanned as decoded HTML source (markup included), see docs/filter.md.
// Attachments (Content-Disposition: attachment, non-text types) are not scanned.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "inlet/filter/filter.hpp"

namespace inlet::filter {

/// One decoded text stream of a message, given as the pieces it arrived in.
struct decoded_stream {
  stream_kind kind = stream_kind::text_plain;
  std::span<const std::string_view> pieces;
};

/// Scans every stream of one message and returns the verdict (counters updated once).
verdict scan_message(std::shared_ptr<const filter> f, std::span<const decoded_stream> streams,
                     double threshold = 1.0, counters* stats = nullptr);

}  // namespace inlet::filter
