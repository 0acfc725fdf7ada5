// The store's read and update operations, as coroutines on the engine's io_context.
// Nothing here blocks a thread: every wait is a co_await on a pool acquisition or a
// query, bounded by read_timeout; a shard that is down or slow is left out of a global
// listing (page.partial) and does not hold up the others.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <map>
#include <set>

#include "engine.hpp"
#include "ids.hpp"
#include "reads.hpp"

namespace inlet::store::pgstore {

namespace {

template <class T>
void complete(handler<void(std::error_code, T)> h, asio::any_io_executor fallback,
              std::error_code ec, T v) {
  auto ex = asio::get_associated_executor(h, fallback);
  asio::dispatch(
      ex, [h = std::move(h), ec, v = std::move(v)]() mutable { std::move(h)(ec, std::move(v)); });
}

pg::timestamptz ts_of(std::int64_t us) {
  return pg::timestamptz(std::chrono::microseconds(us));
}

// What an ID tells: its receive time and its home shard under map `m` (-1: unknown).
struct id_ref {
  std::string id;
  std::int64_t received_us = 0;
  int home = -1;
};

std::vector<id_ref> parse_ids(const std::vector<std::string>& ids, const bucket_map& m) {
  std::vector<id_ref> out;
  std::set<std::string_view> seen;
  for (const auto& id : ids) {
    auto p = parse_id(id);
    if (!p || !seen.insert(id).second) continue;
    out.push_back({id, p->received_us, m.shard_of(p->bucket)});
  }
  return out;
}

constexpr std::string_view no_upper_id = "~";  // sorts after every base62 ID

// A failure of one shard's part of a request: why, for logs and health.
std::error_code shard_error(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const pg::error& pe) {
    if (pe.code() == pg::condition::timeout) return make_error_code(errc::timeout);
    return make_error_code(errc::unavailable);
  } catch (const std::system_error& se) {
    return se.code();
  } catch (...) {
  }
  return make_error_code(errc::unavailable);
}

}  // namespace

/// One shard's answer: `value` when `ok`. (Not std::optional: g++ 12 at -O1 warns that
/// an optional<shared_ptr> in a coroutine frame may be used uninitialised.)
template <class T>
struct shard_result {
  bool ok = false;
  T value{};
  explicit operator bool() const noexcept { return ok; }
  T& operator*() noexcept { return value; }
  T* operator->() noexcept { return &value; }
};

/// Runs f(shard) on every listed shard concurrently; a result is empty when that shard
/// failed (its error in `errors`).
template <class T, class F>
asio::awaitable<std::vector<shard_result<T>>> for_shards(
    asio::io_context& io, std::vector<shard*> shards, F f,
    std::vector<std::error_code>* errors = nullptr) {
  using op_t = decltype(asio::co_spawn(io, f(*shards.front()), asio::deferred));
  std::vector<op_t> ops;
  ops.reserve(shards.size());
  for (auto* s : shards) ops.push_back(asio::co_spawn(io, f(*s), asio::deferred));
  auto [order, excs, values] =
      co_await asio::experimental::make_parallel_group(std::move(ops))
          .async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  std::vector<shard_result<T>> out(shards.size());
  if (errors) errors->assign(shards.size(), {});
  for (std::size_t i = 0; i < shards.size(); ++i) {
    if (excs[i]) {
      if (errors) (*errors)[i] = shard_error(excs[i]);
      shards[i]->counters().read_errors.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    shards[i]->counters().reads.fetch_add(1, std::memory_order_relaxed);
    out[i].ok = true;
    out[i].value = std::move(values[i]);
  }
  co_return out;
}

namespace {

// Reads go where the shard's read target says (the primary unless replicas were asked
// for); changes always go to the primary.
//
// A pooled connection can be dead without the pool knowing yet: the shard restarted since
// it was last used, and its socket has not reported the close. A read that fails on the
// connection itself is sent once more, on another connection (the pool drops the broken
// one), before the shard counts as failed: reads change nothing, so sending one twice is
// harmless. Other errors (a timeout, an SQL error) are not retried.
bool lost_connection(const pg::error& e) { return e.code() == pg::condition::connection_error; }

// A batch is made again for the second try (it is consumed by its execution).
template <class MakeBatch>
  requires std::is_invocable_r_v<pg::batch, MakeBatch&>
asio::awaitable<pg::batch_result> run(shard& s, MakeBatch make) {
  for (int attempt = 0;; ++attempt) {
    auto c = co_await s.cluster().async_acquire(s.read_target());
    pg::batch b = make();
    try {
      co_return co_await c->async_execute(std::move(b));
    } catch (const pg::error& e) {
      if (attempt > 0 || !lost_connection(e)) throw;
    }
    s.counters().read_retries.fetch_add(1, std::memory_order_relaxed);
  }
}

template <class Q>
asio::awaitable<pg::result> run(shard& s, Q q) {
  for (int attempt = 0;; ++attempt) {
    auto c = co_await s.cluster().async_acquire(s.read_target());
    Q this_try(q);  // q stays for a second try
    try {
      co_return co_await c->async_query(std::move(this_try));
    } catch (const pg::error& e) {
      if (attempt > 0 || !lost_connection(e)) throw;
    }
    s.counters().read_retries.fetch_add(1, std::memory_order_relaxed);
  }
}

template <class Q>
asio::awaitable<pg::result> run_on_primary(shard& s, Q q) {
  auto c = co_await s.cluster().async_acquire(pg::target::primary);
  co_return co_await c->async_query(std::move(q));
}

struct shard_page {
  std::vector<message_ptr> rows;
  std::size_t total = 0, unread = 0, matched = 0, matched_unread = 0;
  /// Global listings: the buckets whose home copies this shard counted (owned or
  /// frozen here), in the same snapshot as the counts.
  std::vector<std::int32_t> counted;
  /// Global listings: the home copies of each bucket frozen here, counted as the page's
  /// totals count them (a move's switch: taken out when another shard owns the bucket).
  struct frozen_count {
    std::int32_t bucket = 0;
    std::size_t total = 0, unread = 0, matched = 0, matched_unread = 0;
  };
  std::vector<frozen_count> frozen;
  std::vector<std::int32_t> frozen_buckets;  // of `counted`, those frozen here
};

std::error_code read_rows(const pg::result& r, bool with_raw, std::vector<message_ptr>& out) {
  for (int i = 0; i < r.rows(); ++i) {
    auto m = std::make_shared<stored_message>();
    if (auto ec = read_summary_row(r, i, with_raw, *m)) return ec;
    out.push_back(std::move(m));
  }
  return {};
}

std::pair<std::size_t, std::size_t> two_counts(const pg::result& r) {
  std::int64_t a = 0, b = 0;
  if (r.rows() == 1) {
    r.at(0, 0).as(a);
    r.at(0, 1).as(b);
  }
  return {static_cast<std::size_t>(std::max<std::int64_t>(a, 0)),
          static_cast<std::size_t>(std::max<std::int64_t>(b, 0))};
}

struct bucket_moved : std::runtime_error {
  bucket_moved() : std::runtime_error("bucket moved") {}
};

}  // namespace

// ---- listing -------------------------------------------------------------------------

namespace {

asio::awaitable<shard_page> global_page(shard& s, std::string before, std::int64_t n,
                                        const search::query& q) {
  auto rows_search = compile_search(q, 3, 4, 5);
  std::string rows_sql = "SELECT " + summary_columns("m", false) +
                         " FROM mail.message m WHERE m.home AND m.id < $1 AND " +
                         rows_search.condition + " ORDER BY m.id DESC LIMIT $2";
  std::string count_sql;
  std::optional<compiled_search> count_search;
  if (!q.empty()) {
    count_search = compile_search(q, 1, 2, 3);
    count_sql =
        "SELECT count(*), count(*) FILTER (WHERE NOT m.read) FROM mail.message m WHERE m.home "
        "AND " +
        count_search->condition;
  }
  // Home copies of the buckets frozen here (none but in a move's switch; found through
  // the primary_bucket index), for the listing to take out when another shard owns one.
  auto frozen_search = compile_search(q, 1, 2, 3);
  // A lateral lookup per frozen bucket (an index range scan on each partition; nothing at
  // all when no bucket is frozen), never a join the planner could turn into a scan.
  std::string frozen_sql =
      "SELECT f.bucket, c.* FROM mail.bucket f CROSS JOIN LATERAL (SELECT count(*), "
      "count(*) FILTER (WHERE NOT m.read), count(*) FILTER (WHERE " +
      frozen_search.condition + "), count(*) FILTER (WHERE NOT m.read AND " +
      frozen_search.condition +
      ") FROM mail.message m WHERE m.home AND m.primary_bucket = f.bucket) c "
      "WHERE f.state = 'frozen'";
  auto r = co_await run(s, [&] {
    pg::batch b;
    b.add("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    b.add(
        "SELECT coalesce(sum(messages), 0)::int8, coalesce(sum(unread), 0)::int8 FROM mail.tally");
    b.add("SELECT coalesce(array_agg(bucket), '{}'), "
          "coalesce(array_agg(bucket) FILTER (WHERE state = 'frozen'), '{}') FROM mail.bucket "
          "WHERE state IN ('owned', 'frozen')");
    b.add(frozen_sql, frozen_search.texts, frozen_search.instants, frozen_search.sizes);
    if (count_search)
      b.add(count_sql, count_search->texts, count_search->instants, count_search->sizes);
    b.add(rows_sql, before, n, rows_search.texts, rows_search.instants, rows_search.sizes);
    b.add("COMMIT");
    return b;
  });
  shard_page p;
  std::tie(p.total, p.unread) = two_counts(r.results[1]);
  if (r.results[2].rows() == 1) {
    r.results[2].at(0, 0).as(p.counted);
    r.results[2].at(0, 1).as(p.frozen_buckets);
  }
  const auto& fr = r.results[3];
  for (int i = 0; i < fr.rows(); ++i) {
    std::int64_t v[4] = {0, 0, 0, 0};
    shard_page::frozen_count f;
    fr.at(i, 0).as(f.bucket);
    for (int k = 0; k < 4; ++k) fr.at(i, k + 1).as(v[k]);
    f.total = static_cast<std::size_t>(v[0]);
    f.unread = static_cast<std::size_t>(v[1]);
    f.matched = static_cast<std::size_t>(v[2]);
    f.matched_unread = static_cast<std::size_t>(v[3]);
    p.frozen.push_back(f);
  }
  if (q.empty())
    std::tie(p.matched, p.matched_unread) = std::tie(p.total, p.unread);
  else
    std::tie(p.matched, p.matched_unread) = two_counts(r.results[4]);
  if (auto ec = read_rows(r.results[r.size() - 2], false, p.rows)) throw std::system_error(ec);
  co_return p;
}

// A bucket frozen on one shard whose snapshot another shard's says it owns: a move
// between the new shard's take and the old one's leave (interrupted there, or a switch
// seen half). The new shard holds everything the frozen one does (the last catch-up ran
// while it was frozen) and what came since, so the old shard's part is taken out: its
// counts, its rows, and the bucket from what it counted.
void settle_switches(std::vector<shard_result<shard_page>>& pages, std::uint32_t buckets) {
  auto in_range = [&](std::int32_t b) { return b >= 0 && static_cast<std::uint32_t>(b) < buckets; };
  std::vector<char> owned(buckets, 0);
  for (auto& r : pages) {
    if (!r) continue;
    for (auto b : r.value.counted)
      if (in_range(b) && std::find(r.value.frozen_buckets.begin(), r.value.frozen_buckets.end(),
                                   b) == r.value.frozen_buckets.end())
        owned[static_cast<std::size_t>(b)] = 1;
  }
  auto minus = [](std::size_t& a, std::size_t b) { a = a > b ? a - b : 0; };
  for (auto& r : pages) {
    if (!r) continue;
    auto& p = r.value;
    std::vector<std::int32_t> out;  // frozen here, owned by another shard
    for (auto b : p.frozen_buckets)
      if (in_range(b) && owned[static_cast<std::size_t>(b)]) out.push_back(b);
    if (out.empty()) continue;
    auto is_out = [&](std::int32_t b) { return std::find(out.begin(), out.end(), b) != out.end(); };
    for (auto& f : p.frozen) {
      if (!is_out(f.bucket)) continue;
      minus(p.total, f.total);
      minus(p.unread, f.unread);
      minus(p.matched, f.matched);
      minus(p.matched_unread, f.matched_unread);
    }
    std::erase_if(p.counted, is_out);
    std::erase_if(p.rows, [&](const message_ptr& m) {
      auto parts = parse_id(m->id.str());
      return parts && is_out(static_cast<std::int32_t>(parts->bucket));
    });
  }
}

// Whether the shards' snapshots counted every bucket exactly once. A bucket move makes
// the new shard take the bucket, then the old one leave it: snapshots taken on either
// side of one of those commits count the bucket twice (or, for a move of schema version
// 2, not at all). Such a listing is read again.
bool counted_once(const std::vector<shard_result<shard_page>>& pages, std::uint32_t buckets) {
  std::vector<std::uint8_t> seen(buckets, 0);
  for (auto& p : pages) {
    if (!p) return true;  // a shard missing: the page is partial anyway
    for (auto b : p.value.counted) {
      if (b < 0 || static_cast<std::uint32_t>(b) >= buckets) continue;
      if (seen[static_cast<std::size_t>(b)]++) return false;
    }
  }
  return std::find(seen.begin(), seen.end(), 0) == seen.end();
}

asio::awaitable<shard_page> mailbox_page(shard& s, std::string mailbox, std::int32_t bucket,
                                         std::string before, std::int64_t n,
                                         const search::query& q) {
  static const std::string join =
      " FROM mail.inbox i JOIN mail.message m ON m.id = i.id AND m.received = i.received"
      " WHERE i.bucket = $1 AND i.mailbox = $2";
  auto rs = compile_search(q, 5, 6, 7);
  std::string rows_sql = "SELECT " + summary_columns("m", false) + join + " AND i.id < $3 AND " +
                         rs.condition + " ORDER BY i.id DESC LIMIT $4";
  std::string total_sql = "SELECT count(*), count(*) FILTER (WHERE NOT m.read)" + join;
  std::string count_sql;
  std::optional<compiled_search> count_search;
  if (!q.empty()) {
    count_search = compile_search(q, 3, 4, 5);
    count_sql = total_sql + " AND " + count_search->condition;
  }
  auto r = co_await run(s, [&] {
    pg::batch b;
    b.add("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    b.add("SELECT state FROM mail.bucket WHERE bucket = $1", bucket);
    b.add(total_sql, bucket, mailbox);
    if (count_search)
      b.add(count_sql, bucket, mailbox, count_search->texts, count_search->instants,
            count_search->sizes);
    b.add(rows_sql, bucket, mailbox, before, n, rs.texts, rs.instants, rs.sizes);
    b.add("COMMIT");
    return b;
  });
  std::string state;
  if (r.results[1].rows() == 1) r.results[1].at(0, 0).as(state);
  if (state != "owned" && state != "frozen") throw bucket_moved();
  shard_page p;
  std::tie(p.total, p.unread) = two_counts(r.results[2]);
  if (q.empty())
    std::tie(p.matched, p.matched_unread) = std::tie(p.total, p.unread);
  else
    std::tie(p.matched, p.matched_unread) = two_counts(r.results[3]);
  if (auto ec = read_rows(r.results[r.size() - 2], false, p.rows)) throw std::system_error(ec);
  co_return p;
}

}  // namespace

namespace {

// The shard that owns `bucket` and is ready, or -1. With every shard up, a bucket the map
// gives no owner is one between two steps of a move as the map last saw them (rebuilt
// from the old shard's refresh after its leave, before the new shard's after its take):
// the shards' buckets are read again until the map names its owner, for up to a second.
// `stale`: a shard that just said the bucket is no longer there (its map entry is old),
// waited past likewise.
asio::awaitable<int> owner_of(engine& e, std::int32_t bucket, int stale = -1) {
  const auto until = steady::now() + std::chrono::seconds(1);
  auto next_refresh = steady::now();
  for (;;) {
    int si = e.map()->shard_of(static_cast<std::uint32_t>(bucket));
    const bool late = steady::now() >= until;
    if (si >= 0 && (si != stale || late))
      co_return e.at(static_cast<unsigned>(si)).ready() ? si : -1;
    if ((si < 0 && !e.all_ready()) || late) co_return -1;
    if (steady::now() >= next_refresh) {
      for (unsigned i = 0; i < e.shard_count(); ++i) e.at(i).refresh_soon();
      next_refresh = steady::now() + std::chrono::milliseconds(100);
    }
    asio::steady_timer t(e.io(), std::chrono::milliseconds(10));
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace

asio::awaitable<std::pair<std::error_code, message_ptr>> get_co(engine& e, std::string id);

asio::awaitable<std::pair<std::error_code, page>> list_co(engine& e, list_request req) {
  page out;
  out.start = req.start;
  std::string before(no_upper_id);
  if (!req.before_id.empty()) {
    auto [ec, m] = co_await get_co(e, req.before_id);
    if (ec) co_return std::make_pair(ec, std::move(out));
    before = req.before_id;
  }
  // A deep page continues from the cursor its previous page left, when nothing changed
  // since: limit rows per shard instead of start + limit.
  const std::uint64_t made_at = e.changes();
  std::size_t skip = req.start;
  if (req.start > 0 && e.config().events) {
    if (auto after = e.find_cursor(req)) {
      before = std::move(*after);
      skip = 0;
      e.cursor_pages.fetch_add(1, std::memory_order_relaxed);
    }
  }
  auto keep = [&](const page& p) {
    if (e.config().events && req.limit > 0 && p.messages.size() == req.limit)
      e.keep_cursor(req, req.start + req.limit, std::string(p.messages.back()->id.str()),
                    made_at);
  };
  auto n = static_cast<std::int64_t>(std::min<std::size_t>(skip + req.limit, 1u << 30));
  if (!req.mailbox.empty()) {
    auto mailbox = normalize_mailbox(req.mailbox);
    auto bucket = static_cast<std::int32_t>(bucket_of(mailbox, e.config().buckets));
    int stale = -1;
    for (int attempt = 0; attempt < 3; ++attempt) {
      int si = co_await owner_of(e, bucket, stale);
      if (si < 0) break;
      shard& s = e.at(static_cast<unsigned>(si));
      std::exception_ptr failed;
      try {
        auto p = co_await mailbox_page(s, mailbox, bucket, before, n, req.query);
        s.counters().reads.fetch_add(1, std::memory_order_relaxed);
        out.total = p.total;
        out.unread = p.unread;
        out.matched = p.matched;
        out.matched_unread = p.matched_unread;
        for (std::size_t i = skip; i < p.rows.size(); ++i)
          out.messages.push_back(std::move(p.rows[i]));
        keep(out);
        co_return std::make_pair(std::error_code{}, std::move(out));
      } catch (const bucket_moved&) {
        stale = si;  // the map was stale: read the shards' buckets again, then retry
      } catch (...) {
        failed = std::current_exception();
      }
      if (failed) {
        s.counters().read_errors.fetch_add(1, std::memory_order_relaxed);
        co_return std::make_pair(shard_error(failed), std::move(out));
      }
    }
    co_return std::make_pair(make_error_code(errc::unavailable), std::move(out));
  }

  std::vector<shard*> live;
  for (unsigned i = 0; i < e.shard_count(); ++i) {
    if (e.at(i).ready()) {
      live.push_back(&e.at(i));
    } else {
      out.partial = true;
      out.missing.push_back(i);
    }
  }
  if (live.empty()) co_return std::make_pair(make_error_code(errc::unavailable), std::move(out));
  const search::query& q = req.query;
  auto read_all = [&]() {
    return for_shards<shard_page>(e.io(), live,
                                  [&](shard& s) { return global_page(s, before, n, q); });
  };
  auto pages = co_await read_all();
  // A bucket counted by the old shard (frozen) and the new one (owned) is the new one's:
  // settle_switches takes out the old shard's part, also when the move was interrupted
  // between those steps. What else is not counted once (a bucket counted by nobody: a
  // move by an older admin tool, leave before take) is read again, for up to a second.
  // Only with every shard read (a shard left out leaves its buckets uncounted anyway);
  // once re-reading ran out, later listings read again once until a view is whole.
  settle_switches(pages, e.config().buckets);
  const bool whole = live.size() == e.shard_count();
  const auto reread_until =
      steady::now() + (e.listing_stuck.load(std::memory_order_relaxed)
                           ? std::chrono::milliseconds(1)
                           : std::chrono::milliseconds(1000));
  bool once = !whole || counted_once(pages, e.config().buckets);
  while (!once && steady::now() < reread_until) {
    e.inconsistent_reads.fetch_add(1, std::memory_order_relaxed);
    asio::steady_timer t(e.io(), std::chrono::milliseconds(5));
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    pages = co_await read_all();
    settle_switches(pages, e.config().buckets);
    once = counted_once(pages, e.config().buckets);
  }
  if (whole) e.listing_stuck.store(!once, std::memory_order_relaxed);
  std::vector<message_ptr> all;
  for (std::size_t k = 0; k < pages.size(); ++k) {
    auto& p = pages[k];
    if (!p) {
      out.partial = true;
      out.missing.push_back(live[k]->index());
      continue;
    }
    out.total += p->total;
    out.unread += p->unread;
    out.matched += p->matched;
    out.matched_unread += p->matched_unread;
    for (auto& m : p->rows) all.push_back(std::move(m));
  }
  if (out.partial && all.empty() && pages.size() == 1 && !pages.front())
    co_return std::make_pair(make_error_code(errc::unavailable), std::move(out));
  std::sort(all.begin(), all.end(),
            [](const message_ptr& a, const message_ptr& b) { return a->id > b->id; });
  all.erase(std::unique(all.begin(), all.end(),
                        [](const message_ptr& a, const message_ptr& b) { return a->id == b->id; }),
            all.end());
  for (std::size_t i = skip; i < all.size() && out.messages.size() < req.limit; ++i)
    out.messages.push_back(std::move(all[i]));
  if (!out.partial) keep(out);
  co_return std::make_pair(std::error_code{}, std::move(out));
}

// ---- get -----------------------------------------------------------------------------

namespace {

asio::awaitable<message_ptr> get_on(shard& s, std::string id, std::int64_t received_us) {
  static const std::string sql =
      "SELECT " + summary_columns("m", true) +
      " FROM mail.message m WHERE m.id = $1 AND m.received = $2 ORDER BY m.home DESC LIMIT 1";
  auto r = co_await run(s, pg::sql(sql, std::move(id), ts_of(received_us)));
  if (r.rows() == 0) co_return message_ptr{};
  auto m = std::make_shared<stored_message>();
  if (auto ec = read_summary_row(r, 0, true, *m)) throw std::system_error(ec);
  co_return message_ptr(std::move(m));
}

}  // namespace

asio::awaitable<std::pair<std::error_code, message_ptr>> get_co(engine& e, std::string id) {
  auto p = parse_id(id);
  if (!p) co_return std::make_pair(make_error_code(errc::not_found), message_ptr{});
  int home = e.map()->shard_of(p->bucket);
  bool home_failed = false;
  if (home >= 0 && e.at(static_cast<unsigned>(home)).ready()) {
    shard& s = e.at(static_cast<unsigned>(home));
    std::vector<std::error_code> errs;
    std::vector<shard*> one(1, &s);
    auto r = co_await for_shards<message_ptr>(
        e.io(), one, [&](shard& sh) { return get_on(sh, id, p->received_us); }, &errs);
    if (r[0] && *r[0]) co_return std::make_pair(std::error_code{}, *r[0]);
    home_failed = !r[0];
  } else {
    home_failed = true;
  }
  // Not on its home shard (moved, or the home shard is down): any other copy will do.
  std::vector<shard*> others;
  for (unsigned i = 0; i < e.shard_count(); ++i)
    if (static_cast<int>(i) != home && e.at(i).ready()) others.push_back(&e.at(i));
  if (!others.empty()) {
    auto rs = co_await for_shards<message_ptr>(
        e.io(), others, [&](shard& sh) { return get_on(sh, id, p->received_us); });
    for (auto& r : rs)
      if (r && *r) co_return std::make_pair(std::error_code{}, *r);
  }
  co_return std::make_pair(make_error_code(home_failed ? errc::unavailable : errc::not_found),
                           message_ptr{});
}

// ---- updates -----------------------------------------------------------------------

namespace {

/// Which shards hold copies of each message: its home shard, and the shards of its
/// recipients' mailboxes (read from the home copy).
struct targets {
  std::map<int, std::vector<const id_ref*>> by_shard;
  bool incomplete = false;  ///< a home shard did not answer
};

asio::awaitable<std::vector<std::tuple<std::string, std::vector<std::string>>>> recipients_on(
    shard& s, std::vector<std::string> ids, std::vector<pg::timestamptz> rcvd) {
  auto r = co_await run_on_primary(
      s, pg::sql("SELECT id, rcpt_to FROM mail.message WHERE id = ANY($1) AND received = ANY($2)",
                 std::move(ids), std::move(rcvd)));
  std::vector<std::tuple<std::string, std::vector<std::string>>> out;
  if (auto ec = r.read_all<std::tuple<std::string, std::vector<std::string>>>(out))
    throw std::system_error(ec);
  co_return out;
}

asio::awaitable<targets> find_targets(engine& e, const std::vector<id_ref>& refs) {
  targets t;
  std::map<int, std::vector<const id_ref*>> by_home;
  for (const auto& r : refs) {
    if (r.home < 0)
      t.incomplete = true;
    else
      by_home[r.home].push_back(&r);
  }
  std::vector<shard*> homes;
  std::vector<std::vector<const id_ref*>*> groups;
  for (auto& [h, v] : by_home) {
    if (!e.at(static_cast<unsigned>(h)).ready()) {
      t.incomplete = true;
      continue;
    }
    homes.push_back(&e.at(static_cast<unsigned>(h)));
    groups.push_back(&v);
  }
  if (homes.empty()) co_return t;
  std::map<shard*, std::vector<const id_ref*>*> group_of;
  for (std::size_t i = 0; i < homes.size(); ++i) group_of[homes[i]] = groups[i];
  auto found = co_await for_shards<std::vector<std::tuple<std::string, std::vector<std::string>>>>(
      e.io(), homes, [&](shard& s) {
        std::vector<std::string> ids;
        std::vector<pg::timestamptz> rcvd;
        for (auto* r : *group_of[&s]) {
          ids.push_back(r->id);
          rcvd.push_back(ts_of(r->received_us));
        }
        return recipients_on(s, std::move(ids), std::move(rcvd));
      });
  auto m = e.map();
  for (std::size_t i = 0; i < homes.size(); ++i) {
    if (!found[i]) {
      t.incomplete = true;
      continue;
    }
    for (auto& [id, rcpts] : *found[i]) {
      const id_ref* ref = nullptr;
      for (auto* r : *groups[i])
        if (r->id == id) ref = r;
      if (!ref) continue;
      std::set<int> shards{static_cast<int>(homes[i]->index())};
      for (auto& rc : rcpts) {
        auto mb = normalize_mailbox(rc);
        if (mb.empty()) continue;
        int s = m->shard_of(bucket_of(mb, e.config().buckets));
        if (s >= 0)
          shards.insert(s);
        else
          t.incomplete = true;
      }
      for (int s : shards) t.by_shard[s].push_back(ref);
    }
  }
  co_return t;
}

/// Calls `fn(shard, ids, rcvd)` -> (changed, busy) on every shard holding copies,
/// retrying busy IDs (a bucket move in progress) until read_timeout. Returns the IDs
/// whose home copy changed.
template <class Fn>
asio::awaitable<std::pair<std::error_code, std::vector<std::string>>> apply_by_id(
    engine& e, const std::vector<id_ref>& refs, Fn fn) {
  auto t = co_await find_targets(e, refs);
  std::set<std::string> changed;
  bool failed = t.incomplete;
  auto until = steady::now() + e.config().read_timeout;
  for (auto& [si, list] : t.by_shard) {
    shard& s = e.at(static_cast<unsigned>(si));
    std::vector<const id_ref*> todo = list;
    while (!todo.empty()) {
      std::vector<std::string> ids;
      std::vector<pg::timestamptz> rcvd;
      for (auto* r : todo) {
        ids.push_back(r->id);
        rcvd.push_back(ts_of(r->received_us));
      }
      std::vector<std::error_code> errs;
      std::vector<shard*> one(1, &s);
      auto res = co_await for_shards<std::pair<std::vector<std::string>, std::vector<std::string>>>(
          e.io(), one, [&](shard& sh) { return fn(sh, ids, rcvd); }, &errs);
      if (!res[0]) {
        failed = true;
        break;
      }
      for (auto& id : res[0]->first) changed.insert(id);
      if (res[0]->second.empty()) break;
      if (steady::now() >= until) {
        failed = true;
        break;
      }
      std::vector<const id_ref*> again;
      for (auto* r : todo)
        if (std::find(res[0]->second.begin(), res[0]->second.end(), r->id) != res[0]->second.end())
          again.push_back(r);
      todo = std::move(again);
      asio::steady_timer wait(e.io(), std::chrono::milliseconds(100));
      co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }
  std::vector<std::string> out(changed.begin(), changed.end());
  co_return std::make_pair(failed ? make_error_code(errc::unavailable) : std::error_code{},
                           std::move(out));
}

std::pair<std::vector<std::string>, std::vector<std::string>> two_arrays(const pg::result& r) {
  std::pair<std::vector<std::string>, std::vector<std::string>> out;
  if (r.rows() == 1) {
    if (r.at(0, 0).as(out.first) || r.at(0, 1).as(out.second))
      throw std::system_error(make_error_code(errc::unavailable));
  }
  return out;
}

/// IDs of the (home copies of the) messages a selection names.
asio::awaitable<std::pair<std::error_code, std::vector<std::string>>> resolve(
    engine& e, const selection& sel) {
  std::vector<std::string> ids;
  if (sel.what == selection::kind::ids) co_return std::make_pair(std::error_code{}, sel.ids);
  const search::query empty;
  const search::query& q = sel.what == selection::kind::search ? sel.query : empty;
  if (!sel.mailbox.empty()) {
    auto mailbox = normalize_mailbox(sel.mailbox);
    auto bucket = static_cast<std::int32_t>(bucket_of(mailbox, e.config().buckets));
    // The bucket's state in the same snapshot as the IDs: a bucket no longer on the
    // shard the map named (a move) is looked up again, as a mailbox listing is.
    auto cs = compile_search(q, 3, 4, 5);
    std::string sql =
        "SELECT coalesce((SELECT state FROM mail.bucket WHERE bucket = $1), ''), "
        "ARRAY(SELECT m.id FROM mail.inbox i JOIN mail.message m ON m.id = i.id AND "
        "m.received = i.received WHERE i.bucket = $1 AND i.mailbox = $2 AND " +
        cs.condition + ")";
    int stale = -1;
    for (int attempt = 0; attempt < 3; ++attempt) {
      int si = co_await owner_of(e, bucket, stale);
      if (si < 0) break;
      std::vector<std::error_code> errs;
      std::vector<shard*> one(1, &e.at(static_cast<unsigned>(si)));
      auto r = co_await for_shards<std::pair<std::string, std::vector<std::string>>>(
          e.io(), one,
          [&](shard& s) -> asio::awaitable<std::pair<std::string, std::vector<std::string>>> {
            auto res =
                co_await run(s, pg::sql(sql, bucket, mailbox, cs.texts, cs.instants, cs.sizes));
            std::pair<std::string, std::vector<std::string>> v;
            if (res.rows() != 1 || res.at(0, 0).as(v.first) || res.at(0, 1).as(v.second))
              throw std::system_error(make_error_code(errc::unavailable));
            co_return v;
          },
          &errs);
      if (!r[0]) co_return std::make_pair(errs[0], std::move(ids));
      if (r[0]->first == "owned" || r[0]->first == "frozen")
        co_return std::make_pair(std::error_code{}, std::move(r[0]->second));
      stale = si;
    }
    co_return std::make_pair(make_error_code(errc::unavailable), std::move(ids));
  }
  auto cs = compile_search(q, 1, 2, 3);
  std::string sql = "SELECT m.id FROM mail.message m WHERE m.home AND " + cs.condition;
  std::vector<shard*> live;
  bool partial = false;
  for (unsigned i = 0; i < e.shard_count(); ++i) {
    if (e.at(i).ready())
      live.push_back(&e.at(i));
    else
      partial = true;
  }
  if (live.empty()) co_return std::make_pair(make_error_code(errc::unavailable), std::move(ids));
  auto rs = co_await for_shards<std::vector<std::string>>(
      e.io(), live, [&](shard& s) -> asio::awaitable<std::vector<std::string>> {
        auto res = co_await run(s, pg::sql(sql, cs.texts, cs.instants, cs.sizes));
        std::vector<std::string> v;
        if (auto ec = res.read_all<std::string>(v)) throw std::system_error(ec);
        co_return v;
      });
  for (auto& r : rs) {
    if (!r) {
      partial = true;
      continue;
    }
    for (auto& id : *r) ids.push_back(std::move(id));
  }
  co_return std::make_pair(partial ? make_error_code(errc::unavailable) : std::error_code{},
                           std::move(ids));
}

template <class Fn>
asio::awaitable<std::pair<std::error_code, std::vector<std::string>>> apply_to_selection(
    engine& e, const selection& sel, Fn fn) {
  auto [rec, ids] = co_await resolve(e, sel);
  auto m = e.map();
  std::vector<std::string> changed;
  std::error_code err = rec;
  constexpr std::size_t chunk = 1000;
  for (std::size_t at = 0; at < ids.size(); at += chunk) {
    std::vector<std::string> part(
        ids.begin() + static_cast<std::ptrdiff_t>(at),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + chunk)));
    auto refs = parse_ids(part, *m);
    auto [ec, ch] = co_await apply_by_id(e, refs, fn);
    if (ec && !err) err = ec;
    for (auto& id : ch) changed.push_back(std::move(id));
  }
  co_return std::make_pair(err, std::move(changed));
}

asio::awaitable<std::pair<std::error_code, std::size_t>> clear_all(engine& e) {
  std::vector<shard*> all;
  bool partial = false;
  for (unsigned i = 0; i < e.shard_count(); ++i) {
    if (e.at(i).ready())
      all.push_back(&e.at(i));
    else
      partial = true;
  }
  if (all.empty()) co_return std::make_pair(make_error_code(errc::unavailable), std::size_t{0});
  auto channel = e.channel();
  auto origin = e.instance();
  auto rs = co_await for_shards<std::int64_t>(
      e.io(), all, [&](shard& s) -> asio::awaitable<std::int64_t> {
        auto r =
            co_await run_on_primary(s, pg::sql("SELECT mail.clear_v1($1, $2)", channel, origin));
        std::int64_t n = 0;
        if (r.rows() == 1) r.at(0, 0).as(n);
        co_return n;
      });
  std::size_t n = 0;
  for (auto& r : rs) {
    if (!r)
      partial = true;
    else
      n += static_cast<std::size_t>(std::max<std::int64_t>(0, *r));
  }
  co_return std::make_pair(partial ? make_error_code(errc::unavailable) : std::error_code{}, n);
}

}  // namespace

// ---- a failed put's committed copies ---------------------------------------------

namespace {

// Deletes the copy of `id` on `s` (its primary), retrying while its bucket is being
// moved; true once no copy is left there. Bounded by `until`.
asio::awaitable<bool> delete_copy(shard& s, std::string id, std::int64_t received_us,
                                  std::string channel, std::string origin,
                                  steady::time_point until) {
  std::vector<std::string> ids{std::move(id)};
  std::vector<pg::timestamptz> rcvd{ts_of(received_us)};
  while (steady::now() < until) {
    auto r = co_await run_on_primary(
        s, pg::sql("SELECT deleted, busy FROM mail.delete_v1($1, $2, $3, $4)", ids, rcvd, channel,
                   origin));
    if (two_arrays(r).second.empty()) co_return true;
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(50));
    co_await t.async_wait(asio::use_awaitable);
  }
  co_return false;
}

}  // namespace

void engine::remove_orphans(std::shared_ptr<put_state> put, std::vector<unsigned> committed,
                            std::error_code err) {
  // The put is answered only after the deletes, so the client's retry never races them;
  // they are bounded (read_timeout), and a copy that cannot be deleted stays (counted in
  // orphans_left: its mailboxes will hold the message twice if the client retries).
  auto self = shared_from_this();
  auto work = [](std::shared_ptr<engine> e, std::shared_ptr<put_state> put,
                 std::vector<unsigned> committed) -> asio::awaitable<bool> {
    const auto until = steady::now() + e->config().read_timeout;
    bool all = true;
    for (auto i : committed) {
      try {
        all = co_await delete_copy(e->at(i), put->rec->id.str(), put->received_us, e->channel(),
                                   e->instance(), until) &&
              all;
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "inlet pg store: shard %u: the copy of failed message %s stays: %s\n",
                     i, put->rec->id.str().c_str(), ex.what());
        all = false;
      }
    }
    co_return all;
  };
  asio::co_spawn(
      io_, work(self, put, std::move(committed)), [self, put, err](std::exception_ptr, bool all) {
        (all ? self->orphans_removed : self->orphans_left).fetch_add(1, std::memory_order_relaxed);
        auto done = std::move(put->done);
        if (done) done(err, nullptr);
      });
}

// ---- the engine's entry points ---------------------------------------------------

void engine::list(list_request req, handler<void(std::error_code, page)> h) {
  asio::co_spawn(io_, list_co(*this, std::move(req)),
                 [h = std::move(h), ex = io_.get_executor()](
                     std::exception_ptr e, std::pair<std::error_code, page> r) mutable {
                   if (e) r.first = shard_error(e);
                   complete(std::move(h), ex, r.first, std::move(r.second));
                 });
}

void engine::get(std::string id, handler<void(std::error_code, message_ptr)> h) {
  asio::co_spawn(io_, get_co(*this, std::move(id)),
                 [h = std::move(h), ex = io_.get_executor()](
                     std::exception_ptr e, std::pair<std::error_code, message_ptr> r) mutable {
                   if (e) r.first = shard_error(e);
                   complete(std::move(h), ex, r.first, std::move(r.second));
                 });
}

void engine::remove(selection which, handler<void(std::error_code, std::size_t)> h) {
  note_change();  // list cursors made before this change are retired
  auto self = shared_from_this();
  auto op = [](std::shared_ptr<engine> e,
               selection sel) -> asio::awaitable<std::pair<std::error_code, std::size_t>> {
    if (sel.what == selection::kind::all && sel.mailbox.empty()) {
      auto r = co_await clear_all(*e);
      e->deleted(r.second);
      store_event ev;
      ev.what = store_event::kind::cleared;
      e->emit(ev);
      co_return r;
    }
    auto channel = e->channel();
    auto origin = e->instance();
    auto [ec, changed] = co_await apply_to_selection(
        *e, sel,
        [&](shard& s, const std::vector<std::string>& ids, const std::vector<pg::timestamptz>& rcvd)
            -> asio::awaitable<std::pair<std::vector<std::string>, std::vector<std::string>>> {
          auto r = co_await run_on_primary(
              s, pg::sql("SELECT deleted, busy FROM mail.delete_v1($1, $2, $3, $4)", ids, rcvd,
                         channel, origin));
          co_return two_arrays(r);
        });
    e->deleted(changed.size());
    if (!changed.empty()) {
      store_event ev;
      ev.what = store_event::kind::deleted;
      ev.ids = changed;
      e->emit(ev);
    }
    co_return std::make_pair(ec, changed.size());
  };
  asio::co_spawn(io_, op(self, std::move(which)),
                 [this, h = std::move(h), ex = io_.get_executor()](
                     std::exception_ptr e, std::pair<std::error_code, std::size_t> r) mutable {
                   if (e) r.first = shard_error(e);
                   note_change();  // also after: a cursor made meanwhile is retired
                   complete(std::move(h), ex, r.first, r.second);
                 });
}

void engine::set_read(selection which, bool read, handler<void(std::error_code, std::size_t)> h) {
  note_change();  // list cursors made before this change are retired
  auto self = shared_from_this();
  auto op = [](std::shared_ptr<engine> e, selection sel,
               bool flag) -> asio::awaitable<std::pair<std::error_code, std::size_t>> {
    auto channel = e->channel();
    auto origin = e->instance();
    auto [ec, changed] = co_await apply_to_selection(
        *e, sel,
        [&](shard& s, const std::vector<std::string>& ids, const std::vector<pg::timestamptz>& rcvd)
            -> asio::awaitable<std::pair<std::vector<std::string>, std::vector<std::string>>> {
          auto r = co_await run_on_primary(
              s, pg::sql("SELECT changed, busy FROM mail.set_read_v1($1, $2, $3, $4, $5)", ids,
                         rcvd, flag, channel, origin));
          co_return two_arrays(r);
        });
    if (!changed.empty()) {
      store_event ev;
      ev.what = store_event::kind::read_changed;
      ev.ids = changed;
      ev.read = flag;
      e->emit(ev);
    }
    co_return std::make_pair(ec, changed.size());
  };
  asio::co_spawn(io_, op(self, std::move(which), read),
                 [this, h = std::move(h), ex = io_.get_executor()](
                     std::exception_ptr e, std::pair<std::error_code, std::size_t> r) mutable {
                   if (e) r.first = shard_error(e);
                   note_change();  // also after: a cursor made meanwhile is retired
                   complete(std::move(h), ex, r.first, r.second);
                 });
}

void engine::set_tags(selection which, std::vector<std::string> tags,
                      handler<void(std::error_code, std::size_t)> h) {
  note_change();  // list cursors made before this change are retired
  auto self = shared_from_this();
  auto op = [](std::shared_ptr<engine> e, selection sel, std::vector<std::string> tags)
      -> asio::awaitable<std::pair<std::error_code, std::size_t>> {
    // Kept as given, duplicates (case-insensitive) dropped.
    std::vector<std::string> clean, seen;
    for (auto& t : tags) {
      std::string l = search::fold_case(t);
      if (t.empty() || std::find(seen.begin(), seen.end(), l) != seen.end()) continue;
      seen.push_back(std::move(l));
      clean.push_back(std::move(t));
    }
    auto channel = e->channel();
    auto origin = e->instance();
    auto [ec, changed] = co_await apply_to_selection(
        *e, sel,
        [&](shard& s, const std::vector<std::string>& ids, const std::vector<pg::timestamptz>& rcvd)
            -> asio::awaitable<std::pair<std::vector<std::string>, std::vector<std::string>>> {
          auto r = co_await run_on_primary(
              s, pg::sql("SELECT changed, busy FROM mail.set_tags_v1($1, $2, $3, $4, $5)", ids,
                         rcvd, clean, channel, origin));
          co_return two_arrays(r);
        });
    for (auto& id : changed) {
      auto [gec, m] = co_await get_co(*e, id);
      if (gec || !m) continue;
      store_event ev;
      ev.what = store_event::kind::tags_changed;
      ev.message = m;
      ev.ids = {id};
      e->emit(ev);
    }
    co_return std::make_pair(ec, changed.size());
  };
  asio::co_spawn(io_, op(self, std::move(which), std::move(tags)),
                 [this, h = std::move(h), ex = io_.get_executor()](
                     std::exception_ptr e, std::pair<std::error_code, std::size_t> r) mutable {
                   if (e) r.first = shard_error(e);
                   note_change();  // also after: a cursor made meanwhile is retired
                   complete(std::move(h), ex, r.first, r.second);
                 });
}

void engine::list_tags(handler<void(std::error_code, std::vector<std::string>)> h) {
  auto self = shared_from_this();
  auto op = [](std::shared_ptr<engine> e)
      -> asio::awaitable<std::pair<std::error_code, std::vector<std::string>>> {
    std::vector<shard*> live;
    bool partial = false;
    for (unsigned i = 0; i < e->shard_count(); ++i) {
      if (e->at(i).ready())
        live.push_back(&e->at(i));
      else
        partial = true;
    }
    std::vector<std::string> out;
    if (live.empty()) co_return std::make_pair(make_error_code(errc::unavailable), out);
    auto rs = co_await for_shards<std::vector<std::string>>(
        e->io(), live, [](shard& s) -> asio::awaitable<std::vector<std::string>> {
          auto r = co_await run(
              s, pg::sql("SELECT t.tag FROM mail.tag t WHERE EXISTS (SELECT 1 FROM mail.message m "
                         "WHERE m.tags <> '{}' AND m.tags @> ARRAY[t.tag] AND m.home)"));
          std::vector<std::string> v;
          if (auto ec = r.read_all<std::string>(v)) throw std::system_error(ec);
          co_return v;
        });
    std::map<std::string, std::string> by_lower;  // one spelling per tag, the smallest
    for (auto& r : rs) {
      if (!r) {
        partial = true;
        continue;
      }
      for (auto& t : *r) {
        std::string l = search::fold_case(t);
        auto [it, fresh] = by_lower.emplace(l, t);
        if (!fresh && t < it->second) it->second = t;
      }
    }
    for (auto& [l, t] : by_lower) out.push_back(t);
    std::sort(out.begin(), out.end());
    co_return std::make_pair(partial ? make_error_code(errc::unavailable) : std::error_code{},
                             std::move(out));
  };
  asio::co_spawn(
      io_, op(self),
      [h = std::move(h), ex = io_.get_executor()](
          std::exception_ptr e, std::pair<std::error_code, std::vector<std::string>> r) mutable {
        if (e) r.first = shard_error(e);
        complete(std::move(h), ex, r.first, std::move(r.second));
      });
}

namespace {

asio::awaitable<std::pair<std::error_code, std::size_t>> retag_all(std::shared_ptr<engine> e,
                                                                   std::string from,
                                                                   std::optional<std::string> to) {
  std::vector<shard*> live;
  bool partial = false;
  for (unsigned i = 0; i < e->shard_count(); ++i) {
    if (e->at(i).ready())
      live.push_back(&e->at(i));
    else
      partial = true;
  }
  if (live.empty()) co_return std::make_pair(make_error_code(errc::unavailable), std::size_t{0});
  auto channel = e->channel();
  auto origin = e->instance();
  std::set<std::string> changed;
  auto until = steady::now() + e->config().read_timeout;
  for (;;) {
    auto rs = co_await for_shards<std::pair<std::vector<std::string>, std::vector<std::string>>>(
        e->io(), live,
        [&](shard& s)
            -> asio::awaitable<std::pair<std::vector<std::string>, std::vector<std::string>>> {
          auto r = co_await run_on_primary(
              s, pg::sql("SELECT changed, busy FROM mail.retag_all_v1($1, $2, $3, $4)", from, to,
                         channel, origin));
          co_return two_arrays(r);
        });
    bool busy = false;
    for (auto& r : rs) {
      if (!r) {
        partial = true;
        continue;
      }
      for (auto& id : r->first) changed.insert(id);
      busy = busy || !r->second.empty();
    }
    if (!busy || steady::now() >= until) {
      partial = partial || busy;
      break;
    }
    asio::steady_timer wait(e->io(), std::chrono::milliseconds(100));
    co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  if (!changed.empty()) {
    store_event ev;
    ev.what = store_event::kind::cleared;  // many messages' tags: readers reload
    e->emit(ev);
  }
  co_return std::make_pair(partial ? make_error_code(errc::unavailable) : std::error_code{},
                           changed.size());
}

}  // namespace

void engine::rename_tag(std::string from, std::string to,
                        handler<void(std::error_code, std::size_t)> h) {
  note_change();  // list cursors made before this change are retired
  asio::co_spawn(
      io_,
      retag_all(shared_from_this(), std::move(from), std::optional<std::string>(std::move(to))),
      [this, h = std::move(h), ex = io_.get_executor()](
          std::exception_ptr e, std::pair<std::error_code, std::size_t> r) mutable {
        if (e) r.first = shard_error(e);
        note_change();  // also after: a cursor made meanwhile is retired
                   complete(std::move(h), ex, r.first, r.second);
      });
}

void engine::delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) {
  note_change();  // list cursors made before this change are retired
  asio::co_spawn(io_, retag_all(shared_from_this(), std::move(tag), std::nullopt),
                 [this, h = std::move(h), ex = io_.get_executor()](
                     std::exception_ptr e, std::pair<std::error_code, std::size_t> r) mutable {
                   if (e) r.first = shard_error(e);
                   note_change();  // also after: a cursor made meanwhile is retired
                   complete(std::move(h), ex, r.first, r.second);
                 });
}

}  // namespace inlet::store::pgstore

// ---- other instances' changes (LISTEN) ----------------------------------------------

namespace inlet::store::pgstore {

namespace {

// The home copies among `ids` on shard s (summaries only), for created / tags events.
asio::awaitable<std::vector<message_ptr>> home_rows(shard& s, std::vector<std::string> ids) {
  static const std::string sql =
      "SELECT " + summary_columns("m", false) +
      " FROM mail.message m WHERE m.id = ANY($1) AND m.received = ANY($2)"
      " AND m.home ORDER BY m.id";
  std::vector<pg::timestamptz> rcvd;
  for (auto& id : ids)
    if (auto p = parse_id(id)) rcvd.push_back(ts_of(p->received_us));
  auto r = co_await run(s, pg::sql(sql, std::move(ids), std::move(rcvd)));
  std::vector<message_ptr> out;
  if (auto ec = read_rows(r, false, out)) throw std::system_error(ec);
  co_return out;
}

}  // namespace

void engine::on_gap() {
  note_change();  // changes may have been missed
  if (!has_observers()) return;
  store_event ev;
  ev.what = store_event::kind::cleared;
  emit(ev);
}

void engine::on_notification(shard& from, std::string_view payload) {
  // "ORIGIN KIND [ID,ID,...]" (mail.notify); "- m": a bucket changed state.
  auto sp = payload.find(' ');
  if (sp == std::string_view::npos) return;
  std::string_view origin = payload.substr(0, sp), rest = payload.substr(sp + 1);
  auto sp2 = rest.find(' ');
  std::string_view kind = rest.substr(0, sp2);
  std::string_view list = sp2 == std::string_view::npos ? std::string_view{} : rest.substr(sp2 + 1);
  // Another instance's change, or a bucket move: listings may read differently now (this
  // instance's own changes were counted when they were made).
  if (kind == "m" || origin != cfg_.instance) note_change();
  if (kind == "m") {
    for (auto& s : shards_) s->refresh_soon();
    return;
  }
  if (origin == cfg_.instance || !has_observers()) return;
  std::vector<std::string> ids;
  for (std::size_t at = 0; at < list.size();) {
    auto comma = list.find(',', at);
    auto id =
        list.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    if (!id.empty()) ids.emplace_back(id);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  store_event ev;
  if (kind == "d" || kind == "r" || kind == "u") {
    ev.what = kind == "d" ? store_event::kind::deleted : store_event::kind::read_changed;
    ev.read = kind == "r";
    ev.ids = std::move(ids);
    emit(ev);
    return;
  }
  if (kind == "x") {
    ev.what = store_event::kind::cleared;
    emit(ev);
    return;
  }
  if ((kind != "c" && kind != "t") || ids.empty()) return;
  // New or retagged messages: the events carry the records, read from the shard that
  // announced them (only its home copies, so a message stored on several shards is
  // announced once).
  auto what = kind == "c" ? store_event::kind::created : store_event::kind::tags_changed;
  asio::co_spawn(
      io_, home_rows(from, std::move(ids)),
      [self = shared_from_this(), what](std::exception_ptr e, std::vector<message_ptr> rows) {
        if (e) return;  // the shard went away: observers miss this one
        for (auto& m : rows) {
          store_event ev;
          ev.what = what;
          ev.ids = {m->id.str()};
          ev.message = std::move(m);
          self->emit(ev);
        }
      });
}

}  // namespace inlet::store::pgstore
