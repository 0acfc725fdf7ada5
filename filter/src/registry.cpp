#include "inlet/filter/registry.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

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
    auto terms = load_terms(path_);
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

std::error_code filter_registry::watch() {
  std::lock_guard lock(watch_mu_);
  if (watcher_.joinable()) return {};
  int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (in < 0) return {errno, std::system_category()};
  std::filesystem::path dir = path_.parent_path();
  if (dir.empty()) dir = ".";
  // Watch the directory: editors and deploy tools replace the file by rename.
  // Not IN_CREATE: a new file is empty until written, and IN_CLOSE_WRITE follows anyway.
  if (inotify_add_watch(in, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
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
  watcher_ = std::thread([this, in, stop] { watch_loop(in, stop); });
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

void filter_registry::watch_loop(int in, int stop) {
  const std::string name = path_.filename().string();
  alignas(inotify_event) std::array<char, 4096> buf;
  for (;;) {
    pollfd fds[2] = {{in, POLLIN, 0}, {stop, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    bool ours = false;
    for (;;) {
      ssize_t n = ::read(in, buf.data(), buf.size());
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + off);
        if (ev->len > 0 && name == ev->name) ours = true;
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
    if (!ours) continue;
    reload_status st = reload();
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
