// Small ASCII helpers and an RFC 5322/2045 lexer shared by the parser and field code.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "inlet/util/ascii.hpp"

namespace inlet::mime::detail {

using util::ascii_lower;
using util::iequals;

constexpr bool is_hex(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}
constexpr int hex_val(char c) noexcept { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

constexpr bool is_ws(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

constexpr std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// RFC 2045 tspecials plus space and controls end a token.
constexpr bool is_token_char(char c) noexcept {
  auto u = static_cast<unsigned char>(c);
  if (u <= 32 || u == 127) return false;
  switch (c) {
    case '(': case ')': case '<': case '>': case '@': case ',': case ';': case ':':
    case '\\': case '"': case '/': case '[': case ']': case '?': case '=':
      return false;
    default:
      return true;
  }
}

struct lexer {
  std::string_view s;
  std::size_t i = 0;

  bool at_end() const noexcept { return i >= s.size(); }
  char peek() const noexcept { return i < s.size() ? s[i] : '\0'; }
  bool eat(char c) noexcept {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  // Skips whitespace, line breaks and (nested, escaped) comments.
  void skip_cfws() noexcept {
    while (i < s.size()) {
      if (is_ws(s[i])) {
        ++i;
      } else if (s[i] == '(') {
        int depth = 0;
        while (i < s.size()) {
          char c = s[i++];
          if (c == '\\') ++i;
          else if (c == '(') ++depth;
          else if (c == ')' && --depth == 0) break;
        }
      } else {
        break;
      }
    }
    if (i > s.size()) i = s.size();
  }
  std::string_view token() noexcept {
    std::size_t b = i;
    while (i < s.size() && is_token_char(s[i])) ++i;
    return s.substr(b, i - b);
  }
  // At '"': returns the raw inside (escapes kept), leaves i after the closing quote.
  std::string_view quoted() noexcept {
    std::size_t b = ++i;
    while (i < s.size() && s[i] != '"') i += (s[i] == '\\') ? 2 : 1;
    if (i > s.size()) i = s.size();
    std::string_view out = s.substr(b, i - b);
    if (i < s.size()) ++i;
    return out;
  }
  void skip_past(char c) noexcept {
    while (i < s.size() && s[i] != c) ++i;
    if (i < s.size()) ++i;
  }
};

// "us-ascii (Plain text)": a token cannot hold '(' (RFC 2045 5.1), so a comment that ends
// an unquoted value is CFWS, not value. One inside ("a (1).txt") is kept, as readers do.
inline std::string_view drop_trailing_comment(std::string_view v) noexcept {
  if (v.empty() || v.back() != ')') return v;
  int depth = 0;
  for (std::size_t k = v.size(); k-- > 0;) {
    if (v[k] == ')' && (k == 0 || v[k - 1] != '\\')) ++depth;
    else if (v[k] == '(' && (k == 0 || v[k - 1] != '\\') && --depth == 0) {
      if (k == 0 || !is_ws(v[k - 1])) return v;
      return trim(v.substr(0, k));
    }
  }
  return v;
}

// Reads "; name=value" pairs leniently (unquoted values run to ';', as mail agents do).
struct param_reader {
  lexer& lx;
  bool next(std::string_view& name, std::string_view& value, bool& quoted) noexcept {
    for (;;) {
      lx.skip_cfws();
      if (lx.at_end()) return false;
      if (lx.eat(';')) continue;
      std::size_t b = lx.i;
      while (!lx.at_end() && lx.peek() != '=' && lx.peek() != ';' && !is_ws(lx.peek())) ++lx.i;
      name = lx.s.substr(b, lx.i - b);
      lx.skip_cfws();
      if (name.empty() || !lx.eat('=')) {
        if (name.empty() && !lx.at_end()) ++lx.i;
        lx.skip_past(';');
        continue;
      }
      lx.skip_cfws();
      if (lx.peek() == '"') {
        quoted = true;
        value = lx.quoted();
        lx.skip_past(';');
      } else {
        quoted = false;
        std::size_t vb = lx.i;
        while (!lx.at_end() && lx.peek() != ';') ++lx.i;
        value = trim(lx.s.substr(vb, lx.i - vb));
        value = drop_trailing_comment(value);
      }
      return true;
    }
  }
};

// The charset parameter of a raw Content-Type value, lower case, when the parameters are
// plain (no RFC 2231 charset* sections, no encoded word, ASCII): then `out` is set (nullopt
// when there is none) and true returned, with nothing allocated for the usual labels.
// False: the caller parses the field fully.
bool simple_charset_param(std::string_view raw, std::optional<std::string>& out);

}  // namespace inlet::mime::detail
