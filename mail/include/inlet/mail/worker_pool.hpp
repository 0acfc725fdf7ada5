// Work too long for an I/O thread: the parse, summary, filter scan and store copy of a
// large message (a 1 MB header of 80,000 addresses costs milliseconds). Done on an SMTP
// I/O thread, it holds up every other connection of that thread for as long; here it
// runs on a small pool of its own, the connection's reply waits for it (the deliver
// hook answers later, from the worker), and the I/O threads go on serving the others.
//
// Design: one FIFO queue under a mutex, `threads` workers blocked on a condition
// variable. Jobs are move-only (a received message owns its body). The workers keep the
// I/O threads' priority: a lower one (nice) measured no better, and a worker holding the
// store's lock must not be the thread the scheduler puts off. The queue is not bounded
// here: each job is a message whose SMTP connection waits for its answer, so the
// connection limits bound it.
//
// Thread-safety: post() may be called from any thread. The destructor runs the jobs
// still queued, then joins the workers; no post() may race with it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace inlet::mail {

class worker_pool {
 public:
  /// `threads` 0: one per core but one, at least one.
  explicit worker_pool(unsigned threads = 0);
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  /// Runs `f()` on a worker, after the jobs posted before it.
  template <class F>
  void post(F&& f) {
    push(std::make_unique<job_of<std::decay_t<F>>>(std::forward<F>(f)));
  }

  unsigned threads() const noexcept { return static_cast<unsigned>(workers_.size()); }

 private:
  struct job {
    virtual ~job() = default;
    virtual void run() = 0;
  };
  template <class F>
  struct job_of final : job {
    explicit job_of(F&& f) : f_(std::move(f)) {}
    explicit job_of(const F& f) : f_(f) {}
    void run() override { f_(); }
    F f_;
  };

  void push(std::unique_ptr<job> j);
  void work();

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<job>> queue_;  // guarded by m_
  bool stopping_ = false;                   // guarded by m_
  std::vector<std::thread> workers_;
};

}  // namespace inlet::mail
