#include <gtest/gtest.h>

#include <inlet/mail/compose.hpp>
#include <inlet/mail/read_view.hpp>
#include <inlet/mail/summary.hpp>

namespace {

namespace mail = inlet::mail;
namespace st = inlet::store;

mail::draft sample() {
  mail::draft d;
  d.from = {"Zoë Sender", "zoe@example.com"};
  d.to = {{"", "to@example.com"}};
  d.cc = {{"Cc \"Quoted\"", "cc@example.com"}};
  d.bcc = {"hidden@example.com"};
  d.subject = "Grüße";
  d.text = "plain text";
  d.html = "<p>html</p>";
  d.headers = {{"X-Campaign", "spring"}};
  d.attachments.push_back({"a.pdf", "", "", "%PDF"});
  d.attachments.push_back({"logo.png", "image/png", "logo@x", "\x89PNG"});
  d.tags = {"sent"};
  return d;
}

TEST(compose, validate_accepts_a_good_draft) {
  std::string err;
  EXPECT_TRUE(mail::validate(sample(), err)) << err;
}

TEST(compose, validate_says_what_is_wrong) {
  std::string err;
  auto d = sample();
  d.from.email = "not an address";
  EXPECT_FALSE(mail::validate(d, err));
  EXPECT_NE(err.find("From"), std::string::npos) << err;
  d = sample();
  d.subject = "two\r\nlines";
  EXPECT_FALSE(mail::validate(d, err));
  d = sample();
  d.to.clear(), d.cc.clear(), d.bcc.clear();
  EXPECT_FALSE(mail::validate(d, err));
  EXPECT_NE(err.find("recipient"), std::string::npos) << err;
  d = sample();
  d.headers = {{"Content-Type", "text/plain"}};
  EXPECT_FALSE(mail::validate(d, err));
  d = sample();
  d.headers = {{"Bad Name", "x"}};
  EXPECT_FALSE(mail::validate(d, err));
  d = sample();
  d.attachments[0].content_type = "text/plain; charset=x";
  EXPECT_FALSE(mail::validate(d, err));
  d = sample();
  d.bcc = {"a@b@"};
  EXPECT_FALSE(mail::validate(d, err));
}

TEST(compose, the_written_message_parses_back_to_the_draft) {
  auto d = sample();
  auto out = mail::compose(d, std::chrono::system_clock::time_point{}, "test.local");
  EXPECT_EQ(out.mail_from, "zoe@example.com");
  EXPECT_EQ(out.rcpt_to,
            (std::vector<std::string>{"to@example.com", "cc@example.com", "hidden@example.com"}));
  EXPECT_EQ(out.tags, d.tags);
  EXPECT_EQ(out.raw.find("hidden@example.com"), std::string::npos);  // Bcc: envelope only
  EXPECT_NE(out.raw.find("Date: Thu, 01 Jan 1970 00:00:00 +0000\r\n"), std::string::npos);
  EXPECT_NE(out.raw.find("@test.local>\r\n"), std::string::npos);
  EXPECT_NE(out.raw.find("X-Campaign: spring\r\n"), std::string::npos);

  st::summary s;
  mail::analyze(mail::thread_parser().parse(out.raw), {}, s, nullptr);
  EXPECT_EQ(s.from, (st::address{"Zoë Sender", "zoe@example.com"}));
  EXPECT_EQ(s.subject, "Grüße");
  ASSERT_EQ(s.cc.size(), 1u);
  EXPECT_EQ(s.cc[0].name, "Cc \"Quoted\"");
  EXPECT_EQ(s.inline_parts, 1u);
  ASSERT_EQ(s.attachments.size(), 1u);
  EXPECT_EQ(s.attachments[0].content_type, "application/pdf");  // guessed from the name

  mail::message_view v(out.raw);
  EXPECT_EQ(v.text(), "plain text");
  EXPECT_EQ(v.html(), "<p>html</p>");
  auto parts = v.parts(false);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(v.part_content(parts[0].part_id)->second, "\x89PNG");
  EXPECT_EQ(v.part_content(parts[1].part_id)->second, "%PDF");
}

TEST(compose, a_single_text_part_is_not_multipart) {
  mail::draft d;
  d.from = {"", "a@example.com"};
  d.to = {{"", "b@example.com"}};
  d.text = "line one\nline two with trailing space \n";
  auto out = mail::compose(d, {}, "x");
  EXPECT_EQ(out.raw.find("multipart"), std::string::npos);
  mail::message_view v(out.raw);
  EXPECT_EQ(v.text(), "line one\r\nline two with trailing space \r\n");
}

TEST(compose, quoted_printable_keeps_lines_short_and_encodes_what_it_must) {
  std::string qp = mail::encode_quoted_printable(std::string(200, 'a') + "=\xC3\xA9 \n");
  for (std::size_t at = 0, next; at < qp.size(); at = next + 2) {
    next = qp.find("\r\n", at);
    if (next == std::string::npos) next = qp.size();
    EXPECT_LE(next - at, 76u);
  }
  EXPECT_NE(qp.find("=3D=C3=A9=20\r\n"), std::string::npos) << qp;
  EXPECT_EQ(mail::encode_header_text("plain"), "plain");
  EXPECT_EQ(mail::encode_header_text("\xC3\xA9"), "=?UTF-8?B?w6k=?=");
}

}  // namespace
