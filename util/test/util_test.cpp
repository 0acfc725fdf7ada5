#include <gtest/gtest.h>

#include <inlet/util/ascii.hpp>
#include <inlet/util/base64.hpp>

namespace {

using inlet::util::base64_decode;
using inlet::util::base64_whitespace;

TEST(ascii, iequals_folds_only_ascii_letters) {
  static_assert(inlet::util::iequals("Content-Type", "content-type"));
  EXPECT_TRUE(inlet::util::iequals("MAIL", "mail"));
  EXPECT_FALSE(inlet::util::iequals("MAIL", "mai"));
  EXPECT_FALSE(inlet::util::iequals("\xc3\x84", "\xc3\xa4"));  // Ä vs ä: UTF-8 untouched
  EXPECT_FALSE(inlet::util::iequals("[", "{"));                // 0x5b vs 0x7b: not letters
  EXPECT_TRUE(inlet::util::istarts_with("X-Tags: a", "x-tags"));
  EXPECT_EQ(inlet::util::ascii_lowered("AbC-\xc3\x84"), "abc-\xc3\x84");
}

TEST(base64, round_trips_every_length) {
  std::string bytes;
  for (int n = 0; n < 300; ++n) {
    std::string enc = inlet::util::base64_encode(bytes);
    ASSERT_EQ(enc.size() % 4, 0u);
    std::string dec;
    ASSERT_TRUE(base64_decode(enc, dec)) << n;
    ASSERT_EQ(dec, bytes) << n;
    std::string lines = inlet::util::base64_encode_lines(bytes);
    ASSERT_TRUE(base64_decode(lines, dec, base64_whitespace::anywhere)) << n;
    ASSERT_EQ(dec, bytes);
    bytes.push_back(static_cast<char>(n * 7 + 3));
  }
}

TEST(base64, known_vectors_rfc4648) {
  EXPECT_EQ(inlet::util::base64_encode("f"), "Zg==");
  EXPECT_EQ(inlet::util::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(inlet::util::base64_encode("foobar"), "Zm9vYmFy");
  std::string out;
  ASSERT_TRUE(base64_decode("Zm9vYg==", out));
  EXPECT_EQ(out, "foob");
  ASSERT_TRUE(base64_decode("", out));
  EXPECT_EQ(out, "");
}

TEST(base64, strictness_is_the_callers) {
  std::string out;
  EXPECT_FALSE(base64_decode("Zm9v\r\n", out));
  EXPECT_TRUE(base64_decode("Zm9v\r\n", out, base64_whitespace::trailing));
  EXPECT_EQ(out, "foo");
  EXPECT_FALSE(base64_decode("Zm 9v", out, base64_whitespace::trailing));
  EXPECT_TRUE(base64_decode("Zm 9v", out, base64_whitespace::anywhere));
  EXPECT_EQ(out, "foo");
}

TEST(base64, malformed_is_refused) {
  std::string out;
  for (const char* bad : {"Zm9", "Zm9v=", "Zg=a", "Z===", "=Zg=", "Zm9v!A==", "Zg==Zg==", "Zm8"})
    EXPECT_FALSE(base64_decode(bad, out)) << bad;
}

TEST(base64, unpadded_tail_is_refused_but_padded_tails_decode) {
  std::string out;
  EXPECT_TRUE(base64_decode("Zm8=", out));
  EXPECT_EQ(out, "fo");
  EXPECT_TRUE(base64_decode("Zg==", out));
  EXPECT_EQ(out, "f");
}

}  // namespace
