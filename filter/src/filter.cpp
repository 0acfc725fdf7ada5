#include "inlet/filter/filter.hpp"

#include <atomic>
#include <utility>
#include <time.h>

#include "engines.hpp"
#include "inlet/filter/message.hpp"

namespace inlet::filter {
namespace {

std::atomic<std::uint64_t> next_generation{1};

// CLOCK_MONOTONIC through the vDSO: ~20 ns, cheap enough per fed piece.
std::uint64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

std::string_view to_string(engine_kind k) noexcept {
  switch (k) {
    case engine_kind::hyperscan: return "hyperscan";
    case engine_kind::aho_corasick: return "aho-corasick";
  }
  return "unknown";
}

result<std::unique_ptr<engine>> compile_engine(const term_list& terms, engine_kind kind) {
  switch (kind) {
    case engine_kind::hyperscan: return detail::compile_hyperscan(terms);
    case engine_kind::aho_corasick: return detail::compile_aho_corasick(terms);
  }
  return term_error{0, make_error_code(errc::engine_unavailable), {}};
}

filter::~filter() = default;

std::size_t filter::memory_bytes() const noexcept {
  return engine_ ? engine_->memory_bytes() : 0;
}

result<std::shared_ptr<const filter>> filter::compile(term_list terms, filter_options opts) {
  std::uint64_t t0 = now_ns();
  std::unique_ptr<engine> eng;
  if (!terms.empty()) {
    auto r = compile_engine(terms, opts.engine);
    if (!r) return r.error();
    eng = std::move(*r);
  }
  std::shared_ptr<filter> f(new filter());
  f->terms_ = std::move(terms);
  f->engine_ = std::move(eng);
  f->kind_ = opts.engine;
  f->compile_time_ = std::chrono::nanoseconds(now_ns() - t0);
  f->generation_ = next_generation.fetch_add(1, std::memory_order_relaxed);
  return std::shared_ptr<const filter>(std::move(f));
}

counters::snapshot counters::load() const noexcept {
  return {messages_scanned.load(std::memory_order_relaxed),
          messages_matched.load(std::memory_order_relaxed),
          bytes_scanned.load(std::memory_order_relaxed), nanoseconds.load(std::memory_order_relaxed)};
}

// ---- scan -------------------------------------------------------------------

// A tiny per-thread cache of idle engine streams, so that a scan per message does
// not pay hs_open_stream (an allocation and a state initialisation) every time.
// An entry keeps its filter alive; it is replaced as soon as the thread scans with
// another filter, so at most `stream_cache_slots` old filters linger per thread.
namespace {
constexpr int stream_cache_slots = 2;
struct cached_stream {
  std::shared_ptr<const filter> owner;  // declared first: destroyed after `stream`
  std::unique_ptr<engine_stream> stream;
};
thread_local cached_stream stream_cache[stream_cache_slots];

std::unique_ptr<engine_stream> take_cached(const std::shared_ptr<const filter>& f) {
  for (auto& c : stream_cache) {
    if (c.stream && c.owner == f) {
      c.owner.reset();
      return std::move(c.stream);
    }
  }
  return nullptr;
}

void give_back(const std::shared_ptr<const filter>& f, std::unique_ptr<engine_stream> s) noexcept {
  cached_stream* slot = &stream_cache[0];
  for (auto& c : stream_cache) {
    if (!c.stream) { slot = &c; break; }
  }
  // Old contents (if any) are released here; destroying a stream never throws.
  slot->stream = std::move(s);
  slot->owner = f;
}
}  // namespace

scan::scan(std::shared_ptr<const filter> f, counters* stats)
    : filter_(std::move(f)), stats_(stats) {}
scan::~scan() { release_stream(); }
scan::scan(scan&& o) noexcept
    : filter_(std::move(o.filter_)),
      stats_(o.stats_),
      stream_(std::move(o.stream_)),
      open_(std::exchange(o.open_, false)),
      score_(std::exchange(o.score_, 0.0)),
      seen_(std::move(o.seen_)),
      bitmap_(std::exchange(o.bitmap_, false)),
      small_set_(o.small_set_),
      matched_(std::move(o.matched_)),
      bytes_(std::exchange(o.bytes_, 0)),
      nanos_(std::exchange(o.nanos_, 0)),
      error_(std::exchange(o.error_, {})) {}
scan& scan::operator=(scan&& o) noexcept {
  if (this != &o) {
    release_stream();
    filter_ = std::move(o.filter_);
    stats_ = o.stats_;
    stream_ = std::move(o.stream_);
    open_ = std::exchange(o.open_, false);
    score_ = std::exchange(o.score_, 0.0);
    seen_ = std::move(o.seen_);
    bitmap_ = std::exchange(o.bitmap_, false);
    small_set_ = o.small_set_;
    matched_ = std::move(o.matched_);
    bytes_ = std::exchange(o.bytes_, 0);
    nanos_ = std::exchange(o.nanos_, 0);
    error_ = std::exchange(o.error_, {});
  }
  return *this;
}

// Returns an idle stream to the thread's cache (reset first if a stream is open).
void scan::release_stream() noexcept {
  if (!stream_) return;
  if (error_ || (open_ && stream_->finish([](void*, std::uint32_t) noexcept {}, nullptr))) {
    stream_.reset();  // state unknown after an engine failure: do not reuse
    return;
  }
  open_ = false;
  give_back(filter_, std::move(stream_));
}

void scan::on_match(void* ctx, std::uint32_t id) noexcept { static_cast<scan*>(ctx)->record(id); }

void scan::record(std::uint32_t id) noexcept {
  const std::size_t n = filter_->terms().size();
  if (id >= n) return;
  try {
    // Few distinct matches per message: an inline open-addressing set (no allocation)
    // while it is at most half full; then a bitmap over the term ids takes over.
    if (!bitmap_ && matched_.size() < small_set_slots / 2) {
      std::size_t h = (id * 0x9E3779B1u) >> (32 - small_set_bits);
      for (;; h = (h + 1) & (small_set_slots - 1)) {
        if (small_set_[h] == id + 1) return;
        if (small_set_[h] == 0) break;
      }
      matched_.push_back(id);
      small_set_[h] = id + 1;
      score_ += filter_->terms().terms[id].weight;
      return;
    }
    if (!bitmap_) {
      if (seen_.empty()) seen_.assign((n + 63) / 64, 0);
      for (std::uint32_t m : matched_) seen_[m / 64] |= std::uint64_t{1} << (m % 64);
      bitmap_ = true;
    }
    if (seen_[id / 64] & (std::uint64_t{1} << (id % 64))) return;
    matched_.push_back(id);
    if (bitmap_) seen_[id / 64] |= std::uint64_t{1} << (id % 64);
    score_ += filter_->terms().terms[id].weight;
  } catch (...) {
    error_ = make_error_code(errc::engine_failure);
  }
}

void scan::clear_seen() noexcept {
  if (bitmap_) {
    for (std::uint32_t id : matched_) seen_[id / 64] &= ~(std::uint64_t{1} << (id % 64));
    bitmap_ = false;
  }
  small_set_.fill(0);
}

void scan::begin_stream(stream_kind) {
  if (open_) end_stream();
  open_ = true;
}

void scan::feed(std::string_view piece) {
  if (!open_) begin_stream(stream_kind::text_plain);
  bytes_ += piece.size();
  const engine* e = filter_ ? filter_->engine_ptr() : nullptr;
  if (e == nullptr || error_ || piece.empty()) return;
  std::uint64_t t0 = now_ns();
  if (!stream_) {
    stream_ = take_cached(filter_);
    if (!stream_) stream_ = e->open_stream();
  }
  if (auto ec = stream_->feed(piece, &scan::on_match, this)) error_ = ec;
  nanos_ += now_ns() - t0;
}

void scan::end_stream() {
  if (!open_) return;
  open_ = false;
  if (!stream_ || error_) return;
  std::uint64_t t0 = now_ns();
  if (auto ec = stream_->finish(&scan::on_match, this)) error_ = ec;
  nanos_ += now_ns() - t0;
}

verdict scan::finish(double threshold) {
  end_stream();
  verdict v;
  v.score = score_;
  v.terms.reserve(matched_.size());
  for (std::uint32_t id : matched_) v.terms.push_back(filter_->terms().terms[id].pattern);
  clear_seen();
  v.over_threshold = !matched_.empty() && score_ >= threshold;
  v.error = error_;
  v.source = filter_;
  if (stats_ != nullptr) {
    stats_->messages_scanned.fetch_add(1, std::memory_order_relaxed);
    if (!matched_.empty()) stats_->messages_matched.fetch_add(1, std::memory_order_relaxed);
    stats_->bytes_scanned.fetch_add(bytes_, std::memory_order_relaxed);
    stats_->nanoseconds.fetch_add(nanos_, std::memory_order_relaxed);
  }
  v.term_ids = std::move(matched_);
  matched_.clear();
  if (error_) stream_.reset();
  score_ = 0.0;
  bytes_ = 0;
  nanos_ = 0;
  error_ = {};
  return v;
}

void scan::reset() noexcept {
  if (error_) {
    stream_.reset();  // its state is unknown after an engine failure
  } else if (open_ && stream_) {
    if (stream_->finish([](void*, std::uint32_t) noexcept {}, nullptr)) stream_.reset();
  }
  open_ = false;
  score_ = 0.0;
  clear_seen();
  matched_.clear();
  bytes_ = 0;
  nanos_ = 0;
  error_ = {};
}

// ---- message level ----------------------------------------------------------

verdict scan_message(std::shared_ptr<const filter> f, std::span<const decoded_stream> streams,
                     double threshold, counters* stats) {
  scan s(std::move(f), stats);
  for (const decoded_stream& d : streams) {
    s.begin_stream(d.kind);
    for (std::string_view piece : d.pieces) s.feed(piece);
    s.end_stream();
  }
  return s.finish(threshold);
}

}  // namespace inlet::filter
