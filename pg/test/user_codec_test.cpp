// Codecs of user-defined types without a server: composites and arrays of composites as
// property tests (random values round-trip; every truncation of a valid value is
// rejected, never read past), enums, ranges, hstore; OIDs from a map set by hand.
#include <gtest/gtest.h>

#include <boost/describe/class.hpp>
#include <boost/describe/enum.hpp>
#include <random>

#include "inlet/pg/codec.hpp"
#include "mail_attach.hpp"

namespace pg = inlet::pg;

namespace {
using pg_test::attach;
struct envelope {
  std::optional<std::string> sender;
  std::vector<attach> parts;
  attach main;
  static constexpr std::string_view pg_type_name = "mail.envelope";
  friend bool operator==(const envelope&, const envelope&) = default;
};
BOOST_DESCRIBE_STRUCT(envelope, (), (sender, parts, main))
struct floatrange : pg::range<double> {
  static constexpr std::string_view pg_type_name = "floatrange";
};
enum class folder { inbox, sent };
BOOST_DESCRIBE_ENUM(folder, inbox, sent)
}  // namespace
template <>
inline constexpr std::string_view inlet::pg::type_name_v<folder> = "mail.folder";

namespace {
class PgUserCodec : public ::testing::Test {
 protected:
  PgUserCodec() {
    pg::set_type_oid<attach>(map_, 70000, 70001);
    pg::set_type_oid<envelope>(map_, 70002, 70003);
    pg::set_type_oid<folder>(map_, 70004, 70005);
    pg::set_type_oid<pg::hstore>(map_, 70006, 70007);
    pg::set_type_oid<floatrange>(map_, 70008, 70009);
  }
  template <class T>
  std::string enc(const T& v) {
    std::string out;
    std::error_code ec;
    EXPECT_TRUE(pg::encode_value(v, out, ec));
    EXPECT_FALSE(ec);
    return out;
  }
  template <class T>
  void round_trip(const T& v) {
    const std::string b = enc(v);
    T w{};
    ASSERT_FALSE(pg::decode_value(b.data(), static_cast<int>(b.size()), w));
    EXPECT_EQ(w, v);
    for (std::size_t cut = 0; cut < b.size(); ++cut) {  // every truncation fails cleanly
      std::string t = b.substr(0, cut);                 // exact-size copy: ASan sees overreads
      T x{};
      EXPECT_TRUE(pg::decode_value(t.data(), static_cast<int>(t.size()), x)) << "cut at " << cut;
    }
  }
  attach random_attach() {
    std::uniform_int_distribution<int> len(0, 20);
    std::string a(static_cast<std::size_t>(len(rng_)), 'a'),
        b(static_cast<std::size_t>(len(rng_)), 'b');
    for (auto& c : a) c = static_cast<char>('a' + rng_() % 26);
    return {a, b, static_cast<std::int64_t>(rng_())};
  }
  pg::oid_map<attach, envelope, folder, pg::hstore, floatrange> map_;
  pg::detail::type_scope scope_{&map_};
  std::mt19937_64 rng_{12345};
};
}  // namespace

TEST_F(PgUserCodec, CompositeWireFormat) {
  const std::string b = enc(attach{"f", "t", 1});
  // nfields 3; text oid 25, len 1, 'f'; 25, 1, 't'; int8 oid 20, len 8, 1.
  const std::string want = std::string("\0\0\0\3", 4) + std::string("\0\0\0\x19\0\0\0\1f", 9) +
                           std::string("\0\0\0\x19\0\0\0\1t", 9) +
                           std::string("\0\0\0\x14\0\0\0\x08", 8) +
                           std::string("\0\0\0\0\0\0\0\1", 8);
  EXPECT_EQ(b, want);
  EXPECT_EQ(pg::value_traits<attach>::type_oid(), 70000u);
  EXPECT_EQ(pg::value_traits<std::vector<attach>>::type_oid(), 70001u);
  const std::string arr = enc(std::vector<attach>{{"f", "t", 1}});
  EXPECT_EQ(pg::detail::load_be<std::uint32_t>(arr.data() + 8), 70000u);  // element OID
}

TEST_F(PgUserCodec, CompositePropertyRoundTrip) {
  for (int i = 0; i < 200; ++i) {
    round_trip(random_attach());
    std::vector<attach> parts(rng_() % 12);
    for (auto& p : parts) p = random_attach();
    round_trip(parts);
    envelope e{rng_() % 2 ? std::optional<std::string>("s") : std::nullopt, parts, random_attach()};
    round_trip(e);
    round_trip(std::vector<std::optional<envelope>>{e, std::nullopt, e});
  }
}

TEST_F(PgUserCodec, CompositeChecksFields) {
  std::string b = enc(attach{"f", "t", 1});
  attach a;
  std::string wrong_count = b;
  wrong_count[3] = 2;
  EXPECT_EQ(pg::decode_value(wrong_count.data(), static_cast<int>(wrong_count.size()), a),
            pg::errc::type_mismatch);
  std::string wrong_oid = b;
  wrong_oid[7] = 23;  // first field int4 instead of text
  EXPECT_EQ(pg::decode_value(wrong_oid.data(), static_cast<int>(wrong_oid.size()), a),
            pg::errc::type_mismatch);
  std::string null_field = b.substr(0, 8) + std::string("\xff\xff\xff\xff", 4) + b.substr(13);
  EXPECT_EQ(pg::decode_value(null_field.data(), static_cast<int>(null_field.size()), a),
            pg::errc::unexpected_null);
  // Without a map in scope a user type has no OID: a column of it is a mismatch.
  pg::detail::type_scope none{nullptr};
  pg::detail::current_types = nullptr;
  EXPECT_EQ(pg::value_traits<attach>::type_oid(), 0u);
  EXPECT_FALSE(pg::value_traits<attach>::accepts(70000));
  pg::detail::current_types = &map_;
}

TEST_F(PgUserCodec, EnumRangeHstore) {
  round_trip(folder::sent);
  EXPECT_EQ(enc(folder::inbox), "inbox");
  folder f;
  EXPECT_EQ(pg::decode_value("spam", 4, f), pg::errc::invalid_value);
  round_trip(pg::range<std::int32_t>{1, 5, true, false, false});
  round_trip(pg::range<std::int64_t>{std::nullopt, 5, false, true, false});
  round_trip(pg::range<std::int32_t>{std::nullopt, std::nullopt, false, false, true});
  round_trip(pg::range<pg::timestamptz>{pg::timestamptz{}, std::nullopt, true, false, false});
  pg::hstore h;
  h.items = {{"a", "1"}, {"", std::nullopt}, {"k", ""}};
  round_trip(h);
}

TEST_F(PgUserCodec, UserDefinedRange) {
  floatrange r;
  r.lower = -0.5;
  r.upper = 1e300;
  r.upper_inc = true;
  round_trip(r);
  floatrange open;  // (-infinity, infinity)
  open.lower_inc = false;
  round_trip(open);
  floatrange none;
  none.empty = true;
  none.lower_inc = false;
  round_trip(none);
  round_trip(std::vector<floatrange>{r, open, none});
  // Its OIDs come from the map: a parameter carries it, a column must have it.
  using vt = pg::value_traits<floatrange>;
  EXPECT_EQ(vt::type_oid(), 70008u);
  EXPECT_EQ(pg::value_traits<std::vector<floatrange>>::type_oid(), 70009u);
  EXPECT_TRUE(vt::accepts(70008));
  EXPECT_FALSE(vt::accepts(pg::oid::numrange));
  // The wire format is a built-in range's: int4range's codec reads what floatrange's wrote
  // for the same flags (empty).
  std::string e = enc(none);
  pg::range<std::int32_t> i{};
  EXPECT_FALSE(pg::decode_value(e.data(), static_cast<int>(e.size()), i));
  EXPECT_TRUE(i.empty);
}
