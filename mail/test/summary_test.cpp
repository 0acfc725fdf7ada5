#include <gtest/gtest.h>

#include <inlet/mail/summary.hpp>

#include "test_messages.hpp"

namespace {

namespace mail = inlet::mail;
namespace st = inlet::store;

st::summary summarize(const std::string& raw, st::recipient_list rcpt = {}) {
  st::summary s;
  mail::analyze(mail::thread_parser().parse(raw), rcpt, s, nullptr);
  return s;
}

TEST(summary, header_fields) {
  auto s = summarize(mail::test::plain_message);
  EXPECT_EQ(s.from, (st::address{"Ann Example", "ann@example.com"}));
  ASSERT_EQ(s.to.size(), 2u);
  EXPECT_EQ(s.to[0], (st::address{"Bob", "bob@example.org"}));
  EXPECT_EQ(s.to[1], (st::address{"", "carol@example.net"}));
  ASSERT_EQ(s.cc.size(), 1u);
  EXPECT_EQ(s.cc[0].address, "dave@example.com");
  EXPECT_EQ(s.subject, "Quarterly r\xC3\xA9sultats");  // encoded word decoded
  EXPECT_EQ(s.message_id, "abc.123@example.com");
  ASSERT_TRUE(s.date);
  // 10:20:30 +0100 is 09:20:30 UTC.
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(s.date->time_since_epoch()).count(),
            1772529630);
  EXPECT_EQ(s.snippet, "Hello Bob, the figures are in.");
  EXPECT_TRUE(s.search_text.empty());  // made by the store on demand, not here
}

TEST(summary, envelope_recipients_no_header_names_become_bcc) {
  auto s = summarize(mail::test::plain_message,
                     {"BOB@example.org", "hidden@example.com", "dave@example.com"});
  ASSERT_EQ(s.bcc.size(), 1u);  // bob (any case) and dave are named by To/Cc
  EXPECT_EQ(s.bcc[0].address, "hidden@example.com");
}

TEST(summary, attachments_inline_parts_and_attached_messages) {
  auto s = summarize(mail::test::multipart_message);
  EXPECT_EQ(s.inline_parts, 1u);  // the image with a Content-ID
  ASSERT_EQ(s.attachments.size(), 2u);
  EXPECT_EQ(s.attachments[0].filename, "report.pdf");
  EXPECT_EQ(s.attachments[0].content_type, "application/pdf");
  EXPECT_EQ(s.attachments[0].size, 9u);  // "%PDF-1.4\n"
  // The attached message is one attachment; inner.zip inside it is not listed.
  EXPECT_EQ(s.attachments[1].content_type, "message/rfc822");
}

TEST(summary, long_lists_are_bounded_and_counted) {
  std::string raw = "From: a@example.com\r\nTo: ";
  for (int i = 0; i < 150; ++i) raw += (i ? ", u" : "u") + std::to_string(i) + "@example.com";
  raw += "\r\nSubject: " + std::string(6000, 'x') + "\r\n\r\nbody\r\n";
  auto s = summarize(raw);
  EXPECT_EQ(s.to.size(), mail::summary_limits::addresses);
  EXPECT_EQ(s.totals.to, 150u);
  EXPECT_EQ(s.subject.size(), mail::summary_limits::subject_bytes);
  EXPECT_EQ(s.totals.cc, 0u);  // a whole list reports 0
}

TEST(summary, bound_utf8_never_cuts_a_character) {
  std::string s = "a\xC3\xA9\xE2\x82\xAC";  // a, é, €
  mail::bound_utf8(s, 4);                    // inside the euro sign
  EXPECT_EQ(s, "a\xC3\xA9");
  mail::bound_utf8(s, 2);  // inside é
  EXPECT_EQ(s, "a");
  mail::bound_utf8(s, 10);
  EXPECT_EQ(s, "a");
}

}  // namespace
