// Test helpers: read crafted messages, describe a parse result canonically, and run an
// input through every fragment split (all two-way splits, byte-by-byte, and seeded
// random three- to eight-way splits).
#pragma once

#include <inlet/mime/message.hpp>

#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace inlet::mime::test {

inline std::string read_data(const std::string& name) {
  std::ifstream in(std::string(INLET_MIME_TEST_DATA) + "/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string describe(const parsed_message& m) {
  std::ostringstream o;
  o << "unixfrom " << m.unix_from().begin << "-" << m.unix_from().end << "\n";
  for (std::size_t i = 0; i < m.parts().size(); ++i) {
    const part& p = m.parts()[i];
    o << i << " " << p.content_type() << " kind=" << int(p.kind) << " enc=" << int(p.encoding)
      << " parent=" << p.parent << " depth=" << p.depth << " h=" << p.header.begin << "-" << p.header.end
      << " b=" << p.body.begin << "-" << p.body.end << " pre=" << p.preamble.begin << "-"
      << p.preamble.end << " epi=" << p.epilogue.begin << "-" << p.epilogue.end
      << " children=" << p.child_count << " first=" << p.first_child << " next=" << p.next_sibling << "\n";
    for (std::uint32_t k = p.first_header; k < p.first_header + p.header_count; ++k)
      o << "  [" << m.copy(m.headers()[k].name) << "][" << m.copy(m.headers()[k].value) << "]\n";
  }
  for (const defect& d : m.defects()) o << "defect " << defect_name(d.code) << "@" << d.offset << " p" << d.part << "\n";
  return o.str();
}

inline parsed_message parse_pieces(const std::vector<std::string_view>& pieces, const options& opt = {}) {
  parser p(opt);
  for (auto s : pieces) p.feed(s);
  p.finish();
  return p.release();
}

/// Calls check(message, label) for every split of `in`.
inline void for_each_split(std::string_view in, const std::function<void(const parsed_message&, const std::string&)>& check,
                           const options& opt = {}) {
  check(parse_pieces({in}, opt), "flat");
  for (std::size_t k = 1; k < in.size(); ++k)
    check(parse_pieces({in.substr(0, k), in.substr(k)}, opt), "split@" + std::to_string(k));
  std::vector<std::string_view> bytes;
  for (std::size_t k = 0; k < in.size(); ++k) bytes.push_back(in.substr(k, 1));
  check(parse_pieces(bytes, opt), "bytewise");
  std::mt19937 rng(12345);
  for (int round = 0; round < 200 && in.size() > 2; ++round) {
    std::size_t n = 3 + rng() % 6;
    std::vector<std::size_t> cuts;
    for (std::size_t c = 0; c + 1 < n; ++c) cuts.push_back(1 + rng() % (in.size() - 1));
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::string_view> pieces;
    std::size_t prev = 0;
    for (auto c : cuts) {
      pieces.push_back(in.substr(prev, c - prev));
      prev = c;
    }
    pieces.push_back(in.substr(prev));
    check(parse_pieces(pieces, opt), "random" + std::to_string(round));
  }
}

}  // namespace inlet::mime::test
