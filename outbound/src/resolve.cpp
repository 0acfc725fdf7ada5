#include "inlet/outbound/resolve.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

namespace inlet::outbound {
namespace {

std::atomic<std::size_t> pending{0};

addrinfo stream_hints(int flags) {
  addrinfo h{};
  h.ai_family = AF_UNSPEC;
  h.ai_socktype = SOCK_STREAM;
  h.ai_flags = flags;
  return h;
}

int system_lookup(const std::string& host, const std::string& port, addrinfo** out) {
  const addrinfo h = stream_hints(0);
  return ::getaddrinfo(host.c_str(), port.c_str(), &h, out);
}

std::shared_ptr<addrinfo> own(addrinfo* a) {
  return std::shared_ptr<addrinfo>(a, [](addrinfo* p) {
    if (p) ::freeaddrinfo(p);
  });
}

std::string lookup_error(const std::string& host, int rc) {
  return "cannot resolve " + host + ": " + ::gai_strerror(rc);
}

// What the lookup thread and the waiter share; whoever comes last frees the result.
struct lookup_state {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;
  int rc = 0;
  addrinfo* result = nullptr;
};

}  // namespace

std::size_t pending_lookups() noexcept { return pending.load(); }

resolve_result resolve(const std::string& host, std::uint16_t port,
                       std::chrono::steady_clock::time_point deadline, const lookup_fn& lookup) {
  resolve_result out;
  const std::string service = std::to_string(port);
  {  // a numeric address needs no resolver
    const addrinfo h = stream_hints(AI_NUMERICHOST);
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), service.c_str(), &h, &res) == 0) {
      out.addresses = own(res);
      return out;
    }
  }
  if (pending.fetch_add(1) >= kMaxPendingLookups) {
    pending.fetch_sub(1);
    out.error = "cannot resolve " + host + ": too many lookups pending";
    return out;
  }
  auto st = std::make_shared<lookup_state>();
  try {
    std::thread([st, host, service, fn = lookup ? lookup : lookup_fn(system_lookup)] {
      addrinfo* res = nullptr;
      const int rc = fn(host, service, &res);
      {
        std::lock_guard lk(st->mu);
        if (st->abandoned) {
          if (res) ::freeaddrinfo(res);
        } else {
          st->rc = rc;
          st->result = res;
        }
        st->done = true;
        st->cv.notify_all();
      }
      pending.fetch_sub(1);
    }).detach();
  } catch (const std::system_error& e) {
    pending.fetch_sub(1);
    out.error = "cannot resolve " + host + ": " + e.what();
    return out;
  }
  std::unique_lock lk(st->mu);
  if (!st->cv.wait_until(lk, deadline, [&] { return st->done; })) {
    st->abandoned = true;
    out.timed_out = true;
    out.error = "cannot resolve " + host + ": timed out";
    return out;
  }
  if (st->rc != 0) {
    if (st->result) ::freeaddrinfo(st->result);
    out.error = lookup_error(host, st->rc);
    return out;
  }
  out.addresses = own(st->result);
  if (!out.addresses) out.error = "no address for " + host;
  return out;
}

}  // namespace inlet::outbound
