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
#include <inlet/auth/password_file.hpp>
#include <inlet/http/server.hpp>
#include <inlet/smtp/chaos.hpp>
#include <inlet/smtp/server.hpp>
#include <inlet/store/memory_store.hpp>
#include <memory>
#include <optional>
#include <string>

#include <inlet/mail/content_filter.hpp>
#include <inlet/mail/ingest.hpp>
#include <inlet/mail/search_text.hpp>
#include <inlet/mail/streaming_parse.hpp>

#include "options.hpp"
#include "outbound_service.hpp"
#include "pg_options.hpp"
#include "smtp_policy.hpp"
#include "subcommands.hpp"
#ifdef INLETD_IO_URING
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#endif

namespace {

inlet::smtp::server_config smtp_config(const inletd::options& o) {
  inlet::smtp::server_config c;
  c.listen.clear();
  c.listen.push_back({o.smtp.host, o.smtp.port, false});
  if (o.lmtp) c.listen.push_back({o.lmtp->host, o.lmtp->port, true});
  c.session.hostname = o.hostname;
  // Mailpit shows its --label in the greeting; one line of printable text.
  for (char ch : o.label)
    if (static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f) c.session.label.push_back(ch);
  c.session.max_message_size = o.max_message_size;
  c.session.max_recipients = o.max_recipients;
  c.session.max_command_line = o.max_command_line;
  c.session.max_text_line = o.max_line_length;
  c.shutdown_grace = std::chrono::seconds(o.shutdown_grace_seconds);
  c.session.domains = o.domains;
  c.threads = o.threads;
  c.reads_per_event = o.reads_per_event;
  c.accepts_per_event = o.accepts_per_event;
  c.flat_receive_buffer = o.receive_buffer == "flat";
  if (o.parse == "streaming") c.body_observer = inlet::mail::parse_observer::make;
  c.max_connections = o.max_connections;
  c.max_connections_per_ip = o.max_connections_per_ip;
  c.max_connections_per_subnet = o.max_connections_per_subnet;
  c.subnet_prefix_v4 = o.subnet_prefix_v4;
  c.subnet_prefix_v6 = o.subnet_prefix_v6;
  c.pressure_percent = o.pressure_at;
  c.pressure_per_ip = o.pressure_per_ip;
  c.pressure_per_subnet = o.pressure_per_subnet;
  c.pressure_timeout = std::chrono::seconds(o.pressure_timeout_seconds);
  c.min_data_rate = o.min_data_rate;
  c.evict_when_full = !o.no_evict;
  c.release_memory = !o.no_release_memory;
  c.command_timeout = std::chrono::seconds(o.timeout_seconds);
  c.greeting_timeout = std::chrono::seconds(o.timeout_seconds);
  c.tls_cert = o.tls_cert;
  c.tls_key = o.tls_key;
  return c;
}

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

// SMTP AUTH as Mailpit configures it: a password file (or MP_SMTP_AUTH) makes AUTH
// required; --smtp-auth-accept-any offers it and takes any credentials. Both need
// STARTTLS (--smtp-tls-cert) unless --smtp-auth-allow-insecure. Returns an exit code
// on a configuration Mailpit refuses too.
std::optional<int> configure_smtp_auth(const inletd::options& o, inlet::smtp::session_config& s) {
  const bool credentials = !o.smtp_auth_file.empty() || !o.smtp_auth.empty();
  if (!credentials && !o.smtp_auth_accept_any) return std::nullopt;
  if (credentials && o.smtp_auth_accept_any) {
    std::fprintf(stderr,
                 "inletd: SMTP authentication cannot use both credentials and "
                 "--smtp-auth-accept-any\n");
    return 2;
  }
  if (o.tls_cert.empty() && !o.smtp_auth_allow_insecure) {
    std::fprintf(stderr,
                 "inletd: SMTP authentication requires TLS (--smtp-tls-cert/--tls-cert); run with "
                 "--smtp-auth-allow-insecure to allow it without\n");
    return 2;
  }
  s.auth_allow_insecure = o.smtp_auth_allow_insecure;
  if (o.smtp_auth_accept_any) {
    s.auth = [](std::string_view, std::string_view) { return true; };
    return std::nullopt;
  }
  std::string error;
  auto users = inlet::auth::load_credentials(o.smtp_auth_file, o.smtp_auth, error);
  if (!users) {
    std::fprintf(stderr, "inletd: SMTP authentication: %s\n", error.c_str());
    return 2;
  }
  s.auth = [users](std::string_view user, std::string_view password) {
    return users->check(user, password);
  };
  s.auth_required = true;
  return std::nullopt;
}

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
std::optional<int> start_pg_store(const inletd::options& opt,
                                  std::unique_ptr<inlet::store::store>& out,
                                  std::function<void(std::string&)>& metrics) {
  inlet::store::pg_store_config cfg;
  std::string error;
  if (!inletd::pg_store_config_from(opt, cfg, error)) {
    std::fprintf(stderr, "inletd: %s\n", error.c_str());
    return 2;
  }
  std::unique_ptr<inlet::store::pg_store> pg;
  try {
    pg = std::make_unique<inlet::store::pg_store>(cfg);
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

}  // namespace

int main(int argc, char** argv) {
  if (auto rc = inletd::run_subcommand(argc, argv)) return *rc;  // sendmail, readyz, ...
  inletd::options opt;
  if (auto rc = inletd::parse_options(argc, argv, opt)) return *rc;
  if (!opt.log_file.empty()) {  // Mailpit's --log-file: the whole log goes there
    if (!std::freopen(opt.log_file.c_str(), "a", stdout)) {
      std::fprintf(stderr, "inletd: --log-file %s: %s\n", opt.log_file.c_str(),
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

  inlet::smtp::server_config sc = smtp_config(opt);
  if (auto rc = configure_smtp_auth(opt, sc.session)) return *rc;
  if (std::string err = inletd::apply_smtp_policy(opt, sc.session); !err.empty()) {
    std::fprintf(stderr, "inletd: %s\n", err.c_str());
    return 2;
  }
  if (!inlet::smtp::parse_io_model(opt.io_model, sc.model)) {
    std::fprintf(stderr, "inletd: unknown --io-model '%s'\n", opt.io_model.c_str());
    return 2;
  }

  if (sc.model == inlet::smtp::io_model::process && opt.store != "sink") {
    // The deliver hook runs in the forked child: a message stored there would
    // vanish with the child. Only the sink (parse and discard) makes sense.
    std::fprintf(stderr,
                 "inletd: --io-model process needs --store sink: each connection runs in a forked "
                 "child, which cannot add messages to the parent's --store %s\n",
                 opt.store.c_str());
    return 2;
  }

  std::unique_ptr<inlet::store::memory_store> memory;
  std::unique_ptr<inlet::store::store> durable;  // the PostgreSQL store
  std::function<void(std::string&)> store_metrics;
  if (opt.store == "memory") {
    memory = std::make_unique<inlet::store::memory_store>(inlet::store::memory_store_config{
        opt.max_messages, opt.max_store_bytes, std::chrono::seconds(opt.max_age_seconds)});
  } else if (opt.store == "postgresql" || opt.store.starts_with("postgresql://") ||
             opt.store.starts_with("postgres://")) {
    if (auto rc = start_pg_store(opt, durable, store_metrics)) return *rc;
  } else if (opt.store != "sink") {
    std::fprintf(stderr, "inletd: unknown --store '%s' (memory, sink, postgresql://...)\n",
                 opt.store.c_str());
    return 2;
  }
  inlet::store::store* backing =
      memory ? static_cast<inlet::store::store*>(memory.get()) : durable.get();

  std::unique_ptr<inlet::mail::content_filter> filter;
  if (!opt.filter_terms.empty()) {
    std::string error;
    filter = inlet::mail::content_filter::create(opt.filter_terms, opt.filter_action == "reject",
                                          opt.filter_threshold, error);
    if (!filter) {
      std::fprintf(stderr, "inletd: %s\n", error.c_str());
      return 2;
    }
  }

  inlet::mail::ingest_options popts;
  popts.tags.title_case = opt.tags_title_case;
  popts.use_message_dates = opt.use_message_dates;
  popts.tag_auth_user = opt.tags_username;
  popts.log_stored = opt.verbose && !opt.quiet;
  // A process-model connection is its own process, forked after the worker pool's
  // threads were started (the child has none of them) and holding up no other
  // connection: its heavy messages stay on its thread.
  popts.heavy_bytes = sc.model == inlet::smtp::io_model::process ? 0 : opt.heavy_message_bytes;
  popts.tags.x_tags = opt.tags_disable.find("x-tags") == std::string::npos;
  popts.tags.plus_addresses = opt.tags_disable.find("plus-addresses") == std::string::npos;
  {
    std::string error;
    if (!inlet::mail::tag_rules::parse(opt.tags, opt.tags_config, popts.rules, error)) {
      std::fprintf(stderr, "inletd: %s\n", error.c_str());
      return 2;
    }
  }
  // Webhooks (docs/outbound.md): handed each stored message, sent on a thread of their own.
  inletd::outbound_service outbound(opt);
  if (sc.model == inlet::smtp::io_model::process && !opt.webhook_url.empty())
    std::fprintf(stderr, "inletd: --webhook-url: not with --io-model process; ignored\n");
  else
    popts.on_stored = [&outbound](const inlet::store::message_ptr& m) { outbound.on_stored(m); };
  inlet::mail::ingest pipe(backing, filter.get(), std::move(popts));

  // The HTTP API reads the store; with --store sink it serves an always-empty store.
  inlet::store::memory_store empty_store(inlet::store::memory_store_config{1, 1});
  inlet::store::store& readable = backing ? *backing : empty_store;
  inlet::http::server_config hc;
  hc.address = opt.http.host;
  hc.port = opt.http.port;
  hc.threads = 0;  // one per core: a client fetching large messages holds up no one else
  // The send API takes messages up to the SMTP size limit (its JSON carries attachments
  // as base64: a third more), at least the 1 MiB every other request may use.
  {
    constexpr std::uint64_t floor = 1u << 20, unlimited_cap = std::uint64_t{1} << 30;
    const std::uint64_t m = opt.max_message_size == 0 ? unlimited_cap : opt.max_message_size;
    hc.body_limit = static_cast<std::size_t>(std::max(floor, m / 3 * 4 + (64u << 10)));
  }
  hc.max_connections = opt.http_max_connections;
  hc.max_event_streams = opt.http_max_event_streams;
  hc.max_event_streams_per_client = opt.http_max_event_streams_per_client;
  hc.api.allowed_hosts = opt.allowed_hosts;
  hc.api.only_allowed_hosts = opt.only_allowed_hosts;
  hc.api.public_mode = opt.public_mode;
  hc.api.mailhog_v1 = opt.mailhog_api;
  hc.api.rate_limit = opt.api_rate_limit >= 0 ? opt.api_rate_limit : opt.public_mode ? 10.0 : 0.0;
  hc.api.rate_burst = opt.api_rate_burst;
  hc.api.extra_metrics = [&pipe, &store_metrics, &outbound](std::string& out) {
    pipe.append_metrics(out);
    outbound.append_metrics(out);
    if (store_metrics) store_metrics(out);
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
    return a;
  };
  hc.api.version = "inlet 0.1.0";
  // The PostgreSQL store's URIs may hold passwords: named, not shown.
  hc.api.database = memory ? "memory" : durable ? "postgresql" : opt.store;
  hc.api.label = opt.label;
  hc.api.hide_delete_all_button = opt.hide_delete_all_button;
  hc.api.disable_http_compression = opt.disable_http_compression;
  hc.api.webroot = opt.webroot;
  hc.api.cors_origin = opt.api_cors;
  hc.api.block_remote_css_and_fonts = opt.block_remote_css_and_fonts;
  hc.api.link_check.allow_untrusted_tls = opt.allow_untrusted_tls;
  if (!opt.ui_auth_file.empty() || !opt.ui_auth.empty()) {
    std::string error;
    hc.api.ui_auth = inlet::auth::load_credentials(opt.ui_auth_file, opt.ui_auth, error);
    if (!hc.api.ui_auth) {
      std::fprintf(stderr, "inletd: web UI authentication: %s\n", error.c_str());
      return 2;
    }
  }
  if (opt.enable_chaos || !opt.chaos_triggers.empty()) {  // triggers alone enable chaos
    inlet::smtp::chaos_triggers triggers;
    std::string error;
    if (!opt.chaos_triggers.empty() &&
        !inlet::smtp::chaos_state::parse(opt.chaos_triggers, triggers, error)) {
      std::fprintf(stderr, "inletd: --chaos-triggers: %s\n", error.c_str());
      return 2;
    }
    auto chaos = std::make_shared<inlet::smtp::chaos_state>(triggers);
    hc.api.chaos = chaos;
    sc.session.policy = inlet::smtp::chaos_policy(chaos);
  }
  if (!opt.relay.host.empty()) {
    inlet::http::relay_config r;
    r.host = opt.relay.host;
    r.port = opt.relay.port;
    r.starttls = opt.relay.starttls;
    r.tls = opt.relay.tls;
    r.allow_insecure = opt.relay.allow_insecure;
    r.auth = opt.relay.auth;
    r.username = opt.relay.username;
    r.password = opt.relay.password;
    r.return_path = opt.relay.return_path;
    r.allowed_recipients = opt.relay.allowed_recipients;
    r.blocked_recipients = opt.relay.blocked_recipients;
    r.preserve_message_ids = opt.relay.preserve_message_ids;
    hc.api.relay = r;
  }
  for (const auto& ignored : opt.ignored)
    std::fprintf(stderr, "inletd: Mailpit option %s is not supported by inletd yet; ignored\n",
                 ignored.c_str());
  for (const auto& d : opt.deprecated)
    std::fprintf(stderr, "inletd: Mailpit's deprecated %s\n", d.c_str());
  inlet::http::server http(readable, hc);
  if (!(sc.model == inlet::smtp::io_model::process))
    outbound.start([&http](const inlet::store::stored_message& m) {
      return http.api().summary_json(m);
    });
  if (auto ec = http.start()) {
    std::fprintf(stderr, "inletd: http %s: %s\n",
                 endpoint_text(opt.http.host, opt.http.port).c_str(), ec.message().c_str());
    return 1;
  }

  // A sharded store: a recipient whose shard is down is refused alone at RCPT, so mail for
  // the others is taken (the memory store is never partly down: no hook).
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

  inlet::smtp::server smtp(
      sc, [&pipe](inlet::smtp::received_message&& m, inlet::smtp::delivery_callback done) {
        pipe.deliver(std::move(m), std::move(done));
      });
  if (auto ec = smtp.start()) {
    std::fprintf(stderr, "inletd: smtp %s: %s\n",
                 endpoint_text(opt.smtp.host, opt.smtp.port).c_str(), ec.message().c_str());
    http.stop();
    return 1;
  }

  for (const auto& ep : smtp.local_endpoints())
    std::printf("inletd: %s listening on %s\n", ep.lmtp ? "lmtp" : "smtp",
                endpoint_text(ep.address, ep.port).c_str());
  std::printf("inletd: http listening on %s (store: %s, io model: %s, %s, parse: %s)\n",
              endpoint_text(http.address(), http.port()).c_str(), opt.store.c_str(),
              opt.io_model.c_str(), reactor, opt.parse.c_str());
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
  smtp.wait();
  outbound.stop();
  http.stop();
  std::printf("inletd: stopped\n");
  return 0;
}
