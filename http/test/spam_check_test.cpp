// Spam checks without sockets: spamd's REPORT reply (a real one from spamd 4.0.1 for a
// GTUBE message, in every fragment split), rspamd's /checkv2 JSON, Mailpit's JSON shapes,
// --enable-rspamd's reading.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "spam_check.hpp"

namespace inlet::http::detail {
namespace {

std::string read_file(const std::string& name) {
  std::ifstream f(std::string(INLET_HTTP_TEST_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

spam_result parse_pieces(const std::vector<std::string_view>& pieces) {
  spamd_reply_parser p;
  for (auto piece : pieces) p.feed(piece);
  p.finish();
  return p.result();
}

void expect_gtube(const spam_result& r) {
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.is_spam);
  EXPECT_DOUBLE_EQ(r.score, 1003.3);
  ASSERT_TRUE(r.has_rules);
  ASSERT_EQ(r.rules.size(), 6u);
  EXPECT_EQ(r.rules[0].name, "MISSING_DATE");
  EXPECT_DOUBLE_EQ(r.rules[0].score, 2.7);
  EXPECT_EQ(r.rules[0].description, "Missing Date: header");
  EXPECT_EQ(r.rules[1].name, "NO_RECEIVED");
  EXPECT_EQ(r.rules[1].score, 0.0);
  EXPECT_EQ(r.rules[4].name, "GTUBE");
  EXPECT_DOUBLE_EQ(r.rules[4].score, 1000);
  EXPECT_EQ(r.rules[4].description, "BODY: Generic Test for Unsolicited Bulk Email");
  EXPECT_EQ(r.rules[5].name, "TVD_SPACE_RATIO");
  EXPECT_EQ(r.rules[5].description, "No description available.");
}

TEST(SpamdReply, RealGtubeReplyWhole) {
  const std::string reply = read_file("spamd_gtube_reply.txt");
  ASSERT_GT(reply.size(), 500u);
  spamd_reply_parser p;
  ASSERT_TRUE(p.feed(reply));
  p.finish();
  EXPECT_EQ(p.code(), 0);
  EXPECT_TRUE(p.has_score());
  EXPECT_DOUBLE_EQ(p.score(), 1003.3);
  EXPECT_DOUBLE_EQ(p.threshold(), 5.0);
  expect_gtube(p.result());
}

TEST(SpamdReply, RealGtubeReplyEveryTwoWaySplitAndByteByByte) {
  const std::string reply = read_file("spamd_gtube_reply.txt");
  const std::string_view v = reply;
  for (std::size_t i = 0; i <= v.size(); ++i) {
    SCOPED_TRACE(i);
    expect_gtube(parse_pieces({v.substr(0, i), v.substr(i)}));
    if (HasFailure()) return;
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < v.size(); ++i) bytes.push_back(v.substr(i, 1));
  expect_gtube(parse_pieces(bytes));
}

// A wrapped description (spamd indents the rest by 28 spaces), LF line ends, no final
// newline: every three-way split gives the same rules.
TEST(SpamdReply, WrappedDescriptionsEveryThreeWaySplit) {
  const std::string reply =
      "SPAMD/1.1 0 EX_OK\r\n"
      "Content-length: 300\r\n"
      "Spam: False ; 3.1 / 5.0\r\n"
      "\r\n"
      "Content analysis details:   (3.1 points, 5.0 required)\n"
      "\n"
      " pts rule name              description\n"
      "---- ---------------------- ----------\n"
      " 3.1 HTML_IMAGE_ONLY_04     BODY: HTML: images with 0-400 bytes of\n"
      "                            words\n"
      "-0.1 DKIM_VALID             Message has at least one valid DKIM or DK";
  const std::string_view v = reply;
  for (std::size_t i = 0; i <= v.size(); ++i) {
    for (std::size_t j = i; j <= v.size(); ++j) {
      auto r = parse_pieces({v.substr(0, i), v.substr(i, j - i), v.substr(j)});
      ASSERT_EQ(r.error, "") << i << " " << j;
      EXPECT_FALSE(r.is_spam);
      EXPECT_DOUBLE_EQ(r.score, 3.1);
      ASSERT_EQ(r.rules.size(), 2u) << i << " " << j;
      ASSERT_EQ(r.rules[0].description, "BODY: HTML: images with 0-400 bytes of words")
          << i << " " << j;
      ASSERT_EQ(r.rules[1].name, "DKIM_VALID");
      ASSERT_DOUBLE_EQ(r.rules[1].score, -0.1);
      ASSERT_EQ(r.rules[1].description, "Message has at least one valid DKIM or DK");
    }
  }
}

TEST(SpamdReply, MailpitVerdictIsScoreFromFive) {
  auto r = parse_pieces({"SPAMD/1.1 0 EX_OK\r\nSpam: False ; 5.0 / 8.0\r\n\r\n"});
  EXPECT_TRUE(r.is_spam);  // Mailpit's threshold, not spamd's
  r = parse_pieces({"SPAMD/1.1 0 EX_OK\r\nSpam: True ; 4.97 / 3.0\r\n\r\n"});
  EXPECT_FALSE(r.is_spam);
  EXPECT_DOUBLE_EQ(r.score, 4.9);  // rounded down to one decimal
  EXPECT_TRUE(r.rules.empty());
  EXPECT_TRUE(r.has_rules);
}

TEST(SpamdReply, ErrorsAreTheResultsError) {
  auto r = parse_pieces({"SPAMD/1.0 76 Bad header line: (EOF)\r\n"});
  EXPECT_EQ(r.error, "spamd answered 76 Bad header line: (EOF)");
  EXPECT_FALSE(r.has_rules);
  r = parse_pieces({});
  EXPECT_EQ(r.error, "spamd closed the connection without a reply");
  r = parse_pieces({"HTTP/1.1 200 OK\r\n\r\n"});
  EXPECT_EQ(r.error, "unexpected reply from spamd");
  r = parse_pieces({"SPAMD/1.1 zero EX_OK\r\n"});
  EXPECT_EQ(r.error, "unexpected reply from spamd");
  r = parse_pieces({"SPAMD/1.1 0 EX_OK\r\nSpam: True ; 9"});
  EXPECT_EQ(r.error, "spamd's reply ended in its headers");
}

TEST(SpamdReply, LimitsHold) {
  spamd_reply_parser p(100, 2);
  EXPECT_TRUE(p.feed(std::string(60, 'S')));
  EXPECT_FALSE(p.feed(std::string(60, 'x')));
  EXPECT_FALSE(p.feed("more"));
  EXPECT_NE(p.result().error.find("longer than 100"), std::string::npos);

  spamd_reply_parser q(1 << 20, 2);
  std::string reply = "SPAMD/1.1 0 EX_OK\r\nSpam: True ; 9.0 / 5.0\r\n\r\nContent analysis details\n";
  for (int i = 0; i < 10; ++i) reply += " 1.0 RULE_" + std::to_string(i) + "  d\n";
  q.feed(reply);
  q.finish();
  EXPECT_EQ(q.result().rules.size(), 2u);
}

TEST(SpamJson, SpamAssassinShapeAsMailpit) {
  const std::string reply = read_file("spamd_gtube_reply.txt");
  auto json = spamassassin_json(parse_pieces({reply}));
  EXPECT_EQ(json.substr(0, 49), "{\"IsSpam\":true,\"Error\":\"\",\"Score\":1003.3,\"Rules\":");
  EXPECT_NE(json.find("{\"Score\":1000,\"Name\":\"GTUBE\",\"Description\":\"BODY: Generic Test for "
                      "Unsolicited Bulk Email\"}"),
            std::string::npos);
  EXPECT_NE(json.find("{\"Score\":-0,\"Name\":\"NO_RECEIVED\""), std::string::npos);
  spam_result e;
  e.error = "dial tcp 127.0.0.1:1: connection refused \"x\"";
  EXPECT_EQ(spamassassin_json(e),
            "{\"IsSpam\":false,\"Error\":\"dial tcp 127.0.0.1:1: connection refused \\\"x\\\"\","
            "\"Score\":0,\"Rules\":null}\n");
}

TEST(SpamJson, InvalidUtf8BecomesReplacementCharacters) {
  spam_result r;
  r.has_rules = true;
  r.rules.push_back({1.5, "R\xff", "caf\xc3"});
  EXPECT_EQ(spamassassin_json(r),
            "{\"IsSpam\":false,\"Error\":\"\",\"Score\":0,\"Rules\":[{\"Score\":1.5,\"Name\":"
            "\"R\xef\xbf\xbd\",\"Description\":\"caf\xef\xbf\xbd\"}]}\n");
}

TEST(SpamRounding, AsMailpit) {
  EXPECT_DOUBLE_EQ(round_down_1(0.3), 0.3);
  EXPECT_DOUBLE_EQ(round_down_1(2.79), 2.7);
  EXPECT_DOUBLE_EQ(round_down_1(-0.05), -0.1);
  EXPECT_DOUBLE_EQ(round_2(1.005), 1.0);
  EXPECT_DOUBLE_EQ(round_2(7.456), 7.46);
}

// rspamd 3.4's /checkv2 answer for a GTUBE message, trimmed to what Mailpit reads.
const char* const rspamd_gtube = R"({
  "is_skipped": false, "score": 15.5, "required_score": 15.0, "action": "reject",
  "thresholds": {"reject": 15.0, "add header": 6.0, "greylist": 4.0},
  "symbols": {
    "GTUBE": {"name": "GTUBE", "score": 0.0, "metric_score": 0.0,
              "description": "Generic unsolicited bulk email test"},
    "MISSING_DATE": {"name": "MISSING_DATE", "score": 1.0, "description": "Message date is missing"},
    "MIME_GOOD": {"score": -0.1, "description": "Known content-type"},
    "ZZ_TOP": {"name": "ZZ_TOP", "score": 1.0}
  },
  "messages": {"smtp_message": "Gtube pattern"}, "message-id": "x@y"
})";

TEST(RspamdReply, GtubeAsMailpitReadsIt) {
  auto r = read_rspamd_reply(200, rspamd_gtube);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.is_spam);
  EXPECT_DOUBLE_EQ(r.score, 15.5);
  EXPECT_DOUBLE_EQ(r.threshold, 6.0);  // "add header" first
  EXPECT_EQ(r.action, "reject");
  ASSERT_EQ(r.rules.size(), 4u);
  EXPECT_EQ(r.rules[0].name, "MISSING_DATE");
  EXPECT_EQ(r.rules[1].name, "ZZ_TOP");
  EXPECT_EQ(r.rules[2].name, "GTUBE");
  EXPECT_EQ(r.rules[3].name, "MIME_GOOD");  // the key when the name is absent
  EXPECT_EQ(r.rules[3].description, "Known content-type");
  EXPECT_EQ(rspamd_json(r).substr(0, 79),
            "{\"IsSpam\":true,\"Error\":\"\",\"Score\":15.5,\"Threshold\":6,\"Action\":\"reject\","
            "\"Rules\":");
}

TEST(RspamdReply, VerdictWithoutActionAndErrors) {
  auto r = read_rspamd_reply(200, R"({"score": 7.0, "required_score": 6.5})");
  EXPECT_TRUE(r.is_spam);
  r = read_rspamd_reply(200, R"({"score": 2.0, "action": "greylist", "required_score": 1})");
  EXPECT_FALSE(r.is_spam);
  r = read_rspamd_reply(200, R"({"error": "bad request"})");
  EXPECT_EQ(r.error, "bad request");
  EXPECT_FALSE(r.has_rules);
  r = read_rspamd_reply(500, "<html>oops</html>");
  EXPECT_EQ(r.error, "Rspamd returned HTTP 500");
  r = read_rspamd_reply(200, "not json");
  EXPECT_EQ(r.error, "invalid response from Rspamd");
  r = read_rspamd_reply(200, R"({"score": "high"})");
  EXPECT_EQ(r.error, "invalid response from Rspamd");
  r = read_rspamd_reply(403, R"({"score": 1})");
  EXPECT_EQ(r.error, "Rspamd returned HTTP 403");
  EXPECT_EQ(rspamd_json(r),
            "{\"IsSpam\":false,\"Error\":\"Rspamd returned HTTP 403\",\"Score\":0,"
            "\"Threshold\":0,\"Action\":\"\",\"Rules\":null}\n");
}

TEST(RspamdService, ReadAsMailpit) {
  spam_check_config c;
  EXPECT_EQ(parse_rspamd_service("localhost:11333", c), "");
  EXPECT_EQ(c.rspamd, "http://localhost:11333");
  EXPECT_EQ(c.rspamd_password, "");
  EXPECT_EQ(parse_rspamd_service(" https://:p%40ss@rspamd.example:11334/base/ ", c), "");
  EXPECT_EQ(c.rspamd, "https://rspamd.example:11334/base");
  EXPECT_EQ(c.rspamd_password, "p@ss");
  EXPECT_EQ(parse_rspamd_service("http://secret@h:1", c), "");
  EXPECT_EQ(c.rspamd_password, "secret");
  EXPECT_EQ(c.rspamd, "http://h:1");
  EXPECT_EQ(parse_rspamd_service("http://", c), "invalid Rspamd address: missing host");
  EXPECT_EQ(parse_rspamd_service("http://:pw@/x", c), "invalid Rspamd address: missing host");
  EXPECT_EQ(parse_rspamd_service("http://:%4@h", c), "invalid Rspamd address");
}

}  // namespace
}  // namespace inlet::http::detail
