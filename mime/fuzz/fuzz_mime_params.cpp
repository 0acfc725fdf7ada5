// Content-Type / Content-Disposition parameters (RFC 2045 5.1, RFC 2231 continuations
// with charset and language, RFC 2047 in quoted values), through both entry points.
// Checks: names are lower case and unique (sections joined, the first repeat wins);
// every value is valid UTF-8 whatever the declared charset.
#include <inlet/mime/fields.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

void check(const inlet::mime::mime_field& f) {
  for (const auto& p : f.params) {
    for (char c : p.name)
      if (c >= 'A' && c <= 'Z') std::abort();
    if (!valid_utf8(p.value)) std::abort();
    if (f.find(p.name) != &p) std::abort();  // one entry per name: the first wins
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto ct = inlet::mime::parse_content_type(in);
  const auto cd = inlet::mime::parse_content_disposition(in);
  check(ct);
  check(cd);
  return 0;
}
