// inlet-load: SMTP load generator. See docs/load.md.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "inlet/load/report.hpp"
#include "inlet/load/runner.hpp"

namespace {
constexpr double hard_duration_cap_s = 3600;  // no run lasts longer, whatever the flags
constexpr double count_only_cap_s = 300;      // --count without --duration

bool split_host_port(const std::string& s, std::string& host, std::uint16_t& port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  host = s.substr(0, colon);
  const int p = std::atoi(s.c_str() + colon + 1);
  if (p <= 0 || p > 65535) return false;
  port = static_cast<std::uint16_t>(p);
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace inlet::load;
  CLI::App app{"inlet-load: an SMTP load generator (closed or open loop, bounded)"};
  run_config cfg;
  std::string target = "127.0.0.1:25", corpus_dir, corpus_ext, mbox;
  synthetic_params synth;
  double duration = 0;
  bool no_pipelining = false, json = false, quiet = false;
  int server_pid = 0;
  app.add_option("--target,-t", target, "server HOST:PORT")->capture_default_str();
  app.add_option("--connections,-c", cfg.connections, "concurrent connections (1..20000)")
      ->check(CLI::Range(1u, 20000u))->capture_default_str();
  app.add_option("--threads,-j", cfg.threads, "client threads, one io_context each")
      ->check(CLI::Range(1u, 256u))->capture_default_str();
  app.add_option("--sources", cfg.sources, "source addresses 127.0.0.N.. to spread connections over")
      ->check(CLI::Range(1u, 65000u))->capture_default_str();
  app.add_option("--messages-per-connection,-m", cfg.session.messages_per_connection,
                 "QUIT and reconnect after this many messages (0: keep the connection)")
      ->capture_default_str();
  app.add_flag("--no-pipelining", no_pipelining, "one command per round trip");
  app.add_flag("--bdat", cfg.session.bdat, "send with BDAT (CHUNKING) instead of DATA");
  bool tls_insecure = false;
  app.add_flag("--starttls", cfg.session.starttls, "STARTTLS on every connection (fails if not offered)");
  auto* verify = app.add_flag("--tls-verify", cfg.tls.verify,
                              "verify the server certificate chain and name (default: not verified)");
  app.add_flag("--tls-insecure", tls_insecure, "do not verify the certificate (the default)")
      ->excludes(verify);
  app.add_option("--tls-ca", cfg.tls.ca_file, "PEM CA bundle for --tls-verify (default: system CAs)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-name", cfg.tls.server_name,
                 "SNI and, with --tls-verify, the expected name (default: the target host)");
  app.add_option("--duration,-d", duration, "stop after this many seconds (default 10; 300 with --count)")
      ->check(CLI::Range(0.001, hard_duration_cap_s));
  app.add_option("--count,-n", cfg.count, "stop after this many messages (ok + failed)");
  app.add_option("--rate,-r", cfg.rate, "open loop: total messages/s (0: closed loop)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option("--corpus", corpus_dir, "directory of messages (every regular file)");
  app.add_option("--corpus-ext", corpus_ext, "only files with this extension, e.g. .txt");
  app.add_option("--mbox", mbox, "mbox file of messages");
  app.add_option("--synthetic-count", synth.count, "distinct synthetic messages")->capture_default_str();
  app.add_option("--size-mean", synth.mean_bytes, "synthetic: mean size in bytes")->capture_default_str();
  app.add_option("--size-sigma", synth.sigma, "synthetic: lognormal sigma")->capture_default_str();
  app.add_option("--seed", synth.seed, "synthetic: seed")->capture_default_str();
  app.add_option("--server-pid", server_pid, "sample this process from /proc during the run");
  app.add_option("--from", cfg.from, "envelope sender")->capture_default_str();
  app.add_option("--to", cfg.to, "envelope recipient (a pattern with {n} with --to-count)")
      ->capture_default_str();
  app.add_option("--to-count", cfg.to_count,
                 "spread recipients over this many mailboxes (--to with {n} = 0..N-1, or its "
                 "local part numbered)")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  app.add_option("--rcpts-per-message", cfg.rcpts_per_message,
                 "recipients per message: consecutive mailboxes of --to-count")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_option("--helo", cfg.helo, "EHLO name")->capture_default_str();
  app.add_flag("--json", json, "print the result as JSON");
  app.add_flag("--quiet,-q", quiet, "no progress line");
  CLI11_PARSE(app, argc, argv);

  cfg.session.pipelining = !no_pipelining;
  if (!split_host_port(target, cfg.host, cfg.port)) {
    std::cerr << "inlet-load: --target must be HOST:PORT\n";
    return 1;
  }
  if (cfg.tls.server_name.empty()) cfg.tls.server_name = cfg.host;
  cfg.duration_s = duration > 0 ? duration : (cfg.count ? count_only_cap_s : 10.0);

  std::vector<std::string> raw;
  std::string source = "synthetic";
  std::error_code ec;
  if (!corpus_dir.empty()) {
    raw = load_directory(corpus_dir, ec, corpus_ext);
    source = "dir:" + corpus_dir;
  } else if (!mbox.empty()) {
    raw = load_mbox(mbox, ec);
    source = "mbox:" + mbox;
  } else {
    raw = synthesize(synth);
  }
  if (ec || raw.empty()) {
    std::cerr << "inlet-load: corpus: " << (ec ? ec.message() : "empty") << "\n";
    return 1;
  }
  const prepared_corpus corpus(raw);
  raw.clear();
  raw.shrink_to_fit();

  std::optional<proc_sampler> server, self;
  if (server_pid > 0) {
    server.emplace(server_pid);
    if (!server->sample()) {
      std::cerr << "inlet-load: cannot read /proc/" << server_pid << "\n";
      server.reset();
    }
  }
  self.emplace(static_cast<int>(::getpid()));
  self->sample();

  std::optional<runner> run_holder;
  try {
    run_holder.emplace(cfg, corpus);
  } catch (const std::exception& e) {
    std::cerr << "inlet-load: " << e.what() << "\n";
    return 1;
  }
  runner& run = *run_holder;
  const bool progress = !json && !quiet && ::isatty(STDOUT_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  std::uint64_t last_ok = 0;
  run.start();
  while (!run.done()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(1)) continue;
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    if (server) server->sample();
    self->sample();
    if (progress) {
      const auto s = run.live();
      std::fputs(progress_line(std::chrono::duration<double>(now - t0).count(), s.ok, s.failed,
                               s.bytes, s.connections, (s.ok - last_ok) / dt).c_str(), stdout);
      std::fflush(stdout);
      last_ok = s.ok;
    }
  }
  const run_result result = run.wait();
  if (server) server->sample();
  self->sample();
  if (progress) std::fputs("\n", stdout);

  report rep;
  rep.cfg = &cfg;
  rep.corpus = corpus.stats();
  rep.corpus_source = source;
  rep.result = &result;
  if (server) {
    rep.server = server->summary();
    rep.server_pid = server_pid;
  }
  rep.client = self->summary();
  if (json) std::cout << boost::json::serialize(to_json(rep)) << std::endl;
  else std::cout << to_text(rep);
  return result.messages_ok > 0 ? 0 : 2;
}
