#include "inlet/load/reply.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace inlet::load;

namespace {
struct parsed {
  std::vector<std::pair<int, std::string>> replies;
  std::error_code ec;
};

// Feeds `input` split at every pair of offsets (every 1-, 2- and 3-fragment split).
template <class Check>
void for_every_split(std::string_view input, Check check) {
  for (std::size_t i = 0; i <= input.size(); ++i) {
    for (std::size_t j = i; j <= input.size(); ++j) {
      reply_parser p;
      parsed out;
      auto cb = [&](const reply& r) { out.replies.emplace_back(r.code, std::string(r.text)); };
      for (auto piece : {input.substr(0, i), input.substr(i, j - i), input.substr(j)}) {
        const auto ec = p.consume(piece, cb);
        if (ec && !out.ec) out.ec = ec;
      }
      check(out, i, j);
    }
  }
}
}  // namespace

TEST(ReplyParser, SingleAndMultiLineInEverySplit) {
  const std::string in = "220 mx.test ESMTP\r\n250-mx.test\r\n250-PIPELINING\r\n250 CHUNKING\r\n354 go\r\n";
  for_every_split(in, [](const parsed& out, std::size_t i, std::size_t j) {
    ASSERT_FALSE(out.ec) << i << "," << j;
    ASSERT_EQ(out.replies.size(), 3u) << i << "," << j;
    EXPECT_EQ(out.replies[0], (std::pair<int, std::string>{220, "mx.test ESMTP"}));
    EXPECT_EQ(out.replies[1], (std::pair<int, std::string>{250, "mx.test\nPIPELINING\nCHUNKING"}));
    EXPECT_EQ(out.replies[2], (std::pair<int, std::string>{354, "go"}));
  });
}

TEST(ReplyParser, BareCodeAndBareLf) {
  for_every_split("250\n221 bye\n", [](const parsed& out, std::size_t, std::size_t) {
    ASSERT_FALSE(out.ec);
    ASSERT_EQ(out.replies.size(), 2u);
    EXPECT_EQ(out.replies[0].first, 250);
    EXPECT_EQ(out.replies[0].second, "");
    EXPECT_EQ(out.replies[1].second, "bye");
  });
}

TEST(ReplyParser, IncompleteReplyIsHeldBack) {
  reply_parser p;
  int n = 0;
  EXPECT_FALSE(p.consume("250-a\r\n250 b", [&](const reply&) { ++n; }));
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(p.mid_reply());
  EXPECT_FALSE(p.consume("\r\n", [&](const reply& r) {
    ++n;
    EXPECT_EQ(r.text, "a\nb");
  }));
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(p.mid_reply());
}

TEST(ReplyParser, RejectsMalformedLines) {
  for (const char* bad : {"hello\r\n", "25\r\n", "2500 x\r\n", "250x\r\n", "650 no\r\n", "099 no\r\n"}) {
    for_every_split(bad, [&](const parsed& out, std::size_t, std::size_t) {
      EXPECT_EQ(out.ec, errc::malformed_reply) << bad;
      EXPECT_TRUE(out.replies.empty());
    });
  }
}

TEST(ReplyParser, RejectsInconsistentMultiLine) {
  for_every_split("250-a\r\n251 b\r\n", [](const parsed& out, std::size_t, std::size_t) {
    EXPECT_EQ(out.ec, errc::inconsistent_code);
  });
}

TEST(ReplyParser, RejectsOverlongLineAndStaysFailed) {
  reply_parser p;
  const std::string longline = "250 " + std::string(reply_parser::max_line + 10, 'x');
  int n = 0;
  auto cb = [&](const reply&) { ++n; };
  // Delivered in small pieces, the limit still holds.
  std::error_code ec;
  for (std::size_t i = 0; i < longline.size() && !ec; i += 100)
    ec = p.consume(std::string_view(longline).substr(i, 100), cb);
  EXPECT_EQ(ec, errc::reply_too_long);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.consume("250 ok\r\n", cb), errc::reply_too_long);
  EXPECT_EQ(n, 0);
  reply_parser q;
  EXPECT_EQ(q.consume(longline + "\r\n", cb), errc::reply_too_long);
}

TEST(ReplyParser, ErrorCategoryNamesItself) {
  const std::error_code ec = errc::malformed_reply;
  EXPECT_STREQ(ec.category().name(), "inlet.load");
  EXPECT_FALSE(ec.message().empty());
}
