// POP3 plugged into the SMTP server's I/O drivers (smtp/src/driver_common.hpp,
// "A protocol plugged into the drivers"): the connection core of
// connection.hpp, and the store as the call-out. Every store call goes
// through the store's asynchronous interface, so the memory, file and
// PostgreSQL stores are served alike and a store that answers later holds no
// I/O thread: the answer resumes the connection on its strand (Asio models)
// or wakes its thread (thread model).
//
// Internal to inlet::pop3.
#pragma once

#include <atomic>
#include <inlet/pop3/server.hpp>
#include <inlet/store/store.hpp>
#include <memory>
#include <string>
#include <utility>

#include "connection.hpp"
#include "driver_common.hpp"

namespace inlet::pop3::detail {

/// The counters only POP3 has (connections are counted by the driver).
struct counters {
  std::atomic<std::uint64_t> sign_ins{0}, retrieved{0}, deleted{0};
};

/// The driver part of a POP3 server_config: one listener, implicit TLS when a
/// certificate is given in that mode.
smtp::detail::driver_config driver_config_of(const server_config& cfg);

/// The connection policy of a server_config (TLS comes with use_tls()).
conn_policy policy_of(const server_config& cfg);

class plug {
 public:
  using connection = detail::connection;
  using answer = store_answer;

  plug(const server_config& cfg, store::store& st, counters& cnt)
      : cfg_(cfg),
        store_(st),
        cnt_(cnt),
        driver_(driver_config_of(cfg_)),
        policy_(policy_of(cfg_)) {}
  plug(const plug&) = delete;
  plug& operator=(const plug&) = delete;

  connection open(listener_kind k) const { return connection(policy_, k); }
  const smtp::detail::driver_config& driver() const noexcept { return driver_; }
  void bind(const std::atomic<bool>* stopping, const std::atomic<bool>* pressure) noexcept {
    policy_.stopping = stopping;
    policy_.pressure = pressure;
  }
  void use_tls(const smtp::detail::tls_context* ctx) {
    policy_.tls = ctx;
    policy_.implicit_tls = ctx != nullptr && cfg_.tls == tls_mode::implicit;
    session_config sc = cfg_.session;
    sc.stls = ctx != nullptr && cfg_.tls == tls_mode::stls;
    policy_.session = std::make_shared<const session_config>(std::move(sc));
  }

  /// The store call the connection's session asked for; `cb(store_answer)`
  /// runs once, inline or later on a store thread.
  template <class Cb>
  void call_out(connection& c, smtp::detail::driver_counters&, Cb cb) {
    switch (c.request()) {
      case step_kind::list:
        store_.async_list(store::list_request(0, c.protocol().config().max_messages),
                          [cb](std::error_code ec, store::page page) mutable {
                            store_answer a;
                            a.ec = ec;
                            a.entries.reserve(page.messages.size());
                            for (const auto& m : page.messages)
                              a.entries.push_back({m->id.str(), m->size});
                            cb(std::move(a));
                          });
        return;
      case step_kind::fetch:
        store_.async_get(std::string(c.protocol().fetch_id()),
                         [cb](std::error_code ec, store::message_ptr m) mutable {
                           store_answer a;
                           a.ec = ec;
                           a.message = std::move(m);
                           cb(std::move(a));
                         });
        return;
      case step_kind::remove:
        store_.async_remove(store::selection::of_ids(c.protocol().deletions()),
                            [cb](std::error_code ec, std::size_t n) mutable {
                              store_answer a;
                              a.ec = ec;
                              a.removed = n;
                              cb(std::move(a));
                            });
        return;
      default:
        break;
    }
    store_answer none;
    none.ec = std::make_error_code(std::errc::invalid_argument);
    cb(std::move(none));
  }

  /// The store's answer, on the connection's strand or thread: counted, then
  /// the connection goes on.
  smtp::detail::action answered(connection& c, smtp::detail::driver_counters&, answer&& a,
                                clock::time_point now) {
    if (!a.ec) {
      switch (c.request()) {
        case step_kind::list:
          cnt_.sign_ins.fetch_add(1, std::memory_order_relaxed);
          break;
        case step_kind::fetch:
          if (a.message) cnt_.retrieved.fetch_add(1, std::memory_order_relaxed);
          break;
        case step_kind::remove:
          cnt_.deleted.fetch_add(a.removed, std::memory_order_relaxed);
          break;
        default:
          break;
      }
    }
    return c.on_answered(std::move(a), now);
  }

  /// A refused client reads why, where it can (an implicit-TLS client cannot:
  /// closed without a word).
  std::string refusal(bool stopping, net::admit_result r) const {
    if (policy_.implicit_tls) return {};
    if (stopping) return "-ERR [SYS/TEMP] server shutting down\r\n";
    switch (r) {
      case net::admit_result::over_ip:
        return "-ERR [SYS/TEMP] too many connections from your address\r\n";
      case net::admit_result::over_subnet:
        return "-ERR [SYS/TEMP] too many connections from your network\r\n";
      default:
        return "-ERR [SYS/TEMP] too many connections\r\n";
    }
  }

 private:
  const server_config cfg_;
  store::store& store_;
  counters& cnt_;
  smtp::detail::driver_config driver_;
  conn_policy policy_;
};

}  // namespace inlet::pop3::detail
