// inlet::filter error codes and the small result type used by the loaders.
#pragma once

#include <cstddef>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace inlet::filter {

/// Every error the filter library reports. Values are stable.
enum class errc {
  ok = 0,
  file_unreadable = 1,       ///< the term file could not be opened or read
  empty_term = 2,            ///< a `re:` line with nothing after the prefix
  term_too_long = 3,         ///< a term longer than max_term_bytes
  bad_weight = 4,            ///< text after the TAB is not a finite number
  invalid_utf8 = 5,          ///< a literal term that is not valid UTF-8
  invalid_regex = 6,         ///< the regex engine refused the expression
  regex_unsupported = 7,     ///< a `re:` term given to the Aho-Corasick engine
  too_many_terms = 8,        ///< more than max_terms lines with terms
  engine_failure = 9,        ///< the engine failed at run time (allocation, ...)
  engine_unavailable = 10,   ///< the requested engine is not compiled in
  nul_in_term = 11,          ///< a NUL byte inside a term
};

const std::error_category& filter_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), filter_category()};
}

/// An error tied to a line of a term file (line 0: not tied to a line).
struct term_error {
  std::size_t line = 0;
  std::error_code code;
  std::string detail;  ///< human text, e.g. the regex engine's message

  /// "line 12: invalid regular expression: ..." (or without "line N: " when line == 0).
  std::string to_string() const;
};

/// A value or a term_error. A tiny stand-in for std::expected (C++23).
template <class T>
class result {
 public:
  result(T v) : v_(std::in_place_index<0>, std::move(v)) {}               // NOLINT
  result(term_error e) : v_(std::in_place_index<1>, std::move(e)) {}      // NOLINT

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const term_error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, term_error> v_;
};

}  // namespace inlet::filter

template <>
struct std::is_error_code_enum<inlet::filter::errc> : std::true_type {};
