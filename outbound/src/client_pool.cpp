// Design: a map from a destination key (every field of smtp_relay_config that changes the
// connection: host, port, TLS mode, verification, credentials, timeouts) to a short list
// of idle clients, newest last. acquire() takes the newest (the likeliest to be alive);
// give_back() puts it back unless max_idle are already waiting, closing the surplus.
// Per-message settings (recipients rules, override-from, forward-smtp-errors) are the
// caller's and never the client's, so one client serves release and auto-relay alike.
// A reaper thread closes clients idle longer than idle_timeout (a polite QUIT), so no
// connection outlives its use by much; closing happens outside the lock.
#include "inlet/outbound/client_pool.hpp"

#include <algorithm>
#include <iterator>

namespace inlet::outbound {

client_pool::client_pool(std::chrono::milliseconds idle_timeout, std::size_t max_idle)
    : idle_timeout_(idle_timeout), max_idle_(std::max<std::size_t>(max_idle, 1)) {
  reaper_ = std::thread([this] { reap(); });
}

client_pool::~client_pool() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  reaper_.join();
}

client_pool& client_pool::shared() {
  // Never destroyed: closing TLS connections from a static destructor could run after
  // OpenSSL's own exit-time cleanup. inletd closes the idle ones at stop (close_idle).
  static client_pool* pool = new client_pool;
  return *pool;
}

void client_pool::close_idle() {
  std::map<std::string, std::vector<idle_client>> all;
  {
    std::lock_guard lk(mu_);
    all.swap(idle_);
  }
  // QUITs here, outside the lock
}

std::string client_pool::destination_key(const smtp_relay_config& c) {
  std::string k;
  auto add = [&k](const std::string& s) { k += std::to_string(s.size()) + ":" + s + ";"; };
  add(c.host);
  add(std::to_string(c.port));
  add(std::string(c.tls ? "T" : "-") + (c.starttls ? "S" : "-") + (c.allow_insecure ? "I" : "-") +
      (c.allow_internal ? "N" : "-"));
  add(c.auth);
  add(c.username);
  add(c.password);
  add(std::to_string(c.timeout.count()) + "/" + std::to_string(c.setup_timeout.count()) + "/" +
      std::to_string(c.message_timeout.count()) + "/" + std::to_string(c.min_data_rate));
  // A resolver hook (tests) is not comparable: such a client is never kept.
  return c.lookup ? std::string() : k;
}

client_pool::lease client_pool::acquire(const smtp_relay_config& cfg) {
  std::string key = destination_key(cfg);
  if (!key.empty()) {
    std::lock_guard lk(mu_);
    auto it = idle_.find(key);
    if (it != idle_.end() && !it->second.empty()) {
      auto c = std::move(it->second.back().client);
      it->second.pop_back();
      if (it->second.empty()) idle_.erase(it);
      return lease(this, std::move(key), std::move(c));
    }
  }
  // Per-message settings are each send's own (mail_item::all_recipients), never the
  // client's: whoever made it, the next lease of the destination may want otherwise.
  smtp_relay_config connection_only = cfg;
  connection_only.forward_smtp_errors = false;
  return lease(this, std::move(key), std::make_unique<smtp_client>(std::move(connection_only)));
}

client_pool::lease::~lease() {
  if (c_ && pool_) pool_->give_back(std::move(key_), std::move(c_));
}

void client_pool::give_back(std::string key, std::unique_ptr<smtp_client> c) {
  if (key.empty() || !c->connected()) return;  // nothing to keep: a new client costs nothing
  {
    std::lock_guard lk(mu_);
    auto& list = idle_[key];
    if (!stopping_ && list.size() < max_idle_) {
      list.push_back({std::move(c), std::chrono::steady_clock::now()});
      cv_.notify_all();
      return;
    }
    if (list.empty()) idle_.erase(key);
  }
  // c closes here (QUIT), outside the lock
}

std::size_t client_pool::idle() const {
  std::lock_guard lk(mu_);
  std::size_t n = 0;
  for (const auto& [k, list] : idle_) n += list.size();
  return n;
}

void client_pool::reap() {
  std::unique_lock lk(mu_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    auto next = std::chrono::steady_clock::time_point::max();
    std::vector<std::unique_ptr<smtp_client>> expired;
    for (auto it = idle_.begin(); it != idle_.end();) {
      auto& list = it->second;
      for (auto c = list.begin(); c != list.end();) {
        if (now - c->since >= idle_timeout_) {
          expired.push_back(std::move(c->client));
          c = list.erase(c);
        } else {
          next = std::min(next, c->since + idle_timeout_);
          ++c;
        }
      }
      it = list.empty() ? idle_.erase(it) : std::next(it);
    }
    if (!expired.empty()) {
      lk.unlock();
      expired.clear();  // QUITs outside the lock
      lk.lock();
      continue;
    }
    if (next == std::chrono::steady_clock::time_point::max())
      cv_.wait(lk);
    else
      cv_.wait_until(lk, next);
  }
  // Stopping: the idle ones close with the map (the destructor's caller owns the thread).
  auto all = std::move(idle_);
  lk.unlock();
}

}  // namespace inlet::outbound
