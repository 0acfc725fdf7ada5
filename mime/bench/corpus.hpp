// Benchmark helpers: load a corpus of messages into memory, time rounds, summarise.
#pragma once

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace inlet::mime::bench {

inline std::vector<std::string> load_corpus(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> files;
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      for (auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.emplace_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

// CPU time of the calling thread: on a shared, oversubscribed machine this counts only
// the time this thread was running, so GB/s figures are per core. (Cache and memory
// bandwidth are still shared with the other processes; ratios in one run stay the
// primary figure.)
inline double thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <class F>
double seconds(F&& f) {
  double t0 = thread_cpu_now();
  f();
  return thread_cpu_now() - t0;
}

struct stats {
  double median = 0, min = 0, max = 0;
};

inline stats summarize_values(std::vector<double> v) {
  stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

}  // namespace inlet::mime::bench
