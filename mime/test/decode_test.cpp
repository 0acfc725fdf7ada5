#include <inlet/mime/decode.hpp>

#include <gtest/gtest.h>

#include <random>

namespace inlet::mime {
namespace {

std::string decode_split(transfer_encoding e, std::string_view in, std::vector<std::size_t> cuts) {
  body_decoder d(e);
  std::string out;
  auto sink = [&](std::string_view s) { out.append(s); };
  std::size_t prev = 0;
  for (auto c : cuts) {
    d.feed(in.substr(prev, c - prev), sink);
    prev = c;
  }
  d.feed(in.substr(prev), sink);
  d.finish(sink);
  return out;
}

// Every two-way split, byte-by-byte, and random splits give the one-shot result.
void check_splits(transfer_encoding e, std::string_view in, const std::string& want) {
  ASSERT_EQ(decode_split(e, in, {}), want);
  for (std::size_t k = 0; k <= in.size(); ++k) ASSERT_EQ(decode_split(e, in, {k}), want) << k;
  std::vector<std::size_t> all;
  for (std::size_t k = 1; k < in.size(); ++k) all.push_back(k);
  ASSERT_EQ(decode_split(e, in, all), want);
  std::mt19937 rng(7);
  for (int r = 0; r < 100 && in.size() > 1; ++r) {
    std::vector<std::size_t> cuts;
    for (int c = 0; c < 4; ++c) cuts.push_back(rng() % in.size());
    std::sort(cuts.begin(), cuts.end());
    ASSERT_EQ(decode_split(e, in, cuts), want);
  }
}

TEST(base64, decodes_rfc4648_vectors) {
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_EQ(decode_base64("Zg=="), "f");
  EXPECT_EQ(decode_base64("Zm8="), "fo");
  EXPECT_EQ(decode_base64("Zm9v"), "foo");
  EXPECT_EQ(decode_base64("Zm9vYg=="), "foob");
  EXPECT_EQ(decode_base64("Zm9vYmE="), "fooba");
  EXPECT_EQ(decode_base64("Zm9vYmFy"), "foobar");
  std::string bin;
  for (int i = 0; i < 256; ++i) bin.push_back(static_cast<char>(i));
  EXPECT_EQ(decode_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7\r\n"
                          "PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3\r\n"
                          "eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKz\r\n"
                          "tLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v\r\n"
                          "8PHy8/T19vf4+fr7/P3+/w==\r\n"),
            bin);
}

TEST(base64, defects_are_recorded_and_decoding_goes_on) {
  bool defect = false;
  EXPECT_EQ(decode_base64("Zm9v!YmFy", &defect), "foobar");
  EXPECT_TRUE(defect);
  EXPECT_EQ(decode_base64("Zm9vYg", &defect), "foob");  // missing padding
  EXPECT_TRUE(defect);
  EXPECT_EQ(decode_base64("Zm9vY", &defect), "foo");
  EXPECT_TRUE(defect);
  EXPECT_EQ(decode_base64("Zg==Zm8=", &defect), "ffo");
  EXPECT_FALSE(defect);
}

TEST(base64, every_split) {
  check_splits(transfer_encoding::base64, "SGVsbG8s\r\nIHdvcmxkIQ==\r\nSGk=", "Hello, world!Hi");
  check_splits(transfer_encoding::base64, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
}

TEST(quoted_printable, rfc2045_rules) {
  EXPECT_EQ(decode_quoted_printable("caf=E9 =3D ok"), "caf\xE9 = ok");
  EXPECT_EQ(decode_quoted_printable("soft=\r\nbreak=\nhere"), "softbreakhere");
  EXPECT_EQ(decode_quoted_printable("trailing   \r\nspace\t \nend  "), "trailing\r\nspace\nend");
  EXPECT_EQ(decode_quoted_printable("lower =e9 hex"), "lower \xE9 hex");
  bool defect = false;
  EXPECT_EQ(decode_quoted_printable("bad =ZZ and =4", &defect), "bad =ZZ and =4");
  EXPECT_TRUE(defect);
  EXPECT_EQ(decode_quoted_printable("lone\rcr"), "lone\rcr");
}

TEST(quoted_printable, every_split) {
  check_splits(transfer_encoding::quoted_printable, "Gr=FC=DFe  \r\naus=\r\n K=F6ln =3D  \t\nx=4", "Gr\xFC\xDF" "e\r\naus K\xF6ln =\nx=4");
}

TEST(identity, passes_bytes) {
  check_splits(transfer_encoding::eight_bit, "any =41 bytes\r\n", "any =41 bytes\r\n");
}

std::string convert_split(std::string_view cs, std::string_view in, std::size_t cut) {
  charset_converter cv(cs);
  std::string out;
  auto sink = [&](std::string_view s) { out.append(s); };
  cv.feed(in.substr(0, cut), sink);
  cv.feed(in.substr(cut), sink);
  cv.finish(sink);
  return out;
}

TEST(charsets, conversions_and_aliases) {
  EXPECT_EQ(to_utf8("caf\xE9", "ISO-8859-1"), "café");
  EXPECT_EQ(to_utf8("\x80", "windows-1252"), "€");
  EXPECT_EQ(to_utf8("\xD0\xD2\xC9\xD7\xC5\xD4", "koi8-r"), "привет");
  EXPECT_EQ(to_utf8("\xC7\xD1\xB1\xDB", "ks_c_5601-1987"), "한글");
  EXPECT_EQ(to_utf8("\x93\xFA\x96\x7B", "x-sjis"), "日本");
  EXPECT_EQ(to_utf8("\xC4\xE3\xBA\xC3", "gb2312"), "你好");
  EXPECT_EQ(to_utf8("\x1B$BF|K\\\x1B(B", "iso-2022-jp"), "日本");
  EXPECT_EQ(to_utf8("ok \xFF", "us-ascii"), "ok \xEF\xBF\xBD");
  EXPECT_EQ(to_utf8("ok", "no-such-charset"), "ok");
  EXPECT_EQ(to_utf8("\xE9t\xE9", "utf-8"), "\xEF\xBF\xBDt\xEF\xBF\xBD");
  EXPECT_EQ(canonical_charset("\"UTF8\""), "");
  EXPECT_EQ(canonical_charset("big5"), "CP950");
  charset_converter unknown("x-klingon");
  EXPECT_FALSE(unknown.known());
}

TEST(charsets, every_split_of_multibyte) {
  const std::string utf8 = "žluťoučký 日本 😀";
  for (std::size_t k = 0; k <= utf8.size(); ++k) ASSERT_EQ(convert_split("utf-8", utf8, k), utf8) << k;
  const std::string sjis = "\x93\xFA\x96\x7B\x8C\xEA";
  for (std::size_t k = 0; k <= sjis.size(); ++k) ASSERT_EQ(convert_split("shift_jis", sjis, k), "日本語") << k;
}

}  // namespace
}  // namespace inlet::mime
