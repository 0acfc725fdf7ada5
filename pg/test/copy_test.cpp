// The binary COPY format without a server: rows encoded and parsed back with the input
// split at every offset, NULLs, the header and trailer, malformed streams.
#include "inlet/pg/copy.hpp"

#include <gtest/gtest.h>

#include <random>

namespace pg = inlet::pg;

namespace {
using row =
    std::tuple<std::int64_t, std::optional<std::string>, std::vector<std::byte>, double, bool>;

std::string encode(const std::vector<row>& rows) {
  std::string s;
  pg::detail::copy_header(s);
  std::error_code ec;
  for (const auto& r : rows) pg::detail::copy_encode_row(r, s, ec);
  EXPECT_FALSE(ec);
  pg::detail::copy_trailer(s);
  return s;
}
std::vector<row> sample() {
  std::vector<row> rows;
  for (int i = 0; i < 20; ++i) {
    std::vector<std::byte> b(static_cast<std::size_t>(i * 7),
                             std::byte{static_cast<unsigned char>(i)});
    rows.emplace_back(
        i * 1000003LL - 5,
        i % 3 ? std::optional<std::string>("name " + std::to_string(i)) : std::nullopt, b, i / 3.0,
        i % 2 == 0);
  }
  return rows;
}
/// Parses `s` fed in two pieces split at `at`.
std::error_code parse_split(const std::string& s, std::size_t at, std::vector<row>& out,
                            bool& finished) {
  pg::copy_parser p;
  auto on_row = [&](std::span<const pg::copy_parser::field> f) -> std::error_code {
    row r;
    auto ec = pg::detail::copy_decode_row(f, r);
    if (!ec) out.push_back(std::move(r));
    return ec;
  };
  if (auto ec = p.feed(std::string_view(s).substr(0, at), on_row)) return ec;
  auto ec = p.feed(std::string_view(s).substr(at), on_row);
  finished = p.finished();
  return ec;
}
}  // namespace

TEST(PgCopyFormat, HeaderAndTrailer) {
  std::string s;
  pg::detail::copy_header(s);
  EXPECT_EQ(s.size(), 19u);
  EXPECT_EQ(s.substr(0, 11), std::string("PGCOPY\n\xff\r\n\0", 11));
  std::string t;
  pg::detail::copy_trailer(t);
  EXPECT_EQ(t, std::string("\xff\xff", 2));
  // One int4 field: count 1, length 4, big-endian value.
  std::string r;
  std::error_code ec;
  pg::detail::copy_encode_row(std::tuple<std::int32_t>{0x01020304}, r, ec);
  EXPECT_EQ(r, std::string("\x00\x01\x00\x00\x00\x04\x01\x02\x03\x04", 10));
  r.clear();
  pg::detail::copy_encode_row(std::tuple<std::optional<std::int32_t>>{}, r, ec);
  EXPECT_EQ(r, std::string("\x00\x01\xff\xff\xff\xff", 6));
}

TEST(PgCopyFormat, RoundTripAtEverySplit) {
  const auto rows = sample();
  const std::string s = encode(rows);
  for (std::size_t at = 0; at <= s.size(); ++at) {
    std::vector<row> back;
    bool finished = false;
    auto ec = parse_split(s, at, back, finished);
    ASSERT_FALSE(ec) << at;
    ASSERT_TRUE(finished) << at;
    ASSERT_EQ(back, rows) << at;
  }
}

TEST(PgCopyFormat, ByteByByteAndInManyPieces) {
  const auto rows = sample();
  const std::string s = encode(rows);
  pg::copy_parser p;
  std::vector<row> back;
  for (char c : s) {
    auto ec = p.feed(std::string_view(&c, 1), [&](std::span<const pg::copy_parser::field> f) {
      row r;
      auto e = pg::detail::copy_decode_row(f, r);
      back.push_back(std::move(r));
      return e;
    });
    ASSERT_FALSE(ec);
  }
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.pending(), 0u);
  EXPECT_EQ(back, rows);
}

TEST(PgCopyFormat, MalformedStreamsFailCleanly) {
  auto noop = [](std::span<const pg::copy_parser::field>) { return std::error_code{}; };
  {
    pg::copy_parser p;
    EXPECT_EQ(p.feed(std::string(19, 'x'), noop), pg::errc::invalid_value);  // bad signature
  }
  {
    std::string s;
    pg::detail::copy_header(s);
    s[12] = 1;  // flags are big-endian at 11..14: bit 16 (OIDs included)
    pg::copy_parser p;
    EXPECT_EQ(p.feed(s, noop), pg::errc::invalid_value);
  }
  {
    std::string s;
    pg::detail::copy_header(s);
    s += std::string("\x00\x01\xff\xff\xff\xfe", 6);  // length -2
    pg::copy_parser p;
    EXPECT_EQ(p.feed(s, noop), pg::errc::invalid_value);
  }
  {
    std::string s = encode(sample());
    s += "x";  // after the trailer
    pg::copy_parser p;
    EXPECT_EQ(p.feed(s, noop), pg::errc::invalid_value);
  }
  {
    // A field count that does not match the C++ row.
    std::string s;
    pg::detail::copy_header(s);
    std::error_code ec;
    pg::detail::copy_encode_row(std::tuple<std::int32_t>{1}, s, ec);
    pg::copy_parser p;
    auto e = p.feed(s, [](std::span<const pg::copy_parser::field> f) {
      std::tuple<std::int32_t, std::int32_t> r;
      return pg::detail::copy_decode_row(f, r);
    });
    EXPECT_EQ(e, pg::errc::column_count_mismatch);
  }
  // Random bytes after a valid header never crash.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    pg::detail::copy_header(s);
    std::size_t n = rng() % 64;
    for (std::size_t k = 0; k < n; ++k) s.push_back(static_cast<char>(rng()));
    pg::copy_parser p;
    (void)p.feed(s, [](std::span<const pg::copy_parser::field> f) {
      row r;
      return pg::detail::copy_decode_row(f, r);
    });
  }
}
