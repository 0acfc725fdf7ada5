// A bounded in-memory message store (Mailinator-style: oldest evicted first).
//
// Bounds: at most `max_messages` messages and `max_bytes` bytes, where a message's bytes
// are its raw bytes plus what the store keeps beside them (summary, envelope, tags, the
// folded search fields and search text once a search built them, and a fixed per-record
// overhead; see footprint in the .cpp). A put that would exceed either bound evicts the
// oldest messages first; what searches build may take the store past max_bytes until the
// next put evicts. A single message whose
// bytes exceed max_bytes is refused with errc::too_large. Tags added later may take the
// store past max_bytes until the next put evicts.
//
// Every asynchronous operation completes at once: the handler is dispatched to its
// associated executor (so it runs inline when the caller is already there, e.g. a
// coroutine awaiting the result), never on a thread of the store's own.
//
// Thread-safety: all members may be called concurrently. One std::shared_mutex guards the
// indexes: writers (put, remove, tags) hold it exclusively; readers (list, get, search,
// set_read) hold it shared. Records are built (ID drawn, search fields folded) before the
// lock is taken; evicted or removed records are freed after it is released; observers
// run after it is released. See store/DESIGN.md. With memory_store_config::max_age the
// store runs one thread of its own, the sweep: observers hear of the messages it deletes
// on that thread; the destructor stops and joins it.
//
// Complexity: put O(r) amortised (r = recipients), get O(1) average, list without a search
// O(limit), list with a search O(n) (every message in scope is tested; counts of all
// matches are part of the answer), eviction O(r log n), remove of k messages O(n) for a
// batch, O(n) per single ID in the worst case (erasing from the middle of an index).
#pragma once

#include <atomic>
#include <boost/unordered/unordered_flat_map.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "inlet/store/store.hpp"

namespace inlet::store {

struct memory_store_config {
  std::size_t max_messages = 10000;
  std::size_t max_bytes = std::size_t{1} << 30;  ///< 1 GiB, raw bytes and what is kept beside
  /// Messages older than this (by `created`) are deleted by a sweep on a thread of the
  /// store's own, every max_age / 10 (at least every second, at most every minute), as
  /// Mailpit's --max-age does. 0 (default): kept until evicted or deleted; no thread.
  std::chrono::seconds max_age{0};
};

class memory_store final : public store {
 public:
  explicit memory_store(memory_store_config cfg = {});
  ~memory_store() override;
  memory_store(const memory_store&) = delete;
  memory_store& operator=(const memory_store&) = delete;

  void put(new_message msg, put_handler done) override;
  store_stats stats() const override;
  store_health health() const override;
  std::uint64_t subscribe(event_observer observer) override;
  void unsubscribe(std::uint64_t handle) override;

  const memory_store_config& config() const noexcept { return cfg_; }

  /// Deletes every message created before `cutoff` (the max_age sweep's step; callable at
  /// any time). Observers are told as for a delete; deleted_total counts them. Returns
  /// how many went.
  std::size_t expire(time_point cutoff);

  /// Bytes a message with this content would count against max_bytes (for tests).
  static std::size_t footprint_of(const stored_message& m);

 protected:
  void do_list(list_request req, handler<void(std::error_code, page)> h) override;
  void do_get(std::string id, handler<void(std::error_code, message_ptr)> h) override;
  void do_remove(selection which, handler<void(std::error_code, std::size_t)> h) override;
  void do_set_read(selection which, bool read,
                   handler<void(std::error_code, std::size_t)> h) override;
  void do_set_tags(selection which, std::vector<std::string> tags,
                   handler<void(std::error_code, std::size_t)> h) override;
  void do_list_tags(handler<void(std::error_code, std::vector<std::string>)> h) override;
  void do_rename_tag(std::string from, std::string to,
                     handler<void(std::error_code, std::size_t)> h) override;
  void do_delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) override;

 private:
  struct record;      // stored_message + folded search fields + index keys (memory_store.cpp)
  class lazy_source;  // a record's search parts, built on first use
  using record_ptr = std::shared_ptr<const record>;
  using order_index = std::deque<record_ptr>;  // oldest at front, sorted by seq
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  struct mailbox {
    order_index order;
    // Unread messages of this mailbox: changed under the exclusive lock by put/removal
    // and under the shared lock by set_read (hence atomic). Nodes never move.
    mutable std::atomic<std::uint64_t> unread{0};
  };
  struct tag_info {
    std::string name;       // the spelling shown (the first one seen)
    std::size_t count = 0;  // messages carrying it
  };

  // Which index a request looks at, and its unread counter; null order: unknown mailbox.
  struct scope {
    const order_index* order = nullptr;
    const std::atomic<std::uint64_t>* unread = nullptr;
  };
  scope scope_of(const std::string& mailbox) const;  // mailbox normalised by the caller
  std::vector<record_ptr> resolve_locked(const selection& s, const search::query* q) const;
  bool flip_read(const record& r, bool read) const noexcept;
  static void erase_from(order_index& order, std::uint64_t seq);
  record_ptr evict_oldest_locked();
  void unlink_locked(const record& r);
  void remove_locked(const std::vector<record_ptr>& victims);
  std::vector<std::string> canonical_tags_locked(std::vector<std::string> tags) const;
  void count_tags_locked(const std::vector<std::string>& tags, bool add);
  std::size_t replace_tags_locked(const record& r, std::vector<std::string> tags);
  void notify(const store_event& e) const;
  bool has_observers() const noexcept {
    return observer_count_.load(std::memory_order_relaxed) != 0;
  }

  const memory_store_config cfg_;
  mutable std::shared_mutex mutex_;
  std::uint64_t next_seq_ = 1;
  order_index order_;
  // Keyed by a view of the record's own id (the value keeps the record alive). Open
  // addressing: no node allocated per message.
  boost::unordered_flat_map<std::string_view, record_ptr, string_hash, std::equal_to<>> by_id_;
  std::unordered_map<std::string, mailbox, string_hash, std::equal_to<>> by_mailbox_;
  std::map<std::string, tag_info, std::less<>> tags_;  // keyed by the folded tag
  store_stats stats_;                                  // all but `unread`, under mutex_
  mutable std::atomic<std::uint64_t> unread_{0};       // held and not read
  // Bytes of the search parts built after put (record::lazy_bytes), changed by searches
  // under the shared lock; part of stats().bytes and of the max_bytes bound.
  mutable std::atomic<std::uint64_t> lazy_bytes_{0};

  mutable std::mutex observers_mutex_;
  std::uint64_t next_observer_ = 1;
  std::map<std::uint64_t, std::shared_ptr<const event_observer>> observers_;
  std::atomic<std::size_t> observer_count_{0};

  struct sweeper;  // the max_age thread (memory_store.cpp); declared last, stopped first
  std::unique_ptr<sweeper> sweeper_;
};

}  // namespace inlet::store
