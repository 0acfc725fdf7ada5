// The text of a message: html_to_text over the input as HTML (its promises: no blank at
// either end, never two empty lines in a row), and body_text over the input as a message,
// parsed flat and in three fragments (cut points derived from the input): both must give
// the same text, of at most the limit.
#include <inlet/mime/message.hpp>
#include <inlet/mime/text.hpp>

#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace m = inlet::mime;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  const std::string text = m::html_to_text(in);
  if (!text.empty()) {
    const auto blank = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    if (blank(text.front()) || blank(text.back())) std::abort();
    if (text.find("\n\n\n") != std::string::npos) std::abort();
  }

  m::options opt;
  opt.max_parts = 200;
  opt.max_depth = 20;
  const m::parsed_message flat = m::parse(in, opt);
  std::size_t h = 0;
  for (std::size_t i = 0; i < size && i < 64; ++i) h = h * 31 + data[i];
  std::size_t c1 = size ? h % (size + 1) : 0, c2 = size ? (h / 7) % (size + 1) : 0;
  if (c1 > c2) std::swap(c1, c2);
  const std::string_view pieces[] = {in.substr(0, c1), in.substr(c1, c2 - c1), in.substr(c2)};
  const m::parsed_message split = m::parse(std::span<const std::string_view>(pieces), opt);
  const std::size_t limit = 64 + h % 4096;
  std::string scratch_flat, scratch_split;
  const std::string_view a = m::body_text(flat, limit, scratch_flat);
  const std::string_view b = m::body_text(split, limit, scratch_split);
  if (a != b || a.size() > limit) std::abort();
  return 0;
}
