#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "inlet/filter/terms.hpp"

namespace f = inlet::filter;

TEST(FilterTerms, ParsesLiteralsRegexesWeightsAndComments) {
  auto r = f::parse_terms(
      "# a comment\n"
      "\n"
      "viagra\n"
      "  cheap meds  \t2.5\r\n"
      "re:fr[e3]{2} money\n"
      "   # indented comment\n"
      "discount\t-0.5\n"
      "no newline at end");
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ(r->terms[0].pattern, "viagra");
  EXPECT_EQ(r->terms[0].kind, f::term_kind::literal);
  EXPECT_EQ(r->terms[0].weight, 1.0);
  EXPECT_EQ(r->terms[0].line, 3u);
  EXPECT_EQ(r->terms[1].pattern, "cheap meds");
  EXPECT_EQ(r->terms[1].weight, 2.5);
  EXPECT_EQ(r->terms[1].line, 4u);
  EXPECT_EQ(r->terms[2].pattern, "fr[e3]{2} money");
  EXPECT_EQ(r->terms[2].kind, f::term_kind::regex);
  EXPECT_EQ(r->terms[3].pattern, "discount");
  EXPECT_EQ(r->terms[3].weight, -0.5);
  EXPECT_EQ(r->terms[3].line, 7u);
  EXPECT_EQ(r->terms[4].pattern, "no newline at end");
  EXPECT_EQ(r->terms[4].line, 8u);
}

TEST(FilterTerms, EmptyInputGivesEmptyList) {
  auto r = f::parse_terms("");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
  auto r2 = f::parse_terms("# only comments\n\n   \r\n");
  ASSERT_TRUE(r2);
  EXPECT_TRUE(r2->empty());
}

TEST(FilterTerms, Utf8LiteralsKept) {
  auto r = f::parse_terms("café crème\n€100 “bonus”\n");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(r->terms[0].pattern, "café crème");
}

struct bad_case {
  const char* text;
  std::size_t line;
  f::errc code;
};

class FilterTermsBad : public ::testing::TestWithParam<bad_case> {};

TEST_P(FilterTermsBad, ReportsLineNumber) {
  const auto& c = GetParam();
  auto r = f::parse_terms(c.text);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().line, c.line) << r.error().to_string();
  EXPECT_EQ(r.error().code, f::make_error_code(c.code)) << r.error().to_string();
  EXPECT_NE(r.error().to_string().find("line " + std::to_string(c.line)), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    All, FilterTermsBad,
    ::testing::Values(bad_case{"ok\n# c\nfoo\tnot-a-number\n", 3, f::errc::bad_weight},
                      bad_case{"ok\nfoo\tinf\n", 2, f::errc::bad_weight},
                      bad_case{"ok\nfoo\tnan\n", 2, f::errc::bad_weight},
                      bad_case{"ok\nfoo\t1e999\n", 2, f::errc::bad_weight},
                      bad_case{"ok\nfoo\t0x10\n", 2, f::errc::bad_weight},
                      bad_case{"re:\n", 1, f::errc::empty_term},
                      bad_case{"a\nb\nre:   \t2\n", 3, f::errc::empty_term},
                      bad_case{"a\n\t3\n", 2, f::errc::empty_term},
                      bad_case{"a\nb\nc\xff\n", 3, f::errc::invalid_utf8},
                      bad_case{"\xc3\x28\n", 1, f::errc::invalid_utf8},
                      bad_case{"\xed\xa0\x80\n", 1, f::errc::invalid_utf8},  // surrogate
                      bad_case{"\xc0\xaf\n", 1, f::errc::invalid_utf8}));    // overlong

TEST(FilterTerms, NulAndLimits) {
  using namespace std::string_literals;
  auto r = f::parse_terms("ok\nfo\0o\n"s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().line, 2u);
  EXPECT_EQ(r.error().code, f::make_error_code(f::errc::nul_in_term));

  f::parse_limits lim;
  lim.max_term_bytes = 4;
  auto r2 = f::parse_terms("abcd\nabcde\n", lim);
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().line, 2u);
  EXPECT_EQ(r2.error().code, f::make_error_code(f::errc::term_too_long));

  lim = {};
  lim.max_terms = 2;
  auto r3 = f::parse_terms("a\n#\nb\nc\n", lim);
  ASSERT_FALSE(r3);
  EXPECT_EQ(r3.error().line, 4u);
  EXPECT_EQ(r3.error().code, f::make_error_code(f::errc::too_many_terms));
}

TEST(FilterTerms, LoadFromFile) {
  auto dir = std::filesystem::temp_directory_path() / ("inlet_filter_terms_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto p = dir / "terms.txt";
  {
    std::ofstream o(p, std::ios::binary);
    o << "one\ntwo\t3\n";
  }
  auto r = f::load_terms(p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->size(), 2u);
  auto missing = f::load_terms(dir / "missing.txt");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, f::make_error_code(f::errc::file_unreadable));
  EXPECT_EQ(missing.error().line, 0u);
  std::filesystem::remove_all(dir);
}
