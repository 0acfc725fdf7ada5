// The drivers' input path without sockets: bytes committed into the streambuf in
// chunks, the session fed span by span, body pieces sliced out of the fragments.
// Every fragment boundary is swept across command lines, stuffed dots and the
// end-of-data marker; the messages must equal those of a flat reference run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <inlet/smtp/server_session.hpp>
#include <string>
#include <vector>

#include "driver_buffer.hpp"

namespace smtp = inlet::smtp;

namespace {

struct outcome {
  std::vector<std::string> bodies;
  std::vector<std::size_t> body_spans;  // spans per delivered body
  std::string output;
  bool closed = false;
  std::size_t scratch_views = 0;
};

// Feeds `wire` in chunks of `chunk` octets (the last shorter), like the driver.
outcome drive(const std::string& wire, std::size_t chunk, std::size_t read_size) {
  smtp::session_config cfg;
  smtp::server_session s(cfg);
  smtp::detail::driver_input in(read_size, cfg.max_command_line);
  smtp::message_body body;
  outcome o;
  s.start();
  std::size_t fed = 0;
  for (int guard = 0; guard < 1000000; ++guard) {
    std::string_view v = in.view();
    smtp::step st = s.consume(v);
    EXPECT_LE(st.consumed, v.size());
    if (st.kind == smtp::step_kind::body_data) body.append(in.piece(st.data));
    bool again = in.consumed(v, st.consumed, st.kind == smtp::step_kind::need_more);
    switch (st.kind) {
      case smtp::step_kind::body_data:
        continue;
      case smtp::step_kind::message_aborted:
        body.clear();
        continue;
      case smtp::step_kind::message_complete:
        o.bodies.push_back(body.to_string());
        o.body_spans.push_back(body.span_count());
        body.clear();
        (void)s.take_envelope();
        s.delivery_done(smtp::delivery_result{smtp::delivery_status::accepted("X"), {}});
        continue;
      case smtp::step_kind::start_tls:
        ADD_FAILURE() << "no TLS here";
        return o;
      case smtp::step_kind::close:
        o.closed = true;
        o.scratch_views = in.scratch_views();
        o.output += s.output();
        return o;
      case smtp::step_kind::need_more:
        if (again) continue;
        break;
    }
    o.output += s.output();
    s.clear_output();
    if (fed == wire.size()) return o;
    // "read": at most `chunk` octets into the prepared fragments
    std::size_t want = std::min(chunk, wire.size() - fed);
    std::size_t got = 0;
    for (auto b : in.prepare()) {
      std::size_t k = std::min(b.size(), want - got);
      std::memcpy(b.data(), wire.data() + fed + got, k);
      got += k;
      if (got == want) break;
    }
    in.commit(got);
    fed += got;
  }
  ADD_FAILURE() << "no progress";
  return o;
}

std::string conversation(std::size_t pad) {
  std::string w =
      "EHLO client.example\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.net>\r\nDATA\r\n";
  w += "Subject: sweep\r\n\r\n";
  // Body lines fill the first fragment up to the region under test.
  while (w.size() + 80 < pad) w += std::string(78, 'x') + "\r\n";
  w += std::string(pad > w.size() ? pad - w.size() : 0, 'y') + "\r\n";
  w += "..stuffed\r\n..\r\nlast\r\n.\r\n";
  // Pipelined second transaction right after the marker.
  w += "MAIL FROM:<c@example.org>\r\nRCPT TO:<d@example.net>\r\nDATA\r\n.a\r\n..\r\n.\r\n";
  w += "QUIT\r\n";
  return w;
}

}  // namespace

TEST(DriverInput, EveryFragmentBoundaryGivesTheSameMessages) {
  const std::size_t frag = 8192;  // inlet::buffer default fragment size
  std::size_t straddled = 0;
  for (std::size_t pad = frag - 220; pad < frag + 8; ++pad) {
    std::string wire = conversation(pad);
    outcome ref = drive(wire, wire.size(), 1 << 20);
    ASSERT_EQ(ref.bodies.size(), 2u) << pad;
    ASSERT_TRUE(ref.closed);
    EXPECT_NE(ref.bodies[0].find("\r\n.stuffed\r\n"), std::string::npos);
    EXPECT_NE(ref.bodies[0].find("\r\n.\r\nlast\r\n"), std::string::npos);
    EXPECT_EQ(ref.bodies[1], "a\r\n.\r\n");
    for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{600}, std::size_t{4096},
                              frag - 1, frag + 3}) {
      outcome o = drive(wire, chunk, 64 * 1024);
      ASSERT_EQ(o.bodies, ref.bodies) << "pad " << pad << " chunk " << chunk;
      EXPECT_EQ(o.output, ref.output) << "pad " << pad << " chunk " << chunk;
      EXPECT_TRUE(o.closed);
      straddled += o.scratch_views;
    }
  }
  EXPECT_GT(straddled, 100u);  // the sweep did exercise the straddling tails
}

TEST(DriverInput, BodyIsSlicedNotCopied) {
  // A large body read in big chunks comes out as a few slices of the fragments.
  std::string wire = "HELO c\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.net>\r\nDATA\r\n";
  std::string body;
  for (int i = 0; i < 4000; ++i) body += "line " + std::to_string(i) + " of the body\r\n";
  wire += body + ".\r\nQUIT\r\n";
  outcome o = drive(wire, 64 * 1024, 64 * 1024);
  ASSERT_EQ(o.bodies.size(), 1u);
  EXPECT_EQ(o.bodies[0], body);
  EXPECT_EQ(o.scratch_views, 0u);
  // One piece per fragment (8 KiB) plus at most one per read boundary.
  EXPECT_LE(o.body_spans[0], body.size() / 8192 + 1 + wire.size() / (64 * 1024) + 1);
}

TEST(DriverInput, IdleBufferHoldsNoFragment) {
  smtp::detail::driver_input in(64 * 1024, 512);
  auto seq = in.prepare();
  std::size_t got = 0;
  for (auto b : seq) {
    std::memcpy(b.data(), "NOOP\r\n", 6);
    got = 6;
    break;
  }
  in.commit(got);
  EXPECT_TRUE(in.buf().holds_memory());
  in.release_if_empty();
  EXPECT_TRUE(in.buf().holds_memory());  // bytes pending: kept
  std::string_view v = in.view();
  EXPECT_EQ(v, "NOOP\r\n");
  in.consumed(v, v.size(), true);
  in.release_if_empty();
  EXPECT_FALSE(in.buf().holds_memory());
}

// A client trickling a command line holds a few octets while it is silent,
// not a fragment: before a wait outside a message the unfinished line is
// copied out and the fragment given back; the next read finds it in front of
// the new bytes. A tail longer than the scratch window keeps its fragment.
TEST(DriverInput, AnUnfinishedCommandLineWaitsWithoutAFragment) {
  smtp::detail::driver_input in(64 * 1024, 512);
  auto put = [&](std::string_view s) {
    auto space = in.prepare(false);
    ASSERT_GE(buffer_size(space), s.size());
    std::memcpy((*space.begin()).data(), s.data(), s.size());
    in.commit(s.size());
  };
  auto outstanding = [&] { return in.buf().fragment_pool().stats().outstanding(); };
  const auto before = outstanding();
  put("EHLO cli");
  std::string_view v = in.view();
  EXPECT_EQ(v, "EHLO cli");
  EXPECT_FALSE(in.consumed(v, 0, true));
  EXPECT_EQ(outstanding(), before + 1);
  in.release_for_wait(false);
  EXPECT_EQ(outstanding(), before);
  EXPECT_FALSE(in.empty());
  put("ent.test\r\n");
  EXPECT_EQ(in.view(), "EHLO client.test\r\n");
  in.consumed(in.view(), 18, true);
  in.release_for_wait(false);
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(outstanding(), before);

  // Nothing read since the wait: the parked line is still what the session sees.
  put("MAIL FROM:<a@x.te");
  in.release_for_wait(false);
  EXPECT_EQ(in.view(), "MAIL FROM:<a@x.te");
  in.consumed(in.view(), 0, true);

  smtp::detail::driver_input big(64 * 1024, 512);
  const std::string tail(1200, 'x');  // past the scratch window (2 * 512 + 64)
  auto space = big.prepare(false);
  std::memcpy((*space.begin()).data(), tail.data(), tail.size());
  big.commit(tail.size());
  const auto held = big.buf().fragment_pool().stats().outstanding();
  big.release_for_wait(false);
  EXPECT_EQ(big.buf().fragment_pool().stats().outstanding(), held);
  EXPECT_EQ(big.view(), tail);
}
