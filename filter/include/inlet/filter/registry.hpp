// filter_registry: the filter in force, replaced atomically on reload.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "inlet/filter/filter.hpp"

namespace inlet::filter {

/// Outcome of one reload.
struct reload_status {
  bool ok = false;
  std::size_t terms = 0;            ///< terms in force after the reload
  std::uint64_t generation = 0;     ///< generation of the filter in force after the reload
  term_error error;                 ///< when !ok: what was wrong (with its line number)
};

/// Holds the filter in force for a term file.
///
/// Thread-safety: every member may be called from any thread at any time.
/// current() is wait-free for readers in practice (a short mutex-protected
/// shared_ptr copy); reload() compiles outside the lock and swaps the pointer, so
/// scans in progress keep the filter they started with. A failed reload (unreadable
/// file, invalid line, engine error) keeps the old filter in force.
class filter_registry {
 public:
  /// No file is read here: current() is an empty filter until the first reload().
  explicit filter_registry(std::filesystem::path path, filter_options opts = {});
  ~filter_registry();  ///< stops the watcher thread, if any
  filter_registry(const filter_registry&) = delete;
  filter_registry& operator=(const filter_registry&) = delete;

  /// Reads, parses and compiles the file; on success swaps it in. Serialised.
  reload_status reload();

  /// The filter in force (never null).
  std::shared_ptr<const filter> current() const;

  /// Counters shared by every scan made through this registry (survive reloads).
  counters& stats() noexcept { return stats_; }
  const counters& stats() const noexcept { return stats_; }

  /// Convenience: a scan on the filter in force, counting into stats().
  scan make_scan() { return scan(current(), &stats_); }

  /// Called after every reload attempt made by the watcher (from its thread).
  void on_reload(std::function<void(const reload_status&)> cb);

  /// Starts a thread that watches the file's directory with inotify and reloads when
  /// the file is closed after writing or replaced by a rename. A reload waits until
  /// the file has been quiet (no write, close or rename) for `settle`, then reads it
  /// twice `settle / 4` apart and installs it only when both reads agree and nothing
  /// happened in between; otherwise it waits again. So a file rewritten in place
  /// (truncated, then written in several opens) is never installed half-written.
  /// Idempotent (a second call keeps the first settle time).
  std::error_code watch(std::chrono::milliseconds settle = std::chrono::milliseconds(200));
  /// Stops the watcher thread (joins it). Idempotent.
  void stop_watching() noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void watch_loop(int inotify_fd, int stop_fd, std::chrono::milliseconds settle);
  reload_status install(result<term_list> terms);

  std::filesystem::path path_;
  filter_options opts_;
  counters stats_;
  mutable std::mutex mu_;              // guards current_, callback_
  std::shared_ptr<const filter> current_;
  std::function<void(const reload_status&)> callback_;
  std::mutex reload_mu_;               // serialises reload()
  std::mutex watch_mu_;                // guards the watcher fields
  std::thread watcher_;
  int stop_fd_ = -1;
};

}  // namespace inlet::filter
