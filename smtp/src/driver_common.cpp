// Shared bookkeeping of the drivers in their own files. See driver_common.hpp.
#include "driver_common.hpp"

#include <cstdio>
#include <optional>

namespace inlet::smtp::detail {

delivery_result sink_answer(driver_counters& c) {
  char id[24];
  std::snprintf(id, sizeof id, "%016llX",
                static_cast<unsigned long long>(c.queue_seq.fetch_add(1) + 1));
  return delivery_result{delivery_status::accepted(id), {}};
}

delivery_result hook_failed() {
  return delivery_result{delivery_status::rejected(451, "4.3.0", "Error: local delivery failure"),
                         {}};
}

server_stats stats_of(const driver_counters& c, std::size_t active) {
  server_stats s;
  s.connections_accepted = c.accepted.load();
  s.connections_refused = c.refused.load();
  s.messages_delivered = c.delivered.load();
  s.messages_rejected = c.rejected.load();
  s.active_connections = active;
  return s;
}

void count(driver_counters& c, const delivery_result& r) {
  (r.status.ok() ? c.delivered : c.rejected).fetch_add(1, std::memory_order_relaxed);
}

delivery_result deliver_sync(const deliver_fn& hook, driver_counters& c, received_message&& msg) {
  // Shared state: the callback may run on another thread after we returned
  // from a spurious wake-up path; keep it alive with the callback.
  struct waiter {
    std::mutex m;
    std::condition_variable cv;
    std::optional<delivery_result> res;
  };
  auto w = std::make_shared<waiter>();
  auto answer = [w](delivery_result r) {
    std::lock_guard lk(w->m);
    if (w->res) return;  // the first call counts
    w->res = std::move(r);
    w->cv.notify_one();
  };
  if (!hook)
    answer(sink_answer(c));
  else
    try {
      hook(std::move(msg), answer);
    } catch (...) {
      answer(hook_failed());
    }
  std::unique_lock lk(w->m);
  w->cv.wait(lk, [&] { return w->res.has_value(); });
  count(c, *w->res);
  return std::move(*w->res);
}

bool admission::admit(const std::string& ip) {
  std::lock_guard lk(mu_);
  if (active_ >= max_) return false;
  auto& n = per_ip_[ip];
  if (n >= max_ip_) {
    if (n == 0) per_ip_.erase(ip);
    return false;
  }
  ++n;
  ++active_;
  return true;
}

void admission::release(const std::string& ip) {
  std::lock_guard lk(mu_);
  auto it = per_ip_.find(ip);
  if (it != per_ip_.end() && --it->second == 0) per_ip_.erase(it);
  if (--active_ == 0) idle_.notify_all();
}

std::size_t admission::active() const {
  std::lock_guard lk(mu_);
  return active_;
}

bool admission::wait_idle_until(clock::time_point deadline) {
  std::unique_lock lk(mu_);
  return idle_.wait_until(lk, deadline, [&] { return active_ == 0; });
}

void admission::wait_idle() {
  std::unique_lock lk(mu_);
  idle_.wait(lk, [&] { return active_ == 0; });
}

std::string refusal_reply(const server_config& cfg) {
  return "421 4.7.0 " + cfg.session.hostname + " Error: too many connections\r\n";
}

std::string shutting_down_reply(const server_config& cfg) {
  return "421 4.3.2 " + cfg.session.hostname + " Service shutting down\r\n";
}

}  // namespace inlet::smtp::detail
