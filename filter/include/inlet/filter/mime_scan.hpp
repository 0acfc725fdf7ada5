// Scanning a message parsed by inlet::mime (library inlet::filter_mime).
//
// What is fed to the scan, one stream each:
//   - the unstructured header fields Subject, Comments, Keywords, Content-Description and
//     Thread-Topic of the message and of every nested message/rfc822, unfolded and
//     RFC 2047-decoded to UTF-8 (inlet::mime::header_value);
//   - every leaf text/* part that is not an attachment (inlet::mime::for_each_text_part),
//     transfer-decoded and converted to UTF-8 piece by piece (inlet::mime::decode_text),
//     never linearised; text/html as decoded HTML source (see docs/filter.md).
// Attachments are not scanned.
#pragma once

#include <memory>
#include <string_view>

#include "inlet/filter/filter.hpp"
#include "inlet/mime/message.hpp"

namespace inlet::filter {

/// Receives the scannable text of a message, stream by stream.
class text_visitor {
 public:
  virtual ~text_visitor() = default;
  virtual void begin(stream_kind kind) = 0;
  virtual void piece(std::string_view utf8) = 0;
  virtual void end() = 0;
};

/// Walks the scannable text of `m` (the list above) into `v`, piece by piece.
void visit_text(const mime::parsed_message& m, text_visitor& v);

/// Feeds the scannable text of `m` into `s` (does not call finish()).
/// Thread-safety: as scan; `m` is only read.
void scan_parsed(scan& s, const mime::parsed_message& m);

/// scan_parsed + finish: the verdict for one parsed message.
verdict scan_message(std::shared_ptr<const filter> f, const mime::parsed_message& m,
                     double threshold = 1.0, counters* stats = nullptr);

}  // namespace inlet::filter
