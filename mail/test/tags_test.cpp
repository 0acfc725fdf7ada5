#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <inlet/mail/summary.hpp>
#include <inlet/mail/tags.hpp>

#include "test_messages.hpp"

namespace {

namespace mail = inlet::mail;
namespace st = inlet::store;

st::new_message received(const std::string& raw) {
  st::new_message m;
  m.raw = raw;
  mail::analyze(mail::thread_parser().parse(m.raw), m.envelope.rcpt_to, m.summary, nullptr);
  return m;
}

std::vector<std::string> own_tags(const std::string& raw, mail::tag_options o = {}) {
  auto m = received(raw);
  std::vector<std::string> out;
  mail::message_tags(mail::thread_parser().parse(m.raw), m.summary, o, out);
  return out;
}

TEST(tags, x_tags_and_plus_addresses) {
  EXPECT_EQ(own_tags(mail::test::plain_message), (std::vector<std::string>{"Alpha", "beta"}));
  EXPECT_EQ(own_tags(mail::test::multipart_message), (std::vector<std::string>{"news"}));
}

TEST(tags, options_turn_each_source_off_and_title_case) {
  mail::tag_options o;
  o.x_tags = false;
  EXPECT_TRUE(own_tags(mail::test::plain_message, o).empty());
  o = {};
  o.plus_addresses = false;
  EXPECT_TRUE(own_tags(mail::test::multipart_message, o).empty());
  o = {};
  o.title_case = true;
  EXPECT_EQ(own_tags(mail::test::plain_message, o), (std::vector<std::string>{"Alpha", "Beta"}));
}

std::vector<std::string> rule_tags(const mail::tag_rules& r, const std::string& raw) {
  std::vector<std::string> out;
  r.apply(received(raw), out);
  return out;
}

TEST(tag_rules, command_line_rules_match_words_in_raw_bytes_and_fields) {
  mail::tag_rules r;
  std::string err;
  ASSERT_TRUE(mail::tag_rules::parse(
      {"figures=figures \"q1,urgent=subject:quarterly\"", "headers=abc.123@example"}, "", r, err))
      << err;
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(rule_tags(r, mail::test::plain_message),
            (std::vector<std::string>{"figures", "q1", "urgent", "headers"}));
  EXPECT_TRUE(rule_tags(r, mail::test::multipart_message).empty());
}

TEST(tag_rules, bad_rules_are_refused_with_a_reason) {
  mail::tag_rules r;
  std::string err;
  EXPECT_FALSE(mail::tag_rules::parse({"no-equals-sign"}, "", r, err));
  EXPECT_NE(err.find("tag=match"), std::string::npos);
  EXPECT_FALSE(mail::tag_rules::parse({"=subject:x"}, "", r, err));
  EXPECT_FALSE(mail::tag_rules::parse({"t=before:notadate"}, "", r, err));
}

TEST(tag_rules, yaml_file_as_mailpit_writes_it) {
  mail::tag_rules r;
  std::string err;
  ASSERT_TRUE(mail::tag_rules::parse_yaml(
      "# tags for the team\n"
      "filters:\n"
      "  - match: \"figures\"   # a comment after a value\n"
      "    tags: \"finance, q1\"\n"
      "  - match: 'from:sender@example.com'\n"
      "    tags: [newsletter, 'ops']\n",
      "tags.yml", r, err))
      << err;
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(rule_tags(r, mail::test::plain_message), (std::vector<std::string>{"finance", "q1"}));
}

TEST(tag_rules, yaml_errors_name_the_file) {
  mail::tag_rules r;
  std::string err;
  EXPECT_FALSE(mail::tag_rules::parse_yaml("filters: [\n", "a.yml", r, err));
  EXPECT_EQ(err.rfind("a.yml: ", 0), 0u) << err;
  EXPECT_FALSE(mail::tag_rules::parse_yaml("rules:\n  - match: x\n", "b.yml", r, err));
  EXPECT_NE(err.find("rules"), std::string::npos);
  EXPECT_FALSE(mail::tag_rules::parse_yaml("filters:\n  - match: x\n    colour: red\n", "c.yml", r,
                                           err));
  EXPECT_FALSE(mail::tag_rules::parse_yaml("filters:\n  - match: x\n", "d.yml", r, err));
  EXPECT_TRUE(mail::tag_rules::parse_yaml("", "e.yml", r, err));
  EXPECT_TRUE(r.empty());
}

TEST(tag_rules, yaml_from_a_file_adds_to_the_command_line_rules) {
  char path[] = "/tmp/inlet-tags-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "filters:\n  - match: figures\n    tags: fromfile\n";
  mail::tag_rules r;
  std::string err;
  ASSERT_TRUE(mail::tag_rules::parse({"cli=figures"}, path, r, err)) << err;
  EXPECT_EQ(rule_tags(r, mail::test::plain_message),
            (std::vector<std::string>{"cli", "fromfile"}));
  std::remove(path);
  EXPECT_FALSE(mail::tag_rules::parse({}, path, r, err));
  EXPECT_NE(err.find("cannot read"), std::string::npos);
}

}  // namespace
