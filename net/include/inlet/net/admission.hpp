// inlet::net::admission — who gets a connection slot, and who loses
// one when they run out; shared by every listener (the SMTP server's I/O
// models, the POP3 server). Sans-io: no socket, no clock of its own (progress
// times come from the connections), so its tests (test/admission_test.cpp)
// drive it with plain values.
//
// The rules, in the order they are checked for a new client:
//
//   1. per IP and per subnet (the address masked to /24 for IPv4, /64 for
//      IPv6 by default): hard limits, refused past them;
//   2. slot pressure: from `pressure_on` open connections until they fall
//      below `pressure_off` (hysteresis), a client whose IP or subnet already
//      holds its share under pressure (`pressure_per_ip`, `_per_subnet`) is
//      refused; everyone's timeouts shorten meanwhile (connections read the
//      flag, as Postfix's stress mode does);
//   3. every slot taken: a client within its shares takes the slot of a
//      connection that waits for its client: from the source holding the
//      most slots (its IP's or its subnet's count against the share under
//      pressure, whichever is larger), and of that source the slowest (the
//      earliest `progress`: the connection whose current command or body is
//      the most overdue). That connection is marked evicted and woken; it
//      answers 421 4.7.0 and closes. Without such a connection (or with
//      eviction off) the client is refused.
//
// Design note (the slot table): admitted slots sit in a vector (each knows its
// index: O(1) removal by swap), and per-IP and per-subnet counts in hash maps.
// A victim is the best of up to 64 slots sampled at random (as Redis samples
// for LRU eviction): O(1) per eviction however many connections are open, and
// hostile connections, being most of the slots when the slots run out, are
// most of the sample.
//
// Thread-safety: every member is safe from any thread (one mutex). A slot's
// atomics are written by its connection without the lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace inlet::net {

using clock = std::chrono::steady_clock;

class admission;

/// One admitted connection, as the admission sees it. The connection
/// keeps `progress` and `state` current (relaxed stores); the admission marks
/// `evicted` and calls wake() (with its lock held) when it takes the slot.
struct slot {
  enum class phase : std::uint8_t {
    busy,     ///< writing, delivering, or not started: not evictable
    waiting,  ///< waiting for the client inside a command line or a body
    idle,     ///< waiting for the client's next command, nothing held
  };
  slot() = default;
  virtual ~slot();
  slot(const slot&) = delete;
  slot& operator=(const slot&) = delete;

  /// The driver's: make the connection notice `evicted` soon (cancel its wait).
  /// Called with the admission's lock held: must not call into it.
  virtual void wake() noexcept {}

  bool is_evicted() const noexcept { return evicted.load(std::memory_order_relaxed); }
  /// Gives the slot back if it is still admitted. A derived class calls it
  /// first thing in its destructor (wake() must not be called on a half
  /// destroyed object).
  void leave() noexcept;

  /// Since when the connection waits for its current command (or, in a body,
  /// the body's credit time, see connection.hpp): the smaller, the slower.
  std::atomic<clock::rep> progress{std::numeric_limits<clock::rep>::max()};
  std::atomic<phase> state{phase::busy};
  std::atomic<bool> evicted{false};

 private:
  friend class admission;
  admission* owner_ = nullptr;  // set while admitted
  std::size_t index_ = 0;       // in owner_->slots_
  std::string ip_, subnet_;
};

/// The limits (counts, not percentages; each server derives them from its
/// own configuration).
struct admission_limits {
  std::size_t max_total = 10000;
  std::size_t max_per_ip = 1000;
  std::size_t max_per_subnet = 0;  ///< 0: none
  unsigned v4_prefix = 24, v6_prefix = 64;
  std::size_t pressure_on = 7500, pressure_off = 6000;  ///< open connections
  std::size_t pressure_per_ip = 50, pressure_per_subnet = 200;
  bool evict = true;
  /// Pressure from `percent` of max_total open connections (off again below
  /// four fifths of that); 0: never. Call it after setting max_total.
  void pressure_at(unsigned percent) noexcept;
};

enum class admit_result : std::uint8_t {
  admitted,
  admitted_evicting,  ///< admitted in the slot of a connection now being evicted
  full,               ///< every slot taken, nothing to evict
  over_ip,            ///< the IP's hard limit, or its share under pressure
  over_subnet,        ///< the subnet's hard limit, or its share under pressure
};
inline bool admitted(admit_result r) noexcept {
  return r == admit_result::admitted || r == admit_result::admitted_evicting;
}

/// The subnet an address belongs to: "4:" or "6:" and the masked address
/// bytes. An IPv4-mapped IPv6 address counts as IPv4. Unparsable text is its
/// own subnet.
std::string subnet_of(std::string_view ip, unsigned v4_prefix, unsigned v6_prefix);

class admission {
 public:
  /// `pressure_flag`: where the pressure state is published (the connection
  /// core reads it); the process model puts it in memory shared with its
  /// children. Null: the admission's own.
  explicit admission(const admission_limits& l, std::atomic<bool>* pressure_flag = nullptr);
  ~admission();
  admission(const admission&) = delete;
  admission& operator=(const admission&) = delete;

  /// Publishes the pressure state in `flag` from now on (before any admit()).
  void use_pressure_flag(std::atomic<bool>* flag) noexcept { pressure_ = flag; }

  /// Admits `s` (not admitted yet) for a client at `ip`, or says why not.
  admit_result admit(slot& s, std::string_view ip);
  /// Gives the slot back (idempotent; a slot's destructor calls it too).
  void release(slot& s) noexcept;

  std::size_t active() const;
  bool under_pressure() const noexcept { return pressure_->load(std::memory_order_relaxed); }
  const std::atomic<bool>& pressure_flag() const noexcept { return *pressure_; }
  std::uint64_t evicted() const noexcept { return evicted_.load(std::memory_order_relaxed); }

  /// Blocks until no connection is active (true) or `deadline` passed (false).
  bool wait_idle_until(clock::time_point deadline);
  /// Blocks until no connection is active.
  void wait_idle();

  static constexpr std::size_t sample_size = 64;

 private:
  slot* choose_victim(clock::rep now);
  std::uint64_t load_of(const slot& s) const;
  void set_pressure();

  const admission_limits lim_;
  std::atomic<bool> own_pressure_{false};
  std::atomic<bool>* pressure_;
  std::atomic<std::uint64_t> evicted_{0};
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::vector<slot*> slots_;
  std::unordered_map<std::string, std::size_t> per_ip_, per_subnet_;
  std::size_t evicting_ = 0;  // marked evicted, not yet released
  std::uint64_t rng_ = 0x9E3779B97F4A7C15ull;
};

}  // namespace inlet::net
