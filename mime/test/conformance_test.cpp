// Conformance cases written from the grammar of RFC 5322 (sections 3.3, 3.4 and 4,
// "Obsolete Syntax"), RFC 2045/2047 and RFC 2231: each expected value is what the RFC
// text says the field means, not what this parser happened to produce. Each case is
// also carried in a message and parsed through every fragment split, so the field value
// the header index hands the field parser is checked too.
#include <inlet/mime/fields.hpp>
#include <inlet/mime/message.hpp>

#include <gtest/gtest.h>

#include "split.hpp"

namespace inlet::mime {
namespace {

std::string iso(std::string_view v) {
  auto d = parse_date(v);
  return d ? format_iso8601(*d) : std::string("error");
}

// The raw value of `name` in a one-header message, through every split; every split
// must hand over the same bytes.
template <class F>
void through_splits(const std::string& name, const std::string& value, F&& check) {
  const std::string msg = name + ":" + value + "\r\n\r\nbody\r\n";
  test::for_each_split(msg, [&](const parsed_message& m, const std::string& label) {
    const header_field* h = m.find(name);
    ASSERT_NE(h, nullptr) << label;
    check(m.copy(h->value), label);
  });
}

struct date_case {
  const char* in;
  const char* want;  // UTC, or "error"
};

// RFC 5322 3.3 and 4.3.
constexpr date_case date_cases[] = {
    {" Fri, 21 Nov 1997 09:55:06 -0600", "1997-11-21T15:55:06Z"},
    // month names are case-insensitive (ABNF strings)
    {" fri, 21 nov 1997 09:55:06 -0600", "1997-11-21T15:55:06Z"},
    {" FRI, 21 NOV 1997 09:55:06 -0600", "1997-11-21T15:55:06Z"},
    // a numeric month is no month of the grammar
    {" 21 11 1997 09:55:06 -0600", "error"},
    // 4.3: two-digit years 00-49 + 2000, 50-99 + 1900, three-digit years + 1900
    {" 21 Nov 97 09:55:06 -0600", "1997-11-21T15:55:06Z"},
    {" 21 Nov 49 09:55:06 +0000", "2049-11-21T09:55:06Z"},
    {" 21 Nov 50 09:55:06 +0000", "1950-11-21T09:55:06Z"},
    {" 21 Nov 00 09:55:06 +0000", "2000-11-21T09:55:06Z"},
    {" 21 Nov 103 09:55:06 +0000", "2003-11-21T09:55:06Z"},
    {" 21 Nov 097 09:55:06 +0000", "1997-11-21T09:55:06Z"},
    // 4.3 obs-zone: UT/GMT +0000, EST/EDT ... PST/PDT
    {" 1 Jan 2000 12:00:00 UT", "2000-01-01T12:00:00Z"},
    {" 1 Jan 2000 12:00:00 GMT", "2000-01-01T12:00:00Z"},
    {" 1 Jul 2000 12:00:00 EDT", "2000-07-01T16:00:00Z"},
    {" 1 Jan 2000 12:00:00 EST", "2000-01-01T17:00:00Z"},
    {" 1 Jul 2000 12:00:00 CDT", "2000-07-01T17:00:00Z"},
    {" 1 Jan 2000 12:00:00 CST", "2000-01-01T18:00:00Z"},
    {" 1 Jul 2000 12:00:00 MDT", "2000-07-01T18:00:00Z"},
    {" 1 Jan 2000 12:00:00 MST", "2000-01-01T19:00:00Z"},
    {" 1 Jul 2000 12:00:00 PDT", "2000-07-01T19:00:00Z"},
    {" 1 Jan 2000 12:00:00 PST", "2000-01-01T20:00:00Z"},
    {" 1 Jan 2000 12:00:00 edt", "2000-01-01T16:00:00Z"},
    // military zones other than Z: "SHOULD all be considered equivalent to -0000"
    {" 1 Jan 2000 12:00:00 Z", "2000-01-01T12:00:00Z"},
    {" 1 Jan 2000 12:00:00 A", "2000-01-01T12:00:00Z"},
    {" 1 Jan 2000 12:00:00 M", "2000-01-01T12:00:00Z"},
    {" 1 Jan 2000 12:00:00 N", "2000-01-01T12:00:00Z"},
    {" 1 Jan 2000 12:00:00 Y", "2000-01-01T12:00:00Z"},
    // an unknown alphabetic zone: -0000
    {" 1 Jan 2000 12:00:00 XYZT", "2000-01-01T12:00:00Z"},
    {" 1 Jan 2000 12:00:00 -0000", "2000-01-01T12:00:00Z"},
    {" 1 Jan 2000 12:00:00 +1400", "1999-12-31T22:00:00Z"},
    // 3.3: seconds are optional
    {" Fri, 21 Nov 1997 09:55 -0600", "1997-11-21T15:55:00Z"},
    // CFWS between every token (obs-date, A.6.3), comments nested and escaped
    {" Thu,\r\n 13\r\n  Feb\r\n   1969\r\n 23:32\r\n  -0330 (Newfoundland Time)", "1969-02-14T03:02:00Z"},
    {" (c) Fri, (c) 21 (c) Nov (c) 1997 (c) 09:55:06 (c) -0600 (c)", "1997-11-21T15:55:06Z"},
    {" Fri, 21 Nov 1997 09:55:06 -0600 (a (nested) \\) comment)", "1997-11-21T15:55:06Z"},
    {" Fri , 21 Nov 1997 09 : 55 : 06 -0600", "1997-11-21T15:55:06Z"},
    {" Fri, 21 Nov 1997 09 (h)  :\r\n 55:  (s) 06 -0600", "1997-11-21T15:55:06Z"},
    {" 1 Jan 2000 10: +0000", "error"},
    // a day name that disagrees with the date: the date is what the numbers say
    {" Mon, 21 Nov 1997 09:55:06 -0600", "1997-11-21T15:55:06Z"},
    // no time of day: time-of-day is required
    {" Fri, 21 Nov 1997", "error"},
    {" 21 Nov 1997 -0600", "error"},
    // an unbalanced comment: the rest of the field is a comment; no time is left
    {" Fri, 21 Nov 1997 (09:55:06 -0600", "error"},
    {" Fri, 21 Nov 1997 09:55:06 -0600 (unclosed", "error"},
    {" Fri, 21 Nov 1997 09:55:06 -0600 ((x)", "error"},
    // impossible values
    {" 31 Feb 2002 10:00:00 +0000", "error"},
    {" 1 Jan 2000 24:00:00 +0000", "error"},
    {" 1 Jan 2000 10:60:00 +0000", "error"},
    {" 0 Jan 2000 10:00:00 +0000", "error"},
    {" ", "error"},
    {" garbage", "error"},
    // 3.3: second 60 is a leap second; kept within the minute
    {" Sat, 31 Dec 2005 23:59:60 +0000", "2005-12-31T23:59:59Z"},
};

TEST(conformance, dates) {
  for (const auto& c : date_cases) EXPECT_EQ(iso(c.in), c.want) << "[" << c.in << "]";
}

TEST(conformance, dates_through_every_split) {
  for (const auto& c : date_cases)
    through_splits("Date", c.in, [&](const std::string& v, const std::string& label) {
      ASSERT_EQ(iso(v), c.want) << "[" << c.in << "] " << label;
    });
}

struct address_case {
  const char* in;
  std::vector<mailbox> want;
};

const std::vector<address_case>& address_cases() {
  static const std::vector<address_case> cases = {
      {" John Doe <jdoe@machine.example>", {{"John Doe", "jdoe@machine.example"}}},
      {" jdoe@machine.example", {{"", "jdoe@machine.example"}}},
      // 3.4: group with members, empty group, group then a mailbox
      {" A Group:Ed Jones <c@a.test>,joe@where.test,John <jdoe@one.test>;",
       {{"Ed Jones", "c@a.test"}, {"", "joe@where.test"}, {"John", "jdoe@one.test"}}},
      {" Undisclosed recipients:;", {}},
      {" Undisclosed recipients:;, x@y.test", {{"", "x@y.test"}}},
      {" g: ;, h:a@b.test;", {{"", "a@b.test"}}},
      // quoted-pairs in display names and local parts
      {" \"Joe Q. Public\" <john.q.public@example.com>", {{"Joe Q. Public", "john.q.public@example.com"}}},
      {" \"Giant; \\\"Big\\\" Box\" <sysservices@example.net>",
       {{"Giant; \"Big\" Box", "sysservices@example.net"}}},
      {" \"a\\ b\"@example.net", {{"", "\"a b\"@example.net"}}},
      // comments: not part of the name; a comment after a bare address is no name either
      {" Pete(A nice \\) chap) <pete(his account)@silly.test(his host)>", {{"Pete", "pete@silly.test"}}},
      {" (comment) x@y.test (another)", {{"", "x@y.test"}}},
      // 4.4 obs-route: the route is dropped
      {" <@a.test,@b.test:x@y.test>", {{"", "x@y.test"}}},
      {" Joe <@a.test, ,@b.test:x@y.test>", {{"Joe", "x@y.test"}}},
      // 4.4 obs-local-part / obs-domain with CFWS around dots
      {" john . q . public @ example . com", {{"", "john.q.public@example.com"}}},
      // 4.4 obs-addr-list: empty members and trailing commas
      {" a@b.test, , c@d.test,", {{"", "a@b.test"}, {"", "c@d.test"}}},
      {" ,a@b.test", {{"", "a@b.test"}}},
      // a stray group end after a bare address is not part of it
      {" a@b.test;, c@d.test", {{"", "a@b.test"}, {"", "c@d.test"}}},
      // 3.4.1 domain literal
      {" x@[192.0.2.1]", {{"", "x@[192.0.2.1]"}}},
      {" Joe <x@[IPv6:2001:db8::1]>", {{"Joe", "x@[IPv6:2001:db8::1]"}}},
      // RFC 2047 5: encoded words in a phrase; one inside a quoted string is not an
      // encoded word by the RFC, but it is what senders write and readers decode
      {" =?ISO-8859-1?Q?Andr=E9?= Pirard <PIRARD@vm1.ulg.ac.be>", {{"André Pirard", "PIRARD@vm1.ulg.ac.be"}}},
      {" \"=?ISO-8859-1?Q?Andr=E9?= Pirard\" <PIRARD@vm1.ulg.ac.be>", {{"André Pirard", "PIRARD@vm1.ulg.ac.be"}}},
      // display names in other charsets
      {" =?ISO-8859-2?Q?Ma=B3gorzata?= <m@x.test>", {{"Małgorzata", "m@x.test"}}},
      {" =?ISO-8859-7?B?xOnv493t5/I=?= <d@x.test>", {{"Διογένης", "d@x.test"}}},
      {" =?windows-1251?B?wOvl6vHl6Q==?= <a@x.test>", {{"Алексей", "a@x.test"}}},
      {" =?windows-1252?Q?=93Q=94?= <q@x.test>", {{"\u201cQ\u201d", "q@x.test"}}},
      {" =?KOI8-R?B?8MXU0g==?= <p@x.test>", {{"Петр", "p@x.test"}}},
      {" =?GB2312?B?1cXI/Q==?= <z@x.test>", {{"张三", "z@x.test"}}},
      {" =?Shift_JIS?B?k2OShg==?= <t@x.test>", {{"田中", "t@x.test"}}},
  };
  return cases;
}

std::string show(const std::vector<mailbox>& v) {
  std::string o;
  for (const auto& m : v) o += "{" + m.name + "|" + m.address + "}";
  return o;
}

TEST(conformance, addresses) {
  for (const auto& c : address_cases()) EXPECT_EQ(show(parse_address_list(c.in)), show(c.want)) << "[" << c.in << "]";
}

TEST(conformance, addresses_through_every_split) {
  for (const auto& c : address_cases())
    through_splits("To", c.in, [&](const std::string& v, const std::string& label) {
      ASSERT_EQ(show(parse_address_list(v)), show(c.want)) << "[" << c.in << "] " << label;
    });
}

struct param_case {
  const char* in;
  const char* value;  // the lower-case type or disposition
  std::vector<std::pair<std::string, std::string>> params;  // wanted (name, value); "" name: absent check skipped
};

const std::vector<param_case>& param_cases() {
  static const std::vector<param_case> cases = {
      {" text/plain", "text/plain", {}},
      {" text/plain; charset=us-ascii (Plain text)", "text/plain", {{"charset", "us-ascii"}}},
      {" text/plain; charset=\"us-ascii\"", "text/plain", {{"charset", "us-ascii"}}},
      {" TEXT/PLAIN ; CHARSET = \"US-ASCII\"", "text/plain", {{"charset", "US-ASCII"}}},
      // a parameter without a value, and one with an empty value, do not hide the next
      {" text/plain; format; charset=utf-8", "text/plain", {{"charset", "utf-8"}}},
      {" text/plain; charset=; format=flowed", "text/plain", {{"format", "flowed"}}},
      // a repeated parameter: the first one counts (RFC 2045 5.1 forbids repeats)
      {" text/plain; charset=utf-8; charset=latin1", "text/plain", {{"charset", "utf-8"}}},
      // missing ';' and stray ';'
      {" text/plain;; charset=utf-8;", "text/plain", {{"charset", "utf-8"}}},
      // comments around tokens
      {" (c) multipart (c) / (c) mixed (c) ; (c) boundary (c) = (c) \"b1\" (c)", "multipart/mixed",
       {{"boundary", "b1"}}},
      // RFC 2231 3: continuations; 4: charset and language; 4.1: mixed continuations
      {" message/external-body; access-type=URL;\r\n URL*0=\"ftp://\";\r\n URL*1=\"cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar\"",
       "message/external-body", {{"url", "ftp://cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar"}}},
      {" application/x-stuff;\r\n title*=us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A",
       "application/x-stuff", {{"title", "This is ***fun***"}}},
      {" application/x-stuff;\r\n title*0*=us-ascii'en'This%20is%20even%20more%20;\r\n"
       " title*1*=%2A%2A%2Afun%2A%2A%2A%20;\r\n title*2=\"isn't it!\"",
       "application/x-stuff", {{"title", "This is even more ***fun*** isn't it!"}}},
      // a plain section is taken literally: its '%' is not an escape
      {" a/b; n*0*=utf-8''%41; n*1=%42", "a/b", {{"n", "A%42"}}},
      // unquoted values with specials that are not ';' (lenient, as readers are)
      {" text/plain; name=a/b.txt", "text/plain", {{"name", "a/b.txt"}}},
      // file names in other charsets, RFC 2231 and RFC 2047-in-quotes
      {" attachment; filename*=iso-8859-1''caf%E9.txt", "attachment", {{"filename", "café.txt"}}},
      {" attachment; filename*=iso-8859-5''%BF%E0%D8%D2%D5%E2.txt", "attachment", {{"filename", "Привет.txt"}}},
      {" attachment; filename*=windows-1251''%CF%F0%E8%E2%E5%F2.txt", "attachment", {{"filename", "Привет.txt"}}},
      {" attachment; filename*=koi8-r''%F0%D2%C9%D7%C5%D4.txt", "attachment", {{"filename", "Привет.txt"}}},
      {" attachment; filename*=gb2312''%D6%D0%CE%C4.txt", "attachment", {{"filename", "中文.txt"}}},
      {" attachment; filename*=shift_jis''%93%FA%96%7B.txt", "attachment", {{"filename", "日本.txt"}}},
      {" attachment; filename*0*=windows-1252''%93a; filename*1*=b%94.txt", "attachment",
       {{"filename", "\u201cab\u201d.txt"}}},
      {" attachment; filename=\"=?KOI8-R?B?8MXU0i50eHQ=?=\"", "attachment", {{"filename", "Петр.txt"}}},
  };
  return cases;
}

void check_params(const param_case& c, const std::string& v, const std::string& label) {
  const bool disposition = std::string_view(c.value).find('/') == std::string_view::npos;
  const mime_field f = disposition ? parse_content_disposition(v) : parse_content_type(v);
  EXPECT_EQ(f.value, c.value) << "[" << c.in << "] " << label;
  for (const auto& [n, want] : c.params) {
    const mime_parameter* p = f.find(n);
    ASSERT_NE(p, nullptr) << "[" << c.in << "] " << n << " " << label;
    EXPECT_EQ(p->value, want) << "[" << c.in << "] " << n << " " << label;
  }
}

TEST(conformance, parameters) {
  for (const auto& c : param_cases()) check_params(c, c.in, "direct");
}

TEST(conformance, parameters_through_every_split) {
  for (const auto& c : param_cases()) {
    const bool disposition = std::string_view(c.value).find('/') == std::string_view::npos;
    through_splits(disposition ? "Content-Disposition" : "Content-Type", c.in,
                   [&](const std::string& v, const std::string& label) { check_params(c, v, label); });
  }
}

}  // namespace
}  // namespace inlet::mime
