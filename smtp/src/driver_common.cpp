// Shared bookkeeping of the drivers in their own files. See driver_common.hpp.
#include "driver_common.hpp"

#include <algorithm>
#include <cstdio>
#include <inlet/buffer/pool.hpp>
#include <inlet/util/memory.hpp>
#include <optional>

namespace inlet::smtp::detail {

void release_free_heap() noexcept { util::release_free_heap(); }

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

admission_limits limits_of(const server_config& cfg) {
  admission_limits l;
  l.max_total = cfg.max_connections;
  l.max_per_ip = cfg.max_connections_per_ip;
  l.max_per_subnet = cfg.max_connections_per_subnet;
  l.v4_prefix = std::min(cfg.subnet_prefix_v4, 32u);
  l.v6_prefix = std::min(cfg.subnet_prefix_v6, 128u);
  l.pressure_at(cfg.pressure_percent);
  l.pressure_per_ip = cfg.pressure_per_ip;
  l.pressure_per_subnet = cfg.pressure_per_subnet;
  l.evict = cfg.evict_when_full;
  return l;
}

driver_config driver_config_of(const server_config& cfg) {
  driver_config d;
  d.listen = cfg.listen;
  d.model = cfg.model;
  d.threads = cfg.threads;
  d.accepts_per_event = cfg.accepts_per_event;
  d.max_connections = cfg.max_connections;
  d.release_memory = cfg.release_memory;
  d.shortest_timeout = std::min({cfg.greeting_timeout, cfg.command_timeout, cfg.data_timeout,
                                 cfg.message_timeout, cfg.shutdown_grace, cfg.pressure_timeout});
  d.tls_cert = cfg.tls_cert;
  d.tls_key = cfg.tls_key;
  d.limits = limits_of(cfg);
  return d;
}

server_stats stats_of(const driver_counters& c, const admission& adm) {
  server_stats s;
  s.connections_accepted = c.accepted.load();
  s.connections_refused = c.refused.load();
  s.connections_evicted = adm.evicted();
  s.under_pressure = adm.under_pressure();
  s.messages_delivered = c.delivered.load();
  s.messages_rejected = c.rejected.load();
  s.active_connections = adm.active();
  return s;
}

void count(driver_counters& c, const delivery_result& r) {
  (r.status.ok() ? c.delivered : c.rejected).fetch_add(1, std::memory_order_relaxed);
}

bool memory_keeper::tick(std::size_t active, clock::time_point now) {
  return tick(active, enabled_ ? spare_fragment_bytes() : 0, now);
}

bool memory_keeper::tick(std::size_t active, std::size_t spare_bytes, clock::time_point now) {
  if (!enabled_) return false;
  bool wave = wave_over(active, now);
  bool spare = spare_unused(spare_bytes, now);
  if (!wave && !spare) return false;
  spare_from_ = clock::time_point::max();  // a fresh window after any release
  release_memory();
  return true;
}

// Memory is freed as connections close, so the release waits until the
// count stops falling: trimming half way through would leave the second
// half's memory (and refill the pool's spare list) until the next wave.
bool memory_keeper::wave_over(std::size_t active, clock::time_point now) {
  peak_ = std::max(peak_, active);
  bool falling = active < last_active_;
  last_active_ = active;
  if (peak_ < active + min_wave || active > peak_ / 2) {
    low_since_ = clock::time_point::max();
    return false;
  }
  if (low_since_ == clock::time_point::max()) low_since_ = now;
  if (falling && now - low_since_ < std::chrono::seconds(5)) return false;
  peak_ = active;
  low_since_ = clock::time_point::max();
  return true;
}

// The least spare amount over a window is what no connection needed in it:
// when even that is above the limit, the spare lists go (under steady
// traffic they refill from the heap as needed).
bool memory_keeper::spare_unused(std::size_t spare_bytes, clock::time_point now) {
  if (spare_from_ == clock::time_point::max()) {
    spare_from_ = now;
    spare_low_ = spare_bytes;
    return false;
  }
  spare_low_ = std::min(spare_low_, spare_bytes);
  if (now - spare_from_ < spare_window) return false;
  bool release = spare_low_ > spare_bytes_max;
  spare_from_ = now;
  spare_low_ = spare_bytes;
  return release;
}

std::size_t spare_fragment_bytes() noexcept {
  std::size_t bytes = 0;
  for (std::size_t size : {buffer::pool::min_fragment_size, buffer::pool::default_fragment_size,
                           buffer::pool::max_fragment_size})
    bytes += static_cast<std::size_t>(buffer::pool::get(size).stats().global_cached) * size;
  return bytes;
}

void release_memory() noexcept {
  for (std::size_t size : {buffer::pool::min_fragment_size, buffer::pool::default_fragment_size,
                           buffer::pool::max_fragment_size})
    buffer::pool::get(size).trim();
  release_free_heap();
}

std::string refusal_reply(const server_config& cfg) {
  return "421 4.7.0 " + cfg.session.hostname + " Error: too many connections\r\n";
}

std::string shutting_down_reply(const server_config& cfg) {
  return "421 4.3.2 " + cfg.session.hostname + " Service shutting down\r\n";
}

}  // namespace inlet::smtp::detail
