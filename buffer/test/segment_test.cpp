#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <inlet/buffer/error.hpp>
#include <inlet/buffer/pool.hpp>
#include <inlet/buffer/segment.hpp>
#include <iterator>
#include <ranges>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace inlet::buffer {
namespace {

using test::make_segment;

static_assert(std::random_access_iterator<segment::const_iterator>);
static_assert(std::ranges::forward_range<detail::span_range>);

TEST(Segment, EmptyHasNothing) {
  segment s;
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.begin(), s.end());
  EXPECT_EQ(std::ranges::distance(s.spans()), 0);
  EXPECT_EQ(s.find('x'), segment::npos);
  EXPECT_EQ(s.find("ab"), segment::npos);
  EXPECT_EQ(s.to_string(), "");
  EXPECT_TRUE(s.sub(0, 10).empty());
  EXPECT_TRUE(segment::copy_of("").empty());
}

TEST(Segment, FootprintCountsEachFragmentOnceAndTheSliceStorage) {
  pool& p = pool::get(4096);
  segment s = segment::copy_of(std::string(5000, 'x'), p);  // two fragments
  const std::size_t frag = sizeof(detail::fragment) + 4096;
  EXPECT_EQ(s.footprint(), 2 * frag);
  segment t;
  for (int i = 0; i < 10; ++i)
    t.append(s.sub(static_cast<std::size_t>(i) * 2, 1));  // gaps: 10 slices
  EXPECT_EQ(t.span_count(), 10u);
  EXPECT_GE(t.footprint(), frag + 10 * sizeof(detail::slice));
  EXPECT_LT(t.footprint(), 2 * frag);
  static const char lit[] = "static";
  EXPECT_EQ(segment::wrap(lit, 6).footprint(), 0u);
}

// Small runs copied one after another share the appender's fragment; the
// runs' views stay valid; a full fragment continues in a new one.
TEST(CopyAppender, PacksSmallCopiesIntoOneFragment) {
  pool& p = pool::get(4096);
  auto before = p.stats().outstanding();
  {
    copy_appender app(p);
    segment a, b;
    std::string expect_a, expect_b;
    std::vector<std::string_view> runs;
    for (int i = 0; i < 300; ++i) {
      std::string piece = std::to_string(i) + ";";
      segment& dst = (i % 3 == 0) ? b : a;
      (i % 3 == 0 ? expect_b : expect_a) += piece;
      app.append(dst, piece, [&](std::string_view v) { runs.push_back(v); });
    }
    EXPECT_EQ(a.to_string(), expect_a);
    EXPECT_EQ(b.to_string(), expect_b);
    EXPECT_EQ(p.stats().outstanding() - before, 1u);  // one fragment for all 300 copies
    std::string seen;
    for (auto v : runs) seen += v;
    EXPECT_EQ(seen.size(), expect_a.size() + expect_b.size());
    std::string big(5000, 'z');  // fills the fragment and goes on in a new one
    app.append(a, big);
    EXPECT_EQ(a.to_string(), expect_a + big);
    app.reset();
    EXPECT_FALSE(app.holds_memory());
    EXPECT_EQ(a.to_string(), expect_a + big);  // the segments keep their bytes
  }
  EXPECT_EQ(p.stats().outstanding(), before);
}

TEST(CopyAppender, ConsecutiveCopiesIntoOneSegmentAreOneSlice) {
  pool& p = pool::get(8192);
  copy_appender app(p);
  segment s;
  for (int i = 0; i < 1000; ++i) app.append(s, "abc");
  EXPECT_EQ(s.span_count(), 1u);
  EXPECT_EQ(s.footprint(), sizeof(detail::fragment) + 8192);
}

TEST(Segment, CopyOfSplitsIntoPoolFragments) {
  pool& p = pool::get(4096);
  std::string text = test::pattern_text(10000);
  segment s = segment::copy_of(text, p);
  EXPECT_EQ(s.size(), 10000u);
  EXPECT_EQ(s.span_count(), 3u);
  std::vector<std::size_t> sizes;
  for (std::string_view v : s.spans()) sizes.push_back(v.size());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4096, 4096, 1808}));
  EXPECT_EQ(s.to_string(), text);
  EXPECT_TRUE(s == text);
}

TEST(Segment, ExactlyOneFragment) {
  pool& p = pool::get(4096);
  std::string text = test::pattern_text(4096);
  segment s = segment::copy_of(text, p);
  EXPECT_EQ(s.span_count(), 1u);
  EXPECT_EQ(s.to_string(), text);
  EXPECT_EQ(*(s.end() - 1), text.back());
}

TEST(Segment, CopySharesFragmentsAndKeepsThemAlive) {
  pool& p = pool::get(8192);
  auto before = p.stats();
  std::string view_text;
  {
    segment a = segment::copy_of("hello world", p);
    auto mid = p.stats();
    EXPECT_EQ(mid.acquires - before.acquires, 1u);
    segment b = a;  // no new fragment
    segment c = a.sub(6, 5);
    EXPECT_EQ(p.stats().acquires, mid.acquires);
    EXPECT_EQ((*b.spans().begin()).data(), (*a.spans().begin()).data());
    EXPECT_EQ((*c.spans().begin()).data(), (*a.spans().begin()).data() + 6);
    a.clear();
    b = segment();
    EXPECT_EQ(c.to_string(), "world");
    EXPECT_EQ(p.stats().releases, before.releases);  // c still holds it
  }
  EXPECT_EQ(p.stats().outstanding(), before.outstanding());
}

TEST(Segment, SubMatchesModelForEveryRange) {
  std::string text = "From: a\r\nTo: b\r\n\r\nbody.\r\n";
  segment s =
      make_segment({text.substr(0, 5), text.substr(5, 1), text.substr(6, 10), text.substr(16)});
  ASSERT_EQ(s.to_string(), text);
  for (std::size_t pos = 0; pos <= text.size() + 1; ++pos) {
    for (std::size_t n = 0; n <= text.size() + 1; ++n) {
      std::string want = pos <= text.size() ? text.substr(pos, n) : std::string();
      segment sub = s.sub(pos, n);
      ASSERT_EQ(sub.to_string(), want) << pos << "," << n;
      ASSERT_EQ(sub.size(), want.size());
    }
  }
}

TEST(Segment, AppendMergesAdjacentSlicesOfOneFragment) {
  segment whole = segment::copy_of("abcdefgh");
  segment a = whole.sub(0, 3);
  a.append(whole.sub(3, 5));
  EXPECT_EQ(a.span_count(), 1u);
  EXPECT_EQ(a.to_string(), "abcdefgh");
  segment b = whole.sub(0, 2);
  b.append(whole.sub(3, 2));  // skip "d": two slices
  EXPECT_EQ(b.span_count(), 2u);
  EXPECT_EQ(b.to_string(), "abde");
  b.append(b);  // self-append
  EXPECT_EQ(b.to_string(), "abdeabde");
  segment c;
  c.append(std::move(b));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(c.to_string(), "abdeabde");
}

TEST(Segment, ManySlicesSpillToHeapAndStayCorrect) {
  std::string model;
  segment s;
  for (int i = 0; i < 40; ++i) {
    std::string piece(static_cast<std::size_t>(i % 7 + 1), static_cast<char>('A' + i % 26));
    s.append(segment::copy_of(piece));
    model += piece;
  }
  EXPECT_EQ(s.to_string(), model);
  segment t = s;
  t.remove_prefix(13);
  t.remove_suffix(17);
  EXPECT_EQ(t.to_string(), model.substr(13, model.size() - 30));
  EXPECT_EQ(s.to_string(), model);
}

TEST(Segment, WrapRunsReleaserOnceAfterLastCopy) {
  static const char text[] = "external bytes";
  int released = 0;
  {
    segment a = segment::wrap(text, sizeof text - 1, [&released] { ++released; });
    segment b = a.sub(9);
    segment c = a;
    a.clear();
    EXPECT_EQ(released, 0);
    EXPECT_EQ(b.to_string(), "bytes");
    EXPECT_EQ((*c.spans().begin()).data(), text);  // no copy
  }
  EXPECT_EQ(released, 1);
  const void* got_p = nullptr;
  std::size_t got_n = 0;
  segment::wrap(text, 4, [&](const void* p, std::size_t n) {
    got_p = p;
    got_n = n;
  });
  EXPECT_EQ(got_p, text);
  EXPECT_EQ(got_n, 4u);
  int zero = 0;
  segment e = segment::wrap(text, 0, [&] { ++zero; });
  EXPECT_EQ(zero, 1);
  EXPECT_TRUE(e.empty());
  segment lit = segment::wrap("literal", 7);
  EXPECT_EQ(lit.to_string(), "literal");
}

TEST(Segment, IteratorWalksAcrossFragmentsBothWays) {
  std::string text = "abcdefghij";
  test::for_each_split3(text, [&](const segment& s) {
    ASSERT_TRUE(std::equal(s.begin(), s.end(), text.begin(), text.end()));
    std::string back(std::make_reverse_iterator(s.end()), std::make_reverse_iterator(s.begin()));
    ASSERT_EQ(back, std::string(text.rbegin(), text.rend()));
    for (std::size_t i = 0; i <= text.size(); ++i) {
      auto it = s.begin() + static_cast<std::ptrdiff_t>(i);
      ASSERT_EQ(it.position(), i);
      ASSERT_EQ(it - s.begin(), static_cast<std::ptrdiff_t>(i));
      ASSERT_EQ(s.end() - it, static_cast<std::ptrdiff_t>(text.size() - i));
      if (i < text.size()) {
        ASSERT_EQ(*it, text[i]);
        ASSERT_EQ(s.begin()[static_cast<std::ptrdiff_t>(i)], text[i]);
        ASSERT_EQ(*(s.end() - static_cast<std::ptrdiff_t>(text.size() - i)), text[i]);
        ASSERT_EQ(it.contiguous().front(), text[i]);
      }
    }
  });
}

TEST(Segment, PeekReturnsViewOrBoundedCopy) {
  segment s = make_segment({"Subj", "ect: x"});
  std::array<char, 8> scratch{};
  std::error_code ec;
  auto v = s.peek(0, 3, scratch, ec);
  EXPECT_FALSE(ec);
  EXPECT_EQ(v, "Sub");
  EXPECT_NE(v.data(), scratch.data());  // contiguous: a view, not a copy
  v = s.peek(2, 5, scratch, ec);
  EXPECT_FALSE(ec);
  EXPECT_EQ(v, "bject");
  EXPECT_EQ(v.data(), scratch.data());  // straddles: copied
  v = s.peek(0, 10, scratch, ec);
  EXPECT_EQ(ec, errc::scratch_too_small);
  EXPECT_TRUE(v.empty());
  v = s.peek(5, 6, scratch, ec);
  EXPECT_EQ(ec, errc::out_of_range);
  v = s.peek(10, 0, scratch, ec);
  EXPECT_FALSE(ec);
  EXPECT_TRUE(v.empty());
  char out[16] = {};
  EXPECT_EQ(s.copy_to(out, 3, 100), 7u);
  EXPECT_EQ(std::string_view(out, 7), "ject: x");
}

TEST(Segment, EqualityComparesBytesNotLayout) {
  std::string text = "abcdefghij";
  segment flat = segment::copy_of(text);
  test::for_each_split3(text, [&](const segment& s) {
    ASSERT_TRUE(s == flat);
    ASSERT_TRUE(flat == s);
    ASSERT_FALSE(s == segment::copy_of("abcdefghiX"));
    ASSERT_FALSE(s == segment::copy_of("abc"));
  });
  EXPECT_TRUE(segment() == segment());
}

TEST(Segment, ErrorCategoryNamesItsCodes) {
  std::error_code ec = errc::scratch_too_small;
  EXPECT_STREQ(ec.category().name(), "inlet.buffer");
  EXPECT_FALSE(ec.message().empty());
}

}  // namespace
}  // namespace inlet::buffer
