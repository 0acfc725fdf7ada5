// Memory held by idle connection buffers (buffer only, no sockets): N
// connections each receive "EHLO ...\r\n" into their buffer, the command is
// parsed and consumed, then the connection goes idle. Reported: RSS growth
// per connection, for
//   inlet_release : inlet::buffer::streambuf, release_if_empty() when drained
//   inlet_keep    : inlet::buffer::streambuf, no release (fragment kept)
//   asio_streambuf: boost::asio::streambuf (keeps its storage)
//   dynamic_string: asio::dynamic_buffer(std::string) (keeps its capacity)
// Each contender runs in a fresh child process so RSS is not shared.
// The inletd figure (sockets, session state, coroutine frames) is separate.
#include <inlet/buffer/streambuf.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/streambuf.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
const std::string ehlo = "EHLO client.example.org\r\n";

long rss_kib() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

template <class Conn, class Fill>
double run(std::size_t n, Fill fill) {
  std::vector<std::unique_ptr<Conn>> conns;
  conns.reserve(n);
  long before = rss_kib();
  for (std::size_t i = 0; i < n; ++i) {
    conns.push_back(std::make_unique<Conn>());
    fill(*conns.back());
  }
  long after = rss_kib();
  return static_cast<double>(after - before) * 1024.0 / static_cast<double>(n);
}

double measure(const std::string& which, std::size_t n) {
  if (which == "inlet_release" || which == "inlet_keep") {
    bool release = which == "inlet_release";
    return run<inlet::buffer::streambuf>(n, [&](inlet::buffer::streambuf& sb) {
      auto b = sb.prepare(4096);
      sb.commit(asio::buffer_copy(b, asio::buffer(ehlo)));
      std::size_t end = sb.find("\r\n");
      sb.consume(end + 2);
      if (release) sb.release_if_empty();
    });
  }
  if (which == "asio_streambuf") {
    return run<asio::streambuf>(n, [&](asio::streambuf& sb) {
      auto b = sb.prepare(4096);
      sb.commit(asio::buffer_copy(b, asio::buffer(ehlo)));
      sb.consume(sb.size());
    });
  }
  return run<std::string>(n, [&](std::string& s) {
    auto d = asio::dynamic_buffer(s);
    d.grow(4096);
    std::size_t got = asio::buffer_copy(d.data(0, 4096), asio::buffer(ehlo));
    d.shrink(4096 - got);
    d.consume(d.size());
  });
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 10000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--connections=", 14) == 0) n = std::strtoull(argv[i] + 14, nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--connections=N]\n", argv[0]);
      return 2;
    }
  }
  if (n == 0) n = 1;
  const char* names[] = {"inlet_release", "inlet_keep", "asio_streambuf", "dynamic_string"};
  std::printf("idle connection buffers after one EHLO read (read size 4096), %zu connections\n", n);
  std::printf("%-16s %18s\n", "buffer", "bytes/connection");
  for (const char* name : names) {
    int fd[2];
    if (pipe(fd) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      close(fd[0]);
      double v = measure(name, n);
      if (write(fd[1], &v, sizeof v) != sizeof v) _exit(1);
      _exit(0);
    }
    close(fd[1]);
    double v = -1;
    if (read(fd[0], &v, sizeof v) != sizeof v) v = -1;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    std::printf("%-16s %18.0f\n", name, v);
  }
  return 0;
}
