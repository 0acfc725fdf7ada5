#include <gtest/gtest.h>

#include <inlet/mail/read_view.hpp>

#include "test_messages.hpp"

namespace {

namespace mail = inlet::mail;

TEST(read_view, bodies_parts_and_part_ids) {
  mail::message_view v(mail::test::multipart_message);
  EXPECT_EQ(v.text(), "Caf\xC3\xA9 menu");
  EXPECT_TRUE(v.has_html());
  EXPECT_NE(v.html().find("<b>menu</b>"), std::string::npos);
  auto parts = v.parts(false);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].part_id, "1.2");  // the inline image inside multipart/related
  EXPECT_TRUE(parts[0].is_inline);
  EXPECT_EQ(parts[0].content_id, "logo@x");
  EXPECT_EQ(parts[1].part_id, "2");
  EXPECT_EQ(parts[1].filename, "report.pdf");
  EXPECT_FALSE(parts[1].is_inline);
  EXPECT_EQ(parts[2].part_id, "3");
  EXPECT_EQ(parts[2].content_type, "message/rfc822");
}

TEST(read_view, part_content_decodes_and_checksums) {
  mail::message_view v(mail::test::multipart_message);
  auto pdf = v.part_content("2");
  ASSERT_TRUE(pdf);
  EXPECT_EQ(pdf->second, "%PDF-1.4\n");
  EXPECT_FALSE(v.part_content("9"));
  auto with = v.parts(true);
  EXPECT_EQ(with[1].sums.md5, "6446a98080f5e51ab7f0abc0e8eda635") << with[1].sums.md5;
  EXPECT_EQ(with[1].sums.sha256.size(), 64u);
}

TEST(read_view, html_only_text_falls_back_to_the_html_as_words) {
  mail::message_view v(
      "Subject: h\r\nContent-Type: text/html\r\n\r\n<p>One&amp;two</p><style>p{}</style>");
  EXPECT_EQ(v.text(), "One&two");
}

TEST(read_view, headers_canonical_sorted_unfolded) {
  mail::message_view v("subject: a\r\n folded\r\nX-B: 1\r\nx-b: 2\r\n\r\nbody");
  auto h = v.headers();
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].first, "Subject");
  EXPECT_EQ(h[0].second, (std::vector<std::string>{"a folded"}));
  EXPECT_EQ(h[1].first, "X-B");
  EXPECT_EQ(h[1].second, (std::vector<std::string>{"1", "2"}));
}

TEST(read_view, list_unsubscribe_and_return_path) {
  mail::message_view v(
      "Return-Path: <bounce@example.com>\r\n"
      "List-Unsubscribe: <mailto:u@example.com>, <https://example.com/u?x=1>\r\n"
      "List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n\r\nbody");
  auto u = v.unsubscribe();
  EXPECT_EQ(u.links, (std::vector<std::string>{"mailto:u@example.com", "https://example.com/u?x=1"}));
  EXPECT_EQ(u.header_post, "List-Unsubscribe=One-Click");
  EXPECT_EQ(v.return_path(), "bounce@example.com");
}

}  // namespace
