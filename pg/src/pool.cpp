// The pool: a mutex-protected idle stack, a FIFO of waiters with per-waiter timers, and
// lazily created connections, each on its own strand. See DESIGN.md.
#include "inlet/pg/pool.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <random>

namespace inlet::pg {
namespace detail {

using clock = std::chrono::steady_clock;

struct pool_entry {
  explicit pool_entry(asio::any_io_executor ex, const connection_options& o)
      : conn(std::move(ex), o) {}
  connection conn;
  clock::time_point created = clock::now(), last_used = clock::now();
  connection_stats reported{};
};

class pool_impl : public std::enable_shared_from_this<pool_impl> {
 public:
  pool_impl(asio::any_io_executor ex, pool_options o)
      : ex_(std::move(ex)),
        opts_(std::move(o)),
        strand_(asio::make_strand(ex_)),
        maint_timer_(strand_),
        retry_timer_(strand_) {
    if (opts_.min_size > opts_.size) opts_.min_size = opts_.size;
  }
  /// Called once the pool is owned by a shared_ptr (timers hold it).
  void start() {
    if (opts_.min_size > 0) asio::post(strand_, [self = shared_from_this()] { self->maintain(); });
  }

  struct waiter_node {
    std::uint64_t id;
    std::unique_ptr<waiter_base> w;
    std::unique_ptr<asio::steady_timer> timer;
  };
  using entry_ptr = std::unique_ptr<pool_entry>;

  asio::any_io_executor ex_;
  pool_options opts_;
  mutable std::mutex m_;
  std::deque<entry_ptr> idle_;  // back: most recently used; front: idle the longest
  std::deque<waiter_node> waiters_;
  std::size_t total_ = 0;
  bool closed_ = false;
  std::uint64_t next_id_ = 0;
  pool_stats stats_;
  // Timers (on strand_): min_size upkeep, and connects deferred by the backoff.
  asio::any_io_executor strand_;
  asio::steady_timer maint_timer_, retry_timer_;
  unsigned consecutive_failures_ = 0;  // under m_
  clock::time_point retry_at_{};       // under m_: no connect before this
  std::size_t deferred_ = 0;           // under m_: reserved slots waiting for retry_at_
  bool retry_armed_ = false;           // under m_

  // A connection with nothing in flight has no handler pending on its strand (its
  // reader stops when the FIFO empties): destroy it here. Otherwise destroy it on its
  // strand. (Posting every drop raced, under TSan, on the strand executor's shared
  // state between the posting thread's executor copy and the strand thread.)
  /// Destroys a connection on its own strand, also an idle one: the strand may still be
  /// finishing the handler that completed the connection's last request (it re-checks
  /// the connection's state after handing the result on), so destroying it on the
  /// calling thread raced with that tail (TSan, LoadFromFourThreadsAndIoContexts: pool
  /// close() on the main thread while the pool's threads ran).
  static void drop(entry_ptr e) {
    if (!e) return;
    auto ex = e->conn.get_executor();
    asio::post(ex, [e = std::move(e)]() mutable { e.reset(); });
  }

  /// Takes every idle connection unused for idle_timeout or longer off the bottom of
  /// the idle stack (the oldest are there: entries are pushed in time order). Under m_.
  void reap_idle(clock::time_point now, std::vector<entry_ptr>& dead) {
    while (!idle_.empty() && total_ > opts_.min_size &&
           now - idle_.front()->last_used >= opts_.idle_timeout) {
      dead.push_back(std::move(idle_.front()));
      idle_.pop_front();
      --total_;
      ++stats_.dropped;
    }
  }

  bool reusable(const pool_entry& e, clock::time_point now) const {
    return !closed_ && now - e.created < opts_.max_lifetime;
  }

  void account(pool_entry& e, const connection_stats& s) {  // adds the counters since last report
    auto& q = stats_.queries;
    q.queries += s.queries - e.reported.queries;
    q.errors += s.errors - e.reported.errors;
    q.prepares += s.prepares - e.reported.prepares;
    q.bytes_sent += s.bytes_sent - e.reported.bytes_sent;
    q.bytes_received += s.bytes_received - e.reported.bytes_received;
    q.cancels += s.cancels - e.reported.cancels;
    e.reported = s;
  }

  void acquire(std::unique_ptr<waiter_base> w) {
    std::vector<entry_ptr> dead;
    std::unique_lock lk(m_);
    if (closed_) {
      lk.unlock();
      w->complete(errc::pool_closed, {});
      return;
    }
    auto now = clock::now();
    reap_idle(now, dead);
    while (!idle_.empty()) {
      entry_ptr e = std::move(idle_.back());
      idle_.pop_back();
      // Idle connections have no handler left on their strand (release ran there last):
      // the probe may read them here, after the mutex that release() took.
      bool fresh = now - e->last_used < opts_.idle_timeout;
      bool alive = opts_.check == health_check::none || e->conn.probe_alive();
      if (fresh && reusable(*e, now) && alive) {
        if (opts_.check == health_check::query && now - e->last_used >= opts_.health_check_idle) {
          ++stats_.health_checks;  // still counted in total_ while it is checked
          lk.unlock();
          for (auto& d : dead) drop(std::move(d));
          return check_then_hand_out(std::move(e), std::move(w));
        }
        ++stats_.acquired;
        lk.unlock();
        for (auto& d : dead) drop(std::move(d));
        w->complete({}, pooled_connection(shared_from_this(), std::move(e)));
        return;
      }
      --total_;
      ++stats_.dropped;
      dead.push_back(std::move(e));
    }
    if (waiters_.size() >= opts_.queue_limit) {
      ++stats_.queue_full;
      lk.unlock();
      for (auto& d : dead) drop(std::move(d));
      w->complete(errc::pool_queue_full, {});
      return;
    }
    w->since = now;
    enqueue(std::move(w));
    bool grow = total_ < opts_.size;
    if (grow) ++total_;
    lk.unlock();
    for (auto& d : dead) drop(std::move(d));
    if (grow) launch(1);
  }

  /// Starts n connects whose slots are already counted in total_, or defers them to the
  /// end of the current backoff (one timer for all of them).
  void launch(std::size_t n) {
    bool arm = false;
    clock::time_point at;
    {
      std::lock_guard lk(m_);
      if (closed_) {
        total_ -= n;
        return;
      }
      if (clock::now() < retry_at_) {
        deferred_ += n;
        n = 0;
        arm = !retry_armed_;
        retry_armed_ = true;
        at = retry_at_;
      }
    }
    for (std::size_t i = 0; i < n; ++i) start_connect();
    if (!arm) return;
    asio::post(strand_, [self = shared_from_this(), at] {
      self->retry_timer_.expires_at(at);
      self->retry_timer_.async_wait([self](boost::system::error_code) {
        std::size_t k;
        {
          std::lock_guard lk(self->m_);
          k = std::exchange(self->deferred_, 0);
          self->retry_armed_ = false;
          if (self->closed_) {
            self->total_ -= k;
            k = 0;
          }
        }
        if (k) self->launch(k);
      });
    });
  }

  std::chrono::milliseconds backoff(unsigned failures) const {  // full jitter, at least half
    thread_local std::minstd_rand rng{std::random_device{}()};
    const unsigned shift = std::min(failures > 0 ? failures - 1 : 0u, 16u);
    const auto cap = std::min<std::int64_t>(opts_.connect_backoff_max.count(),
                                            opts_.connect_backoff_initial.count() << shift);
    if (cap <= 0) return std::chrono::milliseconds(0);
    std::uniform_int_distribution<std::int64_t> d(cap / 2, cap);
    return std::chrono::milliseconds(d(rng));
  }

  /// min_size upkeep (on strand_, every maintenance_interval): old idle connections beyond
  /// min_size go, missing ones are made.
  void maintain() {
    std::vector<entry_ptr> dead;
    std::size_t need = 0;
    {
      std::lock_guard lk(m_);
      if (closed_) return;
      reap_idle(clock::now(), dead);
      // Idle connections with something unsolicited pending (a terminated backend's
      // error, or the server closed them) are replaced.
      for (auto it = idle_.begin(); it != idle_.end();) {
        if ((*it)->conn.probe_quiet()) {
          ++it;
          continue;
        }
        dead.push_back(std::move(*it));
        it = idle_.erase(it);
        --total_;
        ++stats_.dropped;
      }
      if (total_ < opts_.min_size) {
        need = opts_.min_size - total_;
        total_ += need;
      }
    }
    for (auto& d : dead) drop(std::move(d));
    if (need) launch(need);
    maint_timer_.expires_after(opts_.maintenance_interval);
    maint_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->maintain();
    });
  }

  /// health_check::query: `SELECT 1` on the connection's strand; on success the waiter
  /// gets it, else it is dropped and the waiter acquires again (another idle connection
  /// or a new one), so the caller never sees the dead connection's error.
  void check_then_hand_out(entry_ptr e, std::unique_ptr<waiter_base> w) {
    auto* conn = &e->conn;
    conn->async_query(
        pg::query<>("SELECT 1"), [self = shared_from_this(), e = std::move(e), w = std::move(w)](
                                     std::error_code ec, result) mutable {
          if (!ec && e->conn.is_idle_clean()) {
            {
              std::lock_guard lk(self->m_);
              ++self->stats_.acquired;
            }
            w->complete({}, pooled_connection(self, std::move(e)));
            return;
          }
          // Off the connection's own completion path before destroying it.
          auto ex = self->ex_;
          asio::post(ex, [self = std::move(self), e = std::move(e), w = std::move(w)]() mutable {
            {
              std::lock_guard lk(self->m_);
              --self->total_;
              ++self->stats_.dropped;
              ++self->stats_.health_check_failures;
            }
            drop(std::move(e));
            self->acquire(std::move(w));
          });
        });
  }

  void enqueue(std::unique_ptr<waiter_base> w) {  // under m_
    auto id = ++next_id_;
    auto t = std::make_unique<asio::steady_timer>(w->timer_executor());
    t->expires_after(opts_.acquire_timeout);
    t->async_wait([self = shared_from_this(), id](boost::system::error_code ec) {
      if (!ec) self->expire(id);
    });
    waiters_.push_back(waiter_node{id, std::move(w), std::move(t)});
  }

  void expire(std::uint64_t id) {
    std::unique_lock lk(m_);
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->id != id) continue;
      auto w = std::move(it->w);
      waiters_.erase(it);
      ++stats_.timeouts;
      lk.unlock();
      w->complete(errc::pool_timeout, {});
      return;
    }
  }

  void start_connect() {
    auto e = std::make_unique<pool_entry>(asio::make_strand(ex_), opts_.connection);
    auto* conn = &e->conn;
    conn->async_connect(opts_.dsn,
                        [self = shared_from_this(), e = std::move(e)](std::error_code ec) mutable {
                          self->connected(std::move(e), ec);
                        });
  }

  void connected(entry_ptr e, std::error_code ec) {
    if (!ec) {
      {
        std::lock_guard lk(m_);
        ++stats_.connects;
        consecutive_failures_ = 0;
        retry_at_ = {};
      }
      return release(std::move(e));
    }
    std::unique_lock lk(m_);
    --total_;
    ++stats_.connect_failures;
    retry_at_ = clock::now() + backoff(++consecutive_failures_);
    std::unique_ptr<waiter_base> w;
    if (!waiters_.empty()) {  // fail one waiter per failed attempt: nobody hangs on a dead server
      w = std::move(waiters_.front().w);
      waiters_.pop_front();
    }
    bool retry = !closed_ && !waiters_.empty() && total_ < opts_.size;
    if (retry) ++total_;
    auto diag = std::make_unique<diagnostics>(e->conn.last_diagnostics());
    lk.unlock();
    drop(std::move(e));
    if (w) w->complete(ec, {}, std::move(diag));
    if (retry) launch(1);  // after the backoff
  }

  /// A connection handed back from any thread: its state is read on its own strand,
  /// after whatever handler of its last request is still running there.
  static void release_anywhere(std::shared_ptr<pool_impl> self, entry_ptr e) {
    auto ex = e->conn.get_executor();
    if (running_in(ex)) return self->release(std::move(e));
    asio::post(
        ex, [self = std::move(self), e = std::move(e)]() mutable { self->release(std::move(e)); });
  }

  /// On the connection's strand.
  void release(entry_ptr e) {
    auto now = clock::now();
    const bool clean = e->conn.is_idle_clean();
    const auto counters = e->conn.stats();
    std::vector<entry_ptr> dead;
    std::unique_lock lk(m_);
    account(*e, counters);
    reap_idle(now, dead);
    if (!dead.empty()) {
      lk.unlock();
      for (auto& d : dead) drop(std::move(d));
      lk.lock();
    }
    if (!clean || !reusable(*e, now)) {
      --total_;
      ++stats_.dropped;
      bool grow = !closed_ && !waiters_.empty() && total_ < opts_.size;
      if (grow) ++total_;
      lk.unlock();
      drop(std::move(e));
      if (grow) launch(1);
      return;
    }
    if (!waiters_.empty()) {
      auto w = std::move(waiters_.front().w);
      waiters_.pop_front();  // destroys the timer: its wait completes as aborted
      ++stats_.acquired;
      stats_.wait_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - w->since).count());
      lk.unlock();
      w->complete({}, pooled_connection(shared_from_this(), std::move(e)));
      return;
    }
    e->last_used = now;
    idle_.push_back(std::move(e));
  }

  void close() {
    asio::post(strand_, [self = shared_from_this()] {
      self->maint_timer_.cancel();
      self->retry_timer_.cancel();
    });
    std::unique_lock lk(m_);
    closed_ = true;
    auto waiters = std::move(waiters_);
    auto idle = std::move(idle_);
    total_ -= idle.size();
    lk.unlock();
    for (auto& w : waiters) w.w->complete(errc::pool_closed, {});
    for (auto& e : idle) drop(std::move(e));
  }

  pool_stats stats() const {
    std::lock_guard lk(m_);
    auto s = stats_;
    s.total = total_;
    s.idle = idle_.size();
    s.waiting = waiters_.size();
    return s;
  }
};

void pool_acquire(const std::shared_ptr<pool_impl>& p, std::unique_ptr<waiter_base> w) {
  p->acquire(std::move(w));
}
void pool_release(std::shared_ptr<pool_impl> p, std::unique_ptr<pool_entry> e) {
  pool_impl::release_anywhere(std::move(p), std::move(e));
}
asio::any_io_executor pool_executor(const pool_impl& p) noexcept {
  return p.ex_;
}

}  // namespace detail

pooled_connection::pooled_connection(std::shared_ptr<detail::pool_impl> p,
                                     std::unique_ptr<detail::pool_entry> e) noexcept
    : pool_(std::move(p)), entry_(std::move(e)) {}
pooled_connection::pooled_connection() noexcept = default;
pooled_connection::pooled_connection(pooled_connection&&) noexcept = default;
pooled_connection& pooled_connection::operator=(pooled_connection&& o) noexcept {
  if (this != &o) {
    reset();
    pool_ = std::move(o.pool_);
    entry_ = std::move(o.entry_);
  }
  return *this;
}
pooled_connection::~pooled_connection() {
  reset();
}
void pooled_connection::reset() {
  if (entry_ && pool_) detail::pool_release(std::move(pool_), std::move(entry_));
  entry_.reset();
  pool_.reset();
}
connection& pooled_connection::operator*() const noexcept {
  return entry_->conn;
}

pool::pool(asio::any_io_executor ex, pool_options opts)
    : impl_(std::make_shared<detail::pool_impl>(std::move(ex), std::move(opts))) {
  impl_->start();
}
pool::~pool() {
  impl_->close();
}
pool_stats pool::stats() const {
  return impl_->stats();
}
void pool::close() {
  impl_->close();
}

}  // namespace inlet::pg
