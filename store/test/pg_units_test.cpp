// Unit tests of the PostgreSQL store's pieces that need no server: IDs, bucket hash,
// the composite wire format (encoded by us, decoded by us; the server's side is
// pg_store_pgtest), SQL script splitting, DSN helpers.
#include <gtest/gtest.h>

#include <climits>
#include <set>

#include "admin_pace.hpp"
#include "engine.hpp"
#include "ids.hpp"
#include "schema.hpp"
#include "wire.hpp"

using namespace inlet::store;
using namespace inlet::store::pgstore;

TEST(PgIds, RoundTripAndOrder) {
  std::int64_t t = 1'780'000'000'123'456;  // 2026
  for (std::uint32_t b : {0u, 1u, 61u, 62u, 1023u, max_buckets - 1}) {
    auto id = make_id(t, b);
    ASSERT_EQ(id.size(), id_length);
    auto p = parse_id(id);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->received_us, t);
    EXPECT_EQ(p->bucket, b);
  }
  // IDs sort by receive time, whatever the bucket and the random part.
  EXPECT_LT(make_id(t, 3843), make_id(t + 1, 0));
  EXPECT_LT(make_id(0, 0), make_id(t, 0));
  std::set<std::string> many;
  for (int i = 0; i < 10000; ++i) many.insert(make_id(t, 5));
  EXPECT_EQ(many.size(), 10000u);
}

TEST(PgIds, RejectsForeignIds) {
  EXPECT_FALSE(parse_id(""));
  EXPECT_FALSE(parse_id("short"));
  EXPECT_FALSE(parse_id(std::string(id_length, '-')));
  EXPECT_FALSE(parse_id(std::string(id_length + 1, 'a')));
  EXPECT_TRUE(parse_id(std::string(id_length, '0')));
}

TEST(PgBuckets, StableValues) {
  // The hash is part of the on-disk format (it places mailboxes on shards): these values
  // must never change.
  EXPECT_EQ(bucket_of("", 1024), 294u);
  EXPECT_EQ(bucket_of("alice@example.com", 1024), 88u);
  EXPECT_EQ(bucket_of("bob@example.org", 1024), 765u);
  EXPECT_EQ(bucket_of("x", 1024), 5u);
  EXPECT_EQ(bucket_of("alice@example.com", 3844), 2104u);
  EXPECT_EQ(bucket_of("bob@example.org", 3844), 3401u);
}

TEST(PgBuckets, SpreadEvenly) {
  std::vector<int> n(1024);
  for (int i = 0; i < 102400; ++i)
    n[bucket_of("user" + std::to_string(i) + "@example.com", 1024)]++;
  auto [lo, hi] = std::minmax_element(n.begin(), n.end());
  EXPECT_GT(*lo, 50);  // mean 100
  EXPECT_LT(*hi, 160);
}

TEST(PgWire, AddressAndAttachmentArraysRoundTrip) {
  shard_types t{100, 101, 200, 201, 300, 301};
  stored_message m;
  m.id = message_id(make_id(1'700'000'000'000'000, 7));
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "from@example.org";
  m.envelope.rcpt_to = {"a@example.com", "B@Example.com"};
  m.summary.from = {"Ann Example", "ann@example.org"};
  m.summary.to = {{"A", "a@example.com"}, {"", "b@example.com"}};
  m.summary.attachments = {{"r\xc3\xa9sum\xc3\xa9.pdf", "application/pdf", 12345}, {"", "", 0}};
  m.summary.subject = "hello";
  m.raw = std::string("raw\0bytes", 9);
  m.size = m.raw.size();
  std::vector<std::string> boxes = {"a@example.com"};
  std::vector<std::int32_t> buckets = {7};
  copy_view v{&m, 1'700'000'000'000'000, true, 7, &boxes, &buckets, false};
  std::string out;
  encode_copy(out, t, v);
  // Walk the record: 31 columns, each OID + length, and decode the composite columns.
  const char* p = out.data();
  const char* end = p + out.size();
  ASSERT_EQ(get_i32(p), 31);
  p += 4;
  std::vector<std::pair<std::uint32_t, std::string_view>> cols;
  while (p < end) {
    auto oid = static_cast<std::uint32_t>(get_i32(p));
    auto len = get_i32(p + 4);
    p += 8;
    cols.emplace_back(
        oid, len < 0 ? std::string_view() : std::string_view(p, static_cast<std::size_t>(len)));
    if (len > 0) p += len;
  }
  ASSERT_EQ(p, end);
  ASSERT_EQ(cols.size(), 31u);
  EXPECT_EQ(cols[0].second, m.id);
  EXPECT_EQ(cols[13].first, t.addr);
  address from;
  ASSERT_TRUE(decode_addr(cols[13].second, from));
  EXPECT_EQ(from, m.summary.from);
  EXPECT_EQ(cols[14].first, t.addr_array);
  address_list to;
  ASSERT_TRUE(decode_addr_array(cols[14].second, to));
  EXPECT_EQ(to, m.summary.to);
  address_list cc{{"x", "y"}};
  ASSERT_TRUE(decode_addr_array(cols[15].second, cc));  // empty array
  EXPECT_TRUE(cc.empty());
  EXPECT_EQ(cols[22].first, t.attach_array);
  std::vector<attachment_info> att;
  ASSERT_TRUE(decode_attach_array(cols[22].second, att));
  ASSERT_EQ(att.size(), 2u);
  EXPECT_EQ(att[0].filename, m.summary.attachments[0].filename);
  EXPECT_EQ(att[0].content_type, "application/pdf");
  EXPECT_EQ(att[0].size, 12345u);
  std::vector<std::string> rcpt;
  ASSERT_TRUE(decode_text_array(cols[9].second, rcpt));
  EXPECT_EQ(rcpt, std::vector<std::string>(m.envelope.rcpt_to.begin(), m.envelope.rcpt_to.end()));
  std::vector<std::int32_t> b;
  ASSERT_TRUE(decode_int4_array(cols[6].second, b));
  EXPECT_EQ(b, buckets);
  EXPECT_EQ(cols[19].second.size(), 0u);  // sent: NULL (no Date)
  EXPECT_EQ(cols[29].second, m.raw);
  EXPECT_EQ(cols[30].first, oids::int4_array);
  EXPECT_EQ(get_i32(out.data() + out.size() - 4), -1);  // totals: NULL (every list whole)
}

TEST(PgWire, ListTotalsAreAnArrayOfFiveWhenAListWasCut) {
  shard_types t{100, 101, 200, 201, 300, 301};
  stored_message m;
  m.id = message_id(make_id(1'700'000'000'000'000, 7));
  m.summary.totals.to = 80'000;
  m.summary.totals.attachments = 4'000'000'000u;  // beyond int4: clamped
  std::vector<std::string> boxes;
  std::vector<std::int32_t> buckets;
  copy_view v{&m, 1'700'000'000'000'000, true, 7, &boxes, &buckets, false};
  std::string out;
  encode_copy(out, t, v);
  // The last column: OID, length, then a one-dimensional int4 array of 5.
  std::string arr;
  encode_array_header(arr, oids::int4, 5);
  for (std::int32_t x : {80'000, 0, 0, 0, INT32_MAX}) {
    put_i32(arr, 4);
    put_i32(arr, x);
  }
  ASSERT_GT(out.size(), arr.size() + 8);
  const char* col = out.data() + out.size() - arr.size() - 8;
  EXPECT_EQ(static_cast<std::uint32_t>(get_i32(col)), oids::int4_array);
  EXPECT_EQ(get_i32(col + 4), static_cast<std::int32_t>(arr.size()));
  EXPECT_EQ(std::string_view(col + 8, arr.size()), arr);
  std::vector<std::int32_t> back;
  ASSERT_TRUE(decode_int4_array(std::string_view(col + 8, arr.size()), back));
  EXPECT_EQ(back, (std::vector<std::int32_t>{80'000, 0, 0, 0, INT32_MAX}));
}

TEST(PgWire, DecodersRejectEveryTruncation) {
  std::string arr;
  encode_array_header(arr, 100, 2);
  for (auto* n : {"a", "bb"}) {
    std::string rec;
    put_i32(rec, 2);
    for (int i = 0; i < 2; ++i) {
      put_i32(rec, 25);
      put_i32(rec, static_cast<std::int32_t>(std::strlen(n)));
      rec += n;
    }
    encode_element(arr, rec);
  }
  address_list out;
  ASSERT_TRUE(decode_addr_array(arr, out));
  ASSERT_EQ(out.size(), 2u);
  for (std::size_t cut = 0; cut < arr.size(); ++cut)
    EXPECT_FALSE(decode_addr_array(std::string_view(arr).substr(0, cut), out)) << cut;
  std::string bad = arr;
  bad[bad.size() - 3] = '\x7f';  // a length running past the end
  std::vector<attachment_info> att;
  EXPECT_FALSE(decode_attach_array(bad, att));
}

TEST(PgWire, TextIsMadeValidUtf8) {
  auto clean = [](std::string_view in) {
    std::string out;
    append_text(out, in);
    return out;
  };
  EXPECT_EQ(clean("plain ascii"), "plain ascii");
  EXPECT_EQ(clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(clean(std::string("a\0b", 3)),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(clean("latin1 \xe9t\xe9"), "latin1 \xef\xbf\xbdt\xef\xbf\xbd");
  EXPECT_EQ(clean("cut \xe2\x82"), "cut \xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(clean("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong '/'
  EXPECT_EQ(clean("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
}

TEST(PgSchema, SplitsScripts) {
  auto s = split_sql(
      "-- comment; not a statement\nCREATE TABLE a (x text DEFAULT ';');\n"
      "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;\n"
      "/* block; */ SELECT $tag$ ; $tag$, \"we;ird\";\n  \n");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NE(s[0].find("DEFAULT ';'"), std::string_view::npos);
  EXPECT_NE(s[1].find("SELECT 1; $$"), std::string_view::npos);
  EXPECT_NE(s[2].find("\"we;ird\""), std::string_view::npos);
  // Every shipped migration splits into statements, numbered 1, 2, ... without a gap.
  ASSERT_FALSE(migrations().empty());
  EXPECT_GT(split_sql(migrations().front().sql).size(), 10u);
  for (std::size_t i = 0; i < migrations().size(); ++i) {
    EXPECT_FALSE(split_sql(migrations()[i].sql).empty()) << migrations()[i].name;
    EXPECT_EQ(migrations()[i].version, static_cast<int>(i + 1)) << migrations()[i].name;
  }
}

TEST(PgDsn, AddsParametersOnce) {
  EXPECT_EQ(with_dsn_param("postgresql://u@h/db", "connect_timeout", "5"),
            "postgresql://u@h/db?connect_timeout=5");
  EXPECT_EQ(with_dsn_param("postgresql://u@h/db?sslmode=require", "connect_timeout", "5"),
            "postgresql://u@h/db?sslmode=require&connect_timeout=5");
  EXPECT_EQ(with_dsn_param("postgresql://h/db?connect_timeout=2", "connect_timeout", "5"),
            "postgresql://h/db?connect_timeout=2");
  EXPECT_EQ(with_dsn_param("host=h dbname=x", "connect_timeout", "5"),
            "host=h dbname=x connect_timeout=5");
  EXPECT_EQ(with_dsn_param("host=h connect_timeout = 1", "connect_timeout", "5"),
            "host=h connect_timeout = 1");
  EXPECT_EQ(dsn_endpoint("postgresql://user:secret@db1:5433,db2:5434/x?a=b"), "db1:5433,db2:5434");
  EXPECT_EQ(dsn_endpoint("host=127.0.0.1 port=5432 password=secret"), "127.0.0.1:5432");
}

TEST(PgDsn, SetsAParameterOverTheURIs) {
  // Writers reach the primary of a multi-host URI whatever its target_session_attrs says.
  auto d = set_dsn_param("postgresql://u@h1:5433,h2:5434/db?target_session_attrs=any",
                         "target_session_attrs", "read-write");
  EXPECT_EQ(dsn_param(d, "target_session_attrs"), "read-write");
  EXPECT_EQ(dsn_param(d, "host"), "h1,h2");
  EXPECT_EQ(dsn_param(d, "port"), "5433,5434");
  EXPECT_EQ(dsn_param(d, "dbname"), "db");
  EXPECT_EQ(dsn_param(d, "user"), "u");
  auto c = set_dsn_param("host=h password='a b\\'c'", "target_session_attrs", "read-write");
  EXPECT_EQ(dsn_param(c, "password"), "a b'c");
  EXPECT_EQ(dsn_param(c, "target_session_attrs"), "read-write");
  EXPECT_EQ(
      dsn_param("postgresql://h/db?target_session_attrs=prefer-standby", "target_session_attrs"),
      "prefer-standby");
  EXPECT_EQ(dsn_param("postgresql://h/db", "target_session_attrs"), "");
  EXPECT_EQ(dsn_param("not a dsn", "host"), "");
}

TEST(PgAdminPace, SwitchesShrinkWhenTheyHoldTooLongAndGrowBackWhenQuick) {
  inlet::store::pg_admin::switch_pace p(32);
  EXPECT_EQ(p.buckets, 8u);  // small at first
  EXPECT_EQ(inlet::store::pg_admin::switch_pace(4).buckets, 4u);
  p.buckets = 32;
  p.copies = 4000;
  p.learn(32, 6000, 150);  // a switch of 32 buckets holding 6,000 copies took 150 ms
  EXPECT_EQ(p.buckets, 16u);
  EXPECT_EQ(p.copies, 2000u);
  p.learn(16, 2000, 90);
  EXPECT_EQ(p.buckets, 8u);
  EXPECT_EQ(p.copies, 1000u);
  p.learn(8, 900, 40);  // within the target, not quick: as it is
  EXPECT_EQ(p.buckets, 8u);
  p.learn(3, 10, 5);  // quick, but far from the limits: says nothing about them
  EXPECT_EQ(p.buckets, 8u);
  EXPECT_EQ(p.copies, 1000u);
  p.learn(8, 100, 5);  // quick at the bucket limit
  EXPECT_EQ(p.buckets, 16u);
  EXPECT_EQ(p.copies, 2000u);
  for (int i = 0; i < 10; ++i) p.learn(p.buckets, 0, 1);
  EXPECT_EQ(p.buckets, 32u);  // never past --group
  for (int i = 0; i < 10; ++i) p.learn(1, 5000, 500);
  EXPECT_EQ(p.buckets, 1u);  // never below one bucket
  EXPECT_GE(p.copies, 1u);
}
