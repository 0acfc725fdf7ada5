// inletd's use of the MIME parser: one parse of each message fills the store's summary
// and feeds the filter the decoded headers and text parts; the HTTP API renders bodies
// from the raw bytes on demand through render_body.
#pragma once

#include <inlet/filter/filter.hpp>
#include <inlet/http/api.hpp>
#include <inlet/mime/message.hpp>
#include <inlet/store/types.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace inletd {

class pipeline;
class filter_stage;

/// The calling thread's MIME parser. Reused for every message, it keeps the capacity of
/// its tables, so parsing allocates nothing once they have grown (mime/parser.hpp).
/// A result is valid until the thread's next parse.
inlet::mime::parser& thread_parser();

/// From one parse: fills `out` (addresses, Subject, Date, Message-ID, snippet,
/// attachments without inline parts, the inline part count, the search text; envelope
/// recipients no To/Cc/Bcc header names become Bcc), every list and string bounded; and,
/// when `scan` is given, feeds it the decoded unstructured headers and every
/// non-attachment text/* part as UTF-8.
void analyze(const inlet::mime::parsed_message& m, const std::vector<std::string>& rcpt_to,
             inlet::store::summary& out, inlet::filter::scan* scan);

/// The HTTP renderer hook: Text, HTML, inline parts and attachments of a message.
inlet::http::rendered_body render_body(std::string_view raw);

/// The pipeline's and the filter's counters for /metrics (Prometheus text format).
void append_metrics(const pipeline& p, filter_stage* f, std::string& out);

}  // namespace inletd
