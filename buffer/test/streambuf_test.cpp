#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <inlet/buffer/error.hpp>
#include <inlet/buffer/streambuf.hpp>

#include "test_util.hpp"

namespace inlet::buffer {
namespace {

namespace asio = boost::asio;

// Appends `bytes` to sb through prepare/commit.
void put(streambuf& sb, std::string_view bytes) {
  auto bufs = sb.prepare(bytes.size());
  ASSERT_EQ(asio::buffer_size(bufs), bytes.size());
  ASSERT_EQ(asio::buffer_copy(bufs, asio::buffer(bytes.data(), bytes.size())), bytes.size());
  sb.commit(bytes.size());
}

std::string readable(const streambuf& sb) {
  std::string s;
  for (std::string_view v : sb.readable_spans()) s.append(v);
  return s;
}

static_assert(asio::is_mutable_buffer_sequence<streambuf::mutable_buffers_type>::value);
static_assert(asio::is_const_buffer_sequence<streambuf::const_buffers_type>::value);
static_assert(asio::is_dynamic_buffer_v2<streambuf_ref>::value);
static_assert(std::random_access_iterator<streambuf::const_iterator>);

TEST(Streambuf, EmptyHoldsNothing) {
  streambuf sb;
  EXPECT_EQ(sb.size(), 0u);
  EXPECT_EQ(sb.capacity(), 0u);
  EXPECT_FALSE(sb.holds_memory());
  EXPECT_EQ(asio::buffer_size(sb.data()), 0u);
  EXPECT_TRUE(sb.detach(10).empty());
  EXPECT_EQ(sb.begin(), sb.end());
  EXPECT_EQ(sb.find('a'), streambuf::npos);
  sb.consume(5);
  sb.shrink(5);
  sb.commit(5);
  EXPECT_EQ(sb.size(), 0u);
  EXPECT_EQ(asio::buffer_size(sb.prepare(0)), 0u);
}

TEST(Streambuf, PrepareSpansFragments) {
  streambuf sb(pool::get(4096));
  auto bufs = sb.prepare(10000);
  std::vector<std::size_t> sizes;
  for (auto b : bufs) sizes.push_back(b.size());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{4096, 4096, 1808}));
  EXPECT_EQ(sb.fragment_count(), 3u);
  EXPECT_GE(sb.capacity(), 10000u);
  EXPECT_EQ(sb.size(), 0u);
  sb.commit(5000);
  EXPECT_EQ(sb.size(), 5000u);
  EXPECT_EQ(sb.readable_spans().size(), 2u);
  // The next prepare continues right after the committed bytes.
  auto more = sb.prepare(10);
  EXPECT_EQ((*more.begin()).data(),
            static_cast<const void*>((*std::next(sb.readable_spans().begin())).data() + 904));
}

TEST(Streambuf, CommitIsClampedToPrepared) {
  streambuf sb(pool::get(4096));
  sb.prepare(10);
  sb.commit(1000000);
  EXPECT_EQ(sb.size(), sb.capacity());
  EXPECT_EQ(sb.size(), 4096u);
}

TEST(Streambuf, DetachAtEveryPosition) {
  std::string text = test::pattern_text(9000);
  for (std::size_t cut = 0; cut <= text.size(); cut += (cut < 20 || cut > 8980 ? 1 : 97)) {
    streambuf sb(pool::get(4096));
    put(sb, text.substr(0, 3000));
    put(sb, text.substr(3000));
    segment head = sb.detach(cut);
    ASSERT_EQ(head.size(), cut);
    ASSERT_TRUE(head == std::string_view(text).substr(0, cut));
    ASSERT_EQ(readable(sb), text.substr(cut));
    // New bytes after the detach do not disturb the detached segment.
    put(sb, "tail");
    ASSERT_TRUE(head == std::string_view(text).substr(0, cut));
    ASSERT_EQ(readable(sb), text.substr(cut) + "tail");
  }
}

TEST(Streambuf, DetachAtEveryPositionSmall) {
  // Every cut of data laid over three pieces at every pair of piece sizes.
  std::string text = "0123456789";
  for (std::size_t a = 0; a <= text.size(); ++a) {
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      streambuf sb(pool::get(4096));
      put(sb, text.substr(0, a));
      sb.detach(0);
      put(sb, text.substr(a));
      auto it = sb.begin() + static_cast<std::ptrdiff_t>(cut);
      segment head = sb.detach(it);
      ASSERT_EQ(head.to_string(), text.substr(0, cut));
      ASSERT_EQ(readable(sb), text.substr(cut));
    }
  }
}

TEST(Streambuf, DetachedSegmentOutlivesBuffer) {
  segment s;
  {
    streambuf sb;
    put(sb, "MAIL FROM:<a@b>\r\n");
    s = sb.detach(sb.find("\r\n") + 2);
  }
  EXPECT_EQ(s.to_string(), "MAIL FROM:<a@b>\r\n");
}

TEST(Streambuf, ConsumeAllRewindsTheFragment) {
  pool& p = pool::get(4096);
  streambuf sb(p);
  put(sb, std::string(3000, 'a'));
  auto before = p.stats();
  sb.consume(3000);
  put(sb, std::string(3000, 'b'));  // fits in the same fragment from offset 0
  EXPECT_EQ(sb.fragment_count(), 1u);
  EXPECT_EQ(p.stats().acquires, before.acquires);
  EXPECT_EQ(readable(sb), std::string(3000, 'b'));
}

TEST(Streambuf, ReadInFlightSurvivesConsumeAndDetach) {
  streambuf sb(pool::get(4096));
  put(sb, "QUIT\r\nDATA\r\n");
  auto pending = sb.prepare(6000);  // an async read into this is in flight
  segment cmd = sb.detach(6);       // meanwhile the driver works on readable bytes
  sb.consume(sb.size());
  std::string incoming = test::pattern_text(5000);
  asio::buffer_copy(pending, asio::buffer(incoming));  // the read completes
  sb.commit(incoming.size());
  EXPECT_EQ(readable(sb), incoming);
  EXPECT_EQ(cmd.to_string(), "QUIT\r\n");
}

TEST(Streambuf, NoRewindWhileASegmentSharesTheFragment) {
  streambuf sb(pool::get(4096));
  put(sb, "first");
  segment s = sb.detach(5);
  put(sb, "second");
  EXPECT_EQ(s.to_string(), "first");
  EXPECT_EQ(readable(sb), "second");
  EXPECT_EQ(sb.fragment_count(), 1u);  // kept writing after "first"
}

TEST(Streambuf, SliceTurnsParserViewsIntoSegments) {
  streambuf sb(pool::get(4096));
  put(sb, "line one\r\n");
  put(sb, std::string(4090, 'x'));
  put(sb, "..dot\r\n");
  // The dot-unstuffed body: skip the first '.' of "..dot".
  std::string all = readable(sb);
  std::size_t dot = all.find("..dot");
  const char* p0 = &*sb.begin();
  std::error_code ec;
  segment body = sb.slice(p0, dot, ec);
  ASSERT_FALSE(ec);
  auto it = sb.begin() + static_cast<std::ptrdiff_t>(dot + 1);
  body.append(sb.slice(&*it, 6, ec));  // ".dot\r\n" lies in one fragment here
  ASSERT_FALSE(ec);
  EXPECT_EQ(body.to_string(), all.substr(0, dot) + ".dot\r\n");
  EXPECT_EQ(sb.size(), all.size());  // nothing consumed
  // A range that crosses fragments works through the pieces' pointers.
  segment across = sb.slice(p0 + 5, 4096, ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(across.to_string(), all.substr(5, 4096));
  // Outside the readable data: empty + error.
  char outside[4];
  EXPECT_TRUE(sb.slice(outside, 2, ec).empty());
  EXPECT_EQ(ec, errc::out_of_range);
  EXPECT_TRUE(sb.slice(p0, all.size() + 1, ec).empty());
  EXPECT_EQ(ec, errc::out_of_range);
}

TEST(Streambuf, GrowDataShrinkAsDynamicBufferV2) {
  streambuf sb(pool::get(4096));
  put(sb, "abc");
  sb.grow(6000);
  EXPECT_EQ(sb.size(), 6003u);
  auto d = sb.data(3, 6000);
  EXPECT_EQ(asio::buffer_size(d), 6000u);
  std::string fill = test::pattern_text(6000);
  asio::buffer_copy(d, asio::buffer(fill));
  sb.shrink(5000);  // as async_read does with the unread part
  EXPECT_EQ(sb.size(), 1003u);
  EXPECT_EQ(readable(sb), "abc" + fill.substr(0, 1000));
  // The shrunk space is writable again: no new fragment for it.
  EXPECT_GE(sb.capacity(), 6003u);
  EXPECT_EQ(sb.fragment_count(), 2u);
  put(sb, "Z");
  EXPECT_EQ(readable(sb), "abc" + fill.substr(0, 1000) + "Z");
  // data(pos, n) windows at every offset.
  std::string all = readable(sb);
  for (std::size_t pos = 0; pos <= all.size(); pos += 37) {
    std::string got(std::min<std::size_t>(300, all.size() - pos), '\0');
    asio::buffer_copy(asio::buffer(got), static_cast<const streambuf&>(sb).data(pos, 300));
    ASSERT_EQ(got, all.substr(pos, 300));
  }
}

TEST(Streambuf, MaxSizeIsEnforced) {
  streambuf sb(std::size_t{100});
  EXPECT_EQ(sb.max_size(), 100u);
  EXPECT_THROW(sb.prepare(101), std::length_error);
  put(sb, std::string(60, 'a'));
  EXPECT_THROW(sb.grow(41), std::length_error);
  EXPECT_NO_THROW(sb.grow(40));
}

TEST(Streambuf, ReleaseIfEmptyGivesEverythingBack) {
  pool& p = pool::get(8192);
  auto before = p.stats();
  streambuf sb(p);
  put(sb, "EHLO x\r\n");
  EXPECT_FALSE(sb.release_if_empty());
  sb.consume(sb.size());
  EXPECT_TRUE(sb.holds_memory());  // kept for the next read until told
  EXPECT_TRUE(sb.release_if_empty());
  EXPECT_FALSE(sb.holds_memory());
  EXPECT_EQ(sb.capacity(), 0u);
  EXPECT_EQ(p.stats().outstanding(), before.outstanding());
}

// Inside a message, reads of a few bytes each are sliced out as they arrive.
// Kept as the next read's space, the shared fragment takes the next bytes
// beside the earlier ones: N small reads then share one fragment.
TEST(Streambuf, ReleaseSpareKeepsTheFragmentASegmentShares) {
  pool& p = pool::get(8192);
  auto before = p.stats().outstanding();
  segment body;
  {
    streambuf sb(p);
    for (int i = 0; i < 100; ++i) {
      sb.prepare(65536);  // several fragments, as a bulk read asks
      put(sb, "abcde");
      body.append(sb.sub(0, sb.size()));
      sb.consume(sb.size());
      EXPECT_FALSE(sb.release_spare());  // the body shares it: kept
      EXPECT_EQ(sb.fragment_count(), 1u);
    }
    EXPECT_EQ(body.span_count(), 1u);  // contiguous: one slice
    EXPECT_EQ(body.footprint(), sizeof(detail::fragment) + 8192);
    body.clear();
    EXPECT_TRUE(sb.release_spare());  // nobody shares it now: given back
    EXPECT_FALSE(sb.holds_memory());
  }
  EXPECT_EQ(p.stats().outstanding(), before);
}

TEST(Streambuf, SteadyStateTakesNoFragmentFromTheHeap) {
  pool& p = pool::get(8192);
  streambuf sb(p);
  std::string msg = test::pattern_text(9000) + "\r\n.\r\n";
  auto cycle = [&] {
    for (std::size_t off = 0; off < msg.size(); off += 1500)
      put(sb, std::string_view(msg).substr(off, 1500));
    std::size_t end = sb.find("\r\n.\r\n");
    ASSERT_NE(end, streambuf::npos);
    segment m = sb.detach(end + 5);
    ASSERT_EQ(m.size(), msg.size());
  };
  for (int i = 0; i < 10; ++i) cycle();
  auto warm = p.stats();
  for (int i = 0; i < 1000; ++i) cycle();
  EXPECT_EQ(p.stats().heap_allocations, warm.heap_allocations);
  EXPECT_GT(p.stats().acquires, warm.acquires);
}

TEST(Streambuf, MoveTransfersEverything) {
  streambuf a(pool::get(4096));
  put(a, "hello");
  streambuf b(std::move(a));
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(readable(b), "hello");
  streambuf c;
  c = std::move(b);
  EXPECT_EQ(readable(c), "hello");
}

}  // namespace
}  // namespace inlet::buffer
