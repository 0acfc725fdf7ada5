#include <gtest/gtest.h>

#include <cstdio>

#include "split.hpp"

namespace inlet::mime::test {
namespace {

std::string text_of(const parsed_message& m, std::uint32_t p) {
  std::string out;
  decode_text(m, p, [&](std::string_view s) { out.append(s); });
  return out;
}

TEST(summary, simple) {
  std::string in = read_data("simple.eml");
  for_each_split(in, [&](const parsed_message& m, const std::string& label) {
    summary s = summarize(m);
    ASSERT_EQ(s.subject, "Café and Привет folded") << label;
    ASSERT_EQ(s.from, (std::vector<mailbox>{{"Joe Q. Public", "john.q.public@example.com"}}));
    ASSERT_EQ(s.to.size(), 3u);
    ASSERT_EQ(s.cc.size(), 2u);
    ASSERT_TRUE(s.bcc.empty());
    ASSERT_TRUE(s.date);
    ASSERT_EQ(format_iso8601(*s.date), "2003-07-01T08:52:37Z");
    ASSERT_EQ(s.message_id, "1234@local.machine.example");
    ASSERT_EQ(s.snippet, "Hi everyone. This is a simple message.");
    ASSERT_TRUE(s.attachments.empty());
    ASSERT_EQ(s.address_counts.to, 3u);
    ASSERT_EQ(s.address_counts.cc, 2u);
    const summary cut = summarize(m, 200, 1);  // one kept per list, the rest counted
    ASSERT_EQ(cut.to, (std::vector<mailbox>(s.to.begin(), s.to.begin() + 1))) << label;
    ASSERT_EQ(cut.address_counts.to, 3u) << label;
    ASSERT_EQ(cut.address_counts.cc, 2u) << label;
    ASSERT_EQ(cut.address_counts.from, 1u) << label;
  });
}

// A reused summary holds exactly what a fresh one would: nothing of the message before.
TEST(summary, reused_summary_equals_a_fresh_one) {
  const std::string a = read_data("simple.eml");
  const std::string b = read_data("nested.eml");
  const parsed_message ma = parse(a);
  const parsed_message mb = parse(b);
  summary reused;
  for (const parsed_message* m : {&ma, &mb, &ma, &mb}) {
    summarize(*m, reused, 200, 2);
    const summary fresh = summarize(*m, 200, 2);
    EXPECT_EQ(reused.from, fresh.from);
    EXPECT_EQ(reused.to, fresh.to);
    EXPECT_EQ(reused.cc, fresh.cc);
    EXPECT_EQ(reused.bcc, fresh.bcc);
    EXPECT_EQ(reused.reply_to, fresh.reply_to);
    EXPECT_EQ(reused.address_counts.to, fresh.address_counts.to);
    EXPECT_EQ(reused.address_counts.cc, fresh.address_counts.cc);
    EXPECT_EQ(reused.subject, fresh.subject);
    EXPECT_EQ(reused.date, fresh.date);
    EXPECT_EQ(reused.message_id, fresh.message_id);
    EXPECT_EQ(reused.snippet, fresh.snippet);
    ASSERT_EQ(reused.attachments.size(), fresh.attachments.size());
    for (std::size_t i = 0; i < fresh.attachments.size(); ++i)
      EXPECT_EQ(reused.attachments[i].filename, fresh.attachments[i].filename);
  }
  // The second message has no To list: the first's must not survive into it.
  summarize(ma, reused);
  ASSERT_FALSE(reused.to.empty());
  summarize(mb, reused);
  EXPECT_TRUE(reused.to.empty());
  EXPECT_EQ(reused.address_counts.to, 0u);
}

TEST(summary, nested_text_and_attachments) {
  std::string in = read_data("nested.eml");
  for_each_split(in, [&](const parsed_message& m, const std::string& label) {
    summary s = summarize(m);
    ASSERT_EQ(s.snippet, "Grüße aus Köln, café soft break.") << label;
    ASSERT_TRUE(s.to.empty());
    ASSERT_EQ(s.attachments.size(), 2u);
    ASSERT_EQ(s.attachments[0].filename, "résumé.pdf");
    ASSERT_EQ(s.attachments[0].content_type, "application/pdf");
    ASSERT_EQ(s.attachments[0].size, 70u);
    ASSERT_EQ(s.attachments[1].content_type, "image/png");
    ASSERT_EQ(s.attachments[1].size, 8u);
    ASSERT_EQ(format_iso8601(*s.date), "1969-02-14T03:02:54Z");
    std::vector<std::uint32_t> texts;
    for_each_text_part(m, [&](std::uint32_t p) { texts.push_back(p); });
    ASSERT_EQ(texts, (std::vector<std::uint32_t>{2, 3, 7}));
    ASSERT_EQ(text_of(m, 3),
              "<html><body><p>Gr&uuml;&szlig;e &amp; <b>hello</b></p></body></html>");
    ASSERT_EQ(charset(m, 2), "iso-8859-1");
    ASSERT_EQ(filename(m, 4), "résumé.pdf");
    ASSERT_EQ(disposition(m, 4), "attachment");
    ASSERT_EQ(disposition(m, 8), "inline");
    ASSERT_EQ(header_text(m, 6, "subject"), "inner message");
  });
}

// charset(): plain parameters take a shortcut; RFC 2231 sections must still be joined.
TEST(summary, charset_parameter_forms) {
  auto cs = [](std::string_view ct) {
    const std::string raw = "Content-Type: " + std::string(ct) + "\r\n\r\nbody\r\n";
    parsed_message m = parse(std::string_view(raw));
    return charset(m, 0);
  };
  EXPECT_EQ(cs("text/plain; charset=\"UTF-8\""), "utf-8");
  EXPECT_EQ(cs("text/plain; format=flowed; Charset = ISO-8859-1 ; delsp=yes"), "iso-8859-1");
  EXPECT_EQ(cs("text/plain; charset=us-ascii; charset=koi8-r"), "us-ascii");
  EXPECT_EQ(cs("text/plain; charset=us-ascii; charset*1=x"), "us-asciix");
  EXPECT_EQ(cs("text/plain; charset*=us-ascii'en'koi8-r"), "koi8-r");
  EXPECT_EQ(cs("text/plain; charset=\"ut\\f-8\""), "utf-8");
  EXPECT_EQ(cs("text/plain; charset="), "");
  EXPECT_EQ(cs("text/plain; format=flowed"), std::nullopt);
  EXPECT_EQ(cs("text/plain;\r\n charset=utf-8"), "utf-8");
}

TEST(summary, html_only_snippet_and_koi8) {
  parsed_message m = parse(
      "Content-Type: text/html; charset=utf-8\r\n\r\n<html><head><style>p{x}</style></head>"
      "<body><script>var a;</script><p>Tom &amp; Jerry&#33;&nbsp;&#x263A;</p><!-- hidden "
      "--></body></html>");
  EXPECT_EQ(summarize(m).snippet, "Tom & Jerry! ☺");
  std::string in = read_data("broken.eml");
  for_each_split(in, [&](const parsed_message& b, const std::string& label) {
    ASSERT_EQ(text_of(b, 2), "привет") << label;
    ASSERT_EQ(summarize(b).snippet, "first --zzz not a boundary") << label;
  });
}

// filename() skips parsing a field's parameters when "name" appears nowhere in it;
// every spelling of a name/filename parameter must still be found.
TEST(summary, text_parts_named_in_any_spelling_are_attachments) {
  const char* fields[] = {
      "Content-Type: text/plain; NAME=\"a.txt\"",
      "Content-Type: text/plain;\r\n name*=utf-8''a.txt",
      "Content-Type: text/plain; charset=us-ascii;\r\n\tName*0=\"a\"; name*1=\".txt\"",
      "Content-Type: text/plain\r\nContent-Disposition: inline; FileName=\"a.txt\"",
      "Content-Type: text/plain\r\nContent-Disposition: inline;\r\n filename*0*=utf-8''a; "
      "filename*1=.txt",
  };
  for (const char* f : fields) {
    const std::string in = std::string(f) + "\r\n\r\nbody\r\n";
    parsed_message m = parse(in);
    EXPECT_TRUE(is_attachment(m, 0)) << f;
    EXPECT_EQ(filename(m, 0).value_or("?"), "a.txt") << f;
  }
  for (const char* f : {"Content-Type: text/plain; charset=utf-8; format=flowed",
                        "Content-Type: text/plain\r\nContent-Disposition: inline",
                        "Content-Type: text/plain; x-unnamed=1"}) {
    const std::string in = std::string(f) + "\r\n\r\nbody\r\n";
    parsed_message m = parse(in);
    EXPECT_FALSE(is_attachment(m, 0)) << f;
    EXPECT_FALSE(filename(m, 0).has_value()) << f;
  }
}

TEST(summary, snippet_is_cut_on_characters) {
  std::string body(300, 'x');
  body[198] = '\xC3';
  body[199] = '\xA9';
  const std::string in = "Content-Type: text/plain; charset=utf-8\r\n\r\n" + body;
  parsed_message m = parse(in);
  summary s = summarize(m, 199);
  EXPECT_EQ(s.snippet.size(), 200u);  // 198 'x' + "é"
  s = summarize(m, 10);
  EXPECT_EQ(s.snippet, "xxxxxxxxxx");
}

}  // namespace
}  // namespace inlet::mime::test

namespace inlet::mime::test {
// The snippet decodes only the start of a long part; it must equal the snippet built from
// the whole decoded part, whatever the encoding, charset and the whitespace before the text.
TEST(summary, snippet_of_a_long_part_equals_the_full_decode) {
  const std::string words = "Grüße aus Köln, naïve café — ünïcödé everywhere. ";
  std::string text;
  while (text.size() < 20000) text += words;
  auto qp = [](const std::string& in) {
    std::string out;
    int col = 0;
    for (unsigned char c : in) {
      char buf[4];
      if (c >= 0x80 || c == '=') {
        std::snprintf(buf, sizeof buf, "=%02X", c);
        out += buf;
        col += 3;
      } else {
        out += static_cast<char>(c);
        ++col;
      }
      if (col > 70) {
        out += "=\r\n";
        col = 0;
      }
    }
    return out;
  };
  const std::string lead_ws(3000, ' ');  // whitespace the snippet skips: more than one slice
  for (const std::string& body_text : {text, lead_ws + "\r\n" + text}) {
    for (int enc = 0; enc < 2; ++enc) {
      const std::string msg =
          std::string("Subject: s\r\nContent-Type: text/plain; charset=utf-8\r\n") +
          (enc ? "Content-Transfer-Encoding: quoted-printable\r\n" : "") + "\r\n" +
          (enc ? qp(body_text) : body_text);
      parser ps;
      const parsed_message& m = ps.parse(msg);
      std::string full;
      decode_text(m, 0, [&](std::string_view t) { full.append(t); });
      ASSERT_GT(full.size(), 19000u);
      for (std::size_t chars : {1, 2, 7, 39, 40, 41, 199, 200, 100000}) {
        const summary s = summarize(m, chars);
        // The reference: the same whitespace folding over the full decode.
        std::string want;
        std::size_t n = 0;
        bool space = false;
        for (char c : full) {
          const bool cont = (static_cast<unsigned char>(c) & 0xC0) == 0x80;
          if (!cont && n >= chars) break;
          if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
            space = !want.empty();
            continue;
          }
          if (space) {
            want.push_back(' ');
            space = false;
            if (++n >= chars) break;
          }
          want.push_back(c);
          if (!cont) ++n;
        }
        std::size_t k = want.size();  // a UTF-8 sequence cut at the end is dropped
        while (k > 0 && (static_cast<unsigned char>(want[k - 1]) & 0xC0) == 0x80) --k;
        if (k > 0 && static_cast<unsigned char>(want[k - 1]) >= 0xC0) {
          const unsigned char lead = static_cast<unsigned char>(want[k - 1]);
          const std::size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
          if (want.size() - (k - 1) < need) want.resize(k - 1);
        }
        ASSERT_EQ(s.snippet, want) << "enc " << enc << " chars " << chars;
      }
    }
  }
}
}  // namespace inlet::mime::test

namespace inlet::mime::test {

// The snippet against a plain reference (ASCII text: whitespace runs become one space, cut
// at `limit` characters), for runs of every length around the 16-byte steps and limits.
TEST(summary, snippet_matches_reference_on_ascii) {
  auto reference = [](std::string_view text, std::size_t limit) {
    std::string out;
    std::size_t n = 0;
    bool space = false;
    for (char c : text) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
        space = !out.empty();
        continue;
      }
      if (n >= limit) break;
      if (space) {
        out += ' ';
        space = false;
        if (++n >= limit) break;
      }
      out += c;
      ++n;
    }
    return out;
  };
  std::uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (int round = 0; round < 60; ++round) {
    std::string text;
    while (text.size() < 600) {
      const std::size_t word = next() % (round % 3 == 0 ? 40 : 12);
      for (std::size_t k = 0; k < word; ++k) text += static_cast<char>('!' + next() % 94);
      text += (next() % 5 == 0) ? "\r\n" : (next() % 7 == 0) ? " \t " : " ";
    }
    const std::size_t limit = 1 + next() % 300;
    const std::string raw = "Content-Type: text/plain\r\n\r\n" + text;
    parsed_message m = parse(std::string_view(raw));
    EXPECT_EQ(summarize(m, limit).snippet, reference(text, limit)) << "round " << round;
  }
}

}  // namespace inlet::mime::test
