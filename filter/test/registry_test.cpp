#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "inlet/filter/registry.hpp"

namespace f = inlet::filter;
namespace fs = std::filesystem;

namespace {

class FilterRegistry : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("inlet_filter_registry_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ / "terms.txt";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Replaces the file atomically (write a temp file, rename over).
  void write(const std::string& text) {
    auto tmp = dir_ / ".terms.tmp";
    {
      std::ofstream o(tmp, std::ios::binary);
      o << text;
    }
    fs::rename(tmp, path_);
  }

  static std::set<std::string> scan_text(f::filter_registry& r, std::string_view text) {
    auto s = r.make_scan();
    s.feed(text);
    auto v = s.finish();
    std::set<std::string> out;
    for (std::string_view t : v.terms) out.emplace(t);
    return out;
  }

  fs::path dir_, path_;
};

}  // namespace

TEST_F(FilterRegistry, EmptyUntilFirstReload) {
  f::filter_registry r(path_);
  EXPECT_EQ(r.current()->terms().size(), 0u);
  write("alpha\nbeta\n");
  auto st = r.reload();
  ASSERT_TRUE(st.ok) << st.error.to_string();
  EXPECT_EQ(st.terms, 2u);
  EXPECT_EQ(st.generation, r.current()->generation());
  EXPECT_EQ(scan_text(r, "an alpha"), std::set<std::string>{"alpha"});
  auto snap = r.stats().load();
  EXPECT_EQ(snap.messages_scanned, 1u);
  EXPECT_EQ(snap.messages_matched, 1u);
}

TEST_F(FilterRegistry, BadFileKeepsOldList) {
  f::filter_registry r(path_);
  write("alpha\n");
  ASSERT_TRUE(r.reload().ok);
  auto before = r.current();

  write("gamma\n# fine\ndelta\tnot-a-weight\n");
  auto st = r.reload();
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(st.error.line, 3u);
  EXPECT_EQ(st.error.code, f::make_error_code(f::errc::bad_weight));
  EXPECT_EQ(r.current(), before);
  EXPECT_EQ(st.generation, before->generation());
  EXPECT_EQ(scan_text(r, "alpha gamma"), std::set<std::string>{"alpha"});

  write("gamma\nre:(unclosed\n");
  st = r.reload();
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(st.error.line, 2u);
  EXPECT_EQ(r.current(), before);

  fs::remove(path_);
  st = r.reload();
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(st.error.code, f::make_error_code(f::errc::file_unreadable));
  EXPECT_EQ(r.current(), before);

  write("gamma\n");
  ASSERT_TRUE(r.reload().ok);
  EXPECT_EQ(scan_text(r, "alpha gamma"), std::set<std::string>{"gamma"});
}

TEST_F(FilterRegistry, ScanInProgressKeepsItsFilter) {
  f::filter_registry r(path_);
  write("alpha\n");
  ASSERT_TRUE(r.reload().ok);
  auto s = r.make_scan();
  s.feed("al");
  write("beta\n");
  ASSERT_TRUE(r.reload().ok);
  s.feed("pha beta");
  auto v = s.finish();
  ASSERT_EQ(v.terms.size(), 1u);
  EXPECT_EQ(v.terms[0], "alpha");
  // The verdict keeps its filter alive: its views stay valid after more reloads.
  write("gamma\n");
  ASSERT_TRUE(r.reload().ok);
  EXPECT_EQ(r.current()->terms().terms[0].pattern, "gamma");
  EXPECT_EQ(std::string(v.terms[0]), "alpha");
}

TEST_F(FilterRegistry, WatchReloadsOnReplaceAndKeepsOldOnBadFile) {
  f::filter_registry r(path_);
  write("alpha\n");
  ASSERT_TRUE(r.reload().ok);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<f::reload_status> seen;
  r.on_reload([&](const f::reload_status& st) {
    std::lock_guard lock(mu);
    seen.push_back(st);
    cv.notify_all();
  });
  ASSERT_FALSE(r.watch());
  ASSERT_FALSE(r.watch());  // idempotent

  auto wait_for = [&](auto pred) {
    std::unique_lock lock(mu);
    // Bounded wait; the event normally arrives within milliseconds.
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return pred(seen); });
  };
  write("beta\n");
  ASSERT_TRUE(wait_for([](const auto& s) { return !s.empty() && s.back().ok && s.back().terms == 1; }));
  EXPECT_EQ(scan_text(r, "alpha beta"), std::set<std::string>{"beta"});
  const auto gen = r.current()->generation();

  write("beta\nre:((\n");
  ASSERT_TRUE(wait_for([](const auto& s) { return !s.empty() && !s.back().ok; }));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(seen.back().error.line, 2u);
  }
  EXPECT_EQ(r.current()->generation(), gen);
  r.stop_watching();
  r.stop_watching();
}

// A file rewritten in place, as a shell loop does it (truncate, then append a
// line per open/write/close): every close is an IN_CLOSE_WRITE of a file that
// is only partly written. The watcher must install the finished list only,
// never the empty or partial ones in between (the appends come 20 ms apart,
// well inside the settle time given to watch()).
TEST_F(FilterRegistry, WatchNeverInstallsAListReadMidWrite) {
  f::filter_registry r(path_);
  write("old\n");
  ASSERT_TRUE(r.reload().ok);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<f::reload_status> seen;
  r.on_reload([&](const f::reload_status& st) {
    std::lock_guard lock(mu);
    seen.push_back(st);
    cv.notify_all();
  });
  ASSERT_FALSE(r.watch(std::chrono::milliseconds(1000)));
  const std::vector<std::string> lines{"alpha", "beta", "gamma", "delta", "epsilon"};
  {
    std::ofstream truncate(path_, std::ios::binary | std::ios::trunc);
  }
  for (const auto& l : lines) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ofstream o(path_, std::ios::binary | std::ios::app);
    o << l << "\n";
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] {
    return !seen.empty() && seen.back().ok && seen.back().terms == lines.size();
  }));
  for (const auto& st : seen) {
    EXPECT_TRUE(st.ok);
    EXPECT_EQ(st.terms, lines.size()) << "a list read mid-write was installed";
  }
  lock.unlock();
  EXPECT_EQ(scan_text(r, "old alpha epsilon"), (std::set<std::string>{"alpha", "epsilon"}));
}

// Scanner threads run while the main thread swaps two lists; every verdict must be
// consistent with exactly one of them. Run under TSan (label tsan).
TEST_F(FilterRegistry, ConcurrentScansDuringReloads) {
  f::filter_registry r(path_);
  write("apple\nbanana\n");
  ASSERT_TRUE(r.reload().ok);
  const std::set<std::string> list_a{"apple", "banana"}, list_b{"cherry"};
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<std::uint64_t> scans{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100'000 && !stop.load(); ++i) {
        auto s = r.make_scan();
        s.begin_stream(f::stream_kind::header);
        s.feed("app");
        s.feed("le and ban");
        s.feed("ana, cher");
        s.feed("ry");
        auto v = s.finish();
        std::set<std::string> got;
        for (std::string_view t : v.terms) got.emplace(t);
        if (got != list_a && got != list_b) bad.fetch_add(1);
        scans.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < 30; ++i) {
    write(i % 2 == 0 ? "cherry\n" : "apple\nbanana\n");
    ASSERT_TRUE(r.reload().ok);
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(scans.load(), 0u);
  auto snap = r.stats().load();
  EXPECT_EQ(snap.messages_scanned, scans.load());
  EXPECT_EQ(snap.messages_matched, scans.load());
  EXPECT_EQ(snap.bytes_scanned, scans.load() * 24u);
}

// A scan may hop threads between calls (a coroutine resumed elsewhere): Hyperscan
// scratch is per thread and only used inside a call, the stream state moves with the scan.
TEST_F(FilterRegistry, ScanMovesBetweenThreads) {
  f::filter_registry r(path_);
  write("cross thread term\n");
  ASSERT_TRUE(r.reload().ok);
  for (int i = 0; i < 50; ++i) {
    auto s = r.make_scan();
    s.begin_stream(f::stream_kind::text_plain);
    std::thread([&] { s.feed("a cross thr"); }).join();
    std::thread([&] { s.feed("ead te"); }).join();
    f::verdict v;
    std::thread([&] {
      s.feed("rm!");
      v = s.finish();
    }).join();
    ASSERT_EQ(v.terms.size(), 1u);
    EXPECT_EQ(v.terms[0], "cross thread term");
  }
}
