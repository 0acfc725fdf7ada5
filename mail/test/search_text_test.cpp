#include <gtest/gtest.h>

#include <inlet/mail/summary.hpp>
#include <inlet/store/search.hpp>

#include "test_messages.hpp"

namespace {

namespace mail = inlet::mail;
namespace st = inlet::store;

std::string text_of(const std::string& raw) {
  st::summary s;
  mail::analyze(mail::thread_parser().parse(raw), {}, s, nullptr);
  return st::search::search_text_of(s, raw);
}

bool has(const std::string& text, std::string_view word) {
  return text.find(word) != std::string::npos;
}

TEST(search_text, summary_words_and_the_plain_body_folded) {
  auto t = text_of(mail::test::plain_message);
  EXPECT_TRUE(has(t, "ann example")) << t;
  EXPECT_TRUE(has(t, "bob@example.org")) << t;
  EXPECT_TRUE(has(t, "quarterly r\xC3\xA9sultats")) << t;
  EXPECT_TRUE(has(t, "the figures are in.")) << t;  // whitespace runs collapsed
  EXPECT_FALSE(has(t, "Hello")) << t;               // folded
}

TEST(search_text, quoted_printable_decoded_and_attachment_names) {
  auto t = text_of(mail::test::multipart_message);
  EXPECT_TRUE(has(t, "caf\xC3\xA9 menu")) << t;
  EXPECT_TRUE(has(t, "report.pdf")) << t;
  EXPECT_FALSE(has(t, "inner text")) << t;  // not the attached message's body
}

TEST(search_text, html_only_message_searches_its_words_not_its_markup) {
  std::string raw =
      "From: a@example.com\r\nSubject: h\r\nContent-Type: text/html\r\n\r\n"
      "<p>Visible <b>words</b></p><script>hidden_code()</script><!-- secret -->\r\n";
  auto t = text_of(raw);
  EXPECT_TRUE(has(t, "visible words")) << t;
  EXPECT_FALSE(has(t, "hidden_code")) << t;
  EXPECT_FALSE(has(t, "secret")) << t;
  EXPECT_FALSE(has(t, "<b>")) << t;
}

TEST(search_text, bounded) {
  std::string raw = "From: a@example.com\r\nSubject: big\r\n\r\n";
  for (int i = 0; i < 5000; ++i) raw += "word" + std::to_string(i) + " ";
  auto t = text_of(raw);
  EXPECT_LE(t.size(), st::search::search_text_bytes);
  EXPECT_TRUE(has(t, "word0 word1")) << t.substr(0, 100);
}

}  // namespace
