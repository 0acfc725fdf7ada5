// The blocking session loop of the thread model (a thread per connection) and
// the process model (a process per connection). Moved here from server.cpp so
// both share it; the thread model's accept loop stays in server.cpp.
//
// poll() wakes up every 250 ms to check deadlines and stop; fragments are
// taken only once the socket is readable (SO_RCVTIMEO stays as a bound on the
// readv that follows inside a body).
#include "driver_buffer.hpp"
#include "driver_common.hpp"

#include <cerrno>

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

namespace inlet::smtp::detail {
namespace {

bool send_all(int fd, std::string_view out) {
  while (!out.empty()) {
    ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Graceful stop as the loop sees it: `stopping` observed once -> shutdown()
// (idle: 421 now; in a transaction: 421 after it); the grace period after
// that -> shutdown_now(), with a send timeout so a client that does not read
// cannot keep us in send().
struct stop_watch {
  const blocking_env& env;
  bool shut = false;
  clock::time_point force_at = clock::time_point::max();

  // Returns true when the session has just been closed by the stop.
  bool check(int fd, server_session& s) {
    if (!shut && env.stopping.load(std::memory_order_relaxed)) {
      shut = true;
      force_at = clock::now() + env.cfg.shutdown_grace;
      s.shutdown();
      return s.closing();
    }
    if (shut && !s.closing() && clock::now() >= force_at) {
      timeval tv{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      s.shutdown_now();
      return true;
    }
    return false;
  }
};

}  // namespace

void run_blocking_session(int fd, server_session& s, const blocking_env& env) {
  const server_config& cfg = env.cfg;
  driver_input in(cfg.read_buffer_size, cfg.session.max_command_line);
  body_collector body(cfg.body_observer, in);  // after `in`: dropped before it
  stop_watch stop{env};
  {
    // A peer that stops reading our replies: send() gives up after the command
    // timeout and the session ends (the async drivers do the same).
    auto secs = std::chrono::duration_cast<std::chrono::microseconds>(cfg.command_timeout).count();
    timeval tv{static_cast<time_t>(secs / 1000000), static_cast<suseconds_t>(secs % 1000000)};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  stop.check(fd, s);
  s.start();
  auto deadline = clock::now() + cfg.greeting_timeout;
  auto body_deadline = clock::time_point::max();
  bool first_read = true;
  for (;;) {
    stop.check(fd, s);
    std::string_view view = in.view();
    step st = s.consume(view);
    if (st.kind == step_kind::body_data) body.add(st.data, s.body_size());  // no copy
    bool again = in.consumed(view, st.consumed, st.kind == step_kind::need_more);
    switch (st.kind) {
      case step_kind::body_data: continue;
      case step_kind::message_aborted: body.abort(); continue;
      case step_kind::message_complete: {
        received_message msg = body.complete(s.take_envelope(), s.body_size());
        s.delivery_done(env.deliver(std::move(msg)));
        continue;
      }
      case step_kind::start_tls: return;  // not offered by the blocking models
      case step_kind::close: send_all(fd, s.output()); return;
      case step_kind::need_more:
        if (again) continue;
        break;
    }
    if (!send_all(fd, s.output())) return;
    s.clear_output();
    if (s.in_body()) {
      if (body_deadline == clock::time_point::max()) body_deadline = clock::now() + cfg.message_timeout;
      deadline = std::min(clock::now() + cfg.data_timeout, body_deadline);
    } else {
      body_deadline = clock::time_point::max();
      if (in.empty() && !first_read) deadline = clock::now() + cfg.command_timeout;
    }
    for (;;) {
      // Outside a body: wait for readability (250 ms ticks for deadlines and
      // stop), then take fragments, so an idle connection holds no buffer
      // memory. In a body: read at once (SO_RCVTIMEO bounds the wait).
      int r = 1;
      if (!s.in_body()) {
        in.release_if_empty();
        pollfd pfd{fd, POLLIN, 0};
        r = ::poll(&pfd, 1, 250);
        if (r < 0 && errno != EINTR) return;
      }
      if (r > 0) {
        iovec iov[16];
        int k = 0;
        for (auto b : in.prepare(s.in_body())) {
          if (k == 16) break;
          iov[k++] = iovec{b.data(), b.size()};
        }
        ssize_t n = ::readv(fd, iov, k);
        if (n > 0) {
          in.commit(static_cast<std::size_t>(n));
          first_read = false;
          break;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return;
      }
      if (stop.check(fd, s)) break;
      if (clock::now() >= deadline) {
        s.timeout();
        break;
      }
    }
  }
}

}  // namespace inlet::smtp::detail
