#include "engine.hpp"

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <inlet/store/search.hpp>
#include <random>

#include "ids.hpp"
#include "schema.hpp"

namespace inlet::store::pgstore {

namespace {

std::string default_instance() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device rd;
  static constexpr char hex[] = "0123456789abcdef";
  std::string r;
  for (int i = 0; i < 6; ++i) r.push_back(hex[rd() % 16]);
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + r;
}

std::chrono::seconds choose_interval(const pg_store_config& c) {
  using std::chrono::seconds;
  if (c.partition_interval.count() > 0) return c.partition_interval;
  if (!c.retention) return seconds(86400);
  auto s = std::clamp(*c.retention / 8, seconds(60), seconds(86400));
  return seconds(s.count() / 60 * 60);
}

// De-duplication as the store interface compares tags (search::fold_case), keeping the
// first spelling.
std::vector<std::string> dedupe_tags(std::vector<std::string> tags) {
  std::vector<std::string> out, seen;
  for (auto& t : tags) {
    auto f = search::fold_case(t);
    if (t.empty() || std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(std::move(f));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::string with_dsn_param(std::string dsn, std::string_view key, std::string_view value) {
  bool uri = dsn.starts_with("postgresql://") || dsn.starts_with("postgres://");
  std::string k(key);
  if (uri) {
    auto q = dsn.find('?');
    if (q != std::string::npos) {
      std::string_view params(dsn);
      params.remove_prefix(q + 1);
      std::size_t at = 0;
      while (at <= params.size()) {
        auto amp = params.find('&', at);
        auto item =
            params.substr(at, amp == std::string_view::npos ? std::string_view::npos : amp - at);
        if (item.starts_with(k + "=")) return dsn;
        if (amp == std::string_view::npos) break;
        at = amp + 1;
      }
      dsn += "&";
    } else {
      dsn += "?";
    }
    dsn += k + "=" + std::string(value);
    return dsn;
  }
  // conninfo: key=value pairs separated by spaces
  std::size_t at = 0;
  while ((at = dsn.find(k, at)) != std::string::npos) {
    bool start = at == 0 || dsn[at - 1] == ' ';
    auto after = dsn.find_first_not_of(' ', at + k.size());
    if (start && after != std::string::npos && dsn[after] == '=') return dsn;
    at += k.size();
  }
  if (!dsn.empty()) dsn += " ";
  dsn += k + "=" + std::string(value);
  return dsn;
}

namespace {

// libpq's own parse of a URI or conninfo string (nullptr when malformed).
std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> parse_dsn(std::string_view dsn) {
  std::string s(dsn);
  char* err = nullptr;
  PQconninfoOption* o = PQconninfoParse(s.c_str(), &err);
  if (err) PQfreemem(err);
  return {o, PQconninfoFree};
}

}  // namespace

std::string dsn_param(std::string_view dsn, std::string_view key) {
  auto opts = parse_dsn(dsn);
  if (!opts) return {};
  for (auto* o = opts.get(); o->keyword; ++o)
    if (o->val && key == o->keyword) return o->val;
  return {};
}

std::string set_dsn_param(std::string dsn, std::string_view key, std::string_view value) {
  auto opts = parse_dsn(dsn);
  // A string libpq cannot parse stays as it is: connecting reports what is wrong.
  if (!opts) return with_dsn_param(std::move(dsn), key, value);
  // Rebuilt as conninfo (every set option, values quoted), the key set to `value`.
  auto quote = [](std::string_view v) {
    std::string q = "'";
    for (char c : v) {
      if (c == '\\' || c == '\'') q += '\\';
      q += c;
    }
    return q + "'";
  };
  std::string out;
  for (auto* o = opts.get(); o->keyword; ++o) {
    if (!o->val || key == o->keyword) continue;
    if (!out.empty()) out += ' ';
    out += std::string(o->keyword) + "=" + quote(o->val);
  }
  if (!out.empty()) out += ' ';
  return out + std::string(key) + "=" + quote(value);
}

std::string dsn_endpoint(std::string_view dsn) {
  if (dsn.starts_with("postgresql://") || dsn.starts_with("postgres://")) {
    auto rest = dsn.substr(dsn.find("//") + 2);
    auto end = rest.find_first_of("/?");
    auto hostpart = rest.substr(0, end);
    auto at = hostpart.rfind('@');
    if (at != std::string_view::npos) hostpart.remove_prefix(at + 1);
    return hostpart.empty() ? std::string("localhost") : std::string(hostpart);
  }
  auto value = [&](std::string_view key) -> std::string {
    std::size_t at = 0;
    while ((at = dsn.find(key, at)) != std::string_view::npos) {
      bool start = at == 0 || dsn[at - 1] == ' ';
      auto eq = dsn.find_first_not_of(' ', at + key.size());
      if (start && eq != std::string_view::npos && dsn[eq] == '=') {
        auto v = dsn.find_first_not_of(' ', eq + 1);
        if (v == std::string_view::npos) return {};
        auto e = dsn.find(' ', v);
        return std::string(
            dsn.substr(v, e == std::string_view::npos ? std::string_view::npos : e - v));
      }
      at += key.size();
    }
    return {};
  };
  auto host = value("host");
  auto port = value("port");
  return (host.empty() ? std::string("localhost") : host) + (port.empty() ? "" : ":" + port);
}

engine::engine(pg_store_config cfg) : cfg_(std::move(cfg)) {
  if (cfg_.instance.empty()) cfg_.instance = default_instance();
  if (cfg_.buckets == 0 || cfg_.buckets > max_buckets) cfg_.buckets = 1024;
  if (cfg_.writer_connections == 0) cfg_.writer_connections = 1;
  if (cfg_.max_batch_messages == 0) cfg_.max_batch_messages = 1;
  // A notification payload holds at most 8000 bytes: 256 IDs and a prefix fit.
  cfg_.max_batch_messages = std::min<std::size_t>(cfg_.max_batch_messages, 256);
  if (cfg_.io_threads == 0) cfg_.io_threads = 1;
  part_interval_ = choose_interval(cfg_);
  auto empty = std::make_shared<bucket_map>();
  empty->owner.assign(cfg_.buckets, -1);
  map_.store(std::move(empty));
  for (unsigned i = 0; i < cfg_.shards.size(); ++i)
    shards_.push_back(std::make_unique<shard>(*this, i, cfg_.shards[i]));
}

engine::~engine() {
  stop();
}

void engine::start() {
  work_.emplace(io_.get_executor());
  for (auto& s : shards_) s->start();
  for (unsigned i = 0; i < cfg_.io_threads; ++i) threads_.emplace_back([this] { io_.run(); });
}

void engine::stop() {
  if (threads_.empty()) return;
  for (auto& s : shards_) s->stop();
  work_.reset();
  // Give the coroutines a moment to see the stop and finish; then stop the loop.
  auto until = steady::now() + std::chrono::seconds(3);
  while (!io_.stopped() && steady::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void engine::rebuild_map() {
  std::lock_guard lk(map_mu_);
  auto old = map_.load();
  auto m = std::make_shared<bucket_map>();
  m->owner.assign(cfg_.buckets, -1);
  // While a move switches, the new shard owns a bucket the old one still holds frozen:
  // writes go to the owner (the frozen one refuses them), so owned wins.
  std::vector<char> owned(cfg_.buckets, 0);
  for (auto& s : shards_) {
    for (auto [b, st] : s->holdings()) {
      if (b < 0 || static_cast<std::uint32_t>(b) >= cfg_.buckets) continue;
      auto k = static_cast<std::size_t>(b);
      if ((st == 'o' || st == 'f') && !owned[k]) {
        m->owner[k] = static_cast<std::int16_t>(s->index());
        owned[k] = st == 'o';
      }
    }
  }
  if (m->owner == old->owner) return;
  m->version = old->version + 1;
  map_.store(std::move(m));
}

// ---- write path ------------------------------------------------------------------

void engine::put(new_message msg, put_handler done) {
  // The row carries the search text: build it now when the caller left it to the store.
  search::complete_search_text(msg);
  auto now = std::chrono::system_clock::now();
  std::int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::vector<std::string> boxes;
  std::vector<std::int32_t> buckets;
  boxes.reserve(msg.envelope.rcpt_to.size());
  for (const auto& r : msg.envelope.rcpt_to) {
    auto n = normalize_mailbox(r);
    if (n.empty() || std::find(boxes.begin(), boxes.end(), n) != boxes.end()) continue;
    buckets.push_back(static_cast<std::int32_t>(bucket_of(n, cfg_.buckets)));
    boxes.push_back(std::move(n));
  }
  auto primary =
      boxes.empty() ? static_cast<std::int32_t>(bucket_of("", cfg_.buckets)) : buckets.front();

  auto rec = std::make_shared<stored_message>();
  rec->id = message_id(make_id(us, static_cast<std::uint32_t>(primary)));
  rec->seq = static_cast<std::uint64_t>(us);
  // Arrival (the ID, the order of listings, the partition) is the store's clock; the time
  // shown and searched is the caller's when it gives one (imports, tests).
  rec->created = msg.created.value_or(
      time_point(std::chrono::duration_cast<time_point::duration>(std::chrono::microseconds(us))));
  rec->envelope = std::move(msg.envelope);
  rec->summary = std::move(msg.summary);
  rec->raw = std::move(msg.raw);
  rec->size = rec->raw.size();
  rec->has_raw = true;
  rec->init_read(false);
  rec->set_tags(std::make_shared<const std::vector<std::string>>(dedupe_tags(std::move(msg.tags))));

  auto st = std::make_shared<put_state>();
  st->rec = std::move(rec);
  st->received_us = us;
  st->primary_bucket = primary;
  st->done = std::move(done);
  st->start = steady::now();
  st->deadline = st->start + cfg_.put_timeout;
  st->pending.store(1);  // held by this call until every copy is queued
  route(st, std::move(boxes), std::move(buckets), {});
  copy_finished(st, {});
}

void engine::route(std::shared_ptr<put_state> put, std::vector<std::string> mailboxes,
                   std::vector<std::int32_t> buckets, steady::time_point not_before) {
  auto m = map();
  struct group {
    int shard;
    std::vector<std::string> mailboxes;
    std::vector<std::int32_t> buckets;
  };
  std::vector<group> groups;
  auto group_for = [&](int s) -> group& {
    for (auto& g : groups)
      if (g.shard == s) return g;
    return groups.emplace_back(group{s, {}, {}});
  };
  // Mailboxes whose bucket no reachable shard owns: while every shard is up that is a
  // bucket between the two steps of a move (wait and route again); with a shard down it
  // is most likely that shard's (fail now: 451).
  std::vector<std::string> lost_boxes;
  std::vector<std::int32_t> lost_buckets;
  bool lost_primary = false;
  if (mailboxes.empty()) {
    int s = m->shard_of(static_cast<std::uint32_t>(put->primary_bucket));
    if (s < 0)
      lost_primary = true;
    else
      group_for(s);
  }
  for (std::size_t i = 0; i < mailboxes.size(); ++i) {
    int s = m->shard_of(static_cast<std::uint32_t>(buckets[i]));
    if (s < 0) {
      lost_boxes.push_back(std::move(mailboxes[i]));
      lost_buckets.push_back(buckets[i]);
      continue;
    }
    auto& g = group_for(s);
    g.mailboxes.push_back(std::move(mailboxes[i]));
    g.buckets.push_back(buckets[i]);
  }
  if (lost_primary || !lost_boxes.empty()) {
    put->pending.fetch_add(1);
    if (all_ready() && steady::now() < put->deadline)
      route_later(put, std::move(lost_boxes), std::move(lost_buckets));
    else
      copy_finished(put, make_error_code(errc::unavailable));
  }
  for (auto& g : groups) {
    shard& s = *shards_[static_cast<std::size_t>(g.shard)];
    put->pending.fetch_add(1);
    auto types = s.types();
    if (!s.up() || !types) {
      copy_finished(put, make_error_code(errc::unavailable));
      continue;
    }
    copy_item item;
    item.put = put;
    item.home = g.mailboxes.empty() || std::find(g.buckets.begin(), g.buckets.end(),
                                                 put->primary_bucket) != g.buckets.end();
    item.mailboxes = std::move(g.mailboxes);
    item.buckets = std::move(g.buckets);
    item.not_before = not_before;
    copy_view v;
    v.msg = put->rec.get();
    v.received_us = put->received_us;
    v.home = item.home;
    v.primary_bucket = put->primary_bucket;
    v.mailboxes = &item.mailboxes;
    v.buckets = &item.buckets;
    item.encoded.reserve(put->rec->raw.size() + 1024);
    encode_copy(item.encoded, *types, v);
    s.enqueue(std::move(item));
  }
}

void engine::copy_finished(const std::shared_ptr<put_state>& put, std::error_code ec,
                           int committed_on) {
  if (ec || committed_on >= 0) {
    std::lock_guard lk(put->mu);
    if (ec && !put->error) put->error = ec;
    if (!ec && std::find(put->committed.begin(), put->committed.end(),
                         static_cast<unsigned>(committed_on)) == put->committed.end())
      put->committed.push_back(static_cast<unsigned>(committed_on));
  }
  if (put->pending.fetch_sub(1) != 1) return;
  std::error_code err;
  std::vector<unsigned> committed;
  {
    std::lock_guard lk(put->mu);
    err = put->error;
    committed = put->committed;
  }
  if (err) {
    puts_failed.fetch_add(1, std::memory_order_relaxed);
    if (!committed.empty()) {
      remove_orphans(put, std::move(committed), err);
      return;
    }
    auto done = std::move(put->done);
    if (done) done(err, nullptr);
    return;
  }
  auto done = std::move(put->done);
  puts_ok.fetch_add(1, std::memory_order_relaxed);
  note_change();
  message_ptr rec = put->rec;
  if (has_observers()) {
    store_event ev;
    ev.what = store_event::kind::created;
    ev.message = rec;
    emit(ev);
  }
  if (done) done({}, std::move(rec));
}

void engine::reroute_later(copy_item item) {
  route_later(std::move(item.put), std::move(item.mailboxes), std::move(item.buckets));
}

void engine::route_later(std::shared_ptr<put_state> put, std::vector<std::string> mailboxes,
                         std::vector<std::int32_t> buckets) {
  // The caller holds one place in `pending` for these mailboxes; it is released only
  // after the new copies took theirs.
  if (steady::now() >= put->deadline) {
    copy_finished(put, make_error_code(errc::timeout));
    return;
  }
  for (auto& s : shards_) s->refresh_soon();
  // A bucket is frozen for milliseconds while a move switches it (and the new owner's
  // notification refreshes the map at once): try again soon, then less often.
  int n = std::min(put->reroutes.fetch_add(1, std::memory_order_relaxed), 3);
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(10 << n));
  t->async_wait([this, t, put = std::move(put), mailboxes = std::move(mailboxes),
                 buckets = std::move(buckets)](boost::system::error_code) mutable {
    route(put, std::move(mailboxes), std::move(buckets), {});
    copy_finished(put, {});
  });
}

bool engine::all_ready() const {
  for (auto& s : shards_)
    if (!s->ready()) return false;
  return !shards_.empty();
}

void engine::trimmed(std::vector<std::string> ids) {
  evicted_.fetch_add(ids.size(), std::memory_order_relaxed);
  note_change();
  if (!has_observers()) return;
  store_event ev;
  ev.what = store_event::kind::deleted;
  ev.ids = std::move(ids);
  emit(ev);
}

// ---- events ------------------------------------------------------------------------

std::uint64_t engine::subscribe(event_observer o) {
  std::lock_guard lk(obs_mu_);
  auto h = next_obs_++;
  observers_.emplace(h, std::make_shared<const event_observer>(std::move(o)));
  observer_count_.store(observers_.size());
  return h;
}

void engine::unsubscribe(std::uint64_t h) {
  std::lock_guard lk(obs_mu_);
  observers_.erase(h);
  observer_count_.store(observers_.size());
}

std::optional<std::string> engine::find_cursor(const list_request& req) const {
  const auto now = changes();
  std::lock_guard lk(cursor_mu_);
  for (const auto& c : cursors_)
    if (c.made_at == now && c.start == req.start && c.mailbox == req.mailbox &&
        c.before_id == req.before_id && c.query == req.query)
      return c.after_id;
  return std::nullopt;
}

void engine::keep_cursor(const list_request& req, std::size_t start, std::string after_id,
                         std::uint64_t made_at) {
  constexpr std::size_t kept = 64;
  if (made_at != changes()) return;  // something changed while the page was read
  std::lock_guard lk(cursor_mu_);
  std::erase_if(cursors_, [&](const list_cursor& c) { return c.made_at != made_at; });
  for (const auto& c : cursors_)
    if (c.start == start && c.mailbox == req.mailbox && c.before_id == req.before_id &&
        c.query == req.query)
      return;
  cursors_.push_front({req.mailbox, req.before_id, req.query, start, std::move(after_id), made_at});
  if (cursors_.size() > kept) cursors_.pop_back();
}

void engine::emit(const store_event& ev) {
  std::vector<std::shared_ptr<const event_observer>> obs;
  {
    std::lock_guard lk(obs_mu_);
    for (auto& [h, o] : observers_) obs.push_back(o);
  }
  for (auto& o : obs) (*o)(ev);
}

// ---- stats and health ----------------------------------------------------------------

store_stats engine::stats() const {
  store_stats st;
  // A bucket frozen on one shard and owned by another is a move between the new shard's
  // take and the old one's leave: both tallies hold its messages; the owner's count.
  std::vector<char> owned(cfg_.buckets, 0);
  for (auto& s : shards_)
    for (auto [b, state] : s->holdings())
      if (state == 'o' && b >= 0 && static_cast<std::uint32_t>(b) < cfg_.buckets)
        owned[static_cast<std::size_t>(b)] = 1;
  for (auto& s : shards_) {
    std::int64_t messages = s->tally_messages.load(), unread = s->tally_unread.load(),
                 bytes = s->tally_bytes.load();
    for (auto& f : s->frozen_counts()) {
      if (f.bucket < 0 || static_cast<std::uint32_t>(f.bucket) >= cfg_.buckets ||
          !owned[static_cast<std::size_t>(f.bucket)])
        continue;
      messages -= f.messages, unread -= f.unread, bytes -= f.bytes;
    }
    st.messages += static_cast<std::uint64_t>(std::max<std::int64_t>(0, messages));
    st.unread += static_cast<std::uint64_t>(std::max<std::int64_t>(0, unread));
    st.bytes += static_cast<std::uint64_t>(std::max<std::int64_t>(0, bytes));
  }
  st.stored_total = puts_ok.load(std::memory_order_relaxed);
  st.rejected_total = puts_failed.load(std::memory_order_relaxed);
  st.evicted_total = evicted_.load(std::memory_order_relaxed);
  st.deleted_total = deleted_.load(std::memory_order_relaxed);
  return st;
}

// ---- health ----------------------------------------------------------------

bool engine::all_up() const {
  for (auto& s : shards_)
    if (!s->accepting()) return false;
  return !shards_.empty();
}

bool engine::accepts_mailbox(std::string_view mailbox) const {
  auto n = normalize_mailbox(mailbox);
  if (n.empty()) return true;
  const int s = map()->shard_of(bucket_of(n, cfg_.buckets));
  // No owner known: a bucket between the steps of a move while every shard is up (the put
  // waits and routes again), else most likely a down shard's.
  if (s < 0) return all_up();
  return shards_[static_cast<std::size_t>(s)]->accepting();
}

void engine::set_configuration_error(std::string why) {
  std::lock_guard lk(config_error_m_);
  if (config_error_.empty()) config_error_ = std::move(why);
}

std::string engine::configuration_error() const {
  std::lock_guard lk(config_error_m_);
  return config_error_;
}

store_health engine::health() const {
  store_health h;
  if (auto why = configuration_error(); !why.empty()) {
    h.ready = false;
    h.detail = why;
    return h;
  }
  if (shards_.empty()) {
    h.ready = false;
    h.detail = "no shard configured";
    return h;
  }
  for (auto& s : shards_) {
    if (s->accepting()) continue;
    h.ready = false;
    if (!h.detail.empty()) h.detail += "; ";
    h.detail += "shard " + std::to_string(s->index()) + " (" + s->endpoint() + "): " + s->detail();
  }
  return h;
}

}  // namespace inlet::store::pgstore
