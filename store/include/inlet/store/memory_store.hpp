// A bounded in-memory message store (Mailinator-style: oldest evicted first).
//
// Bounds: at most `max_messages` messages and `max_bytes` raw bytes; a put that would
// exceed either evicts the oldest messages first. A single message larger than max_bytes
// is refused with errc::too_large.
//
// Thread-safety: all members may be called concurrently. One std::shared_mutex guards the
// indexes: writers (put, remove, clear) hold it exclusively for a few pointer operations
// (the record is built and the ID drawn before the lock is taken); readers hold it shared
// only while they copy out at most `limit` shared pointers. Observers run after the lock
// is released. See store/DESIGN.md.
//
// Read flags: set_read flips a record's atomic flag under the shared lock and keeps an
// unread count for the store and one per mailbox, so listings report `unread` in O(1).
//
// Complexity: put O(r) amortised (r = recipients), get O(1) average, list O(limit)
// (random access from the newest end, nothing copied but the page), eviction O(r) per
// message, remove O(n) per removed ID (erasing from the middle of the order index).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <shared_mutex>
#include <string>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "inlet/store/store.hpp"

namespace inlet::store {

struct memory_store_config {
  std::size_t max_messages = 10000;
  std::size_t max_bytes = std::size_t{1} << 30;  ///< 1 GiB of raw bytes
};

class memory_store final : public store {
 public:
  explicit memory_store(memory_store_config cfg = {});
  ~memory_store() override;
  memory_store(const memory_store&) = delete;
  memory_store& operator=(const memory_store&) = delete;

  void put(new_message msg, put_handler done) override;
  page list(std::size_t start, std::size_t limit) const override;
  page list_mailbox(std::string_view mailbox, std::size_t start,
                    std::size_t limit) const override;
  message_ptr get(std::string_view id) const override;
  std::size_t remove(std::span<const std::string> ids) override;
  std::size_t clear() override;
  std::size_t set_read(std::span<const std::string> ids, bool read) override;
  store_stats stats() const override;
  std::uint64_t subscribe(new_message_observer observer) override;
  void unsubscribe(std::uint64_t handle) override;

  const memory_store_config& config() const noexcept { return cfg_; }

 private:
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  using order_index = std::deque<message_ptr>;  // oldest at front, sorted by seq
  struct entry {
    message_ptr msg;
    std::vector<std::string> mailboxes;  // normalised distinct recipients, for unlinking
  };
  struct mailbox {
    order_index order;
    // Unread messages of this mailbox: changed under the exclusive lock by put/removal
    // and under the shared lock by set_read (hence atomic). Nodes never move.
    mutable std::atomic<std::uint64_t> unread{0};
  };

  static page slice(const order_index& order, std::size_t start, std::size_t limit);
  // Flips one record's flag and the unread counts (store and its mailboxes); the caller
  // holds mutex_ (shared is enough: flag and counts are atomics, removals are exclusive).
  bool flip_read(const entry& e, bool read) const noexcept;
  static void erase_from(order_index& order, const stored_message& m);
  message_ptr evict_oldest_locked();
  void unlink_locked(const stored_message& m, const std::vector<std::string>& mailboxes);

  const memory_store_config cfg_;
  mutable std::shared_mutex mutex_;
  std::uint64_t next_seq_ = 1;
  order_index order_;
  // Keyed by a view of the record's own id (the entry keeps the record alive).
  std::unordered_map<std::string_view, entry, string_hash, std::equal_to<>> by_id_;
  std::unordered_map<std::string, mailbox, string_hash, std::equal_to<>> by_mailbox_;
  store_stats stats_;                    // all but `unread`, under mutex_
  mutable std::atomic<std::uint64_t> unread_{0};  // held and not read

  mutable std::mutex observers_mutex_;
  std::uint64_t next_observer_ = 1;
  std::map<std::uint64_t, std::shared_ptr<const new_message_observer>> observers_;
};

}  // namespace inlet::store
