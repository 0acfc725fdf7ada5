#include "inlet/load/report.hpp"

#include <cstdio>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

namespace inlet::load {

namespace {
boost::json::object latency_json(const histogram& h) {
  auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  boost::json::object o;
  o["count"] = h.count();
  o["mean_us"] = h.mean() / 1000.0;
  o["min_us"] = us(h.min());
  o["p50_us"] = us(h.percentile(0.50));
  o["p90_us"] = us(h.percentile(0.90));
  o["p99_us"] = us(h.percentile(0.99));
  o["p999_us"] = us(h.percentile(0.999));
  o["max_us"] = us(h.max());
  return o;
}

boost::json::object proc_json(const proc_summary& p) {
  boost::json::object o;
  o["seconds"] = p.seconds;
  o["cpu_user_s"] = p.cpu_user_s;
  o["cpu_sys_s"] = p.cpu_sys_s;
  o["cpu_percent"] = p.cpu_percent;
  o["rss_max_bytes"] = p.rss_max_bytes;
  o["rss_last_bytes"] = p.rss_last_bytes;
  o["threads_max"] = p.threads_max;
  o["voluntary_ctx"] = p.voluntary_ctx;
  o["involuntary_ctx"] = p.involuntary_ctx;
  return o;
}

double per_second(double v, double s) { return s > 0 ? v / s : 0.0; }
}  // namespace

boost::json::object to_json(const report& r) {
  const run_config& c = *r.cfg;
  const run_result& res = *r.result;
  boost::json::object o;
  o["schema"] = "inlet-load/1";
  boost::json::object cfg;
  cfg["target"] = c.host + ":" + std::to_string(c.port);
  cfg["threads"] = c.threads;
  cfg["connections"] = c.connections;
  cfg["sources"] = c.sources;
  cfg["pipelining"] = c.session.pipelining;
  cfg["bdat"] = c.session.bdat;
  cfg["starttls"] = c.session.starttls;
  cfg["messages_per_connection"] = c.session.messages_per_connection;
  cfg["duration_s"] = c.duration_s;
  cfg["count"] = c.count;
  cfg["mode"] = c.rate > 0 ? "open" : "closed";
  cfg["rate"] = c.rate;
  o["config"] = std::move(cfg);
  boost::json::object corpus;
  corpus["source"] = r.corpus_source;
  corpus["messages"] = r.corpus.messages;
  corpus["mean_bytes"] = r.corpus.mean_raw_bytes;
  o["corpus"] = std::move(corpus);
  o["seconds"] = res.seconds;
  o["messages_ok"] = res.messages_ok;
  o["messages_failed"] = res.messages_failed;
  o["bytes_ok"] = res.bytes_ok;
  o["messages_per_s"] = per_second(static_cast<double>(res.messages_ok), res.seconds);
  o["mb_per_s"] = per_second(static_cast<double>(res.bytes_ok) / 1e6, res.seconds);
  o["connects"] = res.connects;
  o["connect_errors"] = res.connect_errors;
  o["disconnects"] = res.disconnects;
  o["extension_fallbacks"] = res.pipelining_fallbacks;
  o["tls_handshakes"] = res.tls_handshakes;
  boost::json::object errs;
  for (const auto& [k, v] : res.errors) errs[k] = v;
  o["errors"] = std::move(errs);
  o["latency"] = latency_json(res.latency);
  o["service_latency"] = latency_json(res.service);
  if (r.server) {
    auto s = proc_json(*r.server);
    s["pid"] = r.server_pid;
    o["server"] = std::move(s);
  }
  if (r.client) o["client"] = proc_json(*r.client);
  return o;
}

namespace {
std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}
}  // namespace

std::string to_text(const report& r) {
  const run_config& c = *r.cfg;
  const run_result& res = *r.result;
  const histogram& h = res.latency;
  auto ms = [](std::uint64_t ns) { return fmt("%.3f", static_cast<double>(ns) / 1e6); };
  std::string t;
  t += "target " + c.host + ":" + std::to_string(c.port) + ", " + std::to_string(c.connections) +
       " connections, " + std::to_string(c.threads) + " threads, " +
       (c.rate > 0 ? "open loop at " + fmt("%.0f", c.rate) + "/s" : std::string("closed loop")) +
       ", pipelining " + (c.session.pipelining ? "on" : "off") + ", bdat " +
       (c.session.bdat ? "on" : "off") + "\n";
  t += "corpus " + r.corpus_source + ": " + std::to_string(r.corpus.messages) +
       " messages, mean " + fmt("%.0f", r.corpus.mean_raw_bytes) + " bytes\n";
  t += "messages ok " + std::to_string(res.messages_ok) + ", failed " +
       std::to_string(res.messages_failed) + " in " + fmt("%.2f", res.seconds) + " s: " +
       fmt("%.0f", per_second(static_cast<double>(res.messages_ok), res.seconds)) + " msg/s, " +
       fmt("%.1f", per_second(static_cast<double>(res.bytes_ok) / 1e6, res.seconds)) + " MB/s\n";
  t += "latency ms (" + std::string(c.rate > 0 ? "from intended send time" : "from data start") +
       "): p50 " + ms(h.percentile(0.5)) + "  p90 " + ms(h.percentile(0.9)) + "  p99 " +
       ms(h.percentile(0.99)) + "  p99.9 " + ms(h.percentile(0.999)) + "  max " + ms(h.max()) +
       "\n";
  t += "connects " + std::to_string(res.connects) + ", connect errors " +
       std::to_string(res.connect_errors) + ", disconnects " + std::to_string(res.disconnects) +
       "\n";
  for (const auto& [k, v] : res.errors) t += "  error " + k + ": " + std::to_string(v) + "\n";
  auto proc_line = [&](const char* who, const proc_summary& p) {
    t += std::string(who) + ": cpu " + fmt("%.0f", p.cpu_percent) + "% (user " +
         fmt("%.2f", p.cpu_user_s) + " s, sys " + fmt("%.2f", p.cpu_sys_s) + " s), rss max " +
         fmt("%.1f", static_cast<double>(p.rss_max_bytes) / 1048576.0) + " MiB, threads " +
         std::to_string(p.threads_max) + ", ctx switches vol " + std::to_string(p.voluntary_ctx) +
         " invol " + std::to_string(p.involuntary_ctx) + "\n";
  };
  if (r.server) proc_line(("server pid " + std::to_string(r.server_pid)).c_str(), *r.server);
  if (r.client) proc_line("client (inlet-load)", *r.client);
  return t;
}

std::string progress_line(double seconds, std::uint64_t ok, std::uint64_t failed,
                          std::uint64_t bytes, std::uint64_t connections, double rate_now) {
  char b[160];
  std::snprintf(b, sizeof b, "\r%6.1fs  ok %llu  failed %llu  %.0f msg/s  %.1f MB total  conns %llu   ",
                seconds, static_cast<unsigned long long>(ok), static_cast<unsigned long long>(failed),
                rate_now, static_cast<double>(bytes) / 1e6, static_cast<unsigned long long>(connections));
  return b;
}

}  // namespace inlet::load
