// The search language's parser and case folding, term by term (the table in
// search_cases.hpp checks the results over a store).
#include "inlet/store/search.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "search_cases.hpp"

namespace st = inlet::store;
namespace se = inlet::store::search;

namespace {

se::query parse_ok(std::string_view text, std::string_view tz = {}) {
  se::query q;
  std::string why;
  EXPECT_FALSE(se::parse(text, tz, q, &why)) << text << ": " << why;
  return q;
}

}  // namespace

TEST(SearchParse, WordsPhrasesAndFields) {
  auto q = parse_ok("  Hello  \"Big   World\" subject:\"Quarterly  Report\" -from:Ann !tag:X ");
  ASSERT_EQ(q.terms.size(), 5u);
  EXPECT_EQ(q.terms[0].where, se::field::text);
  EXPECT_EQ(q.terms[0].value, "hello");
  EXPECT_EQ(q.terms[1].value, "big world");
  EXPECT_EQ(q.terms[2].where, se::field::subject);
  EXPECT_EQ(q.terms[2].value, "quarterly report");
  EXPECT_FALSE(q.terms[2].negated);
  EXPECT_EQ(q.terms[3].where, se::field::from);
  EXPECT_TRUE(q.terms[3].negated);
  EXPECT_EQ(q.terms[4].where, se::field::tag);
  EXPECT_EQ(q.terms[4].value, "x");
  EXPECT_TRUE(q.terms[4].negated);
}

TEST(SearchParse, EveryPrefix) {
  struct c {
    const char* text;
    se::field f;
  };
  for (auto [text, f] :
       {c{"to:a", se::field::to}, c{"FROM:a", se::field::from}, c{"cc:a", se::field::cc},
        c{"bcc:a", se::field::bcc}, c{"reply-to:a", se::field::reply_to},
        c{"addressed:a", se::field::addressed}, c{"subject:a", se::field::subject},
        c{"message-id:a", se::field::message_id}, c{"tag:a", se::field::tag}}) {
    auto q = parse_ok(text);
    ASSERT_EQ(q.terms.size(), 1u) << text;
    EXPECT_EQ(q.terms[0].what, se::kind::match);
    EXPECT_EQ(q.terms[0].where, f) << text;
    EXPECT_EQ(q.terms[0].value, "a");
  }
  EXPECT_EQ(parse_ok("message-id:<X@Y>").terms[0].value, "x@y");
}

TEST(SearchParse, FlagsSizesDates) {
  auto q =
      parse_ok("is:read IS:UNREAD is:tagged has:attachment has:inlines larger:1.5k smaller:2M");
  ASSERT_EQ(q.terms.size(), 7u);
  EXPECT_EQ(q.terms[0].what, se::kind::is_read);
  EXPECT_EQ(q.terms[1].what, se::kind::is_unread);
  EXPECT_EQ(q.terms[2].what, se::kind::is_tagged);
  EXPECT_EQ(q.terms[3].what, se::kind::has_attachment);
  EXPECT_EQ(q.terms[4].what, se::kind::has_inline);
  EXPECT_EQ(q.terms[5].what, se::kind::larger);
  EXPECT_EQ(q.terms[5].bytes, 1536u);
  EXPECT_EQ(q.terms[6].bytes, 2u * 1024 * 1024);
  EXPECT_EQ(parse_ok("larger:10").terms[0].bytes, 10u);
  EXPECT_EQ(parse_ok("larger:\"2 kb\"").terms[0].bytes, 2048u);
  EXPECT_EQ(parse_ok("larger:1g").terms[0].bytes, 1024ull * 1024 * 1024);

  using st::test::at;
  EXPECT_EQ(parse_ok("after:2026-04-01").terms[0].when, at(2026, 4, 1));
  EXPECT_EQ(parse_ok("after:2026/4/1").terms[0].when, at(2026, 4, 1));
  EXPECT_EQ(parse_ok("before:04/01/2026").terms[0].when, at(2026, 4, 1));
  EXPECT_EQ(parse_ok("after:2026-04-01T10:20").terms[0].when, at(2026, 4, 1, 10, 20));
  EXPECT_EQ(parse_ok("after:\"2026-04-01 10:20:30\"").terms[0].when,
            at(2026, 4, 1, 10, 20) + std::chrono::seconds(30));
  EXPECT_EQ(parse_ok("after:2026-04-01T10:20-02:00").terms[0].when, at(2026, 4, 1, 12, 20));
  EXPECT_EQ(parse_ok("after:2026-04-01T10:20Z", "Asia/Tokyo").terms[0].when,
            at(2026, 4, 1, 10, 20));
  // Zones: summer time in Berlin is UTC+2; Tokyo is UTC+9 all year.
  EXPECT_EQ(parse_ok("after:2026-07-01", "Europe/Berlin").terms[0].when, at(2026, 6, 30, 22));
  EXPECT_EQ(parse_ok("after:2026-01-01", "Asia/Tokyo").terms[0].when, at(2025, 12, 31, 15));
  EXPECT_EQ(parse_ok("after:2026-01-01", "UTC").terms[0].when, at(2026, 1, 1));
  // A local time that summer time skips counts from the change (02:30 -> 03:00 CEST).
  EXPECT_EQ(parse_ok("after:2026-03-29T02:30", "Europe/Berlin").terms[0].when, at(2026, 3, 29, 1));
  EXPECT_EQ(parse_ok("after:1767225600000").terms[0].when, at(2026, 1, 1));
}

TEST(SearchParse, ErrorsSayWhat) {
  for (auto [text, tz] : {std::pair{"after:soon", ""},
                          {"after:2026-02-29", ""},
                          {"before:2026-1-1x", ""},
                          {"after:2026-01-01T25:00", ""},
                          {"after:0226-01-01", "Europe/Berlin"},
                          {"before:9999-12-31", ""},
                          {"after:9999999999", ""},
                          {"after:9999999999999", ""},
                          {"larger:1.M", ""},
                          {"smaller:12Q", ""},
                          {"after:2026-01-01", "Nowhere/Atlantis"}}) {
    se::query q;
    q.terms.push_back({});
    std::string why;
    auto ec = se::parse(text, tz, q, &why);
    EXPECT_EQ(ec, st::errc::invalid_argument) << text;
    EXPECT_FALSE(why.empty()) << text;
    EXPECT_EQ(q.terms.size(), 1u) << "output untouched on failure";
  }
}

TEST(SearchParse, IgnoredAndLiteralTerms) {
  EXPECT_TRUE(parse_ok("").empty());
  EXPECT_TRUE(parse_ok("to: from:\"\" after: larger:").empty());
  auto q = parse_ok("is:starred - !");
  ASSERT_EQ(q.terms.size(), 3u);
  EXPECT_EQ(q.terms[0].value, "is:starred");
  EXPECT_EQ(q.terms[1].value, "-");
  EXPECT_FALSE(q.terms[1].negated);
  auto u = parse_ok("\"unterminated phrase here");
  ASSERT_EQ(u.terms.size(), 1u);
  EXPECT_EQ(u.terms[0].value, "unterminated phrase here");
}

TEST(FoldCase, ScriptsAndLengths) {
  EXPECT_EQ(se::fold_case("ABC xyz 123"), "abc xyz 123");
  EXPECT_EQ(se::fold_case("\xC3\x84\xC3\x96\xC3\x9C\xC3\x9F"),
            "\xC3\xA4\xC3\xB6\xC3\xBC\xC3\x9F");                                     // ÄÖÜß
  EXPECT_EQ(se::fold_case("\xC3\x97"), "\xC3\x97");                                  // × stays
  EXPECT_EQ(se::fold_case("\xC5\x81\xC3\x93\xC5\xB9"), "\xC5\x82\xC3\xB3\xC5\xBA");  // ŁÓŹ
  EXPECT_EQ(se::fold_case("\xCE\xA3\xCE\x9F\xCE\xA6"), "\xCF\x83\xCE\xBF\xCF\x86");  // ΣΟΦ
  EXPECT_EQ(se::fold_case("\xD0\x81\xD0\xAF"), "\xD1\x91\xD1\x8F");                  // ЁЯ
  // Eight bytes at a time and one at a time agree, at every alignment and edge byte.
  std::string all;
  for (int c = 1; c < 128; ++c) all.push_back(static_cast<char>(c));
  for (std::size_t off = 0; off < 9; ++off) {
    std::string in = std::string(off, 'Q') + all + "\xC3\x84" + all;
    std::string want = in;
    for (auto& ch : want)
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch + 32);
    want.replace(off + all.size(), 2, "\xC3\xA4");
    EXPECT_EQ(se::fold_case(in), want) << off;
  }
  std::string bad("\xC3\xFF\x41", 3);
  EXPECT_EQ(se::fold_case(bad), std::string("\xC3\xFF\x61", 3));
}

TEST(BuildSearchText, FoldsCollapsesBounds) {
  st::summary s;
  s.subject = "Hello  World";
  s.from = {"Ann", "ann@x"};
  s.to = {{"", "bob@y"}};
  s.attachments = {{"Report.PDF", "application/pdf", 1}};
  EXPECT_EQ(se::build_search_text(s, " body\r\n text ", 1000),
            "hello world ann ann@x bob@y body text report.pdf");
  // Cut at the bound, never inside a character.
  s = {};
  s.subject = "\xC3\x84\xC3\x84\xC3\x84";  // 6 bytes
  EXPECT_EQ(se::build_search_text(s, "", 5), "\xC3\xA4\xC3\xA4");
  EXPECT_EQ(se::build_search_text(s, "", 6), "\xC3\xA4\xC3\xA4\xC3\xA4");
}

TEST(Matches, PreparedFieldsAgreeWithReference) {
  for (auto& f : st::test::search_fixture()) {
    st::stored_message m;
    m.summary = f.msg.summary;
    m.envelope = f.msg.envelope;
    m.size = f.msg.raw.size();
    m.created = *f.msg.created;
    se::prepared_fields pf(m);
    for (const auto& c : st::test::search_cases()) {
      if (c.parse_error) continue;
      se::query q;
      ASSERT_FALSE(se::parse(c.query, c.tz, q));
      EXPECT_EQ(se::matches(q, m), se::matches(q, m, pf)) << c.query;
    }
  }
}

TEST(Matches, EnvelopeTermsByReference) {
  // The built (envelope) cases against matches() alone, message by message.
  std::vector<std::pair<std::string, std::unique_ptr<st::stored_message>>> msgs;
  for (auto& f : st::test::search_fixture()) {
    auto p = std::make_unique<st::stored_message>();
    auto& m = *p;
    m.summary = f.msg.summary;
    m.envelope = f.msg.envelope;
    m.size = f.msg.raw.size();
    m.created = *f.msg.created;
    if (f.read) m.init_read(true);
    msgs.emplace_back(f.label, std::move(p));
  }
  for (const auto& c : st::test::envelope_cases()) {
    std::vector<std::string> got;
    for (auto it = msgs.rbegin(); it != msgs.rend(); ++it)
      if (se::matches(c.query, *it->second)) got.push_back(it->first);
    EXPECT_EQ(got, c.expect) << c.name;
  }
}
