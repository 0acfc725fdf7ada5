// smtp_sink_server: inlet::smtp::server with a discarding deliver hook, for
// end-to-end comparisons against Postfix's smtp-sink under smtp-source
// (see bench/run_smtp_source.sh and docs/benchmarks/smtp.md).
//
//   smtp_sink_server [--listen HOST:PORT] [--model coro|async-1n|async-nn|async-n2n|thread]
//                    [--threads N] [--reads-per-event N] [--seconds S]
// Runs until SIGINT/SIGTERM or S seconds (bounded: S defaults to 60), then
// prints one JSON line with the server's counters.
#include <inlet/smtp/server.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  inlet::smtp::server_config cfg;
  cfg.session.hostname = "sink.test";
  cfg.session.max_message_size = 64u << 20;
  double seconds = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--listen") {
      auto c = v.rfind(':');
      cfg.listen = {inlet::smtp::listen_endpoint{v.substr(0, c),
                                                 static_cast<std::uint16_t>(std::atoi(v.c_str() + c + 1)), false}};
    } else if (k == "--model") {
      if (!inlet::smtp::parse_io_model(v, cfg.model)) return 2;
    } else if (k == "--threads") {
      cfg.threads = static_cast<unsigned>(std::atoi(v.c_str()));
    } else if (k == "--reads-per-event") {
      cfg.reads_per_event = static_cast<unsigned>(std::atoi(v.c_str()));
    } else if (k == "--seconds") {
      seconds = std::atof(v.c_str());
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::atomic<std::uint64_t> bytes{0};
  inlet::smtp::server srv(cfg, [&](inlet::smtp::received_message&& m, inlet::smtp::delivery_callback cb) {
    bytes.fetch_add(m.body.size(), std::memory_order_relaxed);
    cb({inlet::smtp::delivery_status::accepted("0"), {}});
  });
  if (auto ec = srv.start()) {
    std::fprintf(stderr, "start: %s\n", ec.message().c_str());
    return 1;
  }
  auto ep = srv.local_endpoints()[0];
  std::fprintf(stderr, "listening on %s:%u model=%s\n", ep.address.c_str(), ep.port,
               std::string(inlet::smtp::to_string(cfg.model)).c_str());
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_stop && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  srv.stop();
  srv.wait();
  auto s = srv.stats();
  std::printf("{\"model\":\"%s\",\"messages\":%llu,\"bytes\":%llu,\"connections\":%llu}\n",
              std::string(inlet::smtp::to_string(cfg.model)).c_str(),
              static_cast<unsigned long long>(s.messages_delivered),
              static_cast<unsigned long long>(bytes.load()),
              static_cast<unsigned long long>(s.connections_accepted));
  return 0;
}
