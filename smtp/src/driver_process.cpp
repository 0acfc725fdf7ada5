// The `process` I/O model: a process per connection (seed 000). One accept
// thread polls the listening sockets, forks a child per admitted connection
// and reaps the children; the child runs the session over blocking I/O with
// the thread model's loop (driver_thread.cpp) and exits with _exit().
//
// fork() in a multi-threaded parent. Only the forking thread exists in the
// child; any lock another thread held at that instant stays locked forever.
// So:
//  * fork is called only from the dedicated accept thread, which at that
//    moment holds no lock of ours: its bookkeeping (children, per-IP counts)
//    is its own and unlocked; stats() reads atomics only.
//  * POSIX allows only async-signal-safe calls in such a child. We rely on
//    one documented extension: glibc's fork() resets malloc's arena locks and
//    stdio's list lock in the child, so the child may allocate. Everything
//    else the child runs first is async-signal-safe: close_range, sigaction,
//    sigprocmask, setsockopt. Then it runs its own single-threaded loop
//    (session, buffer pool, the deliver hook).
//  * What is NOT safe, and the application must avoid: a deliver hook that
//    takes a lock or uses state (a store, a connection pool, a logger with a
//    lock) that another parent thread may have held at fork time. The buffer
//    pool is used by the child from the accept thread's own thread-local
//    cache; its global pool mutex is only taken when that cache runs dry, and
//    no other parent thread takes fragments in the process model (there are
//    no other I/O threads). inletd allows the model only with --store sink,
//    whose hook parses and discards in the child (a copy-on-write snapshot).
//  * The child closes every inherited descriptor but stdio and its socket
//    (close_range): otherwise it would hold the listeners and other
//    connections of the parent (an HTTP keep-alive socket would not close
//    until the child exits).
//
// Signals. The accept thread blocks SIGTERM before forking, so a child is
// born with SIGTERM blocked, installs its handler, then unblocks it: a stop
// that races with the fork is delivered to the handler, never to the
// default action. The handler only stores to a lock-free atomic<bool>. The
// child ignores SIGINT/SIGHUP (a terminal's ^C goes to the whole process
// group; the parent coordinates the stop) and SIGPIPE.
//
// Reaping without a SIGCHLD handler (signal dispositions are process-wide,
// not a library's to take): the accept thread polls with a 50 ms tick and
// calls waitpid(pid, WNOHANG) for each of its own children, so it never reaps
// a child the application forked. Limits count live children; a slot frees
// when its child is reaped (within one tick).
//
// Stop: the parent closes the listeners (new connections are refused by the
// kernel), sends SIGTERM to every child and keeps reaping. A child finishes
// its transaction, answers 421 4.3.2, exits; after shutdown_grace it answers
// 421 4.3.2 anyway and closes (the loop enforces it). The parent SIGKILLs
// what is left 5 s after the grace period, so wait() is bounded; no zombie
// is left because every child is waited for before wait() returns.
//
// Counters: accepted/refused are counted by the parent, delivered/rejected
// by the children, all in one page of MAP_SHARED memory.
#include "driver_common.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace inlet::smtp::detail {
namespace {

// The child's stop flag, set by its SIGTERM handler. One per process image;
// only children use it.
std::atomic<bool> child_stopping{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_child_sigterm(int) { child_stopping.store(true); }

class process_driver final : public model_driver {
 public:
  process_driver(const server_config& cfg, deliver_fn d) : cfg_(cfg), hook_(std::move(d)) {}
  ~process_driver() override;
  std::error_code start() override;
  std::vector<listen_endpoint> local_endpoints() const override { return bound_; }
  void stop() override;
  void wait() override;
  server_stats stats() const override;

 private:
  struct listener {
    int fd;
    bool lmtp;
  };
  std::error_code bind_one(const listen_endpoint& l);
  void accept_loop();
  void accept_ready(const listener& l);
  void admit_or_refuse(int fd, const sockaddr_storage& peer, bool lmtp);
  [[noreturn]] void child_main(int fd, bool lmtp, const std::string& ip, std::uint16_t port);
  void reap();
  void drain_children();

  server_config cfg_;
  deliver_fn hook_;
  std::vector<listener> listeners_;
  std::vector<listen_endpoint> bound_;
  int wake_[2] = {-1, -1};
  driver_counters* shared_ = nullptr;  // MAP_SHARED page
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> active_{0};
  std::thread acceptor_;
  // Owned by the accept thread only (no lock, see the note on fork above).
  std::map<pid_t, std::string> children_;
  std::map<std::string, std::size_t> per_ip_;
};

std::string ip_text(const sockaddr_storage& a, std::uint16_t& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6) {
    auto& s6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &s6.sin6_addr, buf, sizeof buf);
    port = ntohs(s6.sin6_port);
  } else {
    auto& s4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &s4.sin_addr, buf, sizeof buf);
    port = ntohs(s4.sin_port);
  }
  return buf;
}

std::error_code process_driver::bind_one(const listen_endpoint& l) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, l.address.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(l.port);
    len = sizeof *s4;
  } else if (::inet_pton(AF_INET6, l.address.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(l.port);
    len = sizeof *s6;
  } else {
    return std::make_error_code(std::errc::invalid_argument);
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return {errno, std::system_category()};
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    std::error_code ec(errno, std::system_category());
    ::close(fd);
    return ec;
  }
  len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  std::uint16_t port = 0;
  std::string ip = ip_text(ss, port);
  listeners_.push_back({fd, l.lmtp});
  bound_.push_back({ip, port, l.lmtp});
  return {};
}

std::error_code process_driver::start() {
  void* page = ::mmap(nullptr, sizeof(driver_counters), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return {errno, std::system_category()};
  shared_ = new (page) driver_counters;
  std::error_code ec;
  for (const auto& l : cfg_.listen)
    if ((ec = bind_one(l))) break;
  if (!ec && ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) ec = {errno, std::system_category()};
  if (ec) {
    for (auto& l : listeners_) ::close(l.fd);
    listeners_.clear();
    return ec;
  }
  acceptor_ = std::thread([this] { accept_loop(); });
  return {};
}

void process_driver::accept_loop() {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);  // inherited blocked by every child
  std::vector<pollfd> fds;
  for (const auto& l : listeners_) fds.push_back({l.fd, POLLIN, 0});
  fds.push_back({wake_[0], POLLIN, 0});
  while (!stopping_.load()) {
    reap();
    int r = ::poll(fds.data(), fds.size(), 50);
    if (r <= 0) continue;
    char drain[64];
    while (::read(wake_[0], drain, sizeof drain) > 0) {
    }
    for (std::size_t i = 0; i < listeners_.size(); ++i)
      if (fds[i].revents & POLLIN) accept_ready(listeners_[i]);
  }
  for (auto& l : listeners_) ::close(l.fd);
  listeners_.clear();
  drain_children();
}

void process_driver::accept_ready(const listener& l) {
  for (int i = 0; i < 64 && !stopping_.load(); ++i) {  // a burst, then poll again
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd = ::accept4(l.fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;  // EAGAIN: drained
    }
    admit_or_refuse(fd, peer, l.lmtp);
  }
}

void process_driver::admit_or_refuse(int fd, const sockaddr_storage& peer, bool lmtp) {
  shared_->accepted.fetch_add(1, std::memory_order_relaxed);
  std::uint16_t port = 0;
  std::string ip = ip_text(peer, port);
  if (children_.size() >= cfg_.max_connections) reap();  // a slot may have just freed
  auto it = per_ip_.find(ip);
  std::size_t same_ip = it == per_ip_.end() ? 0 : it->second;
  if (children_.size() >= cfg_.max_connections || same_ip >= cfg_.max_connections_per_ip) {
    shared_->refused.fetch_add(1, std::memory_order_relaxed);
    std::string r = refusal_reply(cfg_);
    ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  pid_t pid = ::fork();
  if (pid == 0) child_main(fd, lmtp, ip, port);
  ::close(fd);  // the child has its own copy
  if (pid < 0) {
    shared_->refused.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  children_.emplace(pid, ip);
  ++per_ip_[ip];
  active_.store(children_.size());
}

void process_driver::child_main(int fd, bool lmtp, const std::string& ip, std::uint16_t port) {
  // Only this thread exists now. Drop every inherited descriptor but stdio
  // and the connection (listeners, wake pipe, the parent's other sockets).
  if (fd > 3) ::close_range(3, static_cast<unsigned>(fd) - 1, 0);
  ::close_range(static_cast<unsigned>(fd) + 1, ~0u, 0);
  struct sigaction sa {};
  sa.sa_handler = on_child_sigterm;  // no SA_RESTART: poll() returns EINTR at once
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  ::sigaction(SIGPIPE, &sa, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGTERM);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  timeval tv{0, 250000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  {
    server_session s(session_for(cfg_, lmtp, false));
    s.set_remote(ip, port);
    blocking_env env{cfg_, child_stopping, [this](received_message&& msg) {
                       return deliver_sync(hook_, *shared_, std::move(msg));
                     }};
    run_blocking_session(fd, s, env);
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  ::_exit(0);  // no atexit handlers, no destructors of the parent's objects
}

void process_driver::reap() {
  for (auto it = children_.begin(); it != children_.end();) {
    int status = 0;
    pid_t r = ::waitpid(it->first, &status, WNOHANG);
    if (r == it->first || (r < 0 && errno == ECHILD)) {
      auto ip = per_ip_.find(it->second);
      if (ip != per_ip_.end() && --ip->second == 0) per_ip_.erase(ip);
      it = children_.erase(it);
    } else {
      ++it;
    }
  }
  active_.store(children_.size());
}

// After stop: SIGTERM every child, reap them all; SIGKILL what is left 5 s
// after the grace period (each child enforces the grace itself).
void process_driver::drain_children() {
  for (auto& [pid, ip] : children_) ::kill(pid, SIGTERM);
  auto kill_at = clock::now() + cfg_.shutdown_grace + std::chrono::seconds(5);
  bool killed = false;
  while (!children_.empty()) {
    reap();
    if (children_.empty()) break;
    if (!killed && clock::now() >= kill_at) {
      for (auto& [pid, ip] : children_) ::kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void process_driver::stop() {
  if (stopping_.exchange(true)) return;
  char c = 1;
  [[maybe_unused]] auto n = ::write(wake_[1], &c, 1);
}

void process_driver::wait() {
  if (acceptor_.joinable()) acceptor_.join();
}

process_driver::~process_driver() {
  if (acceptor_.joinable()) {
    stop();
    wait();
  }
  for (int& fd : wake_)
    if (fd >= 0) ::close(fd);
  if (shared_) {
    shared_->~driver_counters();
    ::munmap(shared_, sizeof(driver_counters));
  }
}

server_stats process_driver::stats() const {
  server_stats s;
  if (!shared_) return s;
  s.connections_accepted = shared_->accepted.load();
  s.connections_refused = shared_->refused.load();
  s.messages_delivered = shared_->delivered.load();
  s.messages_rejected = shared_->rejected.load();
  s.active_connections = active_.load();
  return s;
}

}  // namespace

std::unique_ptr<model_driver> make_process_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<process_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
