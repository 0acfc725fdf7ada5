#include <gtest/gtest.h>

#include <inlet/mime/fields.hpp>

namespace inlet::mime {
namespace {

std::vector<mailbox> A(std::string_view s) {
  return parse_address_list(s);
}

TEST(addresses, rfc5322_appendix_a) {
  EXPECT_EQ(A(" \"Joe Q. Public\" <john.q.public@example.com>"),
            (std::vector<mailbox>{{"Joe Q. Public", "john.q.public@example.com"}}));
  EXPECT_EQ(A("Mary Smith <mary@x.test>, jdoe@example.org, Who? <one@y.test>"),
            (std::vector<mailbox>{
                {"Mary Smith", "mary@x.test"}, {"", "jdoe@example.org"}, {"Who?", "one@y.test"}}));
  EXPECT_EQ(A("<boss@nil.test>, \"Giant; \\\"Big\\\" Box\" <sysservices@example.net>"),
            (std::vector<mailbox>{{"", "boss@nil.test"},
                                  {"Giant; \"Big\" Box", "sysservices@example.net"}}));
  // Groups: members flattened, empty groups give nothing.
  EXPECT_EQ(A("A Group:Ed Jones <c@a.test>,joe@where.test,John <jdoe@one.test>;, x@y.test"),
            (std::vector<mailbox>{{"Ed Jones", "c@a.test"},
                                  {"", "joe@where.test"},
                                  {"John", "jdoe@one.test"},
                                  {"", "x@y.test"}}));
  EXPECT_TRUE(A("Undisclosed recipients:;").empty());
  EXPECT_EQ(A("Undisclosed-Recipient:;@example.net, x@y.test"),
            (std::vector<mailbox>{{"", "x@y.test"}}));
  // Comments and folding (A.5)
  EXPECT_EQ(A("Pete(A nice \\) chap) <pete(his account)@silly.test(his host)>"),
            (std::vector<mailbox>{{"Pete", "pete@silly.test"}}));
  EXPECT_EQ(A("\r\n (Comment) john@example.com (John Doe)"),
            (std::vector<mailbox>{{"", "john@example.com"}}));
}

TEST(addresses, obsolete_and_international) {
  // obs-route and obs-local-part spacing
  EXPECT_EQ(A("Joe Q. Public <@machine.tld,@other.tld:john.q.public@example.com>"),
            (std::vector<mailbox>{{"Joe Q. Public", "john.q.public@example.com"}}));
  EXPECT_EQ(A("john . doe @ example . com"), (std::vector<mailbox>{{"", "john.doe@example.com"}}));
  EXPECT_EQ(A("<Undisclosed Recipients@example.com>"),
            (std::vector<mailbox>{{"", "\"Undisclosed Recipients\"@example.com"}}));
  EXPECT_EQ(A("Undisclosed Recipients@example.com"),
            (std::vector<mailbox>{{"", "\"Undisclosed Recipients\"@example.com"}}));
  // RFC 6532 UTF-8 and RFC 2047 display names
  EXPECT_EQ(A("Jöran <jöran@exämple.test>"),
            (std::vector<mailbox>{{"Jöran", "jöran@exämple.test"}}));
  EXPECT_EQ(A("=?ISO-8859-1?Q?Keld_J=F8rn?= =?ISO-8859-1?Q?_Simonsen?= <keld@dkuug.dk>"),
            (std::vector<mailbox>{{"Keld Jørn Simonsen", "keld@dkuug.dk"}}));
  EXPECT_EQ(A("\"quoted local\"@example.com"),
            (std::vector<mailbox>{{"", "\"quoted local\"@example.com"}}));
  EXPECT_EQ(A("\"plain\"@example.com"), (std::vector<mailbox>{{"", "plain@example.com"}}));
}

TEST(addresses, garbage_never_fails) {
  bool defect = false;
  auto r = parse_address_list("\"unterminated <a@b", &defect);
  EXPECT_TRUE(defect);
  r = parse_address_list("<<<>>>,,,;;;:::@@@", &defect);
  r = parse_address_list("a@b <c@d> junk", &defect);
  // Found by fuzz_mime_tree: a stray ']' once stopped the scanner from advancing.
  EXPECT_EQ(parse_address_list(" A]lice <alice@example.com>"),
            (std::vector<mailbox>{{"Alice", "alice@example.com"}}));
  EXPECT_EQ(A("x]y@z"), (std::vector<mailbox>{{"", "x]y@z"}}));
  EXPECT_TRUE(parse_address_list("").empty());
  EXPECT_EQ(A("<>"), (std::vector<mailbox>{{"", ""}}));
}

// Keeping the first k addresses gives the first k of the whole parse, and the total is
// the whole parse's size, whatever k is: groups, quoted commas, comments, encoded words.
TEST(addresses, keep_first_and_count_the_rest) {
  std::string many;
  static constexpr const char* heads[] = {"=?UTF-8?B?w6k=?= <e", "\"a, b\" <q", "g:m", "bare.u",
                                          "w"};
  static constexpr const char* tails[] = {"@x.test>, ", "@x.test>, ", "@x.test;, ", "@x.test , ",
                                          " x@y (c), "};
  for (int i = 0; i < 300; ++i) many += heads[i % 5] + std::to_string(i) + tails[i % 5];
  const std::string_view inputs[] = {
      "Mary Smith <mary@x.test>, jdoe@example.org, Who? <one@y.test>",
      "A Group:Ed Jones <c@a.test>,joe@where.test,John <jdoe@one.test>;, x@y.test",
      "Pete(A nice \\) chap) <pete(his account)@silly.test(his host)>, \"x,y\" <z@w>",
      "=?ISO-8859-1?Q?Keld_J=F8rn?= <keld@dkuug.dk>, Undisclosed recipients:;, <>", many};
  for (std::string_view in : inputs) {
    const std::vector<mailbox> whole = A(in);
    for (std::size_t keep = 0; keep <= whole.size() + 1; ++keep) {
      std::size_t total = 0;
      const std::vector<mailbox> kept = parse_address_list(in, keep, &total);
      const std::size_t n = std::min(keep, whole.size());
      ASSERT_EQ(kept, std::vector<mailbox>(whole.begin(), whole.begin() + n))
          << in << " keep " << keep;
      ASSERT_EQ(total, whole.size()) << in << " keep " << keep;
    }
  }
  EXPECT_EQ(A(many).size(), 300u);
  // The forms counted by the quick scan, and ones that only look like them (a trailing
  // comment or junk, a comment inside the brackets, an unterminated quote, a group).
  for (std::string_view in :
       {"a@b, c.d@e, f, g@h", "a@b, c d@e, f@g (x), h@i j, k@l;", "a@b,,c@d,",
        "\"a, b\" <x@y>, c, \"\" <>, d", "n <a@b> junk, d, e <f@g>x, h", "x <a(b)@c>, d <e>",
        "<a\"q,\"@b>, c, \"unterminated, <d@e>", "a@b <c@d>, w \"q\" v <e@f> , g:h;, i"}) {
    for (std::size_t keep = 0; keep < 3; ++keep) {
      std::size_t total = 0;
      parse_address_list(in, keep, &total);
      EXPECT_EQ(total, A(in).size()) << in << " keep " << keep;
    }
  }
}

// The count past `keep` for the forms the quick scan leaves (comments, encoded words,
// groups, domain literals, stray specials) agrees with the whole parse, in lists long
// enough that most of each is only counted.
TEST(addresses, count_agrees_for_every_form) {
  static constexpr const char* forms[] = {
      "u@h.test (User, the first)",            // a comment holding a comma
      "=?utf-8?q?a,b?= <e@x.test>",            // an encoded word holding a comma
      "x=?utf-8?q?a,b?=",                      // not a token start: the comma ends it
      "a.=?utf-8?q?c,d?=@x.test",              // after a dot: a token start again
      "=?x@y?q?z?= : m@x.test;",               // '@' inside an encoded word: no group
      "\"q@r\" : s@x.test",                    // '@' in a quoted string: no group
      "[1.2.3.4] : t@x.test",                  // a domain literal
      "[a@b] : t@x.test",                      // '@' in a domain literal
      "g: a@x.test, (c) b@x.test;",            // a group of two
      "g:;",                                   // an empty group
      "h: a@x.test; junk",                     // junk after a group
      "p(nested (comment\\) here)) q@x.test",  // nested and escaped comment
      "=?utf-8?b?",                            // an unfinished encoded word
      "=?utf-8?q?a b?= c@d",                   // a space: not an encoded word
      "\"open, quote",                         // an unterminated quote
      "a]b@x.test",                            // a stray ']'
      "x <a@b> trailing, junk",                // junk after '>'
      ";",                                     // a stray ';' at the top level
      "k@x.test ; l@x.test",                   // ';' inside an address
      "(only a comment)",                      // nothing: not counted
      "x@y.test\t(t) ==?utf-8?q?z?=",          // '=' then an encoded word
  };
  for (std::size_t f = 0; f < std::size(forms); ++f) {
    std::string in;
    for (int i = 0; i < 40; ++i) {
      in += forms[(f + static_cast<std::size_t>(i)) % std::size(forms)];
      in += i % 3 ? ", " : ",";
    }
    const std::size_t whole = A(in).size();
    for (std::size_t keep : {std::size_t{0}, std::size_t{1}, std::size_t{7}, whole / 2}) {
      std::size_t total = 0;
      parse_address_list(in, keep, &total);
      ASSERT_EQ(total, whole) << in << " keep " << keep;
    }
  }
  for (const char* in : forms) {
    std::size_t total = 0;
    parse_address_list(in, 0, &total);
    EXPECT_EQ(total, A(in).size()) << in;
  }
}

// An encoded word's text is at most 2,000 bytes; past that it is plain text.
TEST(addresses, encoded_word_length_is_bounded) {
  const std::string ok = "=?us-ascii?q?" + std::string(2000, 'a') + "?= <a@b.test>";
  const std::string over = "=?us-ascii?q?" + std::string(2001, 'a') + "?= <a@b.test>";
  ASSERT_EQ(A(ok).size(), 1u);
  EXPECT_EQ(A(ok)[0].name, std::string(2000, 'a'));
  ASSERT_EQ(A(over).size(), 1u);
  EXPECT_EQ(A(over)[0].name.substr(0, 13), "=?us-ascii?q?");
  EXPECT_EQ(decode_unstructured(ok.substr(0, ok.size() - 11)), std::string(2000, 'a'));
}

TEST(dates, rfc5322_and_obsolete) {
  auto iso = [](std::string_view s) {
    auto d = parse_date(s);
    return d ? format_iso8601(*d) : std::string("null");
  };
  EXPECT_EQ(iso("Fri, 21 Nov 1997 09:55:06 -0600"), "1997-11-21T15:55:06Z");
  EXPECT_EQ(iso("Tue, 1 Jul 2003 10:52:37 +0200"), "2003-07-01T08:52:37Z");
  EXPECT_EQ(iso("Thu, 13 Feb 1969 23:32:54 -0330"), "1969-02-14T03:02:54Z");
  EXPECT_EQ(iso("Thu,\r\n      13\r\n        Feb\r\n          1969\r\n      23:32\r\n              "
                " -0330 (Newfoundland Time)"),
            "1969-02-14T03:02:00Z");
  EXPECT_EQ(iso("21 Nov 97 09:55:06 GMT"), "1997-11-21T09:55:06Z");
  EXPECT_EQ(iso("Wed, 21 Aug 2002 11:46:03 EDT"), "2002-08-21T15:46:03Z");
  EXPECT_EQ(iso("Wed, 21 Aug 02 11:46:03 PST"), "2002-08-21T19:46:03Z");
  EXPECT_EQ(iso("Sat, 31 Dec 2005 23:59:60 Z"), "2005-12-31T23:59:59Z");
  EXPECT_EQ(iso("1 Jan 2000 12:00:00 A"), "2000-01-01T12:00:00Z");  // military: -0000
  EXPECT_EQ(iso("Mon, 02 Sep 2002 15:06:41 +0100 (IST)"), "2002-09-02T14:06:41Z");
  EXPECT_EQ(iso("21-Aug-2002 11:46:03 +0000"), "2002-08-21T11:46:03Z");
  EXPECT_EQ(iso("Tue, 06 Aug 2002 06:50:21 PM -0400"), "2002-08-06T22:50:21Z");
  EXPECT_EQ(iso("Tue, 06 Aug 2002 12:10:00 AM +0000"), "2002-08-06T00:10:00Z");
  EXPECT_EQ(iso("Fri, 02 Aug 2002 23:37:59 0530"), "2002-08-02T18:07:59Z");
  EXPECT_EQ(iso("1 Jan 2000 9:5:7 +0000"), "2000-01-01T09:05:07Z");
  EXPECT_EQ(iso("1 Jan 2000 10: +0000"), "null");            // one number before the colon
  EXPECT_EQ(iso("1 Jan 2000 1234567890:00 +0000"), "null");  // hour out of range
  EXPECT_EQ(iso("1 Jan 2000 10:61 +0000"), "null");
  EXPECT_EQ(iso("not a date"), "null");
  EXPECT_EQ(iso("31 Feb 2002 10:00:00 +0000"), "null");
  EXPECT_EQ(iso(""), "null");
  // Past the parser's inline room (128 bytes, 24 tokens): the same answers.
  std::string many = "21-Aug-2002 11:46:03 +0000";
  for (int i = 0; i < 40; ++i) many += " x";
  EXPECT_EQ(iso(many), "2002-08-21T11:46:03Z");
  EXPECT_EQ(iso("1 Jan 2000 12:00:00 +0000 (" + std::string(300, 'c') + ")"),
            "2000-01-01T12:00:00Z");
}

TEST(message_ids, single_and_lists) {
  EXPECT_EQ(parse_message_id(" <1234@local.machine.example>"), "1234@local.machine.example");
  EXPECT_EQ(parse_message_id("<abc\r\n @def>"), "abc@def");
  EXPECT_EQ(parse_message_id("bare@id"), "bare@id");
  EXPECT_EQ(parse_message_id("PM2000 11:12:45 AM"), "PM200011:12:45AM");
  EXPECT_EQ(parse_message_id("  "), std::nullopt);
  EXPECT_EQ(parse_message_id_list("<a@b> (comment) <c@d>\r\n <e@f>"),
            (std::vector<std::string>{"a@b", "c@d", "e@f"}));
}

TEST(unstructured, encoded_words) {
  EXPECT_EQ(
      decode_unstructured(" =?ISO-8859-1?Q?Caf=E9?= and\r\n =?UTF-8?B?0J/RgNC40LLQtdGC?= folded"),
      "Café and Привет folded");
  EXPECT_EQ(decode_unstructured("=?ISO-8859-1?Q?a?= =?ISO-8859-1?Q?b?="), "ab");
  EXPECT_EQ(decode_unstructured("=?ISO-8859-1?Q?a?=  x  =?ISO-8859-1?Q?b?="), "a  x  b");
  // A UTF-8 character split over two encoded words is joined before conversion.
  EXPECT_EQ(decode_unstructured("=?utf-8?B?w6k=?= =?utf-8?Q?=C3?= =?utf-8?Q?=A9?="), "éé");
  EXPECT_EQ(decode_unstructured("=?utf-8*en?q?hello_world?="), "hello world");
  EXPECT_EQ(decode_unstructured("prefix=?utf-8?q?glued?=suffix"), "prefixgluedsuffix");
  EXPECT_EQ(decode_unstructured("=?bogus?x?nope?= =?utf-8?q?"), "=?bogus?x?nope?= =?utf-8?q?");
  EXPECT_EQ(decode_unstructured("=?koi8-r?b?0NLJ18XU?="), "привет");
  EXPECT_EQ(decode_unstructured("raw \xff byte"), "raw \xEF\xBF\xBD byte");
  EXPECT_EQ(unfold(" a\r\n b\r\n\tc "), "a b\tc");
}

TEST(mime_fields, content_type_and_rfc2231) {
  mime_field f = parse_content_type(" Text/HTML (comment) ; charset = \"UTF-8\"; name=report.html");
  EXPECT_EQ(f.value, "text/html");
  ASSERT_NE(f.find("charset"), nullptr);
  EXPECT_EQ(f.find("charset")->value, "UTF-8");
  EXPECT_EQ(f.find("NAME")->value, "report.html");
  f = parse_content_type(
      "application/x-stuff;\r\n title*0*=us-ascii'en'This%20is%20even%20more%20;\r\n"
      " title*1*=%2A%2A%2Afun%2A%2A%2A%20;\r\n title*2=\"isn't it!\"");
  ASSERT_NE(f.find("title"), nullptr);
  EXPECT_EQ(f.find("title")->value, "This is even more ***fun*** isn't it!");
  EXPECT_EQ(f.find("title")->charset, "us-ascii");
  EXPECT_EQ(f.find("title")->language, "en");
  // Sections out of order are put in order.
  f = parse_content_type("a/b; n*1=\"B\"; n*0=\"A\"");
  EXPECT_EQ(f.find("n")->value, "AB");
  f = parse_content_type("a/b; name*=iso-8859-1''caf%E9.txt");
  EXPECT_EQ(f.find("name")->value, "café.txt");
  f = parse_content_type("a/b; name=\"=?utf-8?B?w6kudHh0?=\"");
  EXPECT_EQ(f.find("name")->value, "é.txt");
  f = parse_content_type("garbage");
  EXPECT_EQ(f.value, "");
  f = parse_content_disposition("ATTACHMENT; filename=\"a \\\"b\\\".txt\"; size=42");
  EXPECT_EQ(f.value, "attachment");
  EXPECT_EQ(f.find("filename")->value, "a \"b\".txt");
  EXPECT_EQ(f.find("size")->value, "42");
}

// The canonical form is read by a shortcut; a trailing comment sends the same date through
// the general reader. Both must agree, on valid and on impossible dates.
TEST(dates, canonical_form_agrees_with_general_reader) {
  for (std::string_view d :
       {"Thu, 01 Jan 2026 00:00:00 +0000", "Fri, 21 Nov 1997 09:55:06 -0600",
        "1 Jul 2003 10:52:37 +0200", "sun, 9 feb 1969 23:32:54 -0330",
        "Sat, 31 Dec 2005 23:59:60 +0000", "Mon, 31 Feb 2005 10:00:00 +0000",
        "Tue, 29 Feb 2000 10:00:00 +1400", "Wed, 00 Jan 2000 10:00:00 +0000",
        "Thu, 15 Mar 2001 24:00:00 +0000", "Jan, 01 Feb 2026 00:00:00 +0000",
        "Thu, 01 Xyz 2026 00:00:00 +0000", "Thu, 01 Jan 2026 00:00:00 +9999"}) {
    const std::string general = std::string(d) + " (c)";
    auto a = parse_date(d), b = parse_date(general);
    EXPECT_EQ(a.has_value(), b.has_value()) << d;
    if (a && b) {
      EXPECT_EQ(*a, *b) << d;
    }
  }
  EXPECT_EQ(format_iso8601(*parse_date("Thu, 01 Jan 2026 01:02:03 -0130")), "2026-01-01T02:32:03Z");
  EXPECT_FALSE(parse_date("Mon, 31 Feb 2005 10:00:00 +0000"));
}

TEST(received, clauses_and_date) {
  received_field r = parse_received(
      "from mail.example.org (mail.example.org [192.0.2.1])\r\n\tby mx.example.com (Postfix) with "
      "ESMTPS id 4ABC\r\n"
      "\tfor <user@example.com>; Wed, 21 Aug 2002 11:46:03 -0400 (EDT)");
  EXPECT_EQ(r.from, "mail.example.org");
  EXPECT_EQ(r.by, "mx.example.com");
  EXPECT_EQ(r.with, "ESMTPS");
  EXPECT_EQ(r.id, "4ABC");
  EXPECT_EQ(r.for_, "<user@example.com>");
  ASSERT_TRUE(r.date);
  EXPECT_EQ(format_iso8601(*r.date), "2002-08-21T15:46:03Z");
}

}  // namespace
}  // namespace inlet::mime
