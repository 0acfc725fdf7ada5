// The `process` I/O model: a process per connection. One accept
// thread polls the listening sockets, forks a child per admitted connection
// and reaps the children; the child runs the session over blocking I/O with
// the thread model's loop (driver_thread.cpp) and exits with _exit().
//
// fork() in a multi-threaded parent. Only the forking thread exists in the
// child; any lock another thread held at that instant stays locked forever.
// So:
//  * fork is called only from the dedicated accept thread, which at that
//    moment holds no lock of ours. Its bookkeeping is its own (the children
//    map) or locked only briefly by it (`admission`, whose mutex stats() may
//    also take from another thread): the child never touches either.
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
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <thread>

#include "connection.hpp"
#include "driver_blocking.hpp"

namespace inlet::smtp::detail {
namespace {

// The child's stop flag, set by its SIGTERM handler. One per process image;
// only children use it.
std::atomic<bool> child_stopping{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_child_sigterm(int) {
  child_stopping.store(true);
}

// Connections (in the children) stop on SIGTERM: child_stopping. The
// admission slots and children map are the accept thread's (see the note on
// fork above).
class process_driver final : public blocking_server<smtp_plug> {
 public:
  process_driver(const server_config& cfg, deliver_fn d)
      : blocking_server(&child_stopping, cfg, std::move(d)) {}
  ~process_driver() override;
  std::error_code start() override;
  void stop() override;
  void wait() override;
  server_stats stats() const override;

 private:
  void take(const blocking_listeners::accepted& a);
  [[noreturn]] void child_main(const blocking_listeners::accepted& a);
  void reap();
  void drain_children();

  driver_counters* shared_ = nullptr;  // MAP_SHARED page
  // The accept thread's own. A child's slot is never evictable (the parent
  // cannot reach into the child); the child sees the pressure flag, which
  // lives in the shared page.
  std::map<pid_t, std::unique_ptr<slot>> children_;
};

std::error_code process_driver::start() {
  void* page = ::mmap(nullptr, sizeof(driver_counters), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return {errno, std::system_category()};
  shared_ = new (page) driver_counters;
  adm_.use_pressure_flag(&shared_->pressure);
  plug_.policy().pressure = &shared_->pressure;
  if (auto ec = prepare()) return ec;
  acceptor_ = std::thread([this] {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);  // inherited blocked by every child
    listeners_.run([this] { reap(); }, [this](blocking_listeners::accepted a) { take(a); });
    drain_children();
  });
  return {};
}

void process_driver::take(const blocking_listeners::accepted& a) {
  if (adm_.active() >= cfg_.max_connections) reap();  // a slot may have just freed
  auto s = std::make_unique<slot>();
  if (!admit_blocking(a, plug_, adm_, *shared_, stopping_.load(), *s)) return;
  pid_t pid = ::fork();
  if (pid == 0) child_main(a);
  ::close(a.fd);  // the child has its own copy
  if (pid < 0) {
    shared_->refused.fetch_add(1, std::memory_order_relaxed);
    adm_.release(*s);
    return;
  }
  children_.emplace(pid, std::move(s));
}

void process_driver::child_main(const blocking_listeners::accepted& a) {
  // Only this thread exists now. Drop every inherited descriptor but stdio
  // and the connection (listeners, wake pipe, the parent's other sockets).
  if (a.fd > 3) ::close_range(3, static_cast<unsigned>(a.fd) - 1, 0);
  ::close_range(static_cast<unsigned>(a.fd) + 1, ~0u, 0);
  struct sigaction sa{};
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
  serve(a, child_stopping, *shared_, nullptr);
  ::_exit(0);  // no atexit handlers, no destructors of the parent's objects
}

void process_driver::reap() {
  for (auto it = children_.begin(); it != children_.end();) {
    int status = 0;
    pid_t r = ::waitpid(it->first, &status, WNOHANG);
    if (r == it->first || (r < 0 && errno == ECHILD)) {
      adm_.release(*it->second);
      it = children_.erase(it);
    } else {
      ++it;
    }
  }
}

// After stop: SIGTERM every child, reap them all; SIGKILL what is left 5 s
// after the grace period (each child enforces the grace itself).
void process_driver::drain_children() {
  for (auto& [pid, s] : children_) ::kill(pid, SIGTERM);
  auto kill_at = clock::now() + plug_.config().shutdown_grace + std::chrono::seconds(5);
  bool killed = false;
  while (!children_.empty()) {
    reap();
    if (children_.empty()) break;
    if (!killed && clock::now() >= kill_at) {
      for (auto& [pid, s] : children_) ::kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void process_driver::stop() {
  if (stopping_.exchange(true)) return;
  listeners_.stop();
}

void process_driver::wait() {
  if (acceptor_.joinable()) acceptor_.join();
}

process_driver::~process_driver() {
  if (acceptor_.joinable()) {
    stop();
    wait();
  }
  if (shared_) {
    shared_->~driver_counters();
    ::munmap(shared_, sizeof(driver_counters));
  }
}

server_stats process_driver::stats() const {
  if (!shared_) return {};
  return stats_of(*shared_, adm_);
}

}  // namespace

std::unique_ptr<model_driver> make_process_driver(const server_config& cfg, deliver_fn deliver) {
  return std::make_unique<process_driver>(cfg, std::move(deliver));
}

}  // namespace inlet::smtp::detail
