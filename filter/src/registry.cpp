#include "inlet/filter/registry.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace inlet::filter {

filter_registry::filter_registry(std::filesystem::path path, filter_options opts)
    : path_(std::move(path)), opts_(opts) {
  auto empty = filter::compile(term_list{}, opts_);
  current_ = std::move(*empty);  // an empty list always compiles
}

filter_registry::~filter_registry() { stop_watching(); }

std::shared_ptr<const filter> filter_registry::current() const {
  std::lock_guard lock(mu_);
  return current_;
}

void filter_registry::on_reload(std::function<void(const reload_status&)> cb) {
  std::lock_guard lock(mu_);
  callback_ = std::move(cb);
}

reload_status filter_registry::reload() {
  std::lock_guard serial(reload_mu_);
  return install(load_terms(path_));
}

// Compiles a parsed list and swaps it in; the caller holds reload_mu_.
reload_status filter_registry::install(result<term_list> terms) {
  reload_status st;
  auto fail = [&](term_error e) {
    st.ok = false;
    st.error = std::move(e);
    auto cur = current();
    st.terms = cur->terms().size();
    st.generation = cur->generation();
    return st;
  };
  try {
    if (!terms) return fail(terms.error());
    auto compiled = filter::compile(std::move(*terms), opts_);
    if (!compiled) return fail(compiled.error());
    std::shared_ptr<const filter> next = std::move(*compiled);
    st.ok = true;
    st.terms = next->terms().size();
    st.generation = next->generation();
    std::shared_ptr<const filter> old;
    {
      std::lock_guard lock(mu_);
      old = std::exchange(current_, std::move(next));
    }
    // `old` is released here, outside the lock (scans may still hold it).
  } catch (const std::bad_alloc&) {
    return fail(term_error{0, std::make_error_code(std::errc::not_enough_memory), {}});
  }
  return st;
}

std::error_code filter_registry::watch(std::chrono::milliseconds settle) {
  std::lock_guard lock(watch_mu_);
  if (watcher_.joinable()) return {};
  int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (in < 0) return {errno, std::system_category()};
  std::filesystem::path dir = path_.parent_path();
  if (dir.empty()) dir = ".";
  // Watch the directory: editors and deploy tools replace the file by rename.
  // Not IN_CREATE: a new file is empty until written, and IN_CLOSE_WRITE follows anyway.
  // IN_MODIFY only delays a pending reload (a writer is still at work).
  if (inotify_add_watch(in, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_MODIFY) < 0) {
    std::error_code ec(errno, std::system_category());
    ::close(in);
    return ec;
  }
  int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop < 0) {
    std::error_code ec(errno, std::system_category());
    ::close(in);
    return ec;
  }
  stop_fd_ = stop;
  settle = std::max(settle, std::chrono::milliseconds(1));
  watcher_ = std::thread([this, in, stop, settle] { watch_loop(in, stop, settle); });
  return {};
}

void filter_registry::stop_watching() noexcept {
  std::lock_guard lock(watch_mu_);
  if (!watcher_.joinable()) return;
  std::uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  watcher_.join();
  ::close(stop_fd_);
  stop_fd_ = -1;
}

namespace {

using watch_clock = std::chrono::steady_clock;

// What one read of the term file saw: its bytes and identity. Two reads that
// agree on all of it saw the same finished file.
struct file_snapshot {
  bool ok = false;
  std::string text;
  struct stat st{};
  bool operator==(const file_snapshot& o) const {
    return ok && o.ok && text == o.text && st.st_ino == o.st.st_ino && st.st_size == o.st.st_size &&
           st.st_mtim.tv_sec == o.st.st_mtim.tv_sec && st.st_mtim.tv_nsec == o.st.st_mtim.tv_nsec;
  }
};

file_snapshot read_file(const std::filesystem::path& path) {
  file_snapshot s;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  if (::fstat(fd, &s.st) == 0) {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) s.text.append(buf, static_cast<std::size_t>(n));
    s.ok = n == 0;
  }
  ::close(fd);
  return s;
}

}  // namespace

// Events for the file (any write, close-after-write or rename) restart a quiet
// period; a reload is due once a close or rename was seen and the file stayed
// quiet for `settle`. Then it is read twice, settle/4 apart: installed when
// both reads agree and no event came in between, otherwise the wait starts
// over. An unreadable file (between an unlink and a rename) is retried the same way.
void filter_registry::watch_loop(int in, int stop, std::chrono::milliseconds settle) {
  const std::string name = path_.filename().string();
  alignas(inotify_event) std::array<char, 4096> buf;
  bool due = false;                    // a close or rename was seen, not yet installed
  watch_clock::time_point quiet_at;    // the last event for the file + settle
  std::optional<file_snapshot> first;  // the first of the two reads
  for (;;) {
    int timeout = -1;
    if (due) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(quiet_at - watch_clock::now());
      timeout = static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count()));
    }
    pollfd fds[2] = {{in, POLLIN, 0}, {stop, POLLIN, 0}};
    int r = ::poll(fds, 2, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    bool touched = false;
    for (;;) {
      ssize_t n = ::read(in, buf.data(), buf.size());
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + off);
        if (ev->len > 0 && name == ev->name) {
          touched = true;
          if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) due = true;
        }
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
    if (touched) {
      quiet_at = watch_clock::now() + settle;
      first.reset();
      continue;
    }
    if (!due || watch_clock::now() < quiet_at) continue;
    if (!first) {
      first = read_file(path_);
      quiet_at = watch_clock::now() + std::max(settle / 4, std::chrono::milliseconds(1));
      continue;
    }
    file_snapshot second = read_file(path_);
    if (!(second == *first)) {
      first.reset();
      quiet_at = watch_clock::now() + settle;
      continue;
    }
    due = false;
    first.reset();
    reload_status st;
    {
      std::lock_guard serial(reload_mu_);
      st = install(parse_terms(second.text));
    }
    std::function<void(const reload_status&)> cb;
    {
      std::lock_guard lock(mu_);
      cb = callback_;
    }
    if (cb) cb(st);
  }
  ::close(in);
}

}  // namespace inlet::filter
