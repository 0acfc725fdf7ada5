// Scatter-gather (one sendmsg of many buffers) vs a send loop, and readiness notification:
// poll (naive) vs epoll vs io_uring. Local AF_UNIX socket pairs only, no network.
#include <benchmark/benchmark.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>
#ifdef INLET_HAVE_URING
#include <liburing.h>
#endif

namespace {

constexpr int n_bufs = 16;
constexpr std::size_t buf_len = 576;  // 16 x 576 = 9 KB: one message's worth of fragments

struct pair_fds {
  int a = -1, b = -1;
  pair_fds() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) throw std::runtime_error("socketpair");
    a = sv[0];
    b = sv[1];
    const int big = 1 << 20;
    ::setsockopt(a, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    ::setsockopt(b, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  }
  ~pair_fds() {
    ::close(a);
    ::close(b);
  }
  pair_fds(const pair_fds&) = delete;
  pair_fds& operator=(const pair_fds&) = delete;
};

void drain(int fd, std::size_t bytes) {
  static thread_local std::array<char, 65536> sink;
  while (bytes > 0) {
    const ssize_t r = ::read(fd, sink.data(), std::min(bytes, sink.size()));
    if (r <= 0) break;
    bytes -= static_cast<std::size_t>(r);
  }
}

std::array<std::array<char, buf_len>, n_bufs> g_bufs{};

void BM_send_loop(benchmark::State& state) {
  pair_fds p;
  for (auto _ : state) {
    for (auto& b : g_bufs) benchmark::DoNotOptimize(::send(p.a, b.data(), b.size(), MSG_NOSIGNAL));
    drain(p.b, n_bufs * buf_len);
  }
  state.SetBytesProcessed(state.iterations() * n_bufs * buf_len);
}
BENCHMARK(BM_send_loop);

void BM_sendmsg_gather(benchmark::State& state) {
  pair_fds p;
  std::array<iovec, n_bufs> iov{};
  for (int i = 0; i < n_bufs; ++i) iov[i] = {g_bufs[i].data(), buf_len};
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = n_bufs;
  for (auto _ : state) {
    benchmark::DoNotOptimize(::sendmsg(p.a, &msg, MSG_NOSIGNAL));
    drain(p.b, n_bufs * buf_len);
  }
  state.SetBytesProcessed(state.iterations() * n_bufs * buf_len);
}
BENCHMARK(BM_sendmsg_gather);

// Readiness: N idle connections, one becomes readable per iteration; find it and read.
struct many_pairs {
  std::vector<std::unique_ptr<pair_fds>> pairs;
  explicit many_pairs(int n) {
    for (int i = 0; i < n; ++i) pairs.push_back(std::make_unique<pair_fds>());
  }
  void poke(int k) {
    const char c = 'x';
    benchmark::DoNotOptimize(::write(pairs[static_cast<std::size_t>(k)]->a, &c, 1));
  }
};

void BM_wait_poll(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  many_pairs mp(n);
  std::vector<pollfd> fds(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) fds[static_cast<std::size_t>(i)] = {mp.pairs[static_cast<std::size_t>(i)]->b, POLLIN, 0};
  int k = 0;
  char c;
  for (auto _ : state) {
    mp.poke(k);
    k = (k + 7) % n;
    ::poll(fds.data(), fds.size(), -1);
    for (auto& f : fds)
      if (f.revents & POLLIN) benchmark::DoNotOptimize(::read(f.fd, &c, 1));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_wait_poll)->Arg(64)->Arg(1024);

void BM_wait_epoll(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  many_pairs mp(n);
  const int ep = ::epoll_create1(0);
  for (int i = 0; i < n; ++i) {
    epoll_event ev{EPOLLIN, {.fd = mp.pairs[static_cast<std::size_t>(i)]->b}};
    ::epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
  }
  std::array<epoll_event, 16> evs;
  int k = 0;
  char c;
  for (auto _ : state) {
    mp.poke(k);
    k = (k + 7) % n;
    const int r = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), -1);
    for (int i = 0; i < r; ++i) benchmark::DoNotOptimize(::read(evs[static_cast<std::size_t>(i)].data.fd, &c, 1));
  }
  ::close(ep);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_wait_epoll)->Arg(64)->Arg(1024);

#ifdef INLET_HAVE_URING
// io_uring: a recv outstanding on every connection; the completion carries the data, so
// there is no separate read; the consumed recv is re-armed and submitted with the wait.
void BM_wait_io_uring(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  many_pairs mp(n);
  io_uring ring;
  if (io_uring_queue_init(static_cast<unsigned>(n) * 2, &ring, 0) != 0) {
    state.SkipWithError("io_uring_queue_init failed");
    return;
  }
  std::vector<char> bufs(static_cast<std::size_t>(n) * 16);
  auto arm = [&](int i) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_recv(sqe, mp.pairs[static_cast<std::size_t>(i)]->b, &bufs[static_cast<std::size_t>(i) * 16], 16, 0);
    io_uring_sqe_set_data64(sqe, static_cast<unsigned long long>(i));
  };
  for (int i = 0; i < n; ++i) arm(i);
  io_uring_submit(&ring);
  int k = 0;
  for (auto _ : state) {
    mp.poke(k);
    k = (k + 7) % n;
    io_uring_cqe* cqe = nullptr;
    io_uring_wait_cqe(&ring, &cqe);
    const int i = static_cast<int>(io_uring_cqe_get_data64(cqe));
    benchmark::DoNotOptimize(std::as_const(cqe->res));
    io_uring_cqe_seen(&ring, cqe);
    arm(i);
    io_uring_submit(&ring);
  }
  io_uring_queue_exit(&ring);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_wait_io_uring)->Arg(64)->Arg(1024);
#endif

}  // namespace
