// Header parsing: the header index over arbitrary bytes, then every field's value
// unfolded and decoded (RFC 2047), and the structured readers on each value.
#include <inlet/mime/message.hpp>

#include <cstdint>
#include <string_view>

namespace m = inlet::mime;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  m::parsed_message msg = m::parse(in);
  std::string scratch;
  for (const m::header_field& h : msg.headers()) {
    std::string v = m::header_value(msg, h);
    std::string_view raw = msg.view(h.value, scratch);
    (void)m::parse_content_type(raw);
    (void)m::parse_message_id_list(raw);
    (void)m::parse_received(raw);
    (void)v;
  }
  return 0;
}
