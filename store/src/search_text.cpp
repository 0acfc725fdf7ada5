// Where a message's search text comes from: the summary's words and the start of its
// body as text, read from the raw bytes by the MIME library (a layer below the store).
#include <inlet/mime/parser.hpp>
#include <inlet/mime/text.hpp>

#include "inlet/store/search.hpp"

namespace inlet::store::search {

std::string search_text_of(const summary& s, std::string_view raw) {
  // A parser per thread: its buffers are reused from message to message.
  thread_local mime::parser parser;
  const mime::parsed_message& m = parser.parse(raw);
  std::string scratch;
  std::string out = build_search_text(s, mime::body_text(m, search_text_bytes, scratch),
                                      search_text_bytes);
  parser.reset();  // no views into `raw` left behind
  return out;
}

void complete_search_text(new_message& m) {
  if (m.summary.search_text.empty()) m.summary.search_text = search_text_of(m.summary, m.raw);
}

}  // namespace inlet::store::search
