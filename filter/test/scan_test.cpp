#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "decode.hpp"
#include "compile.hpp"
#include "inlet/filter/filter.hpp"
#include "inlet/filter/message.hpp"

namespace f = inlet::filter;
using inlet::filter::test::base64_decoder;
using inlet::filter::test::base64_encode;
using inlet::filter::test::from_utf8;
using inlet::filter::test::qp_decoder;
using inlet::filter::test::to_utf8;

namespace {

using inlet::filter::test::make;
using inlet::filter::test::matched;

f::verdict scan_pieces(const std::shared_ptr<const f::filter>& fl, const std::vector<std::string>& pieces,
                       f::stream_kind kind = f::stream_kind::text_plain) {
  f::scan s(fl);
  s.begin_stream(kind);
  for (const auto& p : pieces) s.feed(p);
  s.end_stream();
  return s.finish();
}

// Calls fn(pieces) for every split of `text` into 1, 2 and 3 consecutive pieces.
template <class Fn>
void for_every_split(std::string_view text, Fn fn) {
  const std::size_t n = text.size();
  fn(std::vector<std::string>{std::string(text)});
  for (std::size_t i = 0; i <= n; ++i) {
    for (std::size_t j = i; j <= n; ++j) {
      fn(std::vector<std::string>{std::string(text.substr(0, i)), std::string(text.substr(i, j - i)),
                                  std::string(text.substr(j))});
    }
  }
}

// Naive reference: ASCII-caseless substring search of each literal term.
std::set<std::string> naive(const std::vector<std::string>& terms, std::string text) {
  auto lower = [](std::string s) {
    for (char& c : s)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return s;
  };
  text = lower(text);
  std::set<std::string> out;
  for (const auto& t : terms)
    if (text.find(lower(t)) != std::string::npos) out.insert(t);
  return out;
}

class FilterScan : public ::testing::TestWithParam<f::engine_kind> {};

}  // namespace

TEST_P(FilterScan, TermAcrossEveryFragmentSplit) {
  auto fl = make("viagra\nnot here\n", GetParam());
  const std::string text = "Buy cheap ViAgRa now";
  std::size_t count = 0;
  for_every_split(text, [&](const std::vector<std::string>& pieces) {
    auto v = scan_pieces(fl, pieces);
    ASSERT_EQ(matched(v), std::set<std::string>{"viagra"});
    EXPECT_EQ(v.score, 1.0);
    EXPECT_TRUE(v.over_threshold);
    ++count;
  });
  EXPECT_GT(count, 200u);
}

TEST_P(FilterScan, ByteAtATime) {
  auto fl = make("lottery winner\n", GetParam());
  std::vector<std::string> bytes;
  for (char c : std::string("you are the LOTTERY WINNER!")) bytes.emplace_back(1, c);
  EXPECT_EQ(matched(scan_pieces(fl, bytes)), std::set<std::string>{"lottery winner"});
}

TEST_P(FilterScan, TermDoesNotSpanTwoStreams) {
  auto fl = make("viagra\n", GetParam());
  f::scan s(fl);
  s.begin_stream(f::stream_kind::header);
  s.feed("Subject: vi");
  s.end_stream();
  s.begin_stream(f::stream_kind::text_plain);
  s.feed("agra");
  s.end_stream();
  EXPECT_FALSE(s.finish().matched());
}

TEST_P(FilterScan, AcrossQuotedPrintableSoftLineBreak) {
  auto fl = make("viagra\n", GetParam());
  // The raw body never contains the term; only the decoded one does.
  const std::string raw = "Buy cheap vi=\r\nag=72a=20now=\r\n";
  ASSERT_EQ(raw.find("viagra"), std::string::npos);
  EXPECT_FALSE(scan_pieces(fl, {raw}).matched());
  std::size_t splits = 0;
  for_every_split(raw, [&](const std::vector<std::string>& raw_pieces) {
    qp_decoder d;
    std::vector<std::string> decoded;
    for (const auto& p : raw_pieces) decoded.push_back(d.feed(p));
    decoded.push_back(d.finish());
    auto v = scan_pieces(fl, decoded);
    ASSERT_EQ(matched(v), std::set<std::string>{"viagra"});
    ++splits;
  });
  EXPECT_GT(splits, 400u);
}

TEST_P(FilterScan, InBase64) {
  auto fl = make("free money\n", GetParam());
  const std::string raw = base64_encode("Dear friend, get FREE MONEY today. Regards");
  ASSERT_EQ(raw.find("MONEY"), std::string::npos);
  for_every_split(raw, [&](const std::vector<std::string>& raw_pieces) {
    base64_decoder d;
    std::vector<std::string> decoded;
    for (const auto& p : raw_pieces) decoded.push_back(d.feed(p));
    ASSERT_EQ(matched(scan_pieces(fl, decoded)), std::set<std::string>{"free money"});
  });
}

TEST_P(FilterScan, InOtherCharsets) {
  auto fl = make("café crème\n€100 “bonus”\nnaïve\n", GetParam());
  struct cs_case {
    const char* charset;
    const char* text;
    const char* term;
  };
  const cs_case cases[] = {
      {"ISO-8859-1", "Un Café crème, s'il vous plaît", "café crème"},
      {"WINDOWS-1252", "Claim your €100 “bonus” today", "€100 “bonus”"},
      {"UTF-16", "a NAÏVE check, naïve answer", "naïve"},
      {"UTF-16LE", "Claim your €100 “bonus” today", "€100 “bonus”"},
      {"UTF-16BE", "Un café crème", "café crème"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.charset);
    const std::string raw = from_utf8(c.text, c.charset);
    ASSERT_EQ(raw.find(c.term), std::string::npos);  // not visible before conversion
    EXPECT_FALSE(scan_pieces(fl, {raw}).matched());
    const std::string utf8 = to_utf8(raw, c.charset);
    for_every_split(utf8, [&](const std::vector<std::string>& pieces) {
      ASSERT_EQ(matched(scan_pieces(fl, pieces)), std::set<std::string>{c.term});
    });
  }
}

TEST_P(FilterScan, CaseFoldingIsAsciiOnly) {
  auto fl = make("CAFé\n", GetParam());
  EXPECT_TRUE(scan_pieces(fl, {"un café"}).matched());   // ASCII letters fold
  EXPECT_FALSE(scan_pieces(fl, {"un CAFÉ"}).matched());  // É != é (documented limit)
}

TEST_P(FilterScan, OverlappingTerms) {
  auto fl = make("he\nshe\nhis\nhers\nushers\t2\nsh\n", GetParam());
  for_every_split("USHERS", [&](const std::vector<std::string>& pieces) {
    auto v = scan_pieces(fl, pieces);
    ASSERT_EQ(matched(v), (std::set<std::string>{"he", "she", "hers", "ushers", "sh"}));
    EXPECT_DOUBLE_EQ(v.score, 6.0);
  });
}

TEST_P(FilterScan, RepeatedMatchesCountOnceAcrossStreams) {
  auto fl = make("spam\t0.4\n", GetParam());
  f::scan s(fl);
  for (int i = 0; i < 3; ++i) {
    s.begin_stream(f::stream_kind::text_plain);
    s.feed("spam spam SPAM");
    s.end_stream();
  }
  auto v = s.finish(1.0);
  EXPECT_EQ(v.term_ids.size(), 1u);
  EXPECT_DOUBLE_EQ(v.score, 0.4);
  EXPECT_FALSE(v.over_threshold);  // 0.4 < 1
}

TEST_P(FilterScan, ManyDistinctMatchesCountedOnce) {
  // More distinct matches than the small linear set holds: the bitmap takes over.
  std::string file, text;
  for (int i = 0; i < 100; ++i) {
    file += "tok" + std::to_string(1000 + i) + "x\n";
    text += "tok" + std::to_string(1000 + i) + "x ";
  }
  auto fl = make(file, GetParam());
  f::scan s(fl);
  for (int round = 0; round < 2; ++round) {
    s.begin_stream();
    s.feed(text);
    s.feed(text);
    s.end_stream();
  }
  auto v = s.finish();
  EXPECT_EQ(v.term_ids.size(), 100u);
  EXPECT_DOUBLE_EQ(v.score, 100.0);
  std::set<std::uint32_t> ids(v.term_ids.begin(), v.term_ids.end());
  EXPECT_EQ(ids.size(), 100u);
  // The scan is reusable: the next message starts clean.
  s.feed("tok1000x tok1099x");
  auto v2 = s.finish();
  EXPECT_EQ(v2.term_ids.size(), 2u);
}

TEST_P(FilterScan, WeightsAndThreshold) {
  auto fl = make("casino\t0.6\nbonus\t0.6\nnewsletter\t-1\n", GetParam());
  EXPECT_FALSE(scan_pieces(fl, {"casino night"}).over_threshold);
  auto both = scan_pieces(fl, {"casino bonus"});
  EXPECT_DOUBLE_EQ(both.score, 1.2);
  EXPECT_TRUE(both.over_threshold);
  auto ham = scan_pieces(fl, {"casino bonus newsletter"});
  EXPECT_TRUE(ham.matched());
  EXPECT_FALSE(ham.over_threshold);
  f::scan s(fl);
  s.feed("bonus");
  EXPECT_TRUE(s.finish(0.5).over_threshold);
}

TEST_P(FilterScan, EmptyListMatchesNothingAndCounts) {
  auto fl = make("# nothing\n", GetParam());
  EXPECT_EQ(fl->engine_ptr(), nullptr);
  f::counters c;
  f::scan s(fl, &c);
  s.begin_stream();
  s.feed("anything at all");
  auto v = s.finish();
  EXPECT_FALSE(v.matched());
  EXPECT_EQ(v.score, 0.0);
  EXPECT_FALSE(v.over_threshold);
  auto snap = c.load();
  EXPECT_EQ(snap.messages_scanned, 1u);
  EXPECT_EQ(snap.messages_matched, 0u);
  EXPECT_EQ(snap.bytes_scanned, 15u);
}

TEST_P(FilterScan, CountersAndReset) {
  auto fl = make("alpha\nbeta\n", GetParam());
  f::counters c;
  f::scan s(fl, &c);
  s.feed("xx alpha");
  auto v1 = s.finish();
  EXPECT_EQ(matched(v1), std::set<std::string>{"alpha"});
  s.reset();
  s.feed("beta");
  auto v2 = s.finish();
  EXPECT_EQ(matched(v2), std::set<std::string>{"beta"});
  s.reset();
  s.feed("nothing");
  EXPECT_FALSE(s.finish().matched());
  auto snap = c.load();
  EXPECT_EQ(snap.messages_scanned, 3u);
  EXPECT_EQ(snap.messages_matched, 2u);
  EXPECT_EQ(snap.bytes_scanned, 8u + 4u + 7u);
}

TEST_P(FilterScan, ScanMessageOverDecodedStreams) {
  auto fl = make("winner\nclick here\n", GetParam());
  std::vector<std::string_view> subject{"You are a ", "WIN", "NER"};
  std::vector<std::string_view> body{"please cli", "ck he", "re"};
  f::decoded_stream streams[] = {{f::stream_kind::header, subject}, {f::stream_kind::text_plain, body}};
  f::counters c;
  auto v = f::scan_message(fl, streams, 2.0, &c);
  EXPECT_EQ(matched(v), (std::set<std::string>{"winner", "click here"}));
  EXPECT_TRUE(v.over_threshold);
  EXPECT_EQ(c.load().messages_matched, 1u);
}

TEST_P(FilterScan, HundredThousandTerms) {
  std::mt19937 rng(12345);
  std::vector<std::string> terms;
  std::set<std::string> uniq;
  std::string file;
  while (terms.size() < 100'000) {
    std::string t;
    std::size_t len = 5 + rng() % 10;
    for (std::size_t i = 0; i < len; ++i) t.push_back(static_cast<char>('a' + rng() % 26));
    if (rng() % 8 == 0) t.insert(t.size() / 2, " ");
    if (!uniq.insert(t).second) continue;
    terms.push_back(t);
    file += t + "\n";
  }
  auto fl = make(file, GetParam());
  ASSERT_EQ(fl->terms().size(), 100'000u);
  std::string text = "Hello " + terms[17] + " and " + terms[99'999] + " plus " + terms[50'000] +
                     ". Random tail qwzx.";
  text[6] = static_cast<char>(std::toupper(text[6]));
  const auto expect = naive(terms, text);
  ASSERT_GE(expect.size(), 3u);
  for (std::size_t cut = 0; cut < text.size(); cut += 3) {
    auto v = scan_pieces(fl, {text.substr(0, cut), text.substr(cut)});
    ASSERT_EQ(matched(v), expect) << "cut at " << cut;
  }
}

TEST_P(FilterScan, DifferentialAgainstNaiveSearch) {
  std::mt19937 rng(777);
  const std::string alphabet = "abAB c";
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> terms;
    std::string file;
    std::size_t n = 1 + rng() % 12;
    for (std::size_t i = 0; i < n; ++i) {
      std::string t;
      std::size_t len = 1 + rng() % 4;
      for (std::size_t k = 0; k < len; ++k) t.push_back(alphabet[rng() % 5]);  // no blank ends
      terms.push_back(t);
      file += t + "\n";
    }
    auto fl = make(file, GetParam());
    terms.clear();  // the parser trims blanks: compare against what it kept
    for (const auto& t : fl->terms().terms) terms.push_back(t.pattern);
    std::string text;
    std::size_t tl = rng() % 40;
    for (std::size_t k = 0; k < tl; ++k) text.push_back(alphabet[rng() % alphabet.size()]);
    std::vector<std::string> pieces;
    for (std::size_t pos = 0; pos < text.size();) {
      std::size_t len = rng() % 6;
      pieces.push_back(text.substr(pos, len));
      pos += len;
    }
    ASSERT_EQ(matched(scan_pieces(fl, pieces)), naive(terms, text)) << file << "|" << text;
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, FilterScan,
                         ::testing::Values(f::engine_kind::hyperscan, f::engine_kind::aho_corasick),
                         [](const auto& info) { return std::string(f::to_string(info.param)) == "hyperscan"
                                                           ? std::string("hyperscan")
                                                           : std::string("aho_corasick"); });

// ---- regex terms (Hyperscan) and the Aho-Corasick refusal ----------------------

TEST(FilterRegex, HyperscanRegexAcrossSplits) {
  auto fl = make("re:fr[e3]{2}\\s+m[o0]ney\t2\nre:^subject: win\nre:bye$\n", f::engine_kind::hyperscan);
  for_every_split("get FRE3  M0NEY", [&](const std::vector<std::string>& pieces) {
    ASSERT_EQ(matched(scan_pieces(fl, pieces)), std::set<std::string>{"fr[e3]{2}\\s+m[o0]ney"});
  });
  // ^ anchors at the start of each stream, $ at its end (reported by end_stream()).
  EXPECT_EQ(matched(scan_pieces(fl, {"Subject: WIN", " big"}, f::stream_kind::header)),
            std::set<std::string>{"^subject: win"});
  EXPECT_FALSE(scan_pieces(fl, {"re: Subject: win"}).matched());
  EXPECT_EQ(matched(scan_pieces(fl, {"good", "bye"})), std::set<std::string>{"bye$"});
  EXPECT_FALSE(scan_pieces(fl, {"goodbye!"}).matched());
}

TEST(FilterRegex, InvalidRegexReportedWithLine) {
  auto terms = f::parse_terms("ok\n# c\nre:fo(o\n");
  ASSERT_TRUE(terms);
  auto fl = f::filter::compile(*terms, {f::engine_kind::hyperscan});
  ASSERT_FALSE(fl);
  EXPECT_EQ(fl.error().line, 3u);
  EXPECT_EQ(fl.error().code, f::make_error_code(f::errc::invalid_regex));
  EXPECT_NE(fl.error().to_string().find("line 3"), std::string::npos);
}

TEST(FilterRegex, AhoCorasickRefusesRegexWithLine) {
  auto terms = f::parse_terms("ok\nre:a+b\n");
  ASSERT_TRUE(terms);
  auto fl = f::filter::compile(*terms, {f::engine_kind::aho_corasick});
  ASSERT_FALSE(fl);
  EXPECT_EQ(fl.error().line, 2u);
  EXPECT_EQ(fl.error().code, f::make_error_code(f::errc::regex_unsupported));
}

TEST(FilterEngines, LiteralsWithRegexMetacharactersAreLiteral) {
  for (auto kind : {f::engine_kind::hyperscan, f::engine_kind::aho_corasick}) {
    auto fl = make("a.b*c\n$100 (free)\n[x]\\y\n", kind);
    EXPECT_EQ(matched(scan_pieces(fl, {"xa.b*cx $100 (FREE) [X]\\Y"})),
              (std::set<std::string>{"a.b*c", "$100 (free)", "[x]\\y"}));
    EXPECT_FALSE(scan_pieces(fl, {"aXbbbc $1000 free"}).matched());
  }
}
