#include "inlet/load/proc.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace inlet::load {

namespace {
bool to_u64(std::string_view s, std::uint64_t& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

bool slurp(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}
}  // namespace

std::optional<proc_stat> parse_proc_stat(std::string_view text) {
  const std::size_t rp = text.rfind(')');
  if (rp == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(rp + 1);
  // Field 3 (state) is the first after ')'. We need 14 utime, 15 stime, 20 threads, 24 rss.
  proc_stat st;
  int field = 2;
  int found = 0;
  while (!rest.empty()) {
    const std::size_t b = rest.find_first_not_of(" \n");
    if (b == std::string_view::npos) break;
    rest.remove_prefix(b);
    const std::size_t e = std::min(rest.find_first_of(" \n"), rest.size());
    const std::string_view tok = rest.substr(0, e);
    rest.remove_prefix(e);
    ++field;
    std::uint64_t* dst = field == 14 ? &st.utime_ticks : field == 15 ? &st.stime_ticks
                       : field == 20 ? &st.threads : field == 24 ? &st.rss_pages : nullptr;
    if (dst) {
      if (!to_u64(tok, *dst)) return std::nullopt;
      ++found;
    }
    if (field == 24) break;
  }
  if (found != 4) return std::nullopt;
  return st;
}

std::optional<proc_ctx> parse_proc_status(std::string_view text) {
  proc_ctx c;
  int found = 0;
  auto value_of = [&](std::string_view key, std::uint64_t& out) {
    const std::size_t p = text.find(key);
    if (p == std::string_view::npos || (p != 0 && text[p - 1] != '\n')) return;
    std::string_view v = text.substr(p + key.size());
    v.remove_prefix(std::min(v.find_first_not_of(" \t"), v.size()));
    v = v.substr(0, std::min(v.find('\n'), v.size()));
    if (to_u64(v, out)) ++found;
  };
  value_of("voluntary_ctxt_switches:", c.voluntary);
  value_of("nonvoluntary_ctxt_switches:", c.involuntary);
  if (found != 2) return std::nullopt;
  return c;
}

proc_summary summarize(const proc_sample& first, const proc_sample& last,
                       std::uint64_t rss_max_pages, std::uint64_t threads_max,
                       long ticks_per_second, long page_size) {
  proc_summary s;
  s.valid = true;
  s.seconds = last.t_seconds - first.t_seconds;
  const double tps = static_cast<double>(std::max(1L, ticks_per_second));
  auto delta = [](std::uint64_t a, std::uint64_t b) { return b >= a ? b - a : 0; };
  s.cpu_user_s = delta(first.stat.utime_ticks, last.stat.utime_ticks) / tps;
  s.cpu_sys_s = delta(first.stat.stime_ticks, last.stat.stime_ticks) / tps;
  s.cpu_percent = s.seconds > 0 ? 100.0 * (s.cpu_user_s + s.cpu_sys_s) / s.seconds : 0.0;
  const auto ps = static_cast<std::uint64_t>(std::max(1L, page_size));
  s.rss_max_bytes = std::max(rss_max_pages, last.stat.rss_pages) * ps;
  s.rss_last_bytes = last.stat.rss_pages * ps;
  s.threads_max = std::max(threads_max, last.stat.threads);
  s.voluntary_ctx = delta(first.ctx.voluntary, last.ctx.voluntary);
  s.involuntary_ctx = delta(first.ctx.involuntary, last.ctx.involuntary);
  return s;
}

proc_sampler::proc_sampler(int pid) : pid_(pid), t0_(now_seconds()) {}

bool proc_sampler::sample() {
  const std::string base = "/proc/" + std::to_string(pid_);
  std::string text;
  if (!slurp(base + "/stat", text)) return false;
  const auto st = parse_proc_stat(text);
  if (!st) return false;
  proc_sample s;
  s.t_seconds = now_seconds() - t0_;
  s.stat = *st;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(base + "/task", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!slurp(it->path().string() + "/status", text)) continue;  // thread exited
    if (const auto c = parse_proc_status(text)) {
      s.ctx.voluntary += c->voluntary;
      s.ctx.involuntary += c->involuntary;
    }
  }
  rss_max_ = std::max(rss_max_, s.stat.rss_pages);
  threads_max_ = std::max(threads_max_, s.stat.threads);
  if (!first_) first_ = s;
  last_ = s;
  return true;
}

proc_summary proc_sampler::summary() const {
  if (!first_ || !last_) return {};
  return summarize(*first_, *last_, rss_max_, threads_max_, sysconf(_SC_CLK_TCK),
                   sysconf(_SC_PAGESIZE));
}

}  // namespace inlet::load
