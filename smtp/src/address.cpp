#include "address.hpp"

#include <array>

namespace inlet::smtp::detail {
namespace {

// Character classes as tables: one load per character on the path of every MAIL and RCPT.
enum : unsigned char { c_atext = 1, c_domain = 2 };
constexpr auto char_classes = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    // UTF-8 bytes pass both (checked against SMTPUTF8 by the caller).
    if (c >= 0x80 || alnum ||
        std::string_view("!#$%&'*+-/=?^_`{|}~.").find(static_cast<char>(c)) !=
            std::string_view::npos)
      t[c] |= c_atext;
    if (c >= 0x80 || alnum || c == '-' || c == '.') t[c] |= c_domain;
  }
  return t;
}();

bool atext(unsigned char c) noexcept {
  return char_classes[c] & c_atext;
}

bool valid_local(std::string_view s) noexcept {
  if (s.empty()) return false;
  if (s.front() == '"') {
    if (s.size() < 2 || s.back() != '"') return false;
    for (std::size_t i = 1; i + 1 < s.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '\\') {
        if (++i + 1 >= s.size()) return false;
        continue;
      }
      if (c < 0x20 || c == 0x7f || c == '"') return false;
    }
    return true;
  }
  if (s.front() == '.' || s.back() == '.') return false;
  for (unsigned char c : s)
    if (!atext(c)) return false;
  return true;
}

bool valid_domain(std::string_view s) noexcept {
  if (s.empty() || s.size() > 255) return false;
  if (s.front() == '[') {  // address literal
    if (s.back() != ']') return false;
    for (unsigned char c : s.substr(1, s.size() - 2))
      if (c < 0x21 || c > 0x7e || c == '[' || c == ']' || c == '\\') return false;
    return true;
  }
  if (s.front() == '.' || s.back() == '.' || s.front() == '-') return false;
  for (unsigned char c : s)
    if (!(char_classes[c] & c_domain)) return false;
  return s.find("..") == s.npos;
}

// Finds the '>' closing the path, skipping quoted strings.
std::size_t closing_bracket(std::string_view s) noexcept {
  bool quoted = false;
  for (std::size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (quoted && c == '\\') {
      ++i;
      continue;
    }
    if (c == '"')
      quoted = !quoted;
    else if (c == '>' && !quoted)
      return i;
  }
  return std::string_view::npos;
}

}  // namespace

bool parse_path(std::string_view s, parsed_path& out) {
  out = parsed_path{};
  std::string_view path, rest;
  if (!s.empty() && s.front() == '<') {
    std::size_t close = closing_bracket(s);
    if (close == s.npos) return false;
    path = s.substr(1, close - 1);
    rest = s.substr(close + 1);
    if (!rest.empty() && rest.front() != ' ') return false;
  } else {
    std::size_t sp = s.find(' ');
    path = s.substr(0, sp);
    rest = sp == s.npos ? std::string_view{} : s.substr(sp);
    if (path.empty()) return false;
  }
  for (unsigned char c : path)
    if (c >= 0x80) out.non_ascii = true;
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) break;
    std::size_t sp = rest.find(' ');
    std::string_view p = rest.substr(0, sp);
    for (unsigned char c : p)
      if (c < 0x21 || c > 0x7e) return false;
    if (p.front() == '=') return false;
    out.params.push_back(p);
    rest = sp == rest.npos ? std::string_view{} : rest.substr(sp);
  }
  if (path.empty()) {
    out.null_path = true;
    return true;
  }
  if (path.front() == '@') {  // source route "@a,@b:user@dom" (RFC 5321 4.1.2, obsolete)
    std::size_t colon = path.find(':');
    if (colon == path.npos) return false;
    path.remove_prefix(colon + 1);
  }
  out.mailbox = path;
  std::size_t at = path.rfind('@');
  if (at == path.npos) {
    out.local = path;
    return valid_local(path);
  }
  out.local = path.substr(0, at);
  out.domain = path.substr(at + 1);
  out.has_domain = true;
  return valid_local(out.local) && valid_domain(out.domain);
}

}  // namespace inlet::smtp::detail
