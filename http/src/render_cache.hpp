// The catchers' rendered messages, kept for the next listing.
//
// MailHog's data.Message and MailDev's mail object carry each message in full (bodies,
// headers, parts, MailHog's raw bytes): rendering one means parsing its MIME and escaping
// tens of kilobytes, where Mailpit's listing reads a stored summary. A stored message
// never changes, so its rendering is made once and kept here by (view, message ID); the
// one field that changes, MailDev's `read`, is left out of the text and spliced in at
// `splice_at` when the answer is written.
//
// Design: an LRU bounded in bytes (text sizes plus a fixed per-entry overhead): a hash map
// from key to a node of a recency list. Texts are shared, immutable strings, so a reader
// copies them into its answer without holding the lock; a hit moves its node to the
// front. A deleted message's entry is not removed: it can no longer be asked for (IDs are
// not reused) and ages out. A key is a view tag byte and the ID.
// Thread-safety: every member may be called from any thread at once (one mutex).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace inlet::http::detail {

class render_cache {
 public:
  struct entry {
    std::string text;
    std::size_t splice_at = std::string::npos;  ///< where a mutable field goes, or npos
  };
  using entry_ptr = std::shared_ptr<const entry>;

  explicit render_cache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  /// The entry for (view, id), or null.
  entry_ptr find(char view, std::string_view id) {
    if (max_bytes_ == 0) return nullptr;
    std::string key = make_key(view, id);
    std::lock_guard lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->value;
  }

  /// Keeps `e` for (view, id), evicting the least recently used past the bound. An entry
  /// larger than the whole bound is not kept.
  void put(char view, std::string_view id, entry_ptr e) {
    const std::size_t cost = e->text.size() + overhead;
    if (cost > max_bytes_) return;
    std::string key = make_key(view, id);
    std::lock_guard lock(mutex_);
    if (auto it = map_.find(key); it != map_.end()) {  // two renderers raced: keep one
      lru_.splice(lru_.begin(), lru_, it->second);
      return;
    }
    lru_.push_front(node{key, std::move(e), cost});
    map_.emplace(std::move(key), lru_.begin());
    bytes_ += cost;
    while (bytes_ > max_bytes_ && !lru_.empty()) {
      bytes_ -= lru_.back().cost;
      map_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }

  std::size_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }

 private:
  static constexpr std::size_t overhead = 160;  // node, map slot, key, control block
  struct node {
    std::string key;
    entry_ptr value;
    std::size_t cost;
  };
  static std::string make_key(char view, std::string_view id) {
    std::string k(1, view);
    k += id;
    return k;
  }

  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<node> lru_;
  std::unordered_map<std::string, std::list<node>::iterator> map_;
  std::size_t bytes_ = 0;
};

}  // namespace inlet::http::detail
