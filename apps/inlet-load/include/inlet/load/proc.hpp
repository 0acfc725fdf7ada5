#pragma once
// Sampling a process from /proc: CPU user/sys, RSS, context switches, threads.
// The parsers take the file text, so they are tested without /proc.
//
// Thread-safety: proc_sampler is used by one thread (inlet-load's main thread).
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace inlet::load {

struct proc_stat {
  std::uint64_t utime_ticks = 0, stime_ticks = 0;  // whole process, all threads
  std::uint64_t threads = 0;
  std::uint64_t rss_pages = 0;
};

struct proc_ctx {
  std::uint64_t voluntary = 0, involuntary = 0;
};

// /proc/<pid>/stat. The command name may contain spaces and ')'; fields after the last ')'.
std::optional<proc_stat> parse_proc_stat(std::string_view text);
// voluntary_ctxt_switches / nonvoluntary_ctxt_switches of one /proc/.../status.
std::optional<proc_ctx> parse_proc_status(std::string_view text);

struct proc_sample {
  double t_seconds = 0;  // since the sampler started
  proc_stat stat;
  proc_ctx ctx;          // summed over /proc/<pid>/task/*/status
};

// Aggregate of a series of samples.
struct proc_summary {
  bool valid = false;
  double seconds = 0;
  double cpu_user_s = 0, cpu_sys_s = 0;  // CPU seconds used between first and last sample
  double cpu_percent = 0;                // (user+sys)/wall, 100 = one core
  std::uint64_t rss_max_bytes = 0, rss_last_bytes = 0;
  std::uint64_t threads_max = 0;
  std::uint64_t voluntary_ctx = 0, involuntary_ctx = 0;  // deltas (of live threads)
};

proc_summary summarize(const proc_sample& first, const proc_sample& last,
                       std::uint64_t rss_max_pages, std::uint64_t threads_max,
                       long ticks_per_second, long page_size);

class proc_sampler {
 public:
  explicit proc_sampler(int pid);
  // Reads the files now. Returns false if the process is gone.
  bool sample();
  proc_summary summary() const;
  const std::optional<proc_sample>& last() const noexcept { return last_; }
  int pid() const noexcept { return pid_; }

 private:
  int pid_;
  double t0_;
  std::optional<proc_sample> first_, last_;
  std::uint64_t rss_max_ = 0, threads_max_ = 0;
};

}  // namespace inlet::load
