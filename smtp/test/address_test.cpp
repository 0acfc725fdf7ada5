#include "address.hpp"

#include <gtest/gtest.h>

using inlet::smtp::detail::parse_path;
using inlet::smtp::detail::parsed_path;

TEST(address, plain_and_null) {
  parsed_path p;
  ASSERT_TRUE(parse_path("<user@example.test>", p));
  EXPECT_EQ(p.mailbox, "user@example.test");
  EXPECT_EQ(p.local, "user");
  EXPECT_EQ(p.domain, "example.test");
  EXPECT_TRUE(p.has_domain);
  ASSERT_TRUE(parse_path("<>", p));
  EXPECT_TRUE(p.null_path);
}

TEST(address, params_and_unbracketed) {
  parsed_path p;
  ASSERT_TRUE(parse_path("<a@b.test>  SIZE=10 BODY=8BITMIME", p));
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_EQ(p.params[0], "SIZE=10");
  EXPECT_EQ(p.params[1], "BODY=8BITMIME");
  ASSERT_TRUE(parse_path("a@b.test SIZE=1", p));
  EXPECT_EQ(p.mailbox, "a@b.test");
  EXPECT_EQ(p.params.size(), 1u);
}

TEST(address, quoted_local_part_with_at_and_bracket) {
  parsed_path p;
  ASSERT_TRUE(parse_path("<\"a>b@c\"@d.test>", p));
  EXPECT_EQ(p.local, "\"a>b@c\"");
  EXPECT_EQ(p.domain, "d.test");
}

TEST(address, literals_routes_and_rejects) {
  parsed_path p;
  EXPECT_TRUE(parse_path("<a@[192.0.2.1]>", p));
  EXPECT_TRUE(parse_path("<@relay.test:a@b.test>", p));
  EXPECT_EQ(p.mailbox, "a@b.test");
  EXPECT_FALSE(parse_path("<a@b.test", p));
  EXPECT_FALSE(parse_path("<a@b.test>x", p));
  EXPECT_FALSE(parse_path("<a b@c.test>", p));
  EXPECT_FALSE(parse_path("<.a@c.test>", p));
  EXPECT_FALSE(parse_path("<a@c..test>", p));
  EXPECT_FALSE(parse_path("<a@>", p));
  EXPECT_FALSE(parse_path("<@>", p));
  EXPECT_FALSE(parse_path("", p));
  EXPECT_FALSE(parse_path("<a@b.test> =x", p));
  EXPECT_FALSE(parse_path("<a@b.test> K=\x01", p));
}

TEST(address, non_ascii_flag) {
  parsed_path p;
  ASSERT_TRUE(parse_path("<\xC3\xA9@b.test>", p));
  EXPECT_TRUE(p.non_ascii);
  ASSERT_TRUE(parse_path("<e@b.test>", p));
  EXPECT_FALSE(p.non_ascii);
}
