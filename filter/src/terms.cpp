#include "inlet/filter/terms.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace inlet::filter {
namespace {

bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && (is_blank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Strict UTF-8 validation (no overlongs, no surrogates, <= U+10FFFF).
bool valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* e = p + s.size();
  while (p < e) {
    unsigned c = *p;
    if (c < 0x80) { ++p; continue; }
    int n;
    unsigned min;
    if ((c & 0xE0) == 0xC0) { n = 1; c &= 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 2; c &= 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 3; c &= 0x07; min = 0x10000; }
    else return false;
    if (e - p <= n) return false;
    for (int i = 1; i <= n; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      c = (c << 6) | (p[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
    p += n + 1;
  }
  return true;
}

// Parses a weight with the C locale rules of strtod on a bounded copy.
bool parse_weight(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty() || s.size() > 64) return false;
  char buf[72];
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
  // Only plain decimal numbers: reject hex floats, inf, nan, leading '+'-less junk.
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
      return false;
  }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(buf, &end);
  if (end != buf + s.size() || errno == ERANGE || !std::isfinite(v)) return false;
  out = v;
  return true;
}

term_error line_error(std::size_t line, errc e, std::string detail = {}) {
  return term_error{line, make_error_code(e), std::move(detail)};
}

}  // namespace

result<term_list> parse_terms(std::string_view text, const parse_limits& limits) {
  term_list list;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);

    // Trailing blanks (and CR) go first, so "foo<TAB>" is just "foo"; the weight is
    // then whatever follows the last TAB left on the line.
    std::string_view body = line;
    while (!body.empty() && (is_blank(body.back()) || body.back() == '\r')) body.remove_suffix(1);
    if (std::string_view t = trim(body); t.empty() || t.front() == '#') continue;

    term t;
    t.line = line_no;
    // An optional weight after the last TAB.
    if (std::size_t tab = body.rfind('\t'); tab != std::string_view::npos) {
      if (!parse_weight(body.substr(tab + 1), t.weight))
        return line_error(line_no, errc::bad_weight, std::string(trim(body.substr(tab + 1))));
      body = trim(body.substr(0, tab));
    }
    if (body.starts_with("re:")) {
      t.kind = term_kind::regex;
      body.remove_prefix(3);
    }
    if (body.empty()) return line_error(line_no, errc::empty_term);
    if (body.size() > limits.max_term_bytes)
      return line_error(line_no, errc::term_too_long,
                        std::to_string(body.size()) + " bytes > " +
                            std::to_string(limits.max_term_bytes));
    if (body.find('\0') != std::string_view::npos) return line_error(line_no, errc::nul_in_term);
    if (!valid_utf8(body)) return line_error(line_no, errc::invalid_utf8);
    if (list.terms.size() >= limits.max_terms)
      return line_error(line_no, errc::too_many_terms, std::to_string(limits.max_terms));
    t.pattern.assign(body);
    list.terms.push_back(std::move(t));
  }
  return list;
}

result<term_list> load_terms(const std::filesystem::path& path, const parse_limits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return line_error(0, errc::file_unreadable, path.string());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return line_error(0, errc::file_unreadable, path.string());
  return parse_terms(text, limits);
}

}  // namespace inlet::filter
