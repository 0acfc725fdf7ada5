// Kept SMTP connections shared by everything that sends to one destination: message
// release, auto-relay and forwarding to the same server (host, port, TLS mode,
// credentials) take a connected smtp_client from here and give it back, so a run of
// releases is one connection, not one each. See the design note in client_pool.cpp.
//
// Thread-safety: every member from any thread; a lease from the thread holding it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "inlet/outbound/smtp_relay.hpp"

namespace inlet::outbound {

class client_pool {
 public:
  /// Idle connections are closed after `idle_timeout`; at most `max_idle` kept per
  /// destination (more in use at once are fine: they are closed when given back).
  explicit client_pool(std::chrono::milliseconds idle_timeout = std::chrono::seconds(30),
                       std::size_t max_idle = 2);
  ~client_pool();
  client_pool(const client_pool&) = delete;
  client_pool& operator=(const client_pool&) = delete;

  /// A client of the pool, given back when the lease ends.
  class lease {
   public:
    lease(lease&& o) noexcept : pool_(o.pool_), key_(std::move(o.key_)), c_(std::move(o.c_)) {}
    lease& operator=(lease&&) = delete;
    ~lease();
    smtp_client& operator*() const noexcept { return *c_; }
    smtp_client* operator->() const noexcept { return c_.get(); }

   private:
    friend class client_pool;
    lease(client_pool* p, std::string key, std::unique_ptr<smtp_client> c)
        : pool_(p), key_(std::move(key)), c_(std::move(c)) {}
    client_pool* pool_;
    std::string key_;
    std::unique_ptr<smtp_client> c_;
  };

  /// An idle client for `cfg`'s destination (its connection may have been closed by the
  /// server meanwhile: the client notices before use and reconnects), or a new one. Its
  /// config() is the connection's only: pass forward-smtp-errors per send (all_recipients).
  lease acquire(const smtp_relay_config& cfg);

  /// Closes every idle connection now (a QUIT each); those in use are kept when given back.
  void close_idle();

  /// Idle clients held now (all destinations).
  std::size_t idle() const;

  /// The process's pool (message release, auto-relay and forwarding); never destroyed.
  static client_pool& shared();

  /// What makes two configurations the same destination (connection-wise).
  static std::string destination_key(const smtp_relay_config& cfg);

 private:
  struct idle_client {
    std::unique_ptr<smtp_client> client;
    std::chrono::steady_clock::time_point since;
  };
  void give_back(std::string key, std::unique_ptr<smtp_client> c);
  void reap();

  const std::chrono::milliseconds idle_timeout_;
  const std::size_t max_idle_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::vector<idle_client>> idle_;
  std::thread reaper_;
};

}  // namespace inlet::outbound
