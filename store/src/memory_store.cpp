#include "inlet/store/memory_store.hpp"

#include <algorithm>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <condition_variable>
#include <cstddef>
#include <new>
#include <span>
#include <thread>
#include <unordered_set>
#include <vector>

namespace inlet::store {

// A stored message with what the store keeps beside it. Immutable once published, like
// stored_message (tags and read flag aside).
//
// What only a search reads (the folded header fields, the search text when the message
// came without one: search::search_text_of, a MIME parse) is built by the first search
// that needs it, not by put: the receive path does not pay for it, a store that is never
// searched never builds it. Two readers may
// build the same piece at once (under the shared lock); one wins the pointer, the other
// frees its copy. The built bytes count against max_bytes from then on (lazy_bytes_).
//
// Layout: one allocation holds the shared_ptr's control block, the record, and a tail
// of the record's own: the normalised distinct recipients as string_views, then their
// bytes (tail_allocator below). `mailboxes` views that tail, so a record costs one
// allocation however many recipients it has; the tail lives and dies with the record.
struct memory_store::record : stored_message {
  std::span<const std::string_view> mailboxes;  // normalised distinct recipients (tail)
  std::size_t base_bytes = 0;                   // footprint without the tags and the lazy parts
  bool derive_text = false;  // put without a search text: the first text search derives it
  mutable std::atomic<const search::prepared_fields*> fields{nullptr};
  mutable std::atomic<const std::string*> text{nullptr};  // only with derive_text

  record() = default;
  record(const record&) = delete;
  record& operator=(const record&) = delete;
  ~record() {
    delete fields.load(std::memory_order_relaxed);
    delete text.load(std::memory_order_relaxed);
  }
  // Heap bytes of the lazy parts built so far (exclusive lock: none is being built).
  std::size_t lazy_bytes() const noexcept {
    std::size_t n = 0;
    if (auto* f = fields.load(std::memory_order_acquire)) n += sizeof(*f) + f->bytes();
    if (auto* t = text.load(std::memory_order_acquire)) n += sizeof(*t) + t->capacity();
    return n;
  }
};

// A record as search::matches reads it: each lazy part built on first use.
class memory_store::lazy_source final : public search::match_source {
 public:
  lazy_source(const record& r, std::atomic<std::uint64_t>& bytes) : r_(r), bytes_(bytes) {}
  const search::prepared_fields& fields() const override {
    return *get(r_.fields, [&] { return new search::prepared_fields(r_); });
  }
  std::string_view text() const override {
    if (!r_.derive_text) return r_.summary.search_text;
    return *get(r_.text,
                [&] { return new std::string(search::search_text_of(r_.summary, r_.raw)); });
  }

 private:
  template <class T, class Make>
  const T* get(std::atomic<const T*>& slot, Make make) const {
    if (const T* p = slot.load(std::memory_order_acquire)) return p;
    const T* fresh = make();
    const T* expected = nullptr;
    if (!slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
      delete fresh;
      return expected;
    }
    bytes_.fetch_add(bytes_of(*fresh), std::memory_order_relaxed);
    return fresh;
  }
  static std::size_t bytes_of(const search::prepared_fields& f) { return sizeof(f) + f.bytes(); }
  static std::size_t bytes_of(const std::string& t) { return sizeof(t) + t.capacity(); }

  const record& r_;
  std::atomic<std::uint64_t>& bytes_;
};

namespace {

// More changed messages than this in one call are announced as one `cleared` event
// (observers reload) instead of a list of IDs.
constexpr std::size_t max_event_ids = 1000;

// A recipient as normalize_mailbox() sees it before lower-casing: trimmed, <> stripped.
std::string_view trimmed_mailbox(std::string_view a) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!a.empty() && is_space(a.front())) a.remove_prefix(1);
  while (!a.empty() && is_space(a.back())) a.remove_suffix(1);
  if (a.size() >= 2 && a.front() == '<' && a.back() == '>') a = a.substr(1, a.size() - 2);
  return a;
}

// Bytes of a record's tail for these recipients (an upper bound: duplicates counted).
std::size_t mailbox_tail_bytes(const recipient_list& rcpt_to) {
  std::size_t n = rcpt_to.size() * sizeof(std::string_view);
  for (const auto& r : rcpt_to) n += trimmed_mailbox(r).size();
  return n;
}

// Writes the distinct normalised mailboxes of `rcpt_to`, in rcpt order, into `tail`
// (mailbox_tail_bytes(rcpt_to) bytes, aligned for string_view): the views first, then
// their bytes. Returns the views.
std::span<const std::string_view> write_mailboxes(const recipient_list& rcpt_to, std::byte* tail) {
  auto* views = reinterpret_cast<std::string_view*>(tail);
  char* chars = reinterpret_cast<char*>(tail + rcpt_to.size() * sizeof(std::string_view));
  std::size_t k = 0;
  for (const auto& r : rcpt_to) {
    std::string_view t = trimmed_mailbox(r);
    if (t.empty()) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      char c = t[i];
      chars[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    }
    std::string_view n(chars, t.size());
    if (std::find(views, views + k, n) != views + k) continue;  // bytes reused next time
    new (views + k) std::string_view(n);
    ++k;
    chars += t.size();
  }
  return {views, k};
}

// The allocator std::allocate_shared uses for a record: `extra` bytes more than asked
// for, past the object (the record's tail). `tail` learns where they start.
template <class T>
struct tail_allocator {
  using value_type = T;
  std::size_t extra = 0;
  std::byte** tail = nullptr;

  tail_allocator(std::size_t e, std::byte** t) noexcept : extra(e), tail(t) {}
  template <class U>
  tail_allocator(const tail_allocator<U>& o) noexcept : extra(o.extra), tail(o.tail) {}

  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    // Round the object up so the tail is aligned for string_view.
    const std::size_t head =
        (n * sizeof(T) + alignof(std::string_view) - 1) & ~(alignof(std::string_view) - 1);
    auto* p = static_cast<std::byte*>(::operator new(head + extra));
    if (tail) *tail = p + head;
    return reinterpret_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t head =
        (n * sizeof(T) + alignof(std::string_view) - 1) & ~(alignof(std::string_view) - 1);
    ::operator delete(static_cast<void*>(p), head + extra);
  }
  template <class U>
  bool operator==(const tail_allocator<U>& o) const noexcept {
    return extra == o.extra;
  }
};

std::size_t string_bytes(const std::string& s) {
  return s.size() + sizeof(std::string);
}

std::size_t address_bytes(const address& a) {
  return string_bytes(a.name) + string_bytes(a.address);
}

std::size_t tag_bytes(const std::vector<std::string>& tags) {
  std::size_t n = sizeof(std::vector<std::string>);
  for (const auto& t : tags) n += string_bytes(t);
  return n;
}

// Distinct non-empty tags (compared folded), first spelling kept, order kept.
std::vector<std::string> distinct_tags(std::vector<std::string> tags) {
  std::vector<std::string> out;
  std::vector<std::string> seen;
  out.reserve(tags.size());
  for (auto& t : tags) {
    if (t.empty()) continue;
    auto f = search::fold_case(t);
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(std::move(f));
    out.push_back(std::move(t));
  }
  return out;
}

bool same_tags(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a == b;
}

// Completes a handler on its associated executor (inline when already there).
template <class Handler, class... Args>
void complete(Handler h, Args... args) {
  auto ex = asio::get_associated_executor(h);
  asio::dispatch(
      ex, [h = std::move(h), ... a = std::move(args)]() mutable { std::move(h)(std::move(a)...); });
}

}  // namespace

// ---------------------------------------------------------------- max_age sweep

// One thread per store with a max_age: wakes every interval (or at once when the store
// is destroyed) and deletes what has grown too old.
struct memory_store::sweeper {
  sweeper(memory_store& s, std::chrono::seconds max_age)
      : interval_(std::clamp<std::chrono::seconds>(max_age / 10, std::chrono::seconds(1),
                                                   std::chrono::seconds(60))),
        thread_([this, &s, max_age] { run(s, max_age); }) {}
  ~sweeper() {
    {
      std::lock_guard lk(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void run(memory_store& s, std::chrono::seconds max_age) {
    std::unique_lock lk(mutex_);
    while (!wake_.wait_for(lk, interval_, [this] { return stop_; })) {
      lk.unlock();
      s.expire(std::chrono::system_clock::now() - max_age);
      lk.lock();
    }
  }
  const std::chrono::seconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

std::size_t memory_store::expire(time_point cutoff) {
  auto old = [cutoff](const record_ptr& r) { return r->created < cutoff; };
  {
    // Most sweeps find nothing: look under the shared lock first, so readers go on.
    std::shared_lock lk(mutex_);
    if (std::none_of(order_.begin(), order_.end(), old)) return 0;
  }
  std::vector<record_ptr> victims;  // freed after the lock
  {
    std::unique_lock lk(mutex_);
    // Every record, not only a prefix: `created` may be given by the caller (imports), so
    // arrival order is not age order.
    for (const auto& r : order_)
      if (old(r)) victims.push_back(r);
    remove_locked(victims);
  }
  if (has_observers() && !victims.empty()) {
    store_event ev;
    if (victims.size() > max_event_ids) {
      ev.what = store_event::kind::cleared;
    } else {
      ev.what = store_event::kind::deleted;
      for (const auto& v : victims) ev.ids.push_back(v->id.str());
    }
    notify(ev);
  }
  return victims.size();
}

memory_store::memory_store(memory_store_config cfg) : cfg_(cfg) {
  if (cfg_.max_age.count() > 0) sweeper_ = std::make_unique<sweeper>(*this, cfg_.max_age);
}
memory_store::~memory_store() = default;

std::size_t memory_store::footprint_of(const stored_message& m) {
  // Fixed part: the record, its shared_ptr control block, its index entries (global order,
  // ID map node, one per mailbox) as a rough constant.
  std::size_t n = sizeof(record) + 64 + 64;
  n += m.raw.size();
  const auto& e = m.envelope;
  n += string_bytes(e.helo) + string_bytes(e.mail_from) + string_bytes(e.remote) +
       string_bytes(e.protocol) + string_bytes(e.auth_user);
  for (const auto& r : e.rcpt_to) n += string_bytes(r) * 2 + 64;  // and its mailbox key
  const auto& s = m.summary;
  n += address_bytes(s.from);
  for (auto list : s.lists())
    for (const auto& a : list) n += address_bytes(a);
  n += string_bytes(s.subject) + string_bytes(s.message_id) + string_bytes(s.snippet) +
       string_bytes(s.search_text);
  for (const auto& a : s.attachments)
    n += string_bytes(a.filename) + string_bytes(a.content_type) + sizeof(a.size);
  return n;
}

void memory_store::put(new_message msg, put_handler done) {
  // Build the record and its index keys before taking the lock (what only searches read
  // is built by the first search that needs it).
  // One allocation: control block, record, and the mailboxes' tail.
  std::byte* tail = nullptr;
  auto rec = std::allocate_shared<record>(
      tail_allocator<record>(mailbox_tail_bytes(msg.envelope.rcpt_to), &tail));
  rec->created = msg.created.value_or(std::chrono::system_clock::now());
  rec->envelope = std::move(msg.envelope);
  rec->summary = std::move(msg.summary);
  rec->size = msg.raw.size();
  rec->raw = std::move(msg.raw);
  rec->has_raw = true;
  rec->derive_text = rec->summary.search_text.empty();
  rec->mailboxes = write_mailboxes(rec->envelope.rcpt_to, tail);
  rec->id = make_message_id();
  rec->base_bytes = footprint_of(*rec);
  auto tags = distinct_tags(std::move(msg.tags));
  const std::size_t bytes = rec->base_bytes + tag_bytes(tags);
  if (bytes > cfg_.max_bytes || cfg_.max_messages == 0) {
    {
      std::unique_lock lk(mutex_);
      ++stats_.rejected_total;
    }
    if (done) done(errc::too_large, nullptr);
    return;
  }
  record_ptr published;
  std::vector<record_ptr> victims;  // evicted records are freed after the lock
  {
    std::unique_lock lk(mutex_);
    while (by_id_.contains(rec->id)) rec->id = make_message_id();  // 2^-128 per pair
    rec->seq = next_seq_++;
    tags = canonical_tags_locked(std::move(tags));
    count_tags_locked(tags, true);
    // An untagged record keeps the shared empty list it was built with.
    if (!tags.empty())
      rec->set_tags(std::make_shared<const std::vector<std::string>>(std::move(tags)));
    while (!order_.empty() &&
           (order_.size() >= cfg_.max_messages ||
            stats_.bytes + lazy_bytes_.load(std::memory_order_relaxed) + bytes > cfg_.max_bytes)) {
      victims.push_back(evict_oldest_locked());
    }
    published = rec;  // from here on the record is read-only (tags and flag aside)
    order_.push_back(published);
    for (std::string_view b : published->mailboxes) {
      auto it = by_mailbox_.find(b);
      if (it == by_mailbox_.end()) it = by_mailbox_.try_emplace(std::string(b)).first;
      auto& box = it->second;
      box.order.push_back(published);
      box.unread.fetch_add(1, std::memory_order_relaxed);
    }
    by_id_.emplace(published->id, published);
    ++stats_.messages;
    unread_.fetch_add(1, std::memory_order_relaxed);
    stats_.bytes += bytes;
    ++stats_.stored_total;
  }
  // Observers, then the caller, outside the lock.
  if (has_observers()) {
    if (!victims.empty()) {
      store_event ev;
      ev.what = store_event::kind::deleted;
      for (const auto& v : victims) ev.ids.push_back(v->id.str());
      notify(ev);
    }
    store_event ev;
    ev.what = store_event::kind::created;
    ev.message = published;
    notify(ev);
  }
  if (done) done({}, std::move(published));
}

void memory_store::erase_from(order_index& order, std::uint64_t seq) {
  auto it = std::lower_bound(order.begin(), order.end(), seq,
                             [](const record_ptr& p, std::uint64_t s) { return p->seq < s; });
  if (it != order.end() && (*it)->seq == seq) order.erase(it);
}

void memory_store::unlink_locked(const record& r) {
  const bool unread = !r.is_read();  // exclusive lock: no set_read runs, the flag is stable
  for (const auto& b : r.mailboxes) {
    auto it = by_mailbox_.find(b);
    if (it == by_mailbox_.end()) continue;
    erase_from(it->second.order, r.seq);
    if (unread) it->second.unread.fetch_sub(1, std::memory_order_relaxed);
    if (it->second.order.empty()) by_mailbox_.erase(it);
  }
  count_tags_locked(*r.tags(), false);
  --stats_.messages;
  stats_.bytes -= r.base_bytes + tag_bytes(*r.tags());
  lazy_bytes_.fetch_sub(r.lazy_bytes(), std::memory_order_relaxed);
  if (unread) unread_.fetch_sub(1, std::memory_order_relaxed);
}

memory_store::record_ptr memory_store::evict_oldest_locked() {
  record_ptr r = std::move(order_.front());
  order_.pop_front();
  by_id_.erase(std::string_view(r->id));  // r keeps the key's bytes alive
  unlink_locked(*r);
  ++stats_.evicted_total;
  return r;
}

// Removes a batch: one pass over each affected index instead of one erase per message.
void memory_store::remove_locked(const std::vector<record_ptr>& victims) {
  if (victims.empty()) return;
  if (victims.size() == order_.size()) {  // everything: drop the indexes whole
    for (const auto& r : victims) {
      count_tags_locked(*r->tags(), false);
      stats_.bytes -= r->base_bytes + tag_bytes(*r->tags());
      lazy_bytes_.fetch_sub(r->lazy_bytes(), std::memory_order_relaxed);
    }
    order_.clear();
    by_id_.clear();
    by_mailbox_.clear();
    stats_.messages = 0;
    unread_.store(0, std::memory_order_relaxed);
    stats_.deleted_total += victims.size();
    return;
  }
  if (victims.size() <= 8) {
    for (const auto& r : victims) {
      by_id_.erase(std::string_view(r->id));
      erase_from(order_, r->seq);
      unlink_locked(*r);
    }
    stats_.deleted_total += victims.size();
    return;
  }
  std::unordered_set<std::uint64_t> gone;
  gone.reserve(victims.size());
  std::unordered_set<std::string_view> boxes;
  for (const auto& r : victims) {
    gone.insert(r->seq);
    for (const auto& b : r->mailboxes) boxes.insert(b);
  }
  auto is_gone = [&](const record_ptr& p) { return gone.contains(p->seq); };
  std::erase_if(order_, is_gone);
  for (auto b : boxes) {
    auto it = by_mailbox_.find(b);
    if (it == by_mailbox_.end()) continue;
    std::uint64_t unread_gone = 0;
    for (const auto& p : it->second.order)
      if (gone.contains(p->seq) && !p->is_read()) ++unread_gone;
    std::erase_if(it->second.order, is_gone);
    it->second.unread.fetch_sub(unread_gone, std::memory_order_relaxed);
    if (it->second.order.empty()) by_mailbox_.erase(it);
  }
  for (const auto& r : victims) {
    by_id_.erase(std::string_view(r->id));
    count_tags_locked(*r->tags(), false);
    --stats_.messages;
    stats_.bytes -= r->base_bytes + tag_bytes(*r->tags());
    lazy_bytes_.fetch_sub(r->lazy_bytes(), std::memory_order_relaxed);
    if (!r->is_read()) unread_.fetch_sub(1, std::memory_order_relaxed);
  }
  stats_.deleted_total += victims.size();
}

memory_store::scope memory_store::scope_of(const std::string& mailbox) const {
  if (mailbox.empty()) return {&order_, &unread_};
  auto it = by_mailbox_.find(mailbox);
  if (it == by_mailbox_.end()) return {};
  return {&it->second.order, &it->second.unread};
}

std::vector<memory_store::record_ptr> memory_store::resolve_locked(const selection& s,
                                                                   const search::query* q) const {
  std::vector<record_ptr> out;
  if (s.what == selection::kind::ids) {
    out.reserve(s.ids.size());
    std::unordered_set<std::string_view> seen;
    for (const auto& id : s.ids) {
      auto it = by_id_.find(std::string_view(id));
      if (it == by_id_.end() || !seen.insert(it->second->id).second) continue;
      out.push_back(it->second);
    }
    return out;
  }
  auto sc = scope_of(normalize_mailbox(s.mailbox));
  if (!sc.order) return out;
  if (!q || q->empty()) {
    out.assign(sc.order->begin(), sc.order->end());
    return out;
  }
  for (const auto& r : *sc.order)
    if (search::matches(*q, *r, lazy_source(*r, lazy_bytes_))) out.push_back(r);
  return out;
}

void memory_store::do_list(list_request req, handler<void(std::error_code, page)> h) {
  page p;
  p.start = req.start;
  std::error_code ec;
  {
    std::shared_lock lk(mutex_);
    auto sc = scope_of(req.mailbox.empty() ? std::string{} : normalize_mailbox(req.mailbox));
    if (sc.order) {
      const order_index& order = *sc.order;
      p.total = order.size();
      p.unread = sc.unread->load(std::memory_order_relaxed);
      std::size_t end = order.size();  // messages [0, end) are in the window, oldest first
      if (!req.before_id.empty()) {
        auto it = by_id_.find(std::string_view(req.before_id));
        if (it == by_id_.end()) {
          ec = errc::not_found;
          end = 0;
        } else {
          const auto seq = it->second->seq;
          end = static_cast<std::size_t>(
              std::lower_bound(order.begin(), order.end(), seq,
                               [](const record_ptr& r, std::uint64_t s) { return r->seq < s; }) -
              order.begin());
        }
      }
      if (req.query.empty()) {
        p.matched = end;
        if (end == order.size()) {
          p.matched_unread = p.unread;
        } else {
          for (std::size_t i = 0; i < end; ++i) p.matched_unread += !order[i]->is_read();
        }
        if (req.start < end) {
          const std::size_t n = std::min(req.limit, end - req.start);
          p.messages.reserve(n);
          for (std::size_t k = req.start; k < req.start + n; ++k)
            p.messages.push_back(order[end - 1 - k]);
        }
      } else {
        // Every message in the window is tested: the answer counts all matches.
        for (std::size_t i = end; i-- > 0;) {
          // Records are scattered on the heap: ask for the ones a few steps ahead, and
          // for their texts, while this one is tested.
          if (i >= 8) __builtin_prefetch(order[i - 8].get());
          if (i >= 4) {
            const record& ahead = *order[i - 4];
            // Acquire: the pointed-to object may have just been built by another search.
            const std::string* t = ahead.text.load(std::memory_order_acquire);
            __builtin_prefetch(t ? t->data() : ahead.summary.search_text.data());
            if (auto* f = ahead.fields.load(std::memory_order_acquire))
              __builtin_prefetch(f->get(search::field::subject).data());
          }
          const record& r = *order[i];
          if (!search::matches(req.query, r, lazy_source(r, lazy_bytes_))) continue;
          if (p.matched >= req.start && p.messages.size() < req.limit)
            p.messages.push_back(order[i]);
          ++p.matched;
          p.matched_unread += !r.is_read();
        }
      }
    }
  }
  complete(std::move(h), ec, std::move(p));
}

void memory_store::do_get(std::string id, handler<void(std::error_code, message_ptr)> h) {
  message_ptr m;
  {
    std::shared_lock lk(mutex_);
    auto it = by_id_.find(std::string_view(id));
    if (it != by_id_.end()) m = it->second;
  }
  std::error_code ec = m ? std::error_code{} : make_error_code(errc::not_found);
  complete(std::move(h), ec, std::move(m));
}

void memory_store::do_remove(selection which, handler<void(std::error_code, std::size_t)> h) {
  std::vector<record_ptr> victims;  // freed after the lock
  {
    std::unique_lock lk(mutex_);
    victims = resolve_locked(which, &which.query);
    remove_locked(victims);
  }
  if (has_observers() && !victims.empty()) {
    store_event ev;
    if (which.what == selection::kind::all || victims.size() > max_event_ids) {
      ev.what = store_event::kind::cleared;
    } else {
      ev.what = store_event::kind::deleted;
      for (const auto& v : victims) ev.ids.push_back(v->id.str());
    }
    notify(ev);
  }
  const std::size_t n = victims.size();
  victims.clear();
  complete(std::move(h), std::error_code{}, n);
}

bool memory_store::flip_read(const record& r, bool read) const noexcept {
  if (r.exchange_read(read) == read) return false;
  auto adjust = [read](std::atomic<std::uint64_t>& n) {
    if (read)
      n.fetch_sub(1, std::memory_order_relaxed);
    else
      n.fetch_add(1, std::memory_order_relaxed);
  };
  adjust(unread_);
  for (const auto& b : r.mailboxes) {
    auto it = by_mailbox_.find(b);
    if (it != by_mailbox_.end()) adjust(it->second.unread);
  }
  return true;
}

void memory_store::do_set_read(selection which, bool read,
                               handler<void(std::error_code, std::size_t)> h) {
  std::vector<std::string> ids;
  std::size_t changed = 0;
  {
    std::shared_lock lk(mutex_);  // removals are excluded; flags and counts are atomics
    for (const auto& r : resolve_locked(which, &which.query)) {
      if (!flip_read(*r, read)) continue;
      ++changed;
      if (ids.size() <= max_event_ids) ids.push_back(r->id.str());
    }
  }
  if (has_observers() && changed) {
    store_event ev;
    ev.what =
        changed > max_event_ids ? store_event::kind::cleared : store_event::kind::read_changed;
    if (changed <= max_event_ids) ev.ids = std::move(ids);
    ev.read = read;
    notify(ev);
  }
  complete(std::move(h), std::error_code{}, changed);
}

// Each tag spelled as the store already knows it (a tag is one tag whatever its case).
std::vector<std::string> memory_store::canonical_tags_locked(std::vector<std::string> tags) const {
  for (auto& t : tags) {
    auto it = tags_.find(search::fold_case(t));
    if (it != tags_.end()) t = it->second.name;
  }
  return tags;
}

void memory_store::count_tags_locked(const std::vector<std::string>& tags, bool add) {
  for (const auto& t : tags) {
    auto key = search::fold_case(t);
    auto it = tags_.find(key);
    if (add) {
      if (it == tags_.end()) it = tags_.emplace(std::move(key), tag_info{t, 0}).first;
      ++it->second.count;
    } else if (it != tags_.end() && --it->second.count == 0) {
      tags_.erase(it);
    }
  }
}

// Installs `tags` (distinct, canonical) on r; returns 1 if its list changed, else 0.
std::size_t memory_store::replace_tags_locked(const record& r, std::vector<std::string> tags) {
  auto old = r.tags();
  if (same_tags(*old, tags)) return 0;
  count_tags_locked(*old, false);
  count_tags_locked(tags, true);
  stats_.bytes -= tag_bytes(*old);
  stats_.bytes += tag_bytes(tags);
  r.set_tags(std::make_shared<const std::vector<std::string>>(std::move(tags)));
  return 1;
}

void memory_store::do_set_tags(selection which, std::vector<std::string> tags,
                               handler<void(std::error_code, std::size_t)> h) {
  tags = distinct_tags(std::move(tags));
  std::vector<record_ptr> changed;
  {
    std::unique_lock lk(mutex_);
    auto wanted = canonical_tags_locked(std::move(tags));
    for (const auto& r : resolve_locked(which, &which.query))
      if (replace_tags_locked(*r, wanted)) changed.push_back(r);
  }
  if (has_observers() && !changed.empty()) {
    if (changed.size() > max_event_ids) {
      store_event ev;
      ev.what = store_event::kind::cleared;
      notify(ev);
    } else {
      for (const auto& r : changed) {
        store_event ev;
        ev.what = store_event::kind::tags_changed;
        ev.message = r;
        notify(ev);
      }
    }
  }
  complete(std::move(h), std::error_code{}, changed.size());
}

void memory_store::do_list_tags(handler<void(std::error_code, std::vector<std::string>)> h) {
  std::vector<std::string> out;
  {
    std::shared_lock lk(mutex_);
    out.reserve(tags_.size());
    for (const auto& [key, info] : tags_) out.push_back(info.name);  // sorted by folded name
  }
  complete(std::move(h), std::error_code{}, std::move(out));
}

void memory_store::do_rename_tag(std::string from, std::string to,
                                 handler<void(std::error_code, std::size_t)> h) {
  const auto from_key = search::fold_case(from);
  const auto to_key = search::fold_case(to);
  std::vector<record_ptr> changed;
  std::error_code ec;
  if (to.empty()) {
    ec = errc::invalid_argument;
  } else {
    std::unique_lock lk(mutex_);
    if (tags_.contains(from_key)) {
      // The new spelling wins everywhere, also on messages that carried `to` already.
      for (const auto& r : order_) {
        const auto& cur = *r->tags();
        bool has = false;
        for (const auto& t : cur)
          has = has || search::fold_case(t) == from_key || search::fold_case(t) == to_key;
        if (!has) continue;
        std::vector<std::string> next;
        bool placed = false;
        for (const auto& t : cur) {
          auto k = search::fold_case(t);
          if (k == from_key || k == to_key) {
            if (!placed) next.push_back(to);
            placed = true;
          } else {
            next.push_back(t);
          }
        }
        // Drop the registry's old spelling of `to` so the new one is recorded.
        if (auto it = tags_.find(to_key); it != tags_.end()) it->second.name = to;
        if (replace_tags_locked(*r, std::move(next))) changed.push_back(r);
      }
    }
  }
  if (has_observers() && !changed.empty()) {
    store_event ev;
    ev.what = store_event::kind::cleared;  // a rename touches the tag list everywhere
    notify(ev);
  }
  complete(std::move(h), ec, changed.size());
}

void memory_store::do_delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) {
  const auto key = search::fold_case(tag);
  std::vector<record_ptr> changed;
  {
    std::unique_lock lk(mutex_);
    if (tags_.contains(key)) {
      for (const auto& r : order_) {
        const auto& cur = *r->tags();
        std::vector<std::string> next;
        for (const auto& t : cur)
          if (search::fold_case(t) != key) next.push_back(t);
        if (next.size() != cur.size() && replace_tags_locked(*r, std::move(next)))
          changed.push_back(r);
      }
    }
  }
  if (has_observers() && !changed.empty()) {
    store_event ev;
    ev.what = store_event::kind::cleared;
    notify(ev);
  }
  complete(std::move(h), std::error_code{}, changed.size());
}

store_stats memory_store::stats() const {
  std::shared_lock lk(mutex_);
  store_stats s = stats_;
  s.bytes += lazy_bytes_.load(std::memory_order_relaxed);
  s.unread = unread_.load(std::memory_order_relaxed);
  return s;
}

store_health memory_store::health() const {
  store_health h;
  h.ready = true;
  h.detail = "memory store";
  return h;
}

void memory_store::notify(const store_event& e) const {
  std::vector<std::shared_ptr<const event_observer>> obs;
  {
    std::lock_guard lk(observers_mutex_);
    obs.reserve(observers_.size());
    for (auto& [h, o] : observers_) obs.push_back(o);
  }
  for (auto& o : obs) (*o)(e);
}

std::uint64_t memory_store::subscribe(event_observer observer) {
  std::lock_guard lk(observers_mutex_);
  auto h = next_observer_++;
  observers_.emplace(h, std::make_shared<const event_observer>(std::move(observer)));
  observer_count_.store(observers_.size(), std::memory_order_relaxed);
  return h;
}

void memory_store::unsubscribe(std::uint64_t handle) {
  std::lock_guard lk(observers_mutex_);
  observers_.erase(handle);
  observer_count_.store(observers_.size(), std::memory_order_relaxed);
}

}  // namespace inlet::store
