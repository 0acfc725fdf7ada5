// html_to_text and body_text: the words a reader and a search see in a body. body_text
// runs over every fragment split of each message (a part read in place across pieces,
// a decoder fed across them).
#include <gtest/gtest.h>

#include <inlet/mime/text.hpp>

#include "split.hpp"

namespace inlet::mime::test {
namespace {

TEST(html_to_text, drops_scripts_styles_comments) {
  EXPECT_EQ(html_to_text("<div>a<script>b()</script><!-- c --><style>d{}</style>e</div>"), "a e");
}

TEST(html_to_text, block_ends_are_line_breaks_and_blanks_collapse) {
  EXPECT_EQ(html_to_text("<p>One  <b>two</b></p>\r\n<P>three<BR>four</p><p></p><p></p><p>five</p>"),
            "One two\n\nthree\nfour\n\nfive");  // the source line break counts
  EXPECT_EQ(html_to_text("  <div> lead </div>  "), "lead");
  // Tabs and form feeds are white space too: collapsed, never left at an end.
  EXPECT_EQ(html_to_text("\tone\t\ttwo \t\r\nthree\f"), "one two\nthree");
}

TEST(html_to_text, entities_named_and_numeric) {
  EXPECT_EQ(html_to_text("a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&#39; f&nbsp;g &copy; &reg;"),
            "a&b <c> \"d\" 'e' f g \xC2\xA9 \xC2\xAE");
  EXPECT_EQ(html_to_text("caf&#233; &#x20AC; &#X41;"), "caf\xC3\xA9 \xE2\x82\xAC A");
  // Not entities: kept as text.
  EXPECT_EQ(html_to_text("AT&T &unknown; &#; &#xZZ; &#-1; a & b"),
            "AT&T &unknown; &#; &#xZZ; &#-1; a & b");
  // Code points a text cannot hold become U+FFFD.
  EXPECT_EQ(html_to_text("&#0;&#xD800;&#x110000;"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(html_to_text, unterminated_markup_ends_the_text) {
  EXPECT_EQ(html_to_text("a <b"), "a");
  EXPECT_EQ(html_to_text("a <!-- open"), "a");
  EXPECT_EQ(html_to_text("a<script>x()"), "a");
  EXPECT_EQ(html_to_text(""), "");
}

// body_text of every split of `in` equals `want`.
void expect_body_text(std::string_view in, std::size_t limit, const std::string& want) {
  for_each_split(in, [&](const parsed_message& m, const std::string& label) {
    std::string scratch;
    ASSERT_EQ(std::string(body_text(m, limit, scratch)), want) << label;
  });
}

TEST(body_text, plain_part_in_place) {
  expect_body_text("Subject: s\r\n\r\nHello  there,\r\nthe figures are in.\r\n", 8192,
                   "Hello  there,\r\nthe figures are in.\r\n");
}

TEST(body_text, first_plain_part_wins_over_html_and_attachments) {
  const std::string in =
      "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
      "--b\r\nContent-Type: text/plain; name=notes.txt\r\nContent-Disposition: attachment\r\n\r\n"
      "attached words\r\n"
      "--b\r\nContent-Type: multipart/alternative; boundary=c\r\n\r\n"
      "--c\r\nContent-Type: text/html\r\n\r\n<p>html words</p>\r\n"
      "--c\r\nContent-Type: text/plain; charset=iso-8859-1\r\n"
      "Content-Transfer-Encoding: quoted-printable\r\n\r\ncaf=E9 menu\r\n"
      "--c--\r\n--b--\r\n";
  expect_body_text(in, 8192, "caf\xC3\xA9 menu");
}

TEST(body_text, html_only_as_words) {
  expect_body_text(
      "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
      "PHA+VmlzaWJsZSA8Yj53b3JkczwvYj48L3A+PHNjcmlwdD5oaWRkZW4oKTwvc2NyaXB0Pg==\r\n",
      8192, "Visible words");
}

TEST(body_text, bounded_at_a_character_boundary) {
  // "é" is two bytes: a limit inside it cuts before it, in place and decoded alike.
  expect_body_text("Content-Type: text/plain; charset=utf-8\r\n\r\nab\xC3\xA9z\r\n", 3, "ab");
  expect_body_text("Content-Type: text/plain; charset=utf-8\r\n"
                   "Content-Transfer-Encoding: quoted-printable\r\n\r\nab=C3=A9z\r\n",
                   3, "ab");
  expect_body_text("Content-Type: text/plain\r\n\r\nabcdef\r\n", 4, "abcd");
}

TEST(body_text, decodes_only_about_the_limit) {
  // A 1 MB base64 body: the text is bounded however long the part.
  std::string in = "Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n";
  for (int i = 0; i < 20000; ++i) in += "d29yZCB3b3JkIHdvcmQgd29yZCB3b3JkIHdvcmQgd29yZCB3b3Jk\r\n";
  std::string scratch;
  const auto m = parse(in);
  const auto t = body_text(m, 100, scratch);
  EXPECT_EQ(t.size(), 100u);
  EXPECT_EQ(t.substr(0, 15), "word word word ");
  EXPECT_LT(scratch.capacity(), 4096u);
}

TEST(body_text, none_without_a_text_part) {
  expect_body_text("Content-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBO\r\n",
                   8192, "");
  expect_body_text("Subject: empty\r\n\r\n", 8192, "");
}

}  // namespace
}  // namespace inlet::mime::test
