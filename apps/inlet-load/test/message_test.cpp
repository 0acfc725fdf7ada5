#include "inlet/load/message.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "inlet/load/error.hpp"

using namespace inlet::load;

namespace {
// Reverses dot-stuffing the way a server does, up to the end-of-data line.
std::string unstuff(std::string_view s, bool& terminated) {
  std::string out;
  terminated = false;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t nl = s.find("\r\n", pos);
    if (nl == std::string_view::npos) break;
    std::string_view line = s.substr(pos, nl + 2 - pos);
    pos = nl + 2;
    if (line == ".\r\n") {
      terminated = pos == s.size();
      return out;
    }
    if (line.front() == '.') line.remove_prefix(1);
    out.append(line);
  }
  return out;
}
}  // namespace

TEST(Crlf, NormalisesEveryLineEnding) {
  EXPECT_EQ(normalize_crlf("a\nb\r\nc\rd"), "a\r\nb\r\nc\r\nd\r\n");
  EXPECT_EQ(normalize_crlf("x\r\n"), "x\r\n");
  EXPECT_EQ(normalize_crlf(""), "");
  EXPECT_EQ(normalize_crlf("\n\n"), "\r\n\r\n");
  EXPECT_EQ(normalize_crlf("\r\r\n"), "\r\n\r\n");
}

TEST(DotStuff, DoublesLeadingDotsAndTerminates) {
  EXPECT_EQ(dot_stuff("a\r\n.b\r\n..\r\n.\r\nc.d\r\n"),
            "a\r\n..b\r\n...\r\n..\r\nc.d\r\n.\r\n");
  EXPECT_EQ(dot_stuff(".first\r\n"), "..first\r\n.\r\n");
  EXPECT_EQ(dot_stuff(""), ".\r\n");
}

TEST(DotStuff, RoundTripsThroughUnstuffing) {
  const std::string inputs[] = {"Subject: x\r\n\r\n.\r\n..\r\n. \r\nend\r\n", ".\r\n",
                                "no dots\r\nat all\r\n", "\r\n.\r\n\r\n"};
  for (const auto& in : inputs) {
    bool terminated = false;
    EXPECT_EQ(unstuff(dot_stuff(in), terminated), in);
    EXPECT_TRUE(terminated);
  }
}

TEST(Prepare, BuildsAllThreeForms) {
  const auto m = prepare("Subject: hi\n\n.dot\n");
  EXPECT_EQ(m.raw, "Subject: hi\r\n\r\n.dot\r\n");
  EXPECT_EQ(m.stuffed, "Subject: hi\r\n\r\n..dot\r\n.\r\n");
  EXPECT_EQ(m.bdat_cmd, "BDAT " + std::to_string(m.raw.size()) + " LAST\r\n");
}

TEST(Mbox, SplitsAndUnescapes) {
  const std::string mbox =
      "From a@b Thu Jan  1 00:00:00 2026\nSubject: one\n\n>From the start\n>>From kept one\nbody\n\n"
      "From c@d Thu Jan  1 00:00:01 2026\nSubject: two\n\nx\n";
  const auto msgs = split_mbox(mbox);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0], "Subject: one\n\nFrom the start\n>From kept one\nbody\n\n");
  EXPECT_EQ(msgs[1], "Subject: two\n\nx\n");
  EXPECT_TRUE(split_mbox("").empty());
  EXPECT_TRUE(split_mbox("no from line\n").empty());
}

TEST(Synthetic, SameSeedSameBytesOtherSeedOtherBytes) {
  synthetic_params p;
  p.count = 20;
  const auto a = synthesize(p), b = synthesize(p);
  EXPECT_EQ(a, b);
  p.seed = 2;
  EXPECT_NE(a, synthesize(p));
}

TEST(Synthetic, MeanSizeNearTargetAndSizesVary) {
  synthetic_params p;
  p.count = 4000;
  p.mean_bytes = 9000;
  const auto msgs = synthesize(p);
  ASSERT_EQ(msgs.size(), p.count);
  double sum = 0;
  std::size_t mn = SIZE_MAX, mx = 0;
  for (const auto& m : msgs) {
    sum += static_cast<double>(m.size());
    mn = std::min(mn, m.size());
    mx = std::max(mx, m.size());
    ASSERT_GE(m.size(), p.min_bytes);
    ASSERT_LE(m.size(), p.max_bytes + 2);
  }
  const double mean = sum / msgs.size();
  EXPECT_NEAR(mean, 9000.0, 9000.0 * 0.01);  // scaled to the mean; clamping and line ends
  EXPECT_LT(mn * 4, mx);                     // a spread, not one size
}

TEST(Synthetic, SmallCorpusStillHasTheMean) {
  synthetic_params p;
  p.count = 16;
  p.mean_bytes = 5000;
  double sum = 0;
  for (const auto& m : synthesize(p)) sum += static_cast<double>(m.size());
  EXPECT_NEAR(sum / 16, 5000.0, 5000.0 * 0.02);
}

TEST(Synthetic, SigmaZeroGivesOneSize) {
  synthetic_params p;
  p.count = 8;
  p.sigma = 0;
  for (const auto& m : synthesize(p)) EXPECT_NEAR(static_cast<double>(m.size()), 9000.0, 3.0);
}

TEST(Synthetic, MessagesAreWellFormedAndExerciseStuffing) {
  synthetic_params p;
  p.count = 200;
  std::size_t dot_lines = 0;
  for (const auto& m : synthesize(p)) {
    ASSERT_NE(m.find("\r\n\r\n"), std::string::npos);  // header/body separator
    ASSERT_TRUE(m.ends_with("\r\n"));
    ASSERT_EQ(normalize_crlf(m), m);  // already CRLF everywhere
    for (std::size_t pos = m.find("\r\n."); pos != std::string::npos; pos = m.find("\r\n.", pos + 1))
      ++dot_lines;
    bool terminated = false;
    ASSERT_EQ(unstuff(dot_stuff(m), terminated), m);
    ASSERT_TRUE(terminated);
  }
  EXPECT_GT(dot_lines, 0u);
}

TEST(Corpus, StatsAndWrapAroundIndexing) {
  prepared_corpus c(std::vector<std::string>{"a\n", "bb\n"});
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.stats().raw_bytes, 3u + 4u);
  EXPECT_EQ(&c[2], &c[0]);
  EXPECT_EQ(c[1].raw, "bb\r\n");
}

TEST(Corpus, LoadsDirectoryRecursivelySortedAndFiltered) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("inlet-load-test-" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  auto write = [&](const fs::path& p, std::string_view s) { std::ofstream(p, std::ios::binary) << s; };
  write(dir / "b.txt", "B\n");
  write(dir / "sub" / "a.txt", "A\n");
  write(dir / "meta.json", "{}");
  write(dir / "empty.txt", "");
  std::error_code ec;
  auto all = load_directory(dir, ec);
  EXPECT_FALSE(ec);
  EXPECT_EQ(all.size(), 3u);  // the empty file is skipped
  auto txt = load_directory(dir, ec, ".txt");
  EXPECT_FALSE(ec);
  EXPECT_EQ(txt, (std::vector<std::string>{"B\n", "A\n"}));  // b.txt < sub/a.txt
  auto none = load_directory(dir, ec, ".eml");
  EXPECT_EQ(ec, errc::empty_corpus);
  EXPECT_TRUE(none.empty());
  load_directory(dir / "missing", ec);
  EXPECT_TRUE(ec);
  fs::remove_all(dir);
}

TEST(Corpus, LoadsMboxFile) {
  namespace fs = std::filesystem;
  const fs::path f = fs::temp_directory_path() / ("inlet-load-mbox-" + std::to_string(::getpid()));
  std::ofstream(f, std::ios::binary) << "From x\nSubject: 1\n\nbody\nFrom y\nSubject: 2\n\n";
  std::error_code ec;
  const auto msgs = load_mbox(f, ec);
  EXPECT_FALSE(ec);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[1], "Subject: 2\n\n");
  fs::remove(f);
  load_mbox(f, ec);
  EXPECT_TRUE(ec);
}
