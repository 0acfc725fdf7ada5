#include "inlet/load/proc.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

using namespace inlet::load;

namespace {
// A /proc/<pid>/stat line whose command contains spaces and a ')'.
const char* stat_line =
    "4242 (inlet d) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 3 0 12345 "
    "123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
}  // namespace

TEST(ProcStat, ParsesFieldsAfterTheLastParen) {
  const auto st = parse_proc_stat(stat_line);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->utime_ticks, 250u);
  EXPECT_EQ(st->stime_ticks, 75u);
  EXPECT_EQ(st->threads, 3u);
  EXPECT_EQ(st->rss_pages, 2048u);
}

TEST(ProcStat, RejectsTruncatedOrGarbage) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("1 (x) S 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("no paren at all"));
  std::string bad = stat_line;
  bad.replace(bad.find(" 250 "), 5, " 2x0 ");
  EXPECT_FALSE(parse_proc_stat(bad));
}

TEST(ProcStatus, ParsesContextSwitches) {
  const auto c = parse_proc_status(
      "Name:\tinletd\nThreads:\t3\nvoluntary_ctxt_switches:\t1500\nnonvoluntary_ctxt_switches:\t\t42\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->voluntary, 1500u);
  EXPECT_EQ(c->involuntary, 42u);
  EXPECT_FALSE(parse_proc_status("Name:\tx\n"));
}

TEST(ProcSummary, DeltasAndPercent) {
  proc_sample a, b;
  a.t_seconds = 1.0;
  b.t_seconds = 3.0;
  a.stat = {100, 50, 2, 1000};
  b.stat = {300, 150, 4, 1500};
  a.ctx = {10, 1};
  b.ctx = {110, 6};
  const auto s = summarize(a, b, 2000, 5, 100, 4096);
  EXPECT_DOUBLE_EQ(s.cpu_user_s, 2.0);
  EXPECT_DOUBLE_EQ(s.cpu_sys_s, 1.0);
  EXPECT_DOUBLE_EQ(s.cpu_percent, 150.0);  // 3 CPU seconds in 2 s
  EXPECT_EQ(s.rss_max_bytes, 2000u * 4096u);
  EXPECT_EQ(s.rss_last_bytes, 1500u * 4096u);
  EXPECT_EQ(s.threads_max, 5u);
  EXPECT_EQ(s.voluntary_ctx, 100u);
  EXPECT_EQ(s.involuntary_ctx, 5u);
}

// Reading our own /proc entry is a file read, not a socket; it checks the file format.
TEST(ProcSampler, SamplesThisProcess) {
  proc_sampler p(static_cast<int>(::getpid()));
  ASSERT_TRUE(p.sample());
  ASSERT_TRUE(p.sample());
  const auto s = p.summary();
  EXPECT_TRUE(s.valid);
  EXPECT_GT(s.rss_max_bytes, 0u);
  EXPECT_GE(s.threads_max, 1u);
  proc_sampler gone(-5);
  EXPECT_FALSE(gone.sample());
  EXPECT_FALSE(gone.summary().valid);
}
