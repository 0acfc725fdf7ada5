// libFuzzer target: the incremental binary COPY parser. The input (after its first byte,
// which picks a split point) is parsed whole and in two pieces; both must agree, and no
// input may crash or read outside its bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "inlet/pg/copy.hpp"

namespace pg = inlet::pg;

namespace {
struct outcome {
  std::vector<std::string> rows;  // each tuple flattened: lengths and bytes
  std::error_code ec;
  bool finished = false;
};
outcome run(std::string_view data, std::size_t split) {
  outcome o;
  pg::copy_parser p;
  auto on_row = [&](std::span<const pg::copy_parser::field> f) -> std::error_code {
    std::string flat;
    for (const auto& x : f) {
      flat += std::to_string(x.length) + ":";
      if (x.length > 0) flat.append(x.data, static_cast<std::size_t>(x.length));
    }
    o.rows.push_back(std::move(flat));
    std::tuple<std::int64_t, std::optional<std::string>> typed;
    (void)pg::detail::copy_decode_row(f, typed);  // decoding arbitrary fields must be safe too
    return {};
  };
  o.ec = p.feed(data.substr(0, split), on_row);
  if (!o.ec) o.ec = p.feed(data.substr(split), on_row);
  o.finished = p.finished();
  return o;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string in;
  pg::detail::copy_header(in);  // most inputs get past the header this way
  in.append(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::size_t split = in.size() ? data[0] % (in.size() + 1) : 0;
  auto whole = run(in, in.size());
  auto pieces = run(in, split);
  if (whole.rows != pieces.rows || whole.ec != pieces.ec || whole.finished != pieces.finished)
    std::abort();
  return 0;
}
