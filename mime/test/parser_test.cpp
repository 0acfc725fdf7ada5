#include "split.hpp"

#include <gtest/gtest.h>

namespace inlet::mime::test {
namespace {

std::string body_of(const parsed_message& m, std::uint32_t p) { return m.copy(m.parts()[p].body); }

// The same structure, whatever the fragmentation; returns the flat parse's description.
std::string check_split_invariant(std::string_view in, const options& opt = {}) {
  const std::string want = describe(parse_pieces({in}, opt));
  for_each_split(in, [&](const parsed_message& m, const std::string& label) {
    ASSERT_EQ(describe(m), want) << label;
  }, opt);
  return want;
}

TEST(parser, simple_headers_and_body) {
  std::string in = read_data("simple.eml");
  check_split_invariant(in);
  parsed_message m = parse(in);
  ASSERT_EQ(m.parts().size(), 1u);
  EXPECT_EQ(m.headers().size(), 6u);
  EXPECT_EQ(m.root().content_type(), "text/plain");
  EXPECT_FALSE(m.root().explicit_type);
  EXPECT_EQ(body_of(m, 0), "Hi everyone.\r\nThis is a simple message.\r\n");
  const header_field* subj = m.find("SUBJECT");
  ASSERT_NE(subj, nullptr);
  EXPECT_EQ(m.copy(subj->value), " =?ISO-8859-1?Q?Caf=E9?= and\r\n =?UTF-8?B?0J/RgNC40LLQtdGC?= folded");
  EXPECT_TRUE(m.defects().empty());
}

TEST(parser, nested_tree) {
  std::string in = read_data("nested.eml");
  check_split_invariant(in);
  parsed_message m = parse(in);
  std::vector<std::string> types;
  for (auto& p : m.parts()) types.emplace_back(p.content_type());
  EXPECT_EQ(types, (std::vector<std::string>{"multipart/mixed", "multipart/alternative", "text/plain",
                                             "text/html", "application/pdf", "message/rfc822",
                                             "multipart/mixed", "text/plain", "image/png"}));
  const part& root = m.root();
  EXPECT_EQ(root.kind, part_kind::multipart);
  EXPECT_EQ(root.child_count, 3u);
  EXPECT_EQ(m.copy(root.preamble), "This is the preamble.");
  EXPECT_EQ(m.copy(root.epilogue), "This is the epilogue.\r\n");
  EXPECT_EQ(m.parts()[1].child_count, 2u);
  EXPECT_EQ(m.parts()[2].encoding, transfer_encoding::quoted_printable);
  EXPECT_EQ(body_of(m, 2), "Gr=FC=DFe aus K=F6ln, caf=E9 =\r\nsoft break.");
  EXPECT_EQ(m.parts()[4].encoding, transfer_encoding::base64);
  EXPECT_EQ(m.parts()[5].kind, part_kind::message);
  EXPECT_EQ(m.parts()[5].child_count, 1u);
  EXPECT_EQ(m.parts()[6].parent, 5u);
  EXPECT_EQ(m.parts()[6].depth, 2u);
  EXPECT_EQ(body_of(m, 7), "default typed part");
  EXPECT_FALSE(m.parts()[7].explicit_type);
  EXPECT_EQ(body_of(m, 8), "iVBORw0KGgo=");
  // The nested message ends where its enclosing part ends: before the outer boundary.
  EXPECT_EQ(m.parts()[5].body.end, m.parts()[6].body.end);
  EXPECT_EQ(m.copy(m.parts()[6].epilogue), "");
  EXPECT_TRUE(m.defects().empty()) << describe(m);
  // Sibling links
  EXPECT_EQ(m.parts()[1].next_sibling, 4u);
  EXPECT_EQ(m.parts()[4].next_sibling, 5u);
  EXPECT_EQ(m.parts()[5].next_sibling, no_index);
}

TEST(parser, broken_message_defects_and_best_structure) {
  std::string in = read_data("broken.eml");
  check_split_invariant(in);
  parsed_message m = parse(in);
  EXPECT_EQ(m.copy(m.unix_from()), "From MAILER-DAEMON Fri Jul  8 12:08:34 2011");
  ASSERT_EQ(m.parts().size(), 3u) << describe(m);
  EXPECT_EQ(m.root().header_count, 3u);
  EXPECT_EQ(m.headers().size(), 6u);
  EXPECT_EQ(m.copy(m.headers()[0].value), " broken@example.com\n\tcontinued-from");
  EXPECT_EQ(body_of(m, 1), "first\n--zzz not a boundary");
  EXPECT_EQ(m.parts()[2].encoding, transfer_encoding::base64);
  EXPECT_EQ(body_of(m, 2), "0NLJ18XU\n");
  std::vector<errc> codes;
  for (auto& d : m.defects()) codes.push_back(d.code);
  EXPECT_EQ(codes, (std::vector<errc>{errc::missing_header_body_separator, errc::close_boundary_not_found}));
  EXPECT_EQ(m.copy(m.root().preamble), "this line is not a header");
}

TEST(parser, digest_defaults_to_message) {
  std::string in = read_data("digest.eml");
  check_split_invariant(in);
  parsed_message m = parse(in);
  ASSERT_EQ(m.parts().size(), 4u) << describe(m);
  EXPECT_EQ(m.parts()[1].content_type(), "message/rfc822");
  EXPECT_EQ(m.parts()[1].kind, part_kind::message);
  EXPECT_EQ(m.parts()[2].content_type(), "text/plain");
  EXPECT_EQ(body_of(m, 2), "body one");
  EXPECT_EQ(m.parts()[3].content_type(), "text/plain");
  EXPECT_EQ(body_of(m, 3), "explicit text");
}

TEST(parser, lf_only_and_no_final_newline) {
  std::string in = "Content-Type: multipart/mixed; boundary=\"a b\"\n\n--a b\nX: 1\n\nbody\n--a b--";
  check_split_invariant(in);
  parsed_message m = parse(in);
  ASSERT_EQ(m.parts().size(), 2u);
  EXPECT_EQ(body_of(m, 1), "body");
  EXPECT_TRUE(m.defects().empty());
}

TEST(parser, boundary_prefix_of_another) {
  // Inner boundary "ab" is a prefix of the outer "abc": exact matching keeps them apart.
  std::string in =
      "Content-Type: multipart/mixed; boundary=abc\r\n\r\n--abc\r\n"
      "Content-Type: multipart/mixed; boundary=ab\r\n\r\n--ab\r\n\r\ninner\r\n--abc\r\n\r\nsecond\r\n--abc--\r\n";
  check_split_invariant(in);
  parsed_message m = parse(in);
  ASSERT_EQ(m.parts().size(), 4u) << describe(m);
  EXPECT_EQ(body_of(m, 2), "inner");
  EXPECT_EQ(body_of(m, 3), "second");
  EXPECT_EQ(m.parts()[3].parent, 0u);
  ASSERT_EQ(m.defects().size(), 1u);  // the inner multipart never closed
  EXPECT_EQ(m.defects()[0].code, errc::close_boundary_not_found);
}

TEST(parser, rfc2231_boundary_and_repeated_delimiters) {
  std::string in =
      "Content-Type: multipart/signed;\r\n\tboundary*=\"ansi-x3.4-1968''Ee%51f\"\r\n\r\n"
      "--EeQf\r\n\r\none\r\n--EeQf\r\n--EeQf\r\n\r\ntwo\r\n--EeQf--\r\n";
  check_split_invariant(in);
  parsed_message m = parse(in);
  ASSERT_EQ(m.parts().size(), 4u) << describe(m);
  EXPECT_EQ(body_of(m, 1), "one");
  EXPECT_EQ(body_of(m, 2), "");  // an empty body part between two delimiters (RFC 2046)
  EXPECT_EQ(body_of(m, 3), "two");
  EXPECT_TRUE(m.defects().empty());
}

TEST(parser, multipart_without_boundary_or_start) {
  parsed_message m = parse("Content-Type: multipart/mixed\r\n\r\n--x\r\nbody\r\n");
  EXPECT_EQ(m.parts().size(), 1u);
  EXPECT_EQ(m.root().kind, part_kind::leaf);
  ASSERT_EQ(m.defects().size(), 1u);
  EXPECT_EQ(m.defects()[0].code, errc::no_boundary_in_multipart);

  std::string in = "Content-Type: multipart/mixed; boundary=q\r\n\r\nno boundary here\r\n";
  check_split_invariant(in);
  m = parse(in);
  EXPECT_EQ(m.parts().size(), 1u);
  ASSERT_EQ(m.defects().size(), 1u);
  EXPECT_EQ(m.defects()[0].code, errc::start_boundary_not_found);
  EXPECT_EQ(m.copy(m.root().preamble), "no boundary here\r\n");
}

TEST(parser, headers_only_and_empty) {
  for (std::string in : {std::string(""), std::string("Subject: x"), std::string("Subject: x\r\n"),
                         std::string("\r\n"), std::string(" leading continuation\r\nA: b\r\n\r\nz")}) {
    check_split_invariant(in);
    parsed_message m = parse(in);
    ASSERT_EQ(m.parts().size(), 1u);
    EXPECT_EQ(m.root().body.end, in.size());
  }
  parsed_message m = parse(" leading continuation\r\nA: b\r\n\r\nz");
  ASSERT_EQ(m.defects().size(), 1u);
  EXPECT_EQ(m.defects()[0].code, errc::first_header_line_is_continuation);
  EXPECT_EQ(m.headers().size(), 1u);
}

TEST(parser, encoded_message_rfc822_is_a_leaf) {
  parsed_message m = parse("Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\nU3ViamVjdDogeA==\r\n");
  EXPECT_EQ(m.parts().size(), 1u);
  EXPECT_EQ(m.root().kind, part_kind::leaf);
}

TEST(parser, limits) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "Content-Type: multipart/mixed; boundary=b" + std::to_string(i) + "\r\n\r\n--b" + std::to_string(i) + "\r\n";
  deep += "\r\nleaf\r\n";
  options opt;
  opt.max_depth = 10;
  parsed_message m = parse(deep, opt);
  EXPECT_EQ(m.parts().size(), 11u);
  bool depth_defect = false;
  for (auto& d : m.defects()) depth_defect |= d.code == errc::depth_limit;
  EXPECT_TRUE(depth_defect);

  std::string many = "Content-Type: multipart/mixed; boundary=b\r\n\r\n";
  for (int i = 0; i < 50; ++i) many += "--b\r\n\r\npart\r\n";
  opt = {};
  opt.max_parts = 20;
  m = parse(many, opt);
  EXPECT_EQ(m.parts().size(), 20u);
  opt = {};
  opt.max_headers = 2;
  m = parse("A: 1\r\nB: 2\r\nC: 3\r\n\r\n", opt);
  EXPECT_EQ(m.headers().size(), 2u);
  ASSERT_FALSE(m.defects().empty());
  EXPECT_EQ(m.defects()[0].code, errc::header_limit);
  opt = {};
  opt.max_line_length = 10;
  m = parse("Subject: a long subject line\r\n\r\n", opt);
  ASSERT_FALSE(m.defects().empty());
  EXPECT_EQ(m.defects()[0].code, errc::line_too_long);
}

TEST(parser, parser_reuse_and_release) {
  parser p;
  std::string a = read_data("nested.eml"), b = read_data("simple.eml");
  const std::string da = describe(p.parse(a));
  const std::string db = describe(p.parse(b));
  EXPECT_EQ(describe(p.parse(a)), da);
  parsed_message r = p.release();
  EXPECT_EQ(describe(r), da);
  EXPECT_EQ(describe(p.parse(b)), db);
}

TEST(chunked_view, view_and_for_each) {
  std::string a = "hello ", b = "chunked ", c = "world";
  std::vector<std::string_view> pieces{a, b, c};
  chunked_view v{std::span<const std::string_view>(pieces)};
  EXPECT_EQ(v.size(), 19u);
  std::string scratch;
  EXPECT_EQ(v.view({0, 5}, scratch), "hello");
  EXPECT_TRUE(scratch.empty());  // in place
  EXPECT_EQ(v.view({3, 16}, scratch), "lo chunked wo");
  EXPECT_EQ(v.copy({0, 19}), "hello chunked world");
  EXPECT_EQ(v.at(14), 'w');
  EXPECT_EQ(v.view({10, 100}, scratch), "ked world");
}

}  // namespace
}  // namespace inlet::mime::test

namespace inlet::mime::test {
namespace {

// CR CR LF ending a line of the message's own header block (some mailers write it): the
// parser says so, and the value stops before both CRs, however the input is split. In a
// nested part's header, or as a body line, it is not the message header's.
TEST(parser, cr_cr_lf_in_the_message_header) {
  const std::string bare =
      "From: a@example.org\r\r\nSubject: bare cr\r\r\nContent-Type: multipart/mixed; "
      "boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\r\n\r\nx\r\r\n--b--\r\n";
  check_split_invariant(bare);
  for_each_split(bare, [&](const parsed_message& m, const std::string& label) {
    EXPECT_TRUE(m.cr_cr_lf_in_header()) << label;
    const header_field* s = m.find("subject");
    ASSERT_NE(s, nullptr) << label;
    std::string scratch;
    EXPECT_EQ(m.view(s->value, scratch), " bare cr") << label;
  });
  const std::string nested_only =
      "Subject: fine\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
      "Content-Type: text/plain\r\r\n\r\nx\r\r\n--b--\r\n";
  for_each_split(nested_only, [&](const parsed_message& m, const std::string& label) {
    EXPECT_FALSE(m.cr_cr_lf_in_header()) << label;
  });
  const std::string in_body = "Subject: a\r\n\r\nbody\r\r\n";
  EXPECT_FALSE(parse(in_body).cr_cr_lf_in_header());
}

}  // namespace
}  // namespace inlet::mime::test
