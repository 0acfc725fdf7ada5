// Connection slots: limits, pressure and eviction; see admission.hpp.
#include <inlet/net/admission.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace inlet::net {

slot::~slot() {
  leave();
}

// Released by the driver before it is destroyed, as a rule; a slot that was
// not (an io_context torn down with the connection in it) gives its place
// back here. `owner_` is only cleared under the admission's lock, by the
// thread that released the slot, before the last reference to it went.
void slot::leave() noexcept {
  if (owner_ != nullptr) owner_->release(*this);
}

void admission_limits::pressure_at(unsigned percent) noexcept {
  constexpr std::size_t never = std::numeric_limits<std::size_t>::max();
  percent = std::min(percent, 100u);
  pressure_on = percent == 0 ? never : std::max<std::size_t>(1, max_total * percent / 100);
  pressure_off = pressure_on == never ? never : pressure_on * 4 / 5;
}

std::string subnet_of(std::string_view ip, unsigned v4_prefix, unsigned v6_prefix) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ip.size() >= sizeof text) return "?" + std::string(ip);
  std::memcpy(text, ip.data(), ip.size());
  unsigned char b[16];
  std::size_t len = 0;
  unsigned prefix = 0;
  char family = '4';
  if (::inet_pton(AF_INET, text, b) == 1) {
    len = 4;
    prefix = v4_prefix;
  } else if (::inet_pton(AF_INET6, text, b) == 1) {
    static constexpr unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(b, mapped, 12) == 0) {
      std::memmove(b, b + 12, 4);
      len = 4;
      prefix = v4_prefix;
    } else {
      len = 16;
      prefix = v6_prefix;
      family = '6';
    }
  } else {
    return "?" + std::string(ip);
  }
  prefix = std::min<unsigned>(prefix, static_cast<unsigned>(len * 8));
  for (std::size_t i = 0; i < len; ++i) {
    unsigned keep = prefix > i * 8 ? std::min(8u, prefix - static_cast<unsigned>(i * 8)) : 0;
    b[i] &= static_cast<unsigned char>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
  std::string key{family, ':'};
  key.append(reinterpret_cast<const char*>(b), len);
  return key;
}

admission::admission(const admission_limits& l, std::atomic<bool>* pressure_flag)
    : lim_(l), pressure_(pressure_flag != nullptr ? pressure_flag : &own_pressure_) {}

admission::~admission() {
  std::lock_guard lk(mu_);
  for (slot* s : slots_) s->owner_ = nullptr;  // slots that outlive their server
}

void admission::set_pressure() {
  bool on = pressure_->load(std::memory_order_relaxed);
  if (!on && slots_.size() >= lim_.pressure_on)
    pressure_->store(true, std::memory_order_relaxed);
  else if (on && slots_.size() < lim_.pressure_off)
    pressure_->store(false, std::memory_order_relaxed);
}

// How much of its shares a slot's group holds: the larger of its IP's and its
// subnet's count, each against its share under pressure (cross-multiplied, so
// no division: comparable between slots of one admission).
std::uint64_t admission::load_of(const slot& s) const {
  auto ip = per_ip_.find(s.ip_);
  auto net = per_subnet_.find(s.subnet_);
  const std::uint64_t ip_n = ip == per_ip_.end() ? 0 : ip->second;
  const std::uint64_t net_n = net == per_subnet_.end() ? 0 : net->second;
  const std::uint64_t ip_share = std::max<std::size_t>(1, lim_.pressure_per_ip);
  const std::uint64_t net_share = std::max<std::size_t>(1, lim_.pressure_per_subnet);
  return std::max(ip_n * net_share, net_n * ip_share);
}

// The victim among up to sample_size evictable slots taken at random: the one
// whose source (or subnet) holds the most slots against its share, and among
// those of the heaviest group, the slowest (the earliest progress).
slot* admission::choose_victim(clock::rep now) {
  slot* best = nullptr;
  std::uint64_t best_load = 0;
  clock::rep best_progress = 0;
  const std::size_t n = slots_.size();
  const std::size_t tries = std::min(n, sample_size);
  for (std::size_t k = 0; k < tries; ++k) {
    rng_ ^= rng_ << 13;  // xorshift64
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    slot* s = slots_[n <= sample_size ? k : rng_ % n];
    if (s->evicted.load(std::memory_order_relaxed)) continue;
    if (s->state.load(std::memory_order_relaxed) == slot::phase::busy) continue;
    clock::rep progress = std::min(s->progress.load(std::memory_order_relaxed), now);
    std::uint64_t load = load_of(*s);
    if (best == nullptr || load > best_load || (load == best_load && progress < best_progress)) {
      best = s;
      best_load = load;
      best_progress = progress;
    }
  }
  return best;
}

admit_result admission::admit(slot& s, std::string_view ip) {
  std::string subnet = subnet_of(ip, lim_.v4_prefix, lim_.v6_prefix);
  std::lock_guard lk(mu_);
  auto ip_it = per_ip_.find(std::string(ip));
  auto net_it = per_subnet_.find(subnet);
  std::size_t ip_n = ip_it == per_ip_.end() ? 0 : ip_it->second;
  std::size_t net_n = net_it == per_subnet_.end() ? 0 : net_it->second;
  bool pressure = pressure_->load(std::memory_order_relaxed);
  if (ip_n >= lim_.max_per_ip || (pressure && ip_n >= lim_.pressure_per_ip))
    return admit_result::over_ip;
  if ((lim_.max_per_subnet != 0 && net_n >= lim_.max_per_subnet) ||
      (pressure && net_n >= lim_.pressure_per_subnet))
    return admit_result::over_subnet;
  admit_result result = admit_result::admitted;
  if (slots_.size() - evicting_ >= lim_.max_total) {
    // Evictions in flight are bounded: a victim closes within a poll tick or
    // a posted handler, and a flood of newcomers must not evict everyone.
    const std::size_t in_flight = std::max<std::size_t>(16, lim_.max_total / 64);
    slot* victim = nullptr;
    if (lim_.evict && evicting_ < in_flight)
      victim = choose_victim(clock::now().time_since_epoch().count());
    if (victim == nullptr) return admit_result::full;
    victim->evicted.store(true, std::memory_order_relaxed);
    ++evicting_;
    evicted_.fetch_add(1, std::memory_order_relaxed);
    victim->wake();
    result = admit_result::admitted_evicting;
  }
  s.ip_.assign(ip);
  s.subnet_ = std::move(subnet);
  s.owner_ = this;
  s.index_ = slots_.size();
  slots_.push_back(&s);
  ++per_ip_[s.ip_];
  ++per_subnet_[s.subnet_];
  set_pressure();
  return result;
}

void admission::release(slot& s) noexcept {
  std::lock_guard lk(mu_);
  if (s.owner_ != this) return;
  s.owner_ = nullptr;
  slots_[s.index_] = slots_.back();
  slots_[s.index_]->index_ = s.index_;
  slots_.pop_back();
  if (auto it = per_ip_.find(s.ip_); it != per_ip_.end() && --it->second == 0) per_ip_.erase(it);
  if (auto it = per_subnet_.find(s.subnet_); it != per_subnet_.end() && --it->second == 0)
    per_subnet_.erase(it);
  if (s.evicted.load(std::memory_order_relaxed)) --evicting_;
  set_pressure();
  if (slots_.empty()) idle_.notify_all();
}

std::size_t admission::active() const {
  std::lock_guard lk(mu_);
  return slots_.size();
}

bool admission::wait_idle_until(clock::time_point deadline) {
  std::unique_lock lk(mu_);
  return idle_.wait_until(lk, deadline, [&] { return slots_.empty(); });
}

void admission::wait_idle() {
  std::unique_lock lk(mu_);
  idle_.wait(lk, [&] { return slots_.empty(); });
}

}  // namespace inlet::net
