#include "inlet/util/base64.hpp"

#include <array>
#include <cstdint>

namespace inlet::util {

namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// -1 outside the alphabet.
constexpr std::array<std::int8_t, 256> make_values() {
  std::array<std::int8_t, 256> v{};
  for (auto& x : v) x = -1;
  for (int i = 0; i < 64; ++i) v[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  return v;
}
constexpr auto values = make_values();

constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

}  // namespace

bool base64_decode(std::string_view in, std::string& out, base64_whitespace ws) {
  out.clear();
  if (ws == base64_whitespace::trailing)
    while (!in.empty() && (in.back() == ' ' || in.back() == '\r' || in.back() == '\n'))
      in.remove_suffix(1);
  out.reserve(in.size() / 4 * 3);
  std::uint32_t acc = 0;
  int have = 0;  // sextets in acc
  int pad = 0;
  for (char c : in) {
    if (ws == base64_whitespace::anywhere && is_space(c)) continue;
    if (c == '=') {
      // Padding completes the last quantum: at its third or fourth place only.
      if (have + pad < 2 || have + pad >= 4) return false;
      ++pad;
      continue;
    }
    if (pad > 0) return false;  // data after '='
    const int v = values[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    if (++have == 4) {
      out.push_back(static_cast<char>(acc >> 16));
      out.push_back(static_cast<char>(acc >> 8 & 0xff));
      out.push_back(static_cast<char>(acc & 0xff));
      acc = 0;
      have = 0;
    }
  }
  if (have == 0) return pad == 0;
  if (have + pad != 4) return false;  // unpadded or short
  acc <<= 6 * pad;
  out.push_back(static_cast<char>(acc >> 16));
  if (pad == 1) out.push_back(static_cast<char>(acc >> 8 & 0xff));
  return true;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out.push_back(alphabet[n >> 18]);
    out.push_back(alphabet[n >> 12 & 63]);
    out.push_back(alphabet[n >> 6 & 63]);
    out.push_back(alphabet[n & 63]);
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    const std::uint32_t n = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
    out.push_back(alphabet[n >> 18]);
    out.push_back(alphabet[n >> 12 & 63]);
    out.push_back(rest == 2 ? alphabet[n >> 6 & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64_encode_lines(std::string_view bytes) {
  const std::string flat = base64_encode(bytes);
  std::string out;
  out.reserve(flat.size() + flat.size() / 76 * 2);
  for (std::size_t i = 0; i < flat.size(); i += 76) {
    out.append(flat, i, 76);
    out += "\r\n";
  }
  return out;
}

}  // namespace inlet::util
