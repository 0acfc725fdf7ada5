// Dates (RFC 5322 3.3 and obsolete forms): any result must format as a valid timestamp.
#include <inlet/mime/fields.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto d = inlet::mime::parse_date(in)) {
    std::string s = inlet::mime::format_iso8601(*d);
    if (s.size() < 20) std::abort();
  }
  return 0;
}
