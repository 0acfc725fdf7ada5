// Helpers for the buffer tests.
#pragma once

#include <inlet/buffer/pool.hpp>
#include <inlet/buffer/segment.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace inlet::buffer::test {

// A segment whose slices are exactly `pieces` (each in its own fragment).
inline segment make_segment(const std::vector<std::string_view>& pieces) {
  segment s;
  for (auto p : pieces) s.append(segment::copy_of(p));
  return s;
}

// Every way to cut `s` into at most three pieces (two cut points a <= b).
template <class F>
void for_each_split3(std::string_view s, F&& f) {
  for (std::size_t a = 0; a <= s.size(); ++a)
    for (std::size_t b = a; b <= s.size(); ++b)
      f(make_segment({s.substr(0, a), s.substr(a, b - a), s.substr(b)}));
}

inline std::string pattern_text(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + (i * 7 + i / 26) % 26));
  return s;
}

}  // namespace inlet::buffer::test
