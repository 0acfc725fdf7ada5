// inlet::filter — the compiled filter, the per-message scan and its verdict.
//
//   auto terms = inlet::filter::load_terms("terms.txt");          // result<term_list>
//   auto f = inlet::filter::filter::compile(std::move(*terms));    // result<shared_ptr<const filter>>
//   inlet::filter::scan s(*f, &counters);
//   s.begin_stream(stream_kind::header);  s.feed(subject);  s.end_stream();
//   s.begin_stream(stream_kind::text_plain); s.feed(piece1); s.feed(piece2); s.end_stream();
//   verdict v = s.finish(threshold);
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "inlet/filter/engine.hpp"
#include "inlet/filter/error.hpp"
#include "inlet/filter/terms.hpp"

namespace inlet::filter {

struct filter_options {
  engine_kind engine = engine_kind::hyperscan;
};

/// A compiled, immutable term set. Shared by every thread through
/// std::shared_ptr<const filter>; all members are const and thread-safe.
class filter {
 public:
  /// Compiles a term list. An empty list gives a filter that matches nothing.
  static result<std::shared_ptr<const filter>> compile(term_list terms, filter_options opts = {});

  const term_list& terms() const noexcept { return terms_; }
  engine_kind engine_used() const noexcept { return kind_; }
  std::chrono::nanoseconds compile_time() const noexcept { return compile_time_; }
  std::size_t memory_bytes() const noexcept;
  /// Process-wide unique id of this compiled filter (increases with every compile).
  std::uint64_t generation() const noexcept { return generation_; }
  /// nullptr for an empty list.
  const engine* engine_ptr() const noexcept { return engine_.get(); }

  filter(const filter&) = delete;
  filter& operator=(const filter&) = delete;
  ~filter();

 private:
  filter() = default;
  term_list terms_;
  std::unique_ptr<engine> engine_;
  engine_kind kind_ = engine_kind::hyperscan;
  std::chrono::nanoseconds compile_time_{0};
  std::uint64_t generation_ = 0;
};

/// Kind of text stream fed to a scan. The filter scans every kind the same way
/// (decoded UTF-8 bytes); the kind is recorded for diagnostics and future policy.
enum class stream_kind : std::uint8_t { header, text_plain, text_html, text_other };

/// Process-wide (or registry-wide) counters, updated with relaxed atomics.
/// Thread-safe.
struct counters {
  std::atomic<std::uint64_t> messages_scanned{0};
  std::atomic<std::uint64_t> messages_matched{0};
  std::atomic<std::uint64_t> bytes_scanned{0};
  std::atomic<std::uint64_t> nanoseconds{0};  ///< time spent inside the engines

  struct snapshot {
    std::uint64_t messages_scanned, messages_matched, bytes_scanned, nanoseconds;
  };
  snapshot load() const noexcept;
};

/// Outcome of scanning one message. Keeps the filter it came from alive, so the
/// views in `terms` stay valid for the verdict's lifetime (also after a reload).
/// Copy it freely; not synchronised (treat like any value).
struct verdict {
  double score = 0.0;                    ///< sum of the weights of the distinct matched terms
  std::vector<std::uint32_t> term_ids;   ///< distinct matched term ids, in first-match order
  std::vector<std::string_view> terms;   ///< the pattern of each matched term, as in the file
  bool over_threshold = false;           ///< matched and score >= threshold
  std::error_code error;                 ///< engine failure: the scan stopped early
  std::shared_ptr<const filter> source;  ///< owner of the `terms` views
  bool matched() const noexcept { return !term_ids.empty(); }
};

/// Scans one message, stream by stream, piece by piece. Not thread-safe: one
/// thread at a time (it may move between threads between calls, e.g. across
/// coroutine resumptions). Holds a reference on its filter, so a reload does not
/// disturb a scan in progress. Pieces passed to feed() are not retained.
class scan {
 public:
  explicit scan(std::shared_ptr<const filter> f, counters* stats = nullptr);
  ~scan();
  scan(const scan&) = delete;
  scan& operator=(const scan&) = delete;
  scan(scan&&) noexcept;
  scan& operator=(scan&&) noexcept;

  /// Starts a stream (a header value, a text part). Ends an open one first.
  void begin_stream(stream_kind kind = stream_kind::text_plain);
  /// Feeds the next piece of the open stream (opens a text_plain stream if none).
  void feed(std::string_view piece);
  /// Ends the open stream; a term can no longer span into the next stream.
  void end_stream();
  /// Ends any open stream, updates the counters once and returns the verdict; the
  /// scan is then ready for the next message (as after reset()).
  verdict finish(double threshold = 1.0);
  /// Abandons the current message: forgets its matches, counts nothing.
  void reset() noexcept;

  double score() const noexcept { return score_; }
  std::error_code error() const noexcept { return error_; }
  const std::shared_ptr<const filter>& filter_ptr() const noexcept { return filter_; }

 private:
  static void on_match(void* ctx, std::uint32_t id) noexcept;
  void record(std::uint32_t id) noexcept;
  void release_stream() noexcept;
  void clear_seen() noexcept;

  std::shared_ptr<const filter> filter_;
  counters* stats_ = nullptr;
  std::unique_ptr<engine_stream> stream_;
  bool open_ = false;
  double score_ = 0.0;
  std::vector<std::uint64_t> seen_;     ///< bitmap over term ids, once matches are many
  bool bitmap_ = false;                 ///< seen_ is in use (and holds matched_)
  static constexpr unsigned small_set_bits = 6;
  static constexpr std::size_t small_set_slots = std::size_t{1} << small_set_bits;
  std::array<std::uint32_t, small_set_slots> small_set_{};  ///< id + 1, 0 = empty
  std::vector<std::uint32_t> matched_;
  std::uint64_t bytes_ = 0;
  std::uint64_t nanos_ = 0;
  std::error_code error_;
};

}  // namespace inlet::filter
