// inlet::mime over inlet::buffer::segment: a segment's spans() are the pieces of the
// chunked input, so a message detached from the SMTP buffer is parsed in place.
// Including this header needs inlet::buffer (link inlet::buffer); inlet::mime itself
// does not depend on it.
//
// Invalidation: the parsed_message views the segment's bytes: keep the segment (or any
// segment sharing its fragments) alive and unmodified while the result is used.
#pragma once

#include <inlet/buffer/segment.hpp>
#include <inlet/mime/message.hpp>

#include <string_view>

namespace inlet::mime {

/// Parses with a reused parser (0 allocations per message once warm).
inline const parsed_message& parse(parser& p, const inlet::buffer::segment& s) {
  p.reset();
  for (std::string_view piece : s.spans()) p.feed(piece);
  p.finish();
  return p.message();
}

inline parsed_message parse(const inlet::buffer::segment& s, const options& opt = {}) {
  parser p(opt);
  parse(p, s);
  return p.release();
}

/// A temporary segment would release its fragments before the result is read.
parsed_message parse(inlet::buffer::segment&& temporary, const options& opt = {}) = delete;

}  // namespace inlet::mime
