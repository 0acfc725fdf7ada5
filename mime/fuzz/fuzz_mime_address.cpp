// Address lists (RFC 5322 3.4 with obsolete syntax, RFC 2047 and RFC 6532).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <inlet/mime/fields.hpp>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  bool defect = false;
  auto list = inlet::mime::parse_address_list(in, &defect);
  if (list.size() > size + 1) std::abort();  // every mailbox consumes input
  // Keeping the first k and counting the rest agrees with the whole parse.
  for (std::size_t keep : {std::size_t{0}, std::size_t{1}, list.size() / 2}) {
    std::size_t total = 0;
    auto kept = inlet::mime::parse_address_list(in, keep, &total);
    if (total != list.size() || kept.size() != std::min(keep, list.size())) std::abort();
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (!(kept[i] == list[i])) std::abort();
  }
  return 0;
}
