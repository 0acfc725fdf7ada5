#include "options.hpp"

#include "catcher_env.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace inletd {

bool parse_host_port(const std::string& text, host_port& out) {
  std::string host;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return false;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty() && !text.empty() && text.front() == ':') host = "0.0.0.0";  // Mailpit's ":1025"
  if (host.empty() || port.empty()) return false;
  unsigned value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || p != port.data() + port.size() || value > 65535) return false;
  out.host = host;
  out.port = static_cast<std::uint16_t>(value);
  return true;
}

namespace {

// A CLI11 validator-transform for HOST:PORT options.
void add_endpoint(CLI::App& app, const char* name, host_port& target, const char* help) {
  app.add_option_function<std::string>(
         name,
         [&target, name](const std::string& v) {
           if (!parse_host_port(v, target))
             throw CLI::ValidationError(name, "expected HOST:PORT, got '" + v + "'");
         },
         help)
      ->type_name("HOST:PORT");
}

// The environment's INLET_<FLAG> variables (INLET_MAX_MESSAGES for --max-messages) as
// flags placed before the command line's own, for each flag the command line does not
// give: so flags win over the environment, which wins over the config file (CLI11 reads
// the file only for flags that are still unset). Returned in CLI11's reversed order.
std::vector<std::string> with_environment(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> given(argv + (argc > 0 ? 1 : 0), argv + argc);
  std::vector<std::string> from_env;
  for (const CLI::Option* opt : app.get_options()) {
    const auto& names = opt->get_lnames();
    if (names.empty() || names.front() == "help" || names.front() == "version") continue;
    const std::string flag = "--" + names.front();
    bool on_command_line = false;
    for (const auto& a : given) on_command_line |= a == flag || a.rfind(flag + "=", 0) == 0;
    if (on_command_line) continue;
    // Mailpit's variable for the same flag wins over inletd's own (a Mailpit user's
    // MP_SMTP_BIND_ADDR over an image's INLET_SMTP): CLI11 reads it after this.
    if (const auto& mp = opt->get_envname(); !mp.empty() && std::getenv(mp.c_str())) continue;
    std::string var = "INLET_" + names.front();
    for (auto& c : var)
      c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const char* value = std::getenv(var.c_str());
    if (!value) continue;
    if (opt->get_type_size() == 0) {  // a switch: INLET_QUIET=1 (or true/yes/on)
      std::string v(value);
      if (v == "1" || v == "true" || v == "yes" || v == "on") from_env.push_back(flag);
      continue;
    }
    from_env.push_back(flag + "=" + value);
  }
  from_env.insert(from_env.end(), given.begin(), given.end());
  std::reverse(from_env.begin(), from_env.end());  // CLI11's parse(vector) takes argv reversed
  return from_env;
}

bool truthy(std::string v) {
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

std::string trim(std::string v) {
  auto b = v.find_first_not_of(" \t\r\n");
  auto e = v.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string{} : v.substr(b, e - b + 1);
}

// A YAML scalar: quotes removed, a trailing comment dropped.
std::string scalar(std::string v) {
  v = trim(v);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
    return v.substr(1, v.size() - 2);
  auto hash = v.find(" #");
  if (hash != std::string::npos) v = trim(v.substr(0, hash));
  return v;
}

// Sets one relay key (as Mailpit's YAML and its MP_SMTP_RELAY_* names spell them).
bool set_relay_key(options::relay_options& r, const std::string& key, const std::string& value,
                   std::string& error) {
  if (key == "host")
    r.host = value;
  else if (key == "port") {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
    if (ec != std::errc{} || end != value.data() + value.size() || p == 0 || p > 65535) {
      error = "relay port must be 1-65535, got '" + value + "'";
      return false;
    }
    r.port = static_cast<std::uint16_t>(p);
  } else if (key == "starttls")
    r.starttls = truthy(value);
  else if (key == "tls")
    r.tls = truthy(value);
  else if (key == "allow-insecure")
    r.allow_insecure = truthy(value);
  else if (key == "auth")
    r.auth = value;
  else if (key == "username")
    r.username = value;
  else if (key == "password")
    r.password = value;
  else if (key == "secret")
    r.password = value;  // cram-md5: libcurl takes the password
  else if (key == "return-path")
    r.return_path = value;
  else if (key == "allowed-recipients")
    r.allowed_recipients = value;
  else if (key == "blocked-recipients")
    r.blocked_recipients = value;
  else if (key == "preserve-message-ids")
    r.preserve_message_ids = truthy(value);
  else if (key == "override-from" || key == "forward-smtp-errors") {
    // Known to Mailpit, not done by inletd's release: accepted, without effect.
  } else {
    error = "unknown relay setting '" + key + "'";
    return false;
  }
  return true;
}

// Mailpit options without an inletd equivalent: accepted (so a Mailpit command line
// works), noted in `ignored`, warned about at start.
struct mailpit_only {
  const char* flag;
  const char* env;
  bool takes_value;
};
constexpr mailpit_only mailpit_only_options[] = {
    {"--database", "MP_DATABASE", true},
    {"--db-file", "MP_DATA_FILE", true},  // Mailpit's deprecated spelling of --database
    {"--tenant-id", "MP_TENANT_ID", true},
    {"--ignore-duplicate-ids", "MP_IGNORE_DUPLICATE_IDS", false},
    {"--ui-tls-cert", "MP_UI_TLS_CERT", true},
    {"--ui-ssl-cert", "MP_UI_SSL_CERT", true},  // deprecated spelling of --ui-tls-cert
    {"--ui-ssl-key", "MP_UI_SSL_KEY", true},
    {"--enable-rspamd", "MP_ENABLE_RSPAMD", true},
    {"--enable-prometheus", "MP_ENABLE_PROMETHEUS", true},
    {"--send-api-auth-file", "MP_SEND_API_AUTH_FILE", true},
    {"--send-api-auth-accept-any", "MP_SEND_API_AUTH_ACCEPT_ANY", false},
    {"--smtp-forward-config", "MP_SMTP_FORWARD_CONFIG", true},
    {"--disable-auto-vacuum", "MP_DISABLE_AUTO_VACUUM", false},
    {"--disable-link-check-rate-limit", "MP_DISABLE_LINK_CHECK_RATE_LIMIT", false},
    {"--ui-tls-key", "MP_UI_TLS_KEY", true},
    {"--enable-spamassassin", "MP_ENABLE_SPAMASSASSIN", true},
    {"--smtp-require-tls", "MP_SMTP_REQUIRE_TLS", false},
    {"--smtp-strict-rfc-headers", "MP_SMTP_STRICT_RFC_HEADERS", false},
    {"--smtp-disable-rdns", "MP_SMTP_DISABLE_RDNS", false},
    {"--smtp-relay-all", "MP_SMTP_RELAY_ALL", false},
    {"--smtp-relay-matching", "MP_SMTP_RELAY_MATCHING", true},
    {"--pop3", "MP_POP3_BIND_ADDR", true},
    {"--pop3-auth-file", "MP_POP3_AUTH_FILE", true},
    {"--pop3-tls-cert", "MP_POP3_TLS_CERT", true},
    {"--pop3-tls-key", "MP_POP3_TLS_KEY", true},
    {"--disable-wal", "MP_DISABLE_WAL", false},
    {"--compression", "MP_COMPRESSION", true},
    {"--disable-version-check", "MP_DISABLE_VERSION_CHECK", false},
};

}  // namespace

bool parse_duration(const std::string& text, std::uint64_t& seconds) {
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || p == text.data()) return false;
  std::string_view unit(p, static_cast<std::size_t>(text.data() + text.size() - p));
  std::uint64_t mul = 0;
  if (unit.empty() || unit == "s")
    mul = 1;
  else if (unit == "m")
    mul = 60;
  else if (unit == "h")
    mul = 3600;
  else if (unit == "d")
    mul = 86400;
  else
    return false;
  if (n > UINT64_MAX / mul) return false;
  seconds = n * mul;
  return true;
}

bool read_relay_config(const std::string& path, options::relay_options& r, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read the relay configuration " + path;
    return false;
  }
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string t = trim(line);
    if (t.empty() || t.front() == '#' || t == "---") continue;
    auto colon = t.find(':');
    if (colon == std::string::npos) {
      error = path + ":" + std::to_string(n) + ": expected 'key: value'";
      return false;
    }
    std::string key = trim(t.substr(0, colon));
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!set_relay_key(r, key, scalar(t.substr(colon + 1)), error)) {
      error = path + ":" + std::to_string(n) + ": " + error;
      return false;
    }
  }
  return true;
}

void relay_from_environment(options::relay_options& r) {
  const char* host = std::getenv("MP_SMTP_RELAY_HOST");
  if (!host || !*host) return;
  static constexpr std::pair<const char*, const char*> keys[] = {
      {"MP_SMTP_RELAY_HOST", "host"},
      {"MP_SMTP_RELAY_PORT", "port"},
      {"MP_SMTP_RELAY_STARTTLS", "starttls"},
      {"MP_SMTP_RELAY_TLS", "tls"},
      {"MP_SMTP_RELAY_ALLOW_INSECURE", "allow-insecure"},
      {"MP_SMTP_RELAY_AUTH", "auth"},
      {"MP_SMTP_RELAY_USERNAME", "username"},
      {"MP_SMTP_RELAY_PASSWORD", "password"},
      {"MP_SMTP_RELAY_SECRET", "secret"},
      {"MP_SMTP_RELAY_RETURN_PATH", "return-path"},
      {"MP_SMTP_RELAY_ALLOWED_RECIPIENTS", "allowed-recipients"},
      {"MP_SMTP_RELAY_BLOCKED_RECIPIENTS", "blocked-recipients"},
      {"MP_SMTP_RELAY_PRESERVE_MESSAGE_IDS", "preserve-message-ids"},
  };
  std::string ignored;
  for (auto [env, key] : keys)
    if (const char* v = std::getenv(env); v && *v) set_relay_key(r, key, v, ignored);
}

std::optional<int> parse_options(int argc, char** argv, options& o) {
  catcher_args catchers(argc, argv);  // MailHog's and MailDev's flags and variables
  argc = catchers.argc(), argv = catchers.argv();
  CLI::App app{"inletd: takes mail for any address over SMTP, keeps it, serves it over HTTP"};
  app.set_version_flag("--version", "inletd 0.1.0");
  add_endpoint(app, "-s,--smtp", o.smtp, "SMTP listener (default 127.0.0.1:1025)");
  add_endpoint(app, "-l,--listen", o.http,
               "HTTP listener: API, web page, /metrics (default 127.0.0.1:8025)");
  app.add_option_function<std::string>(
         "--lmtp",
         [&o](const std::string& v) {
           host_port hp;
           if (!parse_host_port(v, hp))
             throw CLI::ValidationError("--lmtp", "expected HOST:PORT, got '" + v + "'");
           o.lmtp = hp;
         },
         "LMTP listener (RFC 2033); off unless given")
      ->type_name("HOST:PORT");
  app.add_option(
         "--store", o.store,
         "memory (default), sink (accept and discard after parsing), or a postgresql:// URI "
         "(the first shard of the PostgreSQL store; `postgresql`: shards from "
         "--shard/--shards-file)")
      ->capture_default_str();
  app.add_option("--shard", o.shards,
                 "PostgreSQL store: another shard's URI, in shard order (repeatable)");
  app.add_option("--shards-file", o.shards_file,
                 "PostgreSQL store: file with one shard URI per line, in order")
      ->check(CLI::ExistingFile);
  app.add_option_function<std::string>(
         "--retention",
         [&o](const std::string& v) {
           if (!parse_duration(v, o.retention_seconds) || o.retention_seconds == 0)
             throw CLI::ValidationError(
                 "--retention", "expected a duration such as 90m, 24h or 7d, got '" + v + "'");
         },
         "PostgreSQL store: drop messages older than this (whole time partitions); default: keep")
      ->type_name("DURATION");
  app.add_option("--mailbox-cap", o.mailbox_cap,
                 "PostgreSQL store: messages kept per mailbox (newest); 0 = no cap")
      ->capture_default_str();
  app.add_option("--expect-shards", o.expect_shards,
                 "PostgreSQL store: the number of shards meant; a shard list of another length is "
                 "refused at start")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--buckets", o.buckets,
                 "PostgreSQL store: buckets of a new cluster (fixed once created)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3844u));
  app.add_option("--pg-writers", o.pg_writers,
                 "PostgreSQL store: writer connections (transactions in flight) per shard")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--pg-max-batch", o.pg_max_batch,
                 "PostgreSQL store: messages per transaction at most")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{256}));
  app.add_option("--pg-batch-wait", o.pg_batch_wait_us,
                 "PostgreSQL store: microseconds a batch may wait for more messages while a "
                 "connection is free")
      ->capture_default_str()
      ->check(CLI::Range(0u, 100000u));
  app.add_option("--max-messages", o.max_messages, "memory store: messages kept (oldest evicted)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-store-bytes", o.max_store_bytes,
                 "memory store: raw bytes kept (oldest evicted)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option_function<std::uint64_t>(
         "--max-message-size",
         [&o](std::uint64_t mib) {
           if (mib > (std::uint64_t{1} << 24))
             throw CLI::ValidationError("--max-message-size", "at most 16777216 MB");
           o.max_message_size = mib << 20;
         },
         "largest message accepted, in MB as Mailpit counts them (MiB); 0 = no limit (default "
         "50)")
      ->envname("MP_MAX_MESSAGE_SIZE");
  app.add_option("--max-message-bytes", o.max_message_size,
                 "largest message accepted, in bytes (the same limit as --max-message-size, "
                 "exactly); 0 = no limit");
  app.add_option("--max-recipients", o.max_recipients,
                 "recipients per transaction (452 4.5.3 past it)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-command-line", o.max_command_line,
                 "longest command line, octets incl. CRLF")
      ->capture_default_str()
      ->check(CLI::Range(512, 65536));
  app.add_option(
         "--max-line-length", o.max_line_length,
         "longest text line of a message, octets incl. CRLF (RFC 5321 4.5.3.1.6); 0 = no limit")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  app.add_option("--hostname", o.hostname, "name in the greeting and EHLO reply")
      ->capture_default_str();
  app.add_option("--domain", o.domains,
                 "accept mail for this domain (repeatable; none = every domain)");
  app.add_option("--io-model", o.io_model,
                 "coro (default), async-1n, async-nn, async-n2n, thread, stackful, process")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "I/O threads (0 = one per core)")->capture_default_str();
  app.add_option("--reads-per-event", o.reads_per_event, "async models: reads per wake-up")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--accepts-per-event", o.accepts_per_event,
                 "coro, async and stackful models: connections accepted per listener wake-up")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--receive-buffer", o.receive_buffer,
                 "async models: segment (zero-copy, default) or flat (std::string + copy out, for "
                 "comparisons)")
      ->capture_default_str()
      ->check(CLI::IsMember({"segment", "flat"}));
  app.add_option(
         "--parse", o.parse,
         "after (default: parse each message once it is complete) or streaming (parse while "
         "receiving: every io model)")
      ->capture_default_str()
      ->check(CLI::IsMember({"after", "streaming"}));
  app.add_option("--heavy-message-bytes", o.heavy_message_bytes,
                 "messages of at least this many bytes are parsed and stored on a worker pool, "
                 "so that they do not hold up the other connections of an SMTP I/O thread "
                 "(0: every message on its I/O thread)")
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections,
                 "SMTP connections in total (421 4.7.0 past it)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-connections-per-ip", o.max_connections_per_ip,
                 "SMTP connections per client IP")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-connections-per-subnet", o.max_connections_per_subnet,
                 "SMTP connections per client subnet (see --subnet-prefix-v4/-v6); 0 = no limit")
      ->capture_default_str();
  app.add_option("--subnet-prefix-v4", o.subnet_prefix_v4,
                 "bits of an IPv4 address that make its subnet")
      ->capture_default_str()
      ->check(CLI::Range(0u, 32u));
  app.add_option("--subnet-prefix-v6", o.subnet_prefix_v6,
                 "bits of an IPv6 address that make its subnet")
      ->capture_default_str()
      ->check(CLI::Range(0u, 128u));
  app.add_option("--pressure-at", o.pressure_at,
                 "SMTP slot pressure from this percent of --max-connections (0 = never): shorter "
                 "timeouts, per-IP and per-subnet shares")
      ->capture_default_str()
      ->check(CLI::Range(0u, 100u));
  app.add_option("--pressure-per-ip", o.pressure_per_ip,
                 "under slot pressure: connections per client IP")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--pressure-per-subnet", o.pressure_per_subnet,
                 "under slot pressure: connections per client subnet")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--pressure-timeout", o.pressure_timeout_seconds,
                 "under slot pressure: greeting, command, data and write timeout, seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--min-data-rate", o.min_data_rate,
                 "octets/s a message body must keep up (a slower body times out); 0 = off")
      ->capture_default_str();
  app.add_flag("--no-evict", o.no_evict,
               "when every SMTP slot is taken, refuse new clients instead of closing the slowest "
               "connection");
  app.add_flag(
      "--no-release-memory", o.no_release_memory,
      "keep freed memory after a wave of connections instead of returning it (malloc_trim)");
  app.add_option("--timeout", o.timeout_seconds, "SMTP command timeout, seconds (RFC 5321 4.5.3.2)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option(
         "--shutdown-grace", o.shutdown_grace_seconds,
         "on SIGTERM/SIGINT: seconds a transaction in flight may take; then 421 4.3.2 and close")
      ->capture_default_str();
  app.add_option("--tls-cert", o.tls_cert, "PEM certificate chain: offers STARTTLS")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", o.tls_key, "PEM private key for --tls-cert")
      ->check(CLI::ExistingFile);
  app.add_option("--filter-terms", o.filter_terms, "term list file; SIGHUP or a change reloads it")
      ->check(CLI::ExistingFile);
  app.add_option("--filter-action", o.filter_action, "tag (default) or reject")
      ->capture_default_str()
      ->check(CLI::IsMember({"tag", "reject"}));
  app.add_option("--filter-threshold", o.filter_threshold, "score at which the action applies")
      ->capture_default_str();
  app.add_flag("-q,--quiet", o.quiet, "log only errors")->envname("MP_QUIET");
  app.add_flag("-v,--verbose", o.verbose, "Mailpit: log a line for every message stored")
      ->envname("MP_VERBOSE");
  app.add_option("--log-file", o.log_file,
                 "Mailpit: append the log (stdout and stderr) to this file instead")
      ->envname("MP_LOG_FILE");
  app.add_flag("--use-message-dates", o.use_message_dates,
               "Mailpit: a message's Date header as its received time (when it has one)")
      ->envname("MP_USE_MESSAGE_DATES");
  app.add_flag("--tags-username", o.tags_username,
               "Mailpit: tag each message with its SMTP AUTH user name")
      ->envname("MP_TAGS_USERNAME");
  app.add_flag("--hide-delete-all-button", o.hide_delete_all_button,
               "Mailpit: the page offers no \"Delete all\" (/api/v1/webui says so)")
      ->envname("MP_HIDE_DELETE_ALL_BUTTON");
  app.add_flag("--disable-http-compression", o.disable_http_compression,
               "Mailpit: no gzip in HTTP answers")
      ->envname("MP_DISABLE_HTTP_COMPRESSION");
  app.add_flag_function(
         "--allow-internal-http-requests", [](std::int64_t) {},
         "Mailpit: the link check may reach internal addresses (inletd's always may: see "
         "docs/configuration.md)")
      ->envname("MP_ALLOW_INTERNAL_HTTP_REQUESTS");
  app.add_flag_function(
         "--disable-html-check",
         [&o](std::int64_t) { o.deprecated.push_back("--disable-html-check (no longer used)"); },
         "Mailpit (deprecated, no longer used)")
      ->envname("MP_DISABLE_HTML_CHECK")
      ->group("Mailpit (deprecated)");
  app.add_option_function<std::string>(
         "--allowed-hosts",
         [&o](const std::string& v) {
           o.only_allowed_hosts = true;
           std::string_view rest = v;
           while (!rest.empty()) {
             auto comma = rest.find(',');
             std::string h(rest.substr(0, comma));
             h.erase(0, h.find_first_not_of(" \t"));
             h.erase(h.find_last_not_of(" \t") + 1);
             if (!h.empty()) o.allowed_hosts.push_back(h);
             if (comma == std::string_view::npos) break;
             rest.remove_prefix(comma + 1);
           }
         },
         "Mailpit: Host header values the HTTP server answers to, comma-separated (DNS "
         "rebinding); the same list as --allowed-host")
      ->envname("MP_ALLOWED_HOSTS");

  // ---- Mailpit's flags and MP_* variables ----
  std::size_t mailpit_max = 0;
  bool max_given = false;
  app.add_option_function<std::size_t>(
         "-m,--max",
         [&](std::size_t v) {
           mailpit_max = v;
           max_given = true;
         },
         "Mailpit: messages kept, 0 = no count bound (same as --max-messages)")
      ->envname("MP_MAX_MESSAGES");
  app.add_option_function<std::string>(
         "--max-age",
         [&o](const std::string& v) {
           if (!parse_duration(v, o.max_age_seconds) || o.max_age_seconds == 0)
             throw CLI::ValidationError("--max-age",
                                        "expected a duration such as 12h or 7d, got '" + v + "'");
         },
         "Mailpit: delete messages older than this (memory store: a sweep; PostgreSQL store: "
         "--retention when that is not given)")
      ->type_name("DURATION")
      ->envname("MP_MAX_AGE");
  app.get_option("--smtp")->envname("MP_SMTP_BIND_ADDR");
  app.get_option("--listen")->envname("MP_UI_BIND_ADDR");
  app.add_option("--webhook-url", o.webhook_url,
                 "Mailpit: POST each new message's summary (JSON) to this URL")
      ->envname("MP_WEBHOOK_URL");
  app.add_option("--webhook-limit", o.webhook_limit,
                 "Mailpit: webhook requests a second at most (0: no limit)")
      ->envname("MP_WEBHOOK_LIMIT")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--webhook-delay", o.webhook_delay,
                 "Mailpit: seconds to wait before each webhook request")
      ->envname("MP_WEBHOOK_DELAY")
      ->check(CLI::Range(0, 86400));
  app.add_option("--label", o.label, "Mailpit: a name for this instance (web UI, /api/v1/webui)")
      ->envname("MP_LABEL");
  app.add_option("--webroot", o.webroot,
                 "Mailpit: serve the page and the API under this path, e.g. mail")
      ->envname("MP_WEBROOT");
  app.add_option("--ui-auth-file", o.ui_auth_file,
                 "Mailpit: password file (htpasswd) for the page and the API")
      ->envname("MP_UI_AUTH_FILE")
      ->check(CLI::ExistingFile);
  app.add_option("--api-cors", o.api_cors,
                 "Mailpit: Access-Control-Allow-Origin for the API (CORS)")
      ->envname("MP_API_CORS");
  // The HTTP server's own defences (no Mailpit equivalent).
  app.add_option("--allowed-host", o.allowed_hosts,
                 "HTTP: a Host name the API answers to besides loopback names, IP literals and "
                 "the --listen address (repeatable; '.example.com': any name under it; '*': "
                 "any); others get 403");
  app.add_flag("--public", o.public_mode,
               "HTTP: disposable-inbox mode: only mailbox-scoped reads (a mailbox's list, a "
               "message by ID), API requests rate-limited per client");
  app.add_option("--api-rate-limit", o.api_rate_limit,
                 "HTTP: API requests per second per client IP (429 past it); default 0 (off), "
                 "10 with --public")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--api-rate-burst", o.api_rate_burst,
                 "HTTP: requests a client may make at once before --api-rate-limit applies "
                 "(default: twice the rate, at least 10)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--http-max-connections", o.http_max_connections,
                 "HTTP: connections at once; past it the longest-waiting idle one is closed, "
                 "or 503")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--http-max-event-streams", o.http_max_event_streams,
                 "HTTP: event streams (SSE, websocket) open at once in all; past it 503")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--http-max-event-streams-per-client", o.http_max_event_streams_per_client,
                 "HTTP: event streams open at once per client IP address (IPv6: per /64); "
                 "past it 429")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--block-remote-css-and-fonts", o.block_remote_css_and_fonts,
               "Mailpit: /view/{ID}.html loads no remote stylesheets or fonts")
      ->envname("MP_BLOCK_REMOTE_CSS_AND_FONTS");
  app.add_flag("--allow-untrusted-tls", o.allow_untrusted_tls,
               "Mailpit: the link check does not verify certificates")
      ->envname("MP_ALLOW_UNTRUSTED_TLS");
  app.add_option("--smtp-max-recipients", o.max_recipients, "Mailpit: same as --max-recipients")
      ->envname("MP_SMTP_MAX_RECIPIENTS")
      ->check(CLI::PositiveNumber);
  app.add_flag("--smtp-require-starttls", o.smtp_require_starttls,
               "Mailpit: MAIL, RCPT, DATA, RSET, AUTH get 530 before STARTTLS (needs --tls-cert)")
      ->envname("MP_SMTP_REQUIRE_STARTTLS");
  app.add_flag("--smtp-tls-required", o.smtp_require_starttls,
               "Mailpit's deprecated spelling of --smtp-require-starttls")
      ->envname("MP_SMTP_TLS_REQUIRED");
  app.add_option("--smtp-allowed-recipients", o.smtp_allowed_recipients,
                 "Mailpit: only recipients matching this regular expression (550 5.1.0 otherwise)")
      ->envname("MP_SMTP_ALLOWED_RECIPIENTS");
  app.add_flag("--smtp-ignore-rejected-recipients", o.smtp_ignore_rejected_recipients,
               "Mailpit: recipients refused by --smtp-allowed-recipients get 250 and are dropped")
      ->envname("MP_SMTP_IGNORE_REJECTED_RECIPIENTS");
  app.add_option("--smtp-tls-cert", o.tls_cert, "Mailpit: same as --tls-cert")
      ->envname("MP_SMTP_TLS_CERT")
      ->check(CLI::ExistingFile);
  app.add_option("--smtp-tls-key", o.tls_key, "Mailpit: same as --tls-key")
      ->envname("MP_SMTP_TLS_KEY")
      ->check(CLI::ExistingFile);
  app.add_option_function<std::string>(
         "--smtp-ssl-cert",
         [&o](const std::string& v) {
           o.tls_cert = v;
           o.deprecated.push_back("--smtp-ssl-cert (use --smtp-tls-cert)");
         },
         "Mailpit (deprecated): --smtp-tls-cert")
      ->envname("MP_SMTP_SSL_CERT")
      ->check(CLI::ExistingFile)
      ->group("Mailpit (deprecated)");
  app.add_option_function<std::string>(
         "--smtp-ssl-key",
         [&o](const std::string& v) {
           o.tls_key = v;
           o.deprecated.push_back("--smtp-ssl-key (use --smtp-tls-key)");
         },
         "Mailpit (deprecated): --smtp-tls-key")
      ->envname("MP_SMTP_SSL_KEY")
      ->check(CLI::ExistingFile)
      ->group("Mailpit (deprecated)");
  app.add_option("-t,--tag", o.tags,
                 "Mailpit: tag rules 'tag=query tag2=query2' (a search query -> a tag)")
      ->envname("MP_TAG");
  app.add_option("--tags-config", o.tags_config, "Mailpit: YAML file of tag filters (match / tags)")
      ->envname("MP_TAGS_CONFIG")
      ->check(CLI::ExistingFile);
  app.add_flag("--tags-title-case", o.tags_title_case,
               "Mailpit: Title Case new tags from X-Tags and plus addresses")
      ->envname("MP_TAGS_TITLE_CASE");
  app.add_option("--tags-disable", o.tags_disable,
                 "Mailpit: x-tags and/or plus-addresses (comma-separated)")
      ->envname("MP_TAGS_DISABLE");
  app.add_flag("--mailhog-api", o.mailhog_api,
               "GET/DELETE /api/v1/messages answer as MailHog's API v1, not Mailpit's (set "
               "by MailHog's MH_* variables and flags)");
  app.add_flag("--enable-chaos", o.enable_chaos,
               "Mailpit: allow SMTP failure triggers (/api/v1/chaos)")
      ->envname("MP_ENABLE_CHAOS");
  app.add_option("--chaos-triggers", o.chaos_triggers,
                 "Mailpit: initial triggers, e.g. Sender:451:10,Recipient:550:5")
      ->envname("MP_CHAOS_TRIGGERS");
  app.add_option("--smtp-auth-file", o.smtp_auth_file, "Mailpit: SMTP AUTH password file")
      ->envname("MP_SMTP_AUTH_FILE")
      ->check(CLI::ExistingFile);
  app.add_flag("--smtp-auth-accept-any", o.smtp_auth_accept_any,
               "Mailpit: accept any SMTP AUTH credentials")
      ->envname("MP_SMTP_AUTH_ACCEPT_ANY");
  app.add_flag("--smtp-auth-allow-insecure", o.smtp_auth_allow_insecure,
               "Mailpit: allow SMTP AUTH without TLS")
      ->envname("MP_SMTP_AUTH_ALLOW_INSECURE");
  app.add_option("--smtp-relay-config", o.relay.config_file,
                 "Mailpit: relay configuration (YAML) for message release")
      ->envname("MP_SMTP_RELAY_CONFIG")
      ->check(CLI::ExistingFile);
  app.add_option_function<std::string>(
         "--relay",
         [&o](const std::string& v) {
           host_port hp;
           if (!parse_host_port(v, hp))
             throw CLI::ValidationError("--relay", "expected HOST:PORT, got '" + v + "'");
           o.relay.host = hp.host;
           o.relay.port = hp.port;
         },
         "SMTP relay for message release (password only from the file or MP_SMTP_RELAY_PASSWORD)")
      ->type_name("HOST:PORT");
  app.add_flag("--relay-starttls", o.relay.starttls, "release: require STARTTLS");
  app.add_flag("--relay-tls", o.relay.tls, "release: TLS from the start (SMTPS)");
  app.add_flag("--relay-allow-insecure", o.relay.allow_insecure,
               "release: do not verify the relay's certificate");
  app.add_option("--relay-user", o.relay.username, "release: SMTP AUTH user name");
  app.add_option("--relay-return-path", o.relay.return_path,
                 "release: MAIL FROM and Return-Path of released mail");
  app.add_option("--relay-allowed-recipients", o.relay.allowed_recipients,
                 "release: only to addresses matching (regex)");
  app.add_option("--relay-blocked-recipients", o.relay.blocked_recipients,
                 "release: never to addresses matching (regex)");
  std::vector<std::pair<const mailpit_only*, std::string>> seen_only;
  for (const auto& m : mailpit_only_options) {
    auto note = [&o, &m](const std::string& v) {
      o.ignored.push_back(std::string(m.flag) + (v.empty() ? "" : "=" + v));
    };
    if (m.takes_value)
      app.add_option_function<std::string>(m.flag, note,
                                           "Mailpit option without an inletd equivalent (ignored)")
          ->envname(m.env)
          ->group("Mailpit (accepted, no effect)");
    else
      app.add_flag_function(
             m.flag, [note](std::int64_t) { note(""); },
             "Mailpit option without an inletd equivalent (ignored)")
          ->envname(m.env)
          ->group("Mailpit (accepted, no effect)");
  }
  app.add_option_function<std::string>(
         "-d", [&o](const std::string& v) { o.ignored.push_back("--database=" + v); },
         "Mailpit: --database")
      ->group("Mailpit (accepted, no effect)");
  app.set_config("--config", "",
                 "read flags from this file: one `name = value` per line, names as the long "
                 "flags without dashes (docs/configuration.md); flags given here win");
  try {
    app.parse(with_environment(app, argc, argv));
  } catch (const CLI::ParseError& e) {
    if (dynamic_cast<const CLI::ExtrasError*>(&e))
      std::fprintf(stderr, "inletd: not an inletd or Mailpit option (see --help): ");
    return app.exit(e);
  }
  if (max_given)
    o.max_messages = mailpit_max == 0 ? std::numeric_limits<std::size_t>::max() : mailpit_max;
  // The PostgreSQL store's retention is --max-age's meaning, in whole partitions.
  if (o.retention_seconds == 0) o.retention_seconds = o.max_age_seconds;
  if (const char* a = std::getenv("MP_UI_AUTH"); a && o.ui_auth.empty()) o.ui_auth = a;
  if (const char* a = std::getenv("MP_SMTP_AUTH"); a && o.smtp_auth.empty()) o.smtp_auth = a;
  if (!o.relay.config_file.empty()) {
    std::string error;
    if (!read_relay_config(o.relay.config_file, o.relay, error)) {
      std::fprintf(stderr, "inletd: %s\n", error.c_str());
      return 2;
    }
  } else if (o.relay.host.empty()) {
    relay_from_environment(o.relay);
  }
  if (o.relay.password.empty())
    if (const char* p = std::getenv("MP_SMTP_RELAY_PASSWORD")) o.relay.password = p;
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    std::fprintf(stderr, "inletd: --tls-cert and --tls-key go together\n");
    return 2;
  }
  return std::nullopt;
}

}  // namespace inletd
