// Term lists: parsing the `--filter-terms` file format.
//
// Format, one term per line (UTF-8, LF or CRLF):
//   viagra                  case-insensitive literal, weight 1
//   cheap meds<TAB>2.5      literal with a weight (text after the LAST tab)
//   re:fr[e3]{2} money      a regular expression (Hyperscan syntax, caseless)
//   # comment               a line whose first non-blank character is '#'
//   (blank lines are ignored)
// Literals are trimmed of surrounding blanks (space, tab). A literal that must
// start with '#' or "re:" is written as a regex (re:\#foo).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/filter/error.hpp"

namespace inlet::filter {

enum class term_kind : std::uint8_t { literal, regex };

struct term {
  std::string pattern;     ///< literal bytes (as written) or the regex source
  term_kind kind = term_kind::literal;
  double weight = 1.0;     ///< any finite value; negative weights lower the score
  std::size_t line = 0;    ///< 1-based line in the source file (0 if built in code)
};

/// An ordered list of terms; a term's index is its id in verdicts.
/// Plain value type: not thread-safe for concurrent mutation, copyable.
struct term_list {
  std::vector<term> terms;
  std::size_t size() const noexcept { return terms.size(); }
  bool empty() const noexcept { return terms.empty(); }
};

struct parse_limits {
  std::size_t max_term_bytes = 4096;
  std::size_t max_terms = 1'000'000;
};

/// Parses the text of a term file. The first invalid line is returned as the
/// error, with its 1-based line number. Never throws on bad input (only
/// std::bad_alloc).
result<term_list> parse_terms(std::string_view text, const parse_limits& limits = {});

/// Reads and parses a term file. errc::file_unreadable (line 0) if it cannot be read.
result<term_list> load_terms(const std::filesystem::path& path, const parse_limits& limits = {});

}  // namespace inlet::filter
