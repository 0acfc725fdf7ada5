// inletd: the server. Parses flags, builds the store, the filter, the SMTP server and the
// HTTP server, then waits for signals on the main thread (sigwait): SIGINT/SIGTERM stop
// gracefully, SIGHUP reloads the filter's term list.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <inlet/http/server.hpp>
#include <inlet/pop3/server.hpp>
#include <inlet/smtp/server.hpp>
#include <inlet/store/file_store.hpp>
#include <inlet/store/memory_store.hpp>
#include <memory>
#include <optional>
#include <string>

#include <inlet/mail/content_filter.hpp>
#include <inlet/mail/ingest.hpp>
#include <inlet/mail/search_text.hpp>
#include <inlet/mail/summary.hpp>

#include "config.hpp"
#include "outbound_service.hpp"
#include "subcommands.hpp"
#ifdef INLETD_IO_URING
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#endif

namespace {

#ifdef INLETD_IO_URING
// inletd-uring: Asio would fail deep inside io_context construction; say it plainly.
bool io_uring_usable() {
  io_uring_params p{};
  long fd = ::syscall(__NR_io_uring_setup, 4, &p);
  if (fd < 0) {
    std::fprintf(stderr,
                 "inletd-uring: this kernel refuses io_uring (io_uring_setup: %s); "
                 "use inletd (epoll) instead\n",
                 std::strerror(errno));
    return false;
  }
  ::close(static_cast<int>(fd));
  return true;
}
constexpr const char* reactor = "io_uring";
#else
constexpr const char* reactor = "epoll";
#endif

// Both hooks, `first` (chaos) answering before `then`.
inlet::smtp::policy_hook chain_policies(inlet::smtp::policy_hook first,
                                        inlet::smtp::policy_hook then) {
  if (!first) return then;
  return [first = std::move(first), then = std::move(then)](
             inlet::smtp::policy_stage stage,
             std::string_view arg) -> std::optional<inlet::smtp::delivery_status> {
    if (auto r = first(stage, arg)) return r;
    return then(stage, arg);
  };
}

std::string endpoint_text(const std::string& host, std::uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

// The PostgreSQL store: connects and migrates in the background; inletd waits a few
// seconds for its shards, then starts anyway (mail for a shard that is down gets 451
// until it is back; the store's health says which).
std::optional<int> start_pg_store(const inletd::config& cfg,
                                  std::unique_ptr<inlet::store::store>& out,
                                  std::function<void(std::string&)>& metrics) {
  std::unique_ptr<inlet::store::pg_store> pg;
  try {
    pg = std::make_unique<inlet::store::pg_store>(cfg.store.pg);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "inletd: PostgreSQL store: %s\n", e.what());
    return 2;
  }
  const bool ready = pg->wait_ready(std::chrono::seconds(5));
  if (auto why = pg->configuration_error(); !why.empty()) {
    std::fprintf(stderr, "inletd: PostgreSQL store refused: %s\n", why.c_str());
    return 2;
  }
  if (!ready)
    std::fprintf(stderr, "inletd: PostgreSQL store not ready yet: %s\n",
                 pg->health().detail.c_str());
  metrics = [p = pg.get()](std::string& o) { p->append_metrics(o); };
  out = std::move(pg);
  return std::nullopt;
}

// The file store (--database): opened, checked and (a Mailpit database) imported before
// inletd listens; a file it refuses stops inletd with the reason.
std::optional<int> start_file_store(const inletd::config& cfg,
                                    std::unique_ptr<inlet::store::store>& out) {
  auto fc = cfg.store.file;
  // A Mailpit database's messages get the summary and search text inletd's own pipeline
  // gives a message it receives.
  fc.summarize = [](std::string_view raw, inlet::store::summary& s) {
    inlet::mail::analyze(inlet::mail::thread_parser().parse(raw), {}, s, nullptr);
  };
  fc.build_search_text = &inlet::mail::search_text_of;
  try {
    out = std::make_unique<inlet::store::file_store>(std::move(fc));
  } catch (const inlet::store::file_store_error& e) {
    std::fprintf(stderr, "inletd: --database: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inletd: --database %s: %s\n", cfg.store.file.path.c_str(), e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace


int main(int argc, char** argv) {
  if (auto rc = inletd::run_subcommand(argc, argv)) return *rc;  // sendmail, readyz, ...
  inletd::config cfg;
  if (auto rc = inletd::parse_config(argc, argv, cfg)) return *rc;
  if (!cfg.log.file.empty()) {  // Mailpit's --log-file: the whole log goes there
    if (!std::freopen(cfg.log.file.c_str(), "a", stdout)) {
      std::fprintf(stderr, "inletd: --log-file %s: %s\n", cfg.log.file.c_str(),
                   std::strerror(errno));
      return 2;
    }
    ::dup2(::fileno(stdout), STDERR_FILENO);
  }
#ifdef INLETD_IO_URING
  if (!io_uring_usable()) return 1;
#endif

  // Signals are taken by sigwait() on this thread only: block them before any thread
  // starts so every thread inherits the mask. A closed peer must not kill us.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  const bool process_model = cfg.smtp.model == inlet::smtp::io_model::process;
  std::unique_ptr<inlet::store::memory_store> memory;
  std::unique_ptr<inlet::store::store> durable;  // the PostgreSQL or the file store
  std::function<void(std::string&)> store_metrics;
  switch (cfg.store.kind) {
    case inletd::store_kind::memory:
      memory = std::make_unique<inlet::store::memory_store>(cfg.store.memory);
      break;
    case inletd::store_kind::postgresql:
      if (auto rc = start_pg_store(cfg, durable, store_metrics)) return *rc;
      break;
    case inletd::store_kind::file:
      if (auto rc = start_file_store(cfg, durable)) return *rc;
      // Group commit on /metrics: messages per commit is what bounds throughput.
      store_metrics = [f = static_cast<inlet::store::file_store*>(durable.get())](std::string& o) {
        const auto b = f->batches();
        o += "# TYPE inlet_file_store_commits_total counter\ninlet_file_store_commits_total " +
             std::to_string(b.batches) + "\n# TYPE inlet_file_store_commit_jobs_total counter\n"
             "inlet_file_store_commit_jobs_total " + std::to_string(b.jobs) +
             "\n# TYPE inlet_file_store_commit_jobs_max gauge\ninlet_file_store_commit_jobs_max " +
             std::to_string(b.max_jobs) + "\n# TYPE inlet_file_store_wal_syncs_total counter\n"
             "inlet_file_store_wal_syncs_total " + std::to_string(b.syncs) + "\n";
      };
      break;
    case inletd::store_kind::sink:
      break;
  }
  inlet::store::store* backing =
      memory ? static_cast<inlet::store::store*>(memory.get()) : durable.get();

  std::unique_ptr<inlet::mail::content_filter> filter;
  if (!cfg.filter.terms.empty()) {
    std::string error;
    filter = inlet::mail::content_filter::create(
        cfg.filter.terms, cfg.filter.action == inletd::filter_action::reject,
        cfg.filter.threshold, error);
    if (!filter) {
      std::fprintf(stderr, "inletd: %s\n", error.c_str());
      return 2;
    }
  }

  // Webhooks (docs/outbound.md): handed each stored message, sent on a thread of their own.
  inletd::outbound_service outbound(cfg);
  inlet::mail::ingest_options popts = cfg.ingest;
  if (process_model && outbound.active()) {
    // Messages are parsed and dropped in forked children (--store sink): nothing is stored,
    // so nothing would ever be sent; refused rather than ignored.
    std::fprintf(stderr,
                 "inletd: webhooks, auto-relay and forwarding need stored messages: not with "
                 "--io-model process (which needs --store sink)\n");
    return 2;
  }
  if (outbound.active())
    popts.on_stored = [&outbound](const inlet::store::message_ptr& m) { outbound.on_stored(m); };
  inlet::mail::ingest pipe(backing, filter.get(), std::move(popts));

  // The HTTP API reads the store; with --store sink it serves an always-empty store.
  inlet::store::memory_store empty_store(inlet::store::memory_store_config{1, 1});
  inlet::store::store& readable = backing ? *backing : empty_store;
  // POP3 (docs/pop3.md): the store through its async interface, as the HTTP API reads it;
  // started after SMTP.
  std::unique_ptr<inlet::pop3::server> pop3;
  if (cfg.pop3.enabled) pop3 = std::make_unique<inlet::pop3::server>(cfg.pop3.server, readable);
  inlet::http::server_config hc = cfg.http;
  hc.api.extra_metrics = [&pipe, &store_metrics, &outbound, &pop3](std::string& out) {
    pipe.append_metrics(out);
    outbound.append_metrics(out);
    if (store_metrics) store_metrics(out);
    if (pop3) pop3->append_metrics(out);
  };
  if (backing)
    hc.api.submit = [&pipe](inlet::http::submission m,
                            std::function<void(std::error_code, std::string)> done) {
      pipe.submit(std::move(m), std::move(done));
    };
  hc.api.app_counters = [&pipe] {
    const auto& c = pipe.counters();
    inlet::http::app_counters a;
    a.smtp_accepted = c.stored.load(std::memory_order_relaxed);
    a.smtp_accepted_bytes = c.bytes.load(std::memory_order_relaxed);
    a.smtp_rejected = c.filter_rejected.load(std::memory_order_relaxed) +
                      c.store_errors.load(std::memory_order_relaxed);
    a.smtp_ignored = c.duplicates_ignored.load(std::memory_order_relaxed);
    return a;
  };
  hc.api.version = "inlet 0.1.0";
  // The PostgreSQL store's URIs may hold passwords: named, not shown.
  hc.api.database = cfg.store.name;
  for (const auto& ignored : cfg.ignored)
    std::fprintf(stderr, "inletd: Mailpit option %s is not supported by inletd yet; ignored\n",
                 ignored.c_str());
  for (const auto& d : cfg.deprecated)
    std::fprintf(stderr, "inletd: Mailpit's deprecated %s\n", d.c_str());
  inlet::http::server http(readable, hc);
  if (!process_model)
    outbound.start([&http](const inlet::store::stored_message& m) {
      return http.api().summary_json(m);
    });
  if (auto ec = http.start()) {
    std::fprintf(stderr, "inletd: http %s: %s\n", endpoint_text(hc.address, hc.port).c_str(),
                 ec.message().c_str());
    return 1;
  }

  // Mailpit's separate Prometheus listener: the same metrics, alone, on their own port.
  std::unique_ptr<inlet::http::server> metrics_http;
  if (cfg.prometheus_listen) {
    inlet::http::server_config mc = hc;
    mc.address = cfg.prometheus_listen->host;
    mc.port = cfg.prometheus_listen->port;
    mc.threads = 1;
    mc.api.metrics_only = true;
    metrics_http = std::make_unique<inlet::http::server>(readable, mc);
    if (auto ec = metrics_http->start()) {
      std::fprintf(stderr, "inletd: prometheus %s: %s\n",
                   endpoint_text(mc.address, mc.port).c_str(), ec.message().c_str());
      http.stop();
      return 1;
    }
  }

  // A sharded store: a recipient whose shard is down is refused alone at RCPT, so mail for
  // the others is taken (the memory store is never partly down: no hook).
  inlet::smtp::server_config sc = cfg.smtp;
  if (durable) {
    inlet::smtp::policy_hook shard_check =
        [store = durable.get()](inlet::smtp::policy_stage stage,
                                std::string_view arg) -> std::optional<inlet::smtp::delivery_status> {
      if (stage != inlet::smtp::policy_stage::rcpt || store->accepts_mailbox(arg))
        return std::nullopt;
      return inlet::smtp::delivery_status::rejected(
          451, "4.3.0", "Mailbox temporarily unavailable, try again later");
    };
    sc.session.policy = chain_policies(std::move(sc.session.policy), std::move(shard_check));
  }

  inlet::smtp::deliver_fn to_store = [&pipe](inlet::smtp::received_message&& m,
                                             inlet::smtp::delivery_callback done) {
    pipe.deliver(std::move(m), std::move(done));
  };
  // forward-smtp-errors (Mailpit): the relay or forwarding target sees the message first.
  if (outbound.gates_delivery() && !process_model)
    to_store = [&outbound, next = std::move(to_store)](inlet::smtp::received_message&& m,
                                                       inlet::smtp::delivery_callback done) {
      outbound.deliver_through(std::move(m), std::move(done), next);
    };
  inlet::smtp::server smtp(sc, std::move(to_store));
  if (auto ec = smtp.start()) {
    const auto& l = sc.listen.front();
    std::fprintf(stderr, "inletd: smtp %s: %s\n", endpoint_text(l.address, l.port).c_str(),
                 ec.message().c_str());
    http.stop();
    return 1;
  }

  // POP3 (docs/pop3.md), made before: its counters are on /metrics.
  if (pop3) {
    if (auto ec = pop3->start()) {
      std::fprintf(stderr, "inletd: pop3 %s: %s\n",
                   endpoint_text(cfg.pop3.server.address, cfg.pop3.server.port).c_str(),
                   ec.message().c_str());
      smtp.stop();
      smtp.wait();
      http.stop();
      return 1;
    }
  } else if (cfg.pop3.listen_given) {
    std::fprintf(stderr, "inletd: --pop3 without POP3 credentials (--pop3-auth-file or "
                         "MP_POP3_AUTH): no POP3 server, as in Mailpit\n");
  }

  for (const auto& ep : smtp.local_endpoints())
    std::printf("inletd: %s listening on %s\n", ep.lmtp ? "lmtp" : "smtp",
                endpoint_text(ep.address, ep.port).c_str());
  if (metrics_http)
    std::printf("inletd: prometheus listening on %s\n",
                endpoint_text(metrics_http->address(), metrics_http->port()).c_str());
  std::printf("inletd: http listening on %s (store: %s, io model: %s, %s, parse: %s)\n",
              endpoint_text(http.address(), http.port()).c_str(), cfg.store.name.c_str(),
              std::string(inlet::smtp::to_string(sc.model)).c_str(), reactor,
              sc.body_observer ? "streaming" : "after");
  if (pop3)
    std::printf("inletd: pop3 listening on %s (%s)\n",
                endpoint_text(pop3->address(), pop3->port()).c_str(),
                cfg.pop3.server.tls_cert.empty()            ? "clear text"
                : cfg.pop3.server.tls == inlet::pop3::tls_mode::stls ? "STLS"
                                                                     : "implicit TLS");
  std::fflush(stdout);

  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig == SIGHUP) {
      if (filter) {
        std::string report = filter->reload();
        std::printf("inletd: SIGHUP: %s\n", report.c_str());
        std::fflush(stdout);
      }
      continue;
    }
    break;
  }
  std::printf("inletd: stopping: finishing transactions in flight\n");
  std::fflush(stdout);
  smtp.stop();
  if (pop3) pop3->stop();
  smtp.wait();
  if (pop3) pop3->wait();
  outbound.stop();
  if (metrics_http) metrics_http->stop();
  http.stop();
  std::printf("inletd: stopped\n");
  return 0;
}
