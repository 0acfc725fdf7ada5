// Fixtures the filter suites share: a filter compiled from term-file text, a verdict's
// matched terms as a set.
#pragma once

#include <gtest/gtest.h>

#include <inlet/filter/filter.hpp>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace inlet::filter::test {

/// Compiles `text` (the term file format) for `kind`; a failure is a test failure.
inline std::shared_ptr<const filter> make(std::string_view text, engine_kind kind) {
  auto terms = parse_terms(text);
  EXPECT_TRUE(terms) << terms.error().to_string();
  auto fl = filter::compile(std::move(*terms), {kind});
  EXPECT_TRUE(fl) << fl.error().to_string();
  return *fl;
}

/// The distinct terms a verdict names.
inline std::set<std::string> matched(const verdict& v) {
  std::set<std::string> out;
  for (std::string_view t : v.terms) out.emplace(t);
  return out;
}

}  // namespace inlet::filter::test
