// Address lists (RFC 5322 3.4 with obsolete syntax, RFC 2047 and RFC 6532).
#include <inlet/mime/fields.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  bool defect = false;
  auto list = inlet::mime::parse_address_list(in, &defect);
  if (list.size() > size + 1) std::abort();  // every mailbox consumes input
  return 0;
}
