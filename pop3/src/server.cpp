// pop3::server: the POP3 protocol (plug.hpp: the session's connection core and
// the store as its call-out) run by the SMTP server's I/O models: the same
// accept loop, admission, reaper, stop and TLS as SMTP, on the model chosen
// in server_config (every one but `process`). See docs/pop3.md.
#include <inlet/pop3/server.hpp>
#include <inlet/smtp/error.hpp>

#include <algorithm>
#include <cstdio>

#include "driver_coro.hpp"
#include "driver_stackful.hpp"
#include "driver_thread.hpp"
#include "plug.hpp"

namespace inlet::pop3 {

namespace detail {

smtp::detail::driver_config driver_config_of(const server_config& cfg) {
  smtp::detail::driver_config d;
  smtp::listen_endpoint l;
  l.address = cfg.address;
  l.port = cfg.port;
  l.implicit_tls = !cfg.tls_cert.empty() && cfg.tls == tls_mode::implicit;
  d.listen.push_back(std::move(l));
  d.model = cfg.model;
  d.threads = cfg.threads;
  d.max_connections = cfg.admission.max_total;
  d.shortest_timeout = std::min<clock::duration>({cfg.idle_timeout, cfg.handshake_timeout,
                                                  cfg.write_timeout, cfg.pressure_timeout,
                                                  cfg.shutdown_grace});
  d.tls_cert = cfg.tls_cert;
  d.tls_key = cfg.tls_key;
  d.limits = cfg.admission;
  return d;
}

conn_policy policy_of(const server_config& cfg) {
  conn_policy p;
  p.idle_timeout = cfg.idle_timeout;
  p.handshake_timeout = cfg.handshake_timeout;
  p.write_timeout = cfg.write_timeout;
  p.pressure_timeout = cfg.pressure_timeout;
  p.shutdown_grace = cfg.shutdown_grace;
  p.max_command_line = cfg.session.max_command_line;
  p.session = std::make_shared<const session_config>(cfg.session);
  return p;
}

}  // namespace detail

struct server::impl {
  server_config cfg;
  store::store& messages;
  detail::counters cnt;
  std::unique_ptr<smtp::detail::model_driver> driver;
  bool started = false;

  impl(server_config c, store::store& m) : cfg(std::move(c)), messages(m) {}
};

net::admission_limits default_admission() noexcept {
  net::admission_limits l;
  l.max_total = 1000;
  l.max_per_ip = 1000;
  l.max_per_subnet = 0;
  l.pressure_at(75);
  return l;
}

server::server(server_config cfg, store::store& messages)
    : impl_(std::make_unique<impl>(std::move(cfg), messages)) {}

server::~server() {
  stop();
  wait();
}

std::error_code server::start() {
  impl& m = *impl_;
  if (m.started) return {};
  using smtp::io_model;
  std::unique_ptr<smtp::detail::model_driver> d;
  switch (m.cfg.model) {
    case io_model::process:  // a forked child could not remove from the parent's store
      return make_error_code(errc::bad_config);
    case io_model::thread:
      d = std::make_unique<smtp::detail::thread_driver<detail::plug>>(m.cfg, m.messages, m.cnt);
      break;
    case io_model::stackful:
      d = std::make_unique<smtp::detail::stackful_driver<detail::plug>>(m.cfg, m.messages, m.cnt);
      break;
    case io_model::coro:
    case io_model::async_1n:
    case io_model::async_nn:
    case io_model::async_n2n:
      d = std::make_unique<smtp::detail::coro_driver<detail::plug>>(m.cfg, m.messages, m.cnt);
      break;
  }
  if (std::error_code ec = d->start()) {
    // A certificate that does not load, or an address that is not one.
    if (ec.category() == smtp::smtp_category() || ec == std::errc::invalid_argument)
      return make_error_code(errc::bad_config);
    return ec;
  }
  m.driver = std::move(d);
  m.started = true;
  return {};
}

std::string server::address() const {
  if (!impl_->driver) return {};
  auto eps = impl_->driver->local_endpoints();
  return eps.empty() ? std::string() : eps.front().address;
}

std::uint16_t server::port() const {
  if (!impl_->driver) return 0;
  auto eps = impl_->driver->local_endpoints();
  return eps.empty() ? 0 : eps.front().port;
}

void server::stop() {
  if (impl_->driver) impl_->driver->stop();
}

void server::wait() {
  if (impl_->driver) impl_->driver->wait();
}

server_stats server::stats() const {
  const detail::counters& c = impl_->cnt;
  server_stats s;
  if (impl_->driver) {
    smtp::server_stats d = impl_->driver->stats();
    s.connections_refused = d.connections_refused;
    s.connections_accepted = d.connections_accepted - d.connections_refused;  // admitted
    s.connections_evicted = d.connections_evicted;
    s.under_pressure = d.under_pressure;
    s.active_connections = d.active_connections;
  }
  s.sign_ins = c.sign_ins.load(std::memory_order_relaxed);
  s.messages_retrieved = c.retrieved.load(std::memory_order_relaxed);
  s.messages_deleted = c.deleted.load(std::memory_order_relaxed);
  return s;
}

void server::append_metrics(std::string& out) const {
  const server_stats s = stats();
  char text[1024];
  std::snprintf(
      text, sizeof text,
      "# TYPE inlet_pop3_connections_total counter\ninlet_pop3_connections_total %llu\n"
      "# TYPE inlet_pop3_connections_refused_total counter\n"
      "inlet_pop3_connections_refused_total %llu\n"
      "# TYPE inlet_pop3_connections_evicted_total counter\n"
      "inlet_pop3_connections_evicted_total %llu\n"
      "# TYPE inlet_pop3_connections_active gauge\ninlet_pop3_connections_active %llu\n"
      "# TYPE inlet_pop3_sign_ins_total counter\ninlet_pop3_sign_ins_total %llu\n"
      "# TYPE inlet_pop3_messages_retrieved_total counter\n"
      "inlet_pop3_messages_retrieved_total %llu\n"
      "# TYPE inlet_pop3_messages_deleted_total counter\n"
      "inlet_pop3_messages_deleted_total %llu\n",
      static_cast<unsigned long long>(s.connections_accepted),
      static_cast<unsigned long long>(s.connections_refused),
      static_cast<unsigned long long>(s.connections_evicted),
      static_cast<unsigned long long>(s.active_connections),
      static_cast<unsigned long long>(s.sign_ins),
      static_cast<unsigned long long>(s.messages_retrieved),
      static_cast<unsigned long long>(s.messages_deleted));
  out += text;
}

}  // namespace inlet::pop3
