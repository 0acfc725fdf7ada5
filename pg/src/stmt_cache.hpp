// Per-connection prepared-statement cache: LRU over (SQL text, parameter OIDs) -> name.
// See DESIGN.md. Not thread-safe (owned by one connection).
#pragma once
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

  /// Name of the cached statement for key (and marks it most recently used), or null.
  const std::string* find(std::string_view key) {
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return &it->second->name;
  }
  /// Inserts key with a fresh name. Returns the new name; `evicted` receives the name of
  /// the least recently used entry when the cache was full.
  const std::string& insert(std::string_view key, std::optional<std::string>& evicted) {
    if (map_.size() >= cap_ && !lru_.empty()) {
      auto& last = lru_.back();
      evicted = std::move(last.name);
      map_.erase(std::string_view(last.key));
      lru_.pop_back();
    }
    lru_.push_front(entry{std::string(key), "inlet_s" + std::to_string(++counter_)});
    map_.emplace(std::string_view(lru_.front().key), lru_.begin());
    return lru_.front().name;
  }
  void erase(std::string_view key) {
    auto it = map_.find(key);
    if (it == map_.end()) return;
    auto li = it->second;
    map_.erase(it);
    lru_.erase(li);
  }
  void clear() {
    map_.clear();
    lru_.clear();
  }

 private:
  struct entry {
    std::string key, name;
  };
  std::size_t cap_;
  std::uint64_t counter_ = 0;
  std::list<entry> lru_;
  std::unordered_map<std::string_view, std::list<entry>::iterator> map_;
};

}  // namespace inlet::pg::detail
