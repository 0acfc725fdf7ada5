// Name resolution with a bound: getaddrinfo has no timeout of its own (a resolver that
// never answers holds the caller for as long as resolv.conf's retries say, or forever
// with a stuck NSS module), so a lookup runs on a short-lived thread of its own and the
// caller waits for it until a deadline. A lookup the caller gave up on still holds its
// thread until getaddrinfo returns; at most kMaxPendingLookups such threads exist at once,
// past that a lookup fails at once instead of piling up threads.
//
// Thread-safety: resolve() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

struct addrinfo;

namespace inlet::outbound {

/// getaddrinfo's shape (host, port, result): 0 or an EAI_ code. Tests pass one that never
/// answers; the default is ::getaddrinfo with SOCK_STREAM hints.
using lookup_fn = std::function<int(const std::string& host, const std::string& port,
                                    ::addrinfo** out)>;

inline constexpr std::size_t kMaxPendingLookups = 16;

struct resolve_result {
  std::shared_ptr<::addrinfo> addresses;  ///< freed with freeaddrinfo; null on failure
  bool timed_out = false;                 ///< the deadline passed first
  std::string error;                      ///< why not, when addresses is null
};

/// Resolves `host`:`port` (SOCK_STREAM) by `deadline`. A numeric address is converted in
/// place (no thread, no wait).
resolve_result resolve(const std::string& host, std::uint16_t port,
                       std::chrono::steady_clock::time_point deadline,
                       const lookup_fn& lookup = {});

/// Lookups whose thread has not returned yet (given up on or not).
std::size_t pending_lookups() noexcept;

}  // namespace inlet::outbound
