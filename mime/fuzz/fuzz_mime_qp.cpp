// quoted-printable: incremental decoding over any split equals one-shot decoding; output is never
// longer than the input.
#include <inlet/mime/decode.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace m = inlet::mime;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string whole = m::decode_quoted_printable(in);
  if (whole.size() > size) std::abort();
  std::size_t cut = size ? data[0] % (size + 1) : 0;
  m::body_decoder d(m::transfer_encoding::quoted_printable);
  std::string out;
  auto sink = [&](std::string_view s) { out.append(s); };
  d.feed(in.substr(0, cut), sink);
  d.feed(in.substr(cut), sink);
  d.finish(sink);
  if (out != whole) std::abort();
  return 0;
}
