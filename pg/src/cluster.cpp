// The cluster: per-host pools and monitors, roles under a mutex, acquirers that wait for
// a role on the cluster's strand. See DESIGN.md, "Clusters".
#include "inlet/pg/cluster.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <mutex>

#include "conninfo.hpp"

namespace inlet::pg {
namespace detail {

namespace {
std::unique_ptr<diagnostics> client_diag(std::string msg) {
  auto d = std::make_unique<diagnostics>();
  d->client_message = std::move(msg);
  return d;
}
const char* role_name(target t) {
  switch (t) {
    case target::primary:
      return "primary";
    case target::replica:
      return "replica";
    case target::prefer_replica:
      return "replica or primary";
    case target::any:
      return "any";
  }
  return "?";
}
}  // namespace

class cluster_impl : public std::enable_shared_from_this<cluster_impl> {
 public:
  using acquire_op = std::unique_ptr<erased_handler<std::error_code, pooled_connection>>;

  struct host {
    std::string label, dsn;
    std::unique_ptr<pg::pool> pool;
    std::unique_ptr<connection> monitor;     // on strand_
    bool checking = false;                   // on strand_
    host_role role = host_role::unknown;     // under m_
    std::uint64_t checks = 0, failures = 0;  // under m_
  };
  struct waiter {
    std::uint64_t id;
    target t;
    acquire_op op;
    std::unique_ptr<asio::steady_timer> timer;
  };

  cluster_impl(asio::any_io_executor ex, cluster_options o)
      : ex_(ex), strand_(asio::make_strand(ex)), opts_(std::move(o)), timer_(strand_) {
    std::vector<std::pair<std::string, std::string>> hs;  // label, single-host dsn
    if (!opts_.hosts.empty()) {
      for (const auto& d : opts_.hosts) {
        conninfo ci;
        std::string err;
        if (!conninfo::parse(d, ci, err)) throw error(errc::connection_error, *client_diag(err));
        hs.emplace_back(ci.hosts.at(0).label(), ci.single_host(0, "any"));
      }
    } else {
      conninfo ci;
      std::string err;
      if (!conninfo::parse(opts_.dsn, ci, err))
        throw error(errc::connection_error, *client_diag(err));
      for (std::size_t i = 0; i < ci.hosts.size(); ++i)
        hs.emplace_back(ci.hosts[i].label(), ci.single_host(i, "any"));
    }
    for (auto& [label, dsn] : hs) {
      auto h = std::make_unique<host>();
      h->label = label;
      h->dsn = dsn;
      auto po = opts_.pool;
      po.dsn = dsn;
      h->pool = std::make_unique<pg::pool>(ex_, po);
      hosts_.push_back(std::move(h));
    }
    monitor_opts_.connect_timeout = opts_.pool.connection.connect_timeout;
    // A check must not hang on a host that stopped answering.
    monitor_opts_.query_timeout =
        std::max<std::chrono::milliseconds>(opts_.check_interval, std::chrono::seconds(2));
    monitor_opts_.statement_cache_size = 0;
  }

  asio::any_io_executor ex_, strand_;
  cluster_options opts_;
  connection_options monitor_opts_;
  std::vector<std::unique_ptr<host>> hosts_;  // fixed after construction
  asio::steady_timer timer_;
  std::deque<waiter> waiters_;  // on strand_
  std::uint64_t next_waiter_ = 0;
  bool closed_ = false;  // on strand_
  mutable std::mutex m_;
  std::size_t rr_ = 0;   // under m_: round robin
  cluster_stats stats_;  // under m_

  template <class F>
  void run(F f) {
    asio::post(strand_, [self = shared_from_this(), f = std::move(f)]() mutable { f(*self); });
  }
  void start() {
    run([](cluster_impl& c) { c.tick(); });
  }

  // ---- role checks (strand) ---------------------------------------------------------
  void tick() {
    if (closed_) return;
    check_all();
    timer_.expires_after(opts_.check_interval);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->tick();
    });
  }
  void check_all() {
    for (std::size_t i = 0; i < hosts_.size(); ++i) check(i);
  }
  void check(std::size_t i) {
    auto& h = *hosts_[i];
    if (h.checking || closed_) return;
    h.checking = true;
    if (!h.monitor || !h.monitor->is_open()) {
      h.monitor = std::make_unique<connection>(strand_, monitor_opts_);
      h.monitor->async_connect(h.dsn, [self = shared_from_this(), i](std::error_code ec) {
        if (ec) return self->checked(i, ec, false);
        self->query_role(i);
      });
      return;
    }
    query_role(i);
  }
  void query_role(std::size_t i) {
    auto& h = *hosts_[i];
    h.monitor->async_query(pg::query<>("SELECT pg_is_in_recovery()"),
                           [self = shared_from_this(), i](std::error_code ec, result r) {
                             bool recovery = false;
                             if (!ec && r.rows() == 1)
                               ec = r.at(0, 0).as(recovery);
                             else if (!ec)
                               ec = errc::protocol_error;
                             self->checked(i, ec, recovery);
                           });
  }
  void checked(std::size_t i, std::error_code ec, bool recovery) {
    auto& h = *hosts_[i];
    h.checking = false;
    if (closed_) return;
    const host_role now = ec ? host_role::down : recovery ? host_role::replica : host_role::primary;
    if (ec && h.monitor) h.monitor->close();
    bool changed;
    {
      std::lock_guard lk(m_);
      ++h.checks;
      if (ec) ++h.failures;
      changed = h.role != now;
      if (changed && h.role != host_role::unknown) ++stats_.role_changes;
      h.role = now;
    }
    if (changed) serve_waiters();
  }

  // ---- routing ----------------------------------------------------------------------
  /// A host for t, or -1. Under m_.
  int pick(target t) {
    const std::size_t n = hosts_.size();
    auto find = [&](host_role want, bool rotate) -> int {
      for (std::size_t k = 0; k < n; ++k) {
        std::size_t i = rotate ? (rr_ + k) % n : k;
        if (hosts_[i]->role == want ||
            (want == host_role::unknown &&
             (hosts_[i]->role == host_role::primary || hosts_[i]->role == host_role::replica))) {
          if (rotate) rr_ = i + 1;
          return static_cast<int>(i);
        }
      }
      return -1;
    };
    switch (t) {
      case target::primary:
        return find(host_role::primary, false);
      case target::replica:
        return find(host_role::replica, true);
      case target::prefer_replica: {
        int i = find(host_role::replica, true);
        return i >= 0 ? i : find(host_role::primary, false);
      }
      case target::any:
        return find(host_role::unknown, true);  // unknown: "primary or replica"
    }
    return -1;
  }
  void acquire(target t, acquire_op op) {
    if (closed_) return op->complete(client_diag("cluster closed"), errc::pool_closed, {});
    int i;
    {
      std::lock_guard lk(m_);
      i = pick(t);
      if (i < 0) ++stats_.waits;
    }
    if (i >= 0) return hand_to_pool(static_cast<std::size_t>(i), std::move(op));
    // None now: wait for the checks (started at once) up to acquire_timeout.
    const auto id = ++next_waiter_;
    auto timer = std::make_unique<asio::steady_timer>(strand_, opts_.pool.acquire_timeout);
    timer->async_wait([self = shared_from_this(), id](boost::system::error_code ec) {
      if (!ec) self->expire(id);
    });
    waiters_.push_back(waiter{id, t, std::move(op), std::move(timer)});
    check_all();
  }
  struct pool_handler {
    acquire_op op;
    std::unique_ptr<diagnostics> diag;
    void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { diag = std::move(d); }
    void operator()(std::error_code ec, pooled_connection c) {
      op->complete(std::move(diag), ec, std::move(c));
    }
  };
  void hand_to_pool(std::size_t i, acquire_op op) {
    hosts_[i]->pool->async_acquire(pool_handler{std::move(op), nullptr});
  }
  void serve_waiters() {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      int i;
      {
        std::lock_guard lk(m_);
        i = pick(it->t);
      }
      if (i < 0) {
        ++it;
        continue;
      }
      auto op = std::move(it->op);
      it->timer->cancel();
      it = waiters_.erase(it);
      hand_to_pool(static_cast<std::size_t>(i), std::move(op));
    }
  }
  void expire(std::uint64_t id) {
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->id != id) continue;
      auto op = std::move(it->op);
      target t = it->t;
      waiters_.erase(it);
      {
        std::lock_guard lk(m_);
        ++stats_.no_host;
      }
      op->complete(client_diag(std::string("no ") + role_name(t) + " host was reachable in time"),
                   errc::no_host, {});
      return;
    }
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    for (auto& w : waiters_) {
      w.timer->cancel();
      w.op->complete(client_diag("cluster closed"), errc::pool_closed, {});
    }
    waiters_.clear();
    for (auto& h : hosts_) {
      if (h->monitor) h->monitor->close();
      h->pool->close();
    }
  }
};

void cluster_acquire(const cluster_ptr& c, target t,
                     std::unique_ptr<erased_handler<std::error_code, pooled_connection>> h) {
  c->run([t, h = std::move(h)](cluster_impl& self) mutable { self.acquire(t, std::move(h)); });
}
const asio::any_io_executor& cluster_executor(const cluster_impl& c) noexcept {
  return c.ex_;
}

}  // namespace detail

cluster::cluster(asio::any_io_executor ex, cluster_options opts)
    : impl_(std::make_shared<detail::cluster_impl>(std::move(ex), std::move(opts))) {
  impl_->start();
}
cluster::~cluster() {
  close();
}
void cluster::close() {
  if (impl_) impl_->run([](detail::cluster_impl& c) { c.close(); });
}
void cluster::check_now() {
  impl_->run([](detail::cluster_impl& c) { c.check_all(); });
}
std::size_t cluster::size() const noexcept {
  return impl_->hosts_.size();
}
std::vector<host_status> cluster::status() const {
  std::vector<host_status> out;
  std::lock_guard lk(impl_->m_);
  for (const auto& h : impl_->hosts_) {
    out.push_back(host_status{h->label, h->role, h->checks, h->failures, h->pool->stats()});
  }
  return out;
}
cluster_stats cluster::stats() const {
  std::lock_guard lk(impl_->m_);
  return impl_->stats_;
}

}  // namespace inlet::pg
