#include "test_util.hpp"

#include <inlet/buffer/find.hpp>
#include <inlet/buffer/streambuf.hpp>

#include <gtest/gtest.h>

#include <cstring>

namespace inlet::buffer {
namespace {

using test::make_segment;

// Every split into 3 pieces, every start position: same answer as std::string.
void check_all(std::string_view text, std::string_view pat) {
  test::for_each_split3(text, [&](const segment& s) {
    for (std::size_t from = 0; from <= text.size() + 1; ++from) {
      std::size_t want = std::string(text).find(pat, from);
      ASSERT_EQ(s.find(pat, from), want == std::string::npos ? segment::npos : want)
          << "pat=" << pat << " from=" << from;
    }
  });
}

TEST(Find, ByteInEveryPositionOfEverySplit) {
  std::string text = "....x....x..";
  test::for_each_split3(text, [&](const segment& s) {
    for (std::size_t from = 0; from <= text.size(); ++from) {
      std::size_t want = text.find('x', from);
      ASSERT_EQ(s.find('x', from), want == std::string::npos ? segment::npos : want);
    }
  });
}

TEST(Find, EndOfDataAcrossTwoAndThreeFragments) {
  check_all("ab\r\n.\r\ncd", "\r\n.\r\n");
  check_all("\r\n.\r\n", "\r\n.\r\n");
  check_all("\r\n\r\n.\r\n.\r\n", "\r\n.\r\n");  // overlapping candidates
  check_all("\r\n.\r", "\r\n.\r\n");              // a prefix only: absent
}

TEST(Find, PatternsOfSeveralLengths) {
  check_all("aaaaabaaab", "aab");
  check_all("abcabcabd", "abcabd");
  check_all("xyz", "");
  check_all("xyzxyz", "z");
}

TEST(Find, PatternLongerThanEachPiece) {
  segment s = make_segment({"bo", "un", "d", "ary", "--", "x"});
  EXPECT_EQ(s.find("boundary--"), 0u);
  EXPECT_EQ(s.find("undary--x"), 2u);
  EXPECT_EQ(s.find("boundary--y"), segment::npos);
}

TEST(Finder, ResumesWithoutRescanningOldBytes) {
  const std::string msg = "DATA body line\r\n..stuffed\r\nmore\r\n.\r\nNEXT";
  const std::size_t want = msg.find("\r\n.\r\n");
  for (std::size_t chunk = 1; chunk <= msg.size(); ++chunk) {
    streambuf sb(pool::get(4096));
    finder f("\r\n.\r\n");
    std::size_t fed = 0, found = finder::npos;
    while (fed < msg.size() && found == finder::npos) {
      std::size_t n = std::min(chunk, msg.size() - fed);
      auto bufs = sb.prepare(n);
      boost::asio::buffer_copy(bufs, boost::asio::buffer(msg.data() + fed, n));
      sb.commit(n);
      fed += n;
      found = f.next(sb);
      if (found == finder::npos) {
        // A later match can only start in the last 4 bytes.
        ASSERT_EQ(f.resume_position(), sb.size() > 4 ? sb.size() - 4 : 0);
      }
    }
    ASSERT_EQ(found, want) << "chunk " << chunk;
    segment body = sb.detach(found + 5);
    f.consumed(found + 5);
    EXPECT_EQ(f.resume_position(), 0u);
    EXPECT_EQ(body.to_string(), msg.substr(0, want + 5));
  }
}

}  // namespace
}  // namespace inlet::buffer

namespace inlet::buffer {
#if defined(__x86_64__)
namespace detail {
const char* find_in_piece_sse2(const char* h, std::size_t n, const char* pat, std::size_t m) noexcept;
}
#endif
namespace {

TEST(FindIn, MatchesStdStringFindOnRandomText) {
  // Small alphabet so that partial matches are frequent; lengths cover the
  // SIMD blocks and the scalar tail.
  unsigned seed = 12345;
  auto rnd = [&] { return (seed = seed * 1103515245u + 12345u) >> 16; };
  const char* pats[] = {"\r\n.\r\n", "\r\n", "ab", "a.b", "\r\n\r\n", "abcab", "x"};
  for (int t = 0; t < 300; ++t) {
    std::string hay(rnd() % 200, '\0');
    for (char& c : hay) c = "ab.\r\nx"[rnd() % 6];
    for (const char* p : pats) {
      for (std::size_t from = 0; from <= hay.size(); from += 1 + rnd() % 7) {
        std::size_t want = hay.find(p, from);
        ASSERT_EQ(find_in(hay, p, from), want == std::string::npos ? finder::npos : want)
            << "t=" << t << " p=" << p << " from=" << from;
      }
    }
  }
#if defined(__x86_64__)
  for (int t = 0; t < 300; ++t) {  // the SSE2 path too, whatever this CPU picks
    std::string hay(rnd() % 200, '\0');
    for (char& c : hay) c = "ab.\r\nx"[rnd() % 6];
    for (const char* p : pats) {
      std::size_t want = hay.find(p);
      const char* got = detail::find_in_piece_sse2(hay.data(), hay.size(), p, std::strlen(p));
      ASSERT_EQ(got == nullptr ? std::string::npos : static_cast<std::size_t>(got - hay.data()), want);
    }
  }
#endif
  EXPECT_EQ(find_in("abc", "abcd"), finder::npos);
  EXPECT_EQ(find_in("abc", "", 3), 3u);
  EXPECT_EQ(find_in("abc", "c", 4), finder::npos);
}

TEST(FindIn, EveryLengthAndEveryMatchPosition) {
  // Covers the SIMD blocks, the overlapping last block and the scalar tail.
  const std::string pat = "\r\n.\r\n";
  for (std::size_t len = 0; len <= 100; ++len) {
    std::string base(len, 'a');
    for (std::size_t i = 0; i < len; i += 3) base[i] = '\r';  // near-misses
    ASSERT_EQ(find_in(base, pat), finder::npos);
    for (std::size_t at = 0; at + pat.size() <= len; ++at) {
      std::string hay = base;
      hay.replace(at, pat.size(), pat);
      std::size_t want = hay.find(pat);
      ASSERT_EQ(find_in(hay, pat), want) << len << " " << at;
#if defined(__x86_64__)
      const char* got = detail::find_in_piece_sse2(hay.data(), hay.size(), pat.data(), pat.size());
      ASSERT_EQ(static_cast<std::size_t>(got - hay.data()), want) << len << " " << at;
#endif
    }
  }
}

TEST(Find, RandomSegmentsAgreeWithTheModel) {
  unsigned seed = 777;
  auto rnd = [&] { return (seed = seed * 1103515245u + 12345u) >> 16; };
  for (int t = 0; t < 500; ++t) {
    std::string text(rnd() % 120, '\0');
    for (char& c : text) c = "\r\n.a"[rnd() % 4];
    std::vector<std::string_view> pieces;
    std::string_view rest = text;
    while (!rest.empty()) {
      std::size_t k = 1 + rnd() % 20;
      pieces.push_back(rest.substr(0, k));
      rest.remove_prefix(std::min(k, rest.size()));
    }
    segment s = test::make_segment(pieces);
    for (std::size_t from = 0; from <= text.size(); ++from) {
      std::size_t want = text.find("\r\n.\r\n", from);
      ASSERT_EQ(s.find("\r\n.\r\n", from), want == std::string::npos ? segment::npos : want);
    }
  }
}

}  // namespace
}  // namespace inlet::buffer
