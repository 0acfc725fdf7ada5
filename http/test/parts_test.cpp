// The API's building blocks without a request: MIME rendering (part IDs, bodies, headers,
// checksums, List-Unsubscribe), the send API's message composer, password files, chaos
// triggers, link extraction, thumbnails, the HTML check.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <string>

#include "inlet/mail/read_view.hpp"
#include "inlet/mime/message.hpp"
#include "outbound.hpp"
#include "send.hpp"

namespace ih = inlet::http;
namespace im = inlet::mail;
namespace hd = inlet::http::detail;
namespace json = boost::json;

namespace {

const std::string nested =
    "From: Ann <ann@example.com>\r\n"
    "To: bob@example.org\r\n"
    "Subject: parts\r\n"
    "Message-ID: <p@x>\r\n"
    "List-Unsubscribe: <mailto:leave@example.com?subject=stop>, <https://example.com/u/1>, "
    "<ftp://x>\r\n"
    "List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"
    "Return-Path: <bounce@example.com>\r\n"
    "X-Multi: one\r\n"
    "x-multi: two\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=\"o\"\r\n\r\n"
    "--o\r\n"
    "Content-Type: multipart/alternative; boundary=\"a\"\r\n\r\n"
    "--a\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n\r\n"
    "Plain body\r\n"
    "--a\r\n"
    "Content-Type: multipart/related; boundary=\"r\"\r\n\r\n"
    "--r\r\n"
    "Content-Type: text/html; charset=utf-8\r\n\r\n"
    "<p>HTML <img src=\"cid:logo@x\"></p>\r\n"
    "--r\r\n"
    "Content-Type: image/png\r\n"
    "Content-ID: <logo@x>\r\n"
    "Content-Transfer-Encoding: base64\r\n\r\n"
    "aGVsbG8=\r\n"
    "--r--\r\n"
    "--a--\r\n"
    "--o\r\n"
    "Content-Type: application/pdf; name=\"a.pdf\"\r\n"
    "Content-Disposition: attachment; filename=\"a.pdf\"\r\n"
    "Content-Transfer-Encoding: base64\r\n\r\n"
    "JVBERg==\r\n"
    "--o\r\n"
    "Content-Type: message/rfc822\r\n"
    "Content-Disposition: attachment; filename=\"fwd.eml\"\r\n\r\n"
    "Subject: inner\r\n"
    "Content-Type: multipart/mixed; boundary=\"i\"\r\n\r\n"
    "--i\r\n"
    "Content-Type: application/zip; name=\"inner.zip\"\r\n\r\n"
    "zip\r\n"
    "--i--\r\n"
    "--o--\r\n";

// A solid-colour RGB PNG, written by hand (stored deflate blocks, no compression library).
std::string make_png(std::uint32_t w, std::uint32_t h) {
  auto crc = [](std::string_view d) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : d) {
      c ^= b;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
  };
  auto be32 = [](std::uint32_t v) {
    return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  };
  auto chunk = [&](std::string type, std::string data) {
    return be32(static_cast<std::uint32_t>(data.size())) + type + data + be32(crc(type + data));
  };
  std::string raw;
  for (std::uint32_t y = 0; y < h; ++y) {
    raw.push_back('\0');
    for (std::uint32_t x = 0; x < w; ++x) raw += "\xC8\x1E\x1E";
  }
  std::string z = "\x78\x01";
  for (std::size_t at = 0; at < raw.size() || at == 0; at += 65535) {
    std::size_t n = std::min<std::size_t>(65535, raw.size() - at);
    const bool last = at + n >= raw.size();
    z.push_back(last ? 1 : 0);
    z += std::string{char(n & 0xFF), char(n >> 8), char(~n & 0xFF), char((~n >> 8) & 0xFF)};
    z += raw.substr(at, n);
    if (last) break;
  }
  std::uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  z += be32((b << 16) | a);
  std::string ihdr = be32(w) + be32(h) + std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) +
         chunk("IEND", "");
}

// Width and height from a JPEG's first start-of-frame.
std::pair<int, int> jpeg_size(const std::string& j) {
  for (std::size_t i = 2; i + 9 < j.size();) {
    const unsigned m = static_cast<unsigned char>(j[i + 1]);
    const unsigned len =
        (static_cast<unsigned char>(j[i + 2]) << 8) | static_cast<unsigned char>(j[i + 3]);
    if (m >= 0xC0 && m <= 0xC3)
      return {(static_cast<unsigned char>(j[i + 7]) << 8) | static_cast<unsigned char>(j[i + 8]),
              (static_cast<unsigned char>(j[i + 5]) << 8) | static_cast<unsigned char>(j[i + 6])};
    i += 2 + len;
  }
  return {0, 0};
}

}  // namespace

TEST(Render, MailpitPartIdsAndClassification) {
  im::message_view v(nested);
  auto parts = v.parts(true);
  ASSERT_EQ(parts.size(), 3u);  // the inline image, a.pdf, fwd.eml (not what is inside it)
  EXPECT_EQ(parts[0].part_id, "1.2.2");
  EXPECT_TRUE(parts[0].is_inline);
  EXPECT_EQ(parts[0].content_id, "logo@x");
  EXPECT_EQ(parts[0].size, 5u);
  EXPECT_EQ(parts[0].sums.md5, "5d41402abc4b2a76b9719d911017c592");  // md5("hello")
  EXPECT_EQ(parts[0].sums.sha1, "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d");
  EXPECT_EQ(parts[0].sums.sha256,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  EXPECT_EQ(parts[1].part_id, "2");
  EXPECT_EQ(parts[1].filename, "a.pdf");
  EXPECT_FALSE(parts[1].is_inline);
  EXPECT_EQ(parts[2].part_id, "3");
  EXPECT_EQ(parts[2].content_type, "message/rfc822");
  EXPECT_EQ(parts[2].filename, "fwd.eml");
  // Bodies, and any part by its ID.
  EXPECT_EQ(v.text(), "Plain body");
  EXPECT_EQ(v.html(), "<p>HTML <img src=\"cid:logo@x\"></p>");
  auto png = v.part_content("1.2.2");
  ASSERT_TRUE(png);
  EXPECT_EQ(png->second, "hello");
  auto text = v.part_content("1.1");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->second, "Plain body");
  EXPECT_FALSE(v.part_content("1"));  // a multipart has no bytes of its own
  EXPECT_FALSE(v.part_content("9"));
  auto eml = v.part_content("3");
  ASSERT_TRUE(eml);
  EXPECT_NE(eml->second.find("Subject: inner"), std::string::npos);
}

TEST(Render, SinglePartMessageIsPartOne) {
  im::message_view v(
      "Subject: x\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\naGk=\r\n");
  auto parts = v.parts(false);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].part_id, "1");
  EXPECT_EQ(v.part_content("1")->second, "hi");
  EXPECT_EQ(v.text(), "");
}

TEST(Render, HtmlOnlyGivesTextFromHtml) {
  im::message_view v(
      "Content-Type: text/html\r\n\r\n<html><style>p{x:y}</style><p>One &amp; "
      "two</p><p>three</p><script>no()</script></html>");
  EXPECT_EQ(v.text(), "One & two\nthree");
}

TEST(Render, HeadersUnsubscribeReturnPath) {
  im::message_view v(nested);
  auto h = v.headers();
  std::vector<std::string> names;
  for (const auto& [n, vals] : h) names.push_back(n);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  bool multi = false;
  for (const auto& [n, vals] : h)
    if (n == "X-Multi") {
      multi = true;
      EXPECT_EQ(vals, (std::vector<std::string>{"one", "two"}));
    }
  EXPECT_TRUE(multi);
  EXPECT_NE(std::find(names.begin(), names.end(), "Message-Id"), names.end());
  auto u = v.unsubscribe();
  EXPECT_EQ(u.links, (std::vector<std::string>{"mailto:leave@example.com?subject=stop",
                                               "https://example.com/u/1"}));
  EXPECT_EQ(u.header_post, "List-Unsubscribe=One-Click");
  EXPECT_NE(u.errors.find("ftp://x"), std::string::npos);
  EXPECT_EQ(v.return_path(), "bounce@example.com");
  EXPECT_EQ(im::canonical_header_name("mime-VERSION"), "Mime-Version");
}

TEST(Send, ComposesAMessageTheParserReadsBack) {
  auto body = json::parse(R"({
    "From": {"Email": "ann@example.com", "Name": "Ann \"A\" Smith"},
    "To": [{"Email": "bob@example.org", "Name": "Bøb"}], "Cc": [{"Email": "cc@example.org"}],
    "Bcc": ["hidden@example.org"], "ReplyTo": [{"Email": "r@example.org"}],
    "Subject": "Grüße", "Text": "line one\nline two ", "HTML": "<p>hi <img src=\"cid:logo\"></p>",
    "Attachments": [{"Content": "aGVsbG8=", "Filename": "hi.txt"},
                    {"Content": "iVBORw0KGgo=", "Filename": "logo.png", "ContentID": "logo"}],
    "Headers": {"X-Custom": "yes"}, "Tags": ["one", "two"]})");
  hd::composed_message out;
  std::string err;
  ASSERT_TRUE(hd::compose_message(body, std::chrono::system_clock::now(), "test", out, err)) << err;
  EXPECT_EQ(out.mail_from, "ann@example.com");
  EXPECT_EQ(out.rcpt_to,
            (std::vector<std::string>{"bob@example.org", "cc@example.org", "hidden@example.org"}));
  EXPECT_EQ(out.raw.find("hidden@"), std::string::npos);  // Bcc is envelope only
  auto m = inlet::mime::parse(std::string_view(out.raw));
  auto s = inlet::mime::summarize(m);
  EXPECT_EQ(s.subject.value_or(""), "Grüße");
  ASSERT_EQ(s.from.size(), 1u);
  EXPECT_EQ(s.from[0].name, "Ann \"A\" Smith");
  ASSERT_EQ(s.to.size(), 1u);
  EXPECT_EQ(s.to[0].name, "Bøb");
  EXPECT_TRUE(s.message_id.has_value());
  im::message_view v(out.raw);
  EXPECT_EQ(v.text(), "line one\r\nline two ");
  EXPECT_EQ(v.html(), "<p>hi <img src=\"cid:logo\"></p>");
  auto parts = v.parts(false);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[0].is_inline);
  EXPECT_EQ(parts[0].content_id, "logo");
  EXPECT_EQ(parts[1].filename, "hi.txt");
  EXPECT_EQ(v.part_content(parts[1].part_id)->second, "hello");
  EXPECT_NE(out.raw.find("X-Custom: yes\r\n"), std::string::npos);
}

TEST(Send, RefusesWhatWouldBreakTheMessage) {
  auto bad = [](std::string_view b) {
    hd::composed_message out;
    std::string err;
    bool ok = hd::compose_message(json::parse(b), std::chrono::system_clock::now(), "t", out, err);
    EXPECT_FALSE(ok) << b;
    EXPECT_FALSE(err.empty());
  };
  bad(R"({"To": [{"Email": "b@x"}]})");  // no From
  bad(R"({"From": {"Email": "a@x"}})");  // no recipient
  bad(R"({"From": {"Email": "not an address"}, "To": [{"Email": "b@x"}]})");
  bad(R"({"From": {"Email": "a@x"}, "To": [{"Email": "b@x"}], "Subject": "x\r\nBcc: c@x"})");
  bad(R"({"From": {"Email": "a@x"}, "To": [{"Email": "b@x"}], "Headers": {"X": "a\nb"}})");
  bad(R"({"From": {"Email": "a@x"}, "To": [{"Email": "b@x"}], "Headers": {"Content-Type": "x"}})");
  bad(R"({"From": {"Email": "a@x"}, "To": [{"Email": "b@x"}], "Attachments": [{"Content": "@@", "Filename": "f"}]})");
  bad(R"({"From": {"Email": "a@x"}, "To": [{"Email": "b@x"}], "Surprise": 1})");
  bad(R"([1])");
}

TEST(Send, QuotedPrintableIsLineSafe) {
  std::string long_line(200, 'a');
  auto qp = hd::encode_quoted_printable(long_line + " \nx=y\xC3\xA9");
  for (std::size_t at = 0, nl; (nl = qp.find("\r\n", at)) != std::string::npos; at = nl + 2)
    EXPECT_LE(nl - at, 76u);
  EXPECT_NE(qp.find("=20\r\n"), std::string::npos);  // a space before a line break
  EXPECT_NE(qp.find("x=3Dy=C3=A9"), std::string::npos);
  EXPECT_EQ(inlet::mime::decode_quoted_printable(qp), long_line + " \r\nx=y\xC3\xA9");
}

TEST(LinkCheck, ExtractsHttpLinksOnce) {
  auto links = hd::extract_links(
      "<a href=\"https://a.example/x?y=1&amp;z=2\">a</a><img src='http://img.example/i.png'>"
      "<a HREF=https://b.example>b</a><a href=\"mailto:x@y\">m</a><a href=\"#top\">t</a>"
      "<a href=\"https://a.example/x?y=1&amp;z=2\">again</a>",
      "see https://c.example/page. and (https://d.example/p), http://img.example/i.png", 10);
  EXPECT_EQ(links, (std::vector<std::string>{"https://a.example/x?y=1&z=2",
                                             "http://img.example/i.png", "https://b.example",
                                             "https://c.example/page", "https://d.example/p"}));
  EXPECT_EQ(
      hd::extract_links("", "https://1.example https://2.example https://3.example", 2).size(), 2u);
}

TEST(Thumbnail, BlankForNonImagesAndBombs) {
  auto blank = hd::blank_thumbnail();
  ASSERT_GT(blank.size(), 100u);
  EXPECT_EQ(static_cast<unsigned char>(blank[0]), 0xFF);  // a JPEG
  EXPECT_EQ(static_cast<unsigned char>(blank[1]), 0xD8);
  inlet::http::thumbnail_config limits;
  EXPECT_TRUE(hd::make_thumbnail("not an image", limits) == blank);
  // A PNG header claiming 100000 x 100000 pixels: refused before decoding.
  std::string bomb = std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16) +
                     std::string("\x00\x01\x86\xa0\x00\x01\x86\xa0", 8) + std::string(64, '\0');
  EXPECT_TRUE(hd::make_thumbnail(bomb, limits) == blank);
  EXPECT_EQ(jpeg_size(blank), (std::pair{180, 120}));
}

TEST(Thumbnail, CroppedOrPaddedTo180x120) {
  inlet::http::thumbnail_config limits;
  const auto blank = hd::blank_thumbnail();
  for (auto [w, h] :
       {std::pair{300u, 200u}, std::pair{1000u, 50u}, std::pair{10u, 10u}, std::pair{179u, 500u}}) {
    auto png = make_png(w, h);
    auto t = hd::make_thumbnail(png, limits);
    EXPECT_TRUE(t != blank) << w << "x" << h;
    EXPECT_EQ(jpeg_size(t), (std::pair{180, 120})) << w << "x" << h;
  }
  // Within the limits only: the same image past a lower pixel bound is refused.
  limits.max_pixels = 300 * 200 - 1;
  EXPECT_TRUE(hd::make_thumbnail(make_png(300, 200), limits) == blank);
}

TEST(HtmlCheck, FindsFeaturesAndScoresThem) {
  auto out = hd::html_check_json(
      "<!DOCTYPE html><html><head><style>@media (max-width:600px){.a{display:flex}} "
      "p:hover{color:red}</style>"
      "</head><body><div style=\"margin: 1rem; background-image:url(x.webp)\"><video "
      "src=\"v.mp4\"></video>"
      "<p>hi</p></div></body></html>");
  if (!out) GTEST_SKIP() << "built without caniemail data (scripts/fetch-caniemail.sh)";
  auto v = json::parse(*out).as_object();
  auto& total = v["Total"].as_object();
  EXPECT_GT(total["Tests"].as_int64(), 200);
  EXPECT_EQ(total["Nodes"].as_int64(),
            7);  // html head style body div video p; closing tags are not nodes
  std::set<std::string> slugs;
  for (auto& w : v["Warnings"].as_array()) {
    auto& o = w.as_object();
    slugs.insert(std::string(o.at("Slug").as_string()));
    auto& score = o.at("Score").as_object();
    EXPECT_GE(score.at("Found").as_int64(), 1);
    double sum = score.at("Supported").to_number<double>() +
                 score.at("Partial").to_number<double>() +
                 score.at("Unsupported").to_number<double>();
    EXPECT_NEAR(sum, 100.0, 0.05) << o.at("Slug");
    EXPECT_FALSE(o.at("Results").as_array().empty());
  }
  for (auto want : {"css-at-media", "css-display-flex", "css-pseudo-class-hover", "css-unit-rem",
                    "css-margin", "css-background-image", "html-video", "html-doctype",
                    "image-webp", "html-style", "html-div"})
    EXPECT_TRUE(slugs.contains(want)) << want;
  EXPECT_FALSE(slugs.contains("html-form"));
  EXPECT_FALSE(slugs.contains("css-display-grid"));
  EXPECT_FALSE(v["Platforms"].as_object().empty());
}
