// Per-connection prepared-statement cache: LRU over (SQL text, parameter OIDs) -> name.
// An entry is *pending* while the Parse that creates it is in flight (owner = the
// sequence number of the request that sent it); only that request may use the name
// until the server confirms it, others send an unnamed statement. See DESIGN.md.
// Not thread-safe (owned by one connection).
#pragma once
#include <cstdint>
#include <cstring>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace inlet::pg::detail {

class stmt_cache {
 public:
  explicit stmt_cache(std::size_t cap) : cap_(cap) {}
  std::size_t capacity() const noexcept { return cap_; }
  std::size_t size() const noexcept { return map_.size(); }

  struct entry {
    std::string key, name;
    std::uint64_t owner = 0;  ///< 0: prepared on the server; else the pending Parse's request
  };

  /// The cached entry for key (and marks it most recently used), or null.
  const entry* find(std::string_view key) {
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    last_ = it->second;
    has_last_ = true;
    return &*last_;
  }
  /// Fast path for a statement sent again: compares (text, OIDs) with the key of the
  /// entry found or inserted last, without building a key or hashing. Null on a miss
  /// (then build the key and call find()).
  const entry* find_last(std::string_view text, std::string_view oids) {
    if (!has_last_) return nullptr;
    const std::string& k = last_->key;
    if (k.size() != text.size() + 1 + oids.size() || k.compare(0, text.size(), text) != 0 ||
        (!oids.empty() && std::memcmp(k.data() + text.size() + 1, oids.data(), oids.size()) != 0))
      return nullptr;
    lru_.splice(lru_.begin(), lru_, last_);
    return &*last_;
  }
  /// The server prepared it: everyone may use the name now.
  void confirm(std::string_view key, std::uint64_t owner) {
    auto it = map_.find(key);
    if (it != map_.end() && it->second->owner == owner) it->second->owner = 0;
  }
  /// The Parse failed or was skipped: forget the entry if it is still that request's.
  void erase_pending(std::string_view key, std::uint64_t owner) {
    auto it = map_.find(key);
    if (it != map_.end() && it->second->owner == owner && owner != 0) erase(key);
  }
  /// Inserts key with a fresh name. Returns the new name; `evicted` receives the name of
  /// the least recently used entry when the cache was full.
  const std::string& insert(std::string_view key, std::optional<std::string>& evicted,
                            std::uint64_t owner = 0) {
    if (map_.size() >= cap_ && !lru_.empty()) {
      has_last_ = false;
      auto& last = lru_.back();
      evicted = std::move(last.name);
      map_.erase(std::string_view(last.key));
      lru_.pop_back();
    }
    lru_.push_front(entry{std::string(key), "inlet_s" + std::to_string(++counter_), owner});
    map_.emplace(std::string_view(lru_.front().key), lru_.begin());
    last_ = lru_.begin();
    has_last_ = true;
    return lru_.front().name;
  }
  void erase(std::string_view key) {
    auto it = map_.find(key);
    if (it == map_.end()) return;
    auto li = it->second;
    has_last_ = false;
    map_.erase(it);
    lru_.erase(li);
  }
  void clear() {
    has_last_ = false;
    map_.clear();
    lru_.clear();
  }

 private:
  std::size_t cap_;
  std::uint64_t counter_ = 0;
  std::list<entry> lru_;
  std::unordered_map<std::string_view, std::list<entry>::iterator> map_;
  std::list<entry>::iterator last_;  // valid while has_last_ (reset by every erase)
  bool has_last_ = false;
};

}  // namespace inlet::pg::detail
