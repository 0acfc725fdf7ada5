#include "inlet/store/memory_store.hpp"

#include <algorithm>
#include <vector>

namespace inlet::store {
namespace {

// The distinct normalised mailboxes of one message, in rcpt order.
std::vector<std::string> mailboxes_of(const stored_message& m) {
  std::vector<std::string> out;
  out.reserve(m.envelope.rcpt_to.size());
  for (const auto& r : m.envelope.rcpt_to) {
    auto n = normalize_mailbox(r);
    if (n.empty() || std::find(out.begin(), out.end(), n) != out.end()) continue;
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

memory_store::memory_store(memory_store_config cfg) : cfg_(cfg) {}
memory_store::~memory_store() = default;

void memory_store::put(new_message msg, put_handler done) {
  if (msg.raw.size() > cfg_.max_bytes || cfg_.max_messages == 0) {
    {
      std::unique_lock lk(mutex_);
      ++stats_.rejected_total;
    }
    if (done) done(errc::too_large, nullptr);
    return;
  }
  // Build the record and its index keys before taking the lock.
  auto rec = std::make_shared<stored_message>();
  rec->created = std::chrono::system_clock::now();
  rec->envelope = std::move(msg.envelope);
  rec->summary = std::move(msg.summary);
  rec->raw = std::move(msg.raw);
  rec->tags = std::move(msg.tags);
  auto boxes = mailboxes_of(*rec);
  std::string id = make_message_id();
  message_ptr published;
  std::vector<message_ptr> victims;  // evicted records are freed after the lock
  {
    std::unique_lock lk(mutex_);
    while (by_id_.contains(id)) id = make_message_id();  // 2^-128 per pair, but certain
    rec->id = std::move(id);
    rec->seq = next_seq_++;
    while (!order_.empty() && (order_.size() >= cfg_.max_messages ||
                               stats_.bytes + rec->raw.size() > cfg_.max_bytes)) {
      victims.push_back(evict_oldest_locked());
    }
    published = rec;  // from here on the record is read-only
    order_.push_back(published);
    for (const auto& b : boxes) {
      auto& box = by_mailbox_[b];
      box.order.push_back(published);
      box.unread.fetch_add(1, std::memory_order_relaxed);
    }
    by_id_.emplace(published->id, entry{published, std::move(boxes)});
    ++stats_.messages;
    unread_.fetch_add(1, std::memory_order_relaxed);
    stats_.bytes += published->raw.size();
    ++stats_.stored_total;
  }
  // Observers, then the caller, outside the lock.
  std::vector<std::shared_ptr<const new_message_observer>> obs;
  {
    std::lock_guard lk(observers_mutex_);
    obs.reserve(observers_.size());
    for (auto& [h, o] : observers_) obs.push_back(o);
  }
  for (auto& o : obs) (*o)(published);
  if (done) done({}, std::move(published));
}

void memory_store::erase_from(order_index& order, const stored_message& m) {
  auto it = std::lower_bound(order.begin(), order.end(), m.seq,
                             [](const message_ptr& p, std::uint64_t s) { return p->seq < s; });
  if (it != order.end() && (*it)->seq == m.seq) order.erase(it);
}

void memory_store::unlink_locked(const stored_message& m,
                                 const std::vector<std::string>& mailboxes) {
  for (const auto& b : mailboxes) {
    auto it = by_mailbox_.find(b);
    if (it == by_mailbox_.end()) continue;
    erase_from(it->second.order, m);
    if (!m.read.load(std::memory_order_relaxed))
      it->second.unread.fetch_sub(1, std::memory_order_relaxed);
    if (it->second.order.empty()) by_mailbox_.erase(it);
  }
  --stats_.messages;
  stats_.bytes -= m.raw.size();
  // Exclusive lock: no set_read runs, so the flag is stable here.
  if (!m.read.load(std::memory_order_relaxed)) unread_.fetch_sub(1, std::memory_order_relaxed);
}

message_ptr memory_store::evict_oldest_locked() {
  message_ptr m = std::move(order_.front());
  order_.pop_front();
  auto node = by_id_.extract(std::string_view(m->id));  // its record outlives it (m)
  unlink_locked(*m, node.mapped().mailboxes);
  ++stats_.evicted_total;
  return m;
}

page memory_store::slice(const order_index& order, std::size_t start, std::size_t limit) {
  page p;
  p.total = order.size();
  p.start = start;
  if (start >= order.size()) return p;
  std::size_t n = std::min(limit, order.size() - start);
  p.messages.reserve(n);
  // Newest is at the back: element k from the newest is order[size-1-k].
  for (std::size_t k = start; k < start + n; ++k) p.messages.push_back(order[order.size() - 1 - k]);
  return p;
}

page memory_store::list(std::size_t start, std::size_t limit) const {
  std::shared_lock lk(mutex_);
  page p = slice(order_, start, limit);
  p.unread = unread_.load(std::memory_order_relaxed);
  return p;
}

page memory_store::list_mailbox(std::string_view mailbox, std::size_t start,
                                std::size_t limit) const {
  auto key = normalize_mailbox(mailbox);
  std::shared_lock lk(mutex_);
  auto it = by_mailbox_.find(key);
  if (it == by_mailbox_.end()) {
    page p;
    p.start = start;
    return p;
  }
  page p = slice(it->second.order, start, limit);
  p.unread = it->second.unread.load(std::memory_order_relaxed);
  return p;
}

message_ptr memory_store::get(std::string_view id) const {
  std::shared_lock lk(mutex_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.msg;
}

std::size_t memory_store::remove(std::span<const std::string> ids) {
  std::vector<message_ptr> dropped;  // released after the lock
  std::unique_lock lk(mutex_);
  for (const auto& id : ids) {
    auto it = by_id_.find(std::string_view(id));
    if (it == by_id_.end()) continue;
    message_ptr m = std::move(it->second.msg);
    std::vector<std::string> boxes = std::move(it->second.mailboxes);
    by_id_.erase(it);
    erase_from(order_, *m);
    unlink_locked(*m, boxes);
    ++stats_.deleted_total;
    dropped.push_back(std::move(m));
  }
  return dropped.size();
}

std::size_t memory_store::clear() {
  order_index old_order;
  decltype(by_id_) old_ids;
  decltype(by_mailbox_) old_boxes;
  std::unique_lock lk(mutex_);
  std::size_t n = order_.size();
  old_order.swap(order_);
  old_ids.swap(by_id_);
  old_boxes.swap(by_mailbox_);
  stats_.deleted_total += n;
  stats_.messages = 0;
  stats_.bytes = 0;
  unread_.store(0, std::memory_order_relaxed);
  lk.unlock();  // the records are freed outside the lock
  return n;
}

bool memory_store::flip_read(const entry& e, bool read) const noexcept {
  if (e.msg->read.exchange(read, std::memory_order_relaxed) == read) return false;
  auto adjust = [read](std::atomic<std::uint64_t>& n) {
    if (read)
      n.fetch_sub(1, std::memory_order_relaxed);
    else
      n.fetch_add(1, std::memory_order_relaxed);
  };
  adjust(unread_);
  for (const auto& b : e.mailboxes) {
    auto it = by_mailbox_.find(b);
    if (it != by_mailbox_.end()) adjust(it->second.unread);
  }
  return true;
}

std::size_t memory_store::set_read(std::span<const std::string> ids, bool read) {
  std::shared_lock lk(mutex_);  // removals are excluded; flags and count are atomics
  std::size_t changed = 0;
  if (ids.empty()) {
    for (const auto& [id, e] : by_id_) changed += flip_read(e, read);
    return changed;
  }
  for (const auto& id : ids) {
    auto it = by_id_.find(std::string_view(id));
    if (it != by_id_.end()) changed += flip_read(it->second, read);
  }
  return changed;
}

store_stats memory_store::stats() const {
  std::shared_lock lk(mutex_);
  store_stats s = stats_;
  s.unread = unread_.load(std::memory_order_relaxed);
  return s;
}

std::uint64_t memory_store::subscribe(new_message_observer observer) {
  std::lock_guard lk(observers_mutex_);
  auto h = next_observer_++;
  observers_.emplace(h, std::make_shared<const new_message_observer>(std::move(observer)));
  return h;
}

void memory_store::unsubscribe(std::uint64_t handle) {
  std::lock_guard lk(observers_mutex_);
  observers_.erase(handle);
}

}  // namespace inlet::store
