#include "options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
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

}  // namespace

std::optional<int> parse_options(int argc, char** argv, options& o) {
  CLI::App app{"inletd: takes mail for any address over SMTP, keeps it, serves it over HTTP"};
  app.set_version_flag("--version", "inletd 0.1.0");
  add_endpoint(app, "--smtp", o.smtp, "SMTP listener (default 127.0.0.1:1025)");
  add_endpoint(app, "--listen", o.http, "HTTP listener: API, web page, /metrics (default 127.0.0.1:8025)");
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
  app.add_option("--store", o.store, "memory (default), sink (accept and discard after parsing)")
      ->capture_default_str();
  app.add_option("--max-messages", o.max_messages, "memory store: messages kept (oldest evicted)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-store-bytes", o.max_store_bytes, "memory store: raw bytes kept (oldest evicted)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-message-size", o.max_message_size, "largest message accepted, bytes (SIZE)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-recipients", o.max_recipients, "recipients per transaction (452 4.5.3 past it)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-command-line", o.max_command_line, "longest command line, octets incl. CRLF")
      ->capture_default_str()->check(CLI::Range(512, 65536));
  app.add_option("--max-line-length", o.max_line_length,
                 "longest text line of a message, octets incl. CRLF (RFC 5321 4.5.3.1.6); 0 = no limit")
      ->capture_default_str()->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  app.add_option("--hostname", o.hostname, "name in the greeting and EHLO reply")->capture_default_str();
  app.add_option("--domain", o.domains, "accept mail for this domain (repeatable; none = every domain)");
  app.add_option("--io-model", o.io_model, "coro (default), async-1n, async-nn, async-n2n, thread, stackful, process")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "I/O threads (0 = one per core)")->capture_default_str();
  app.add_option("--reads-per-event", o.reads_per_event, "async models: reads per wake-up")
      ->capture_default_str()->check(CLI::Range(1u, 1024u));
  app.add_option("--accepts-per-event", o.accepts_per_event,
                 "coro, async and stackful models: connections accepted per listener wake-up")
      ->capture_default_str()->check(CLI::Range(1u, 1024u));
  app.add_option("--receive-buffer", o.receive_buffer,
                 "async models: segment (zero-copy, default) or flat (std::string + copy out, for comparisons)")
      ->capture_default_str()->check(CLI::IsMember({"segment", "flat"}));
  app.add_option("--parse", o.parse,
                 "after (default: parse each message once it is complete) or streaming (parse while "
                 "receiving: every io model)")
      ->capture_default_str()->check(CLI::IsMember({"after", "streaming"}));
  app.add_option("--max-connections", o.max_connections, "SMTP connections in total (421 4.7.0 past it)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-connections-per-ip", o.max_connections_per_ip, "SMTP connections per client IP")
      ->capture_default_str()->check(CLI::PositiveNumber);
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
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--shutdown-grace", o.shutdown_grace_seconds,
                 "on SIGTERM/SIGINT: seconds a transaction in flight may take; then 421 4.3.2 and close")
      ->capture_default_str();
  app.add_option("--tls-cert", o.tls_cert, "PEM certificate chain: offers STARTTLS")->check(CLI::ExistingFile);
  app.add_option("--tls-key", o.tls_key, "PEM private key for --tls-cert")->check(CLI::ExistingFile);
  app.add_option("--filter-terms", o.filter_terms, "term list file; SIGHUP or a change reloads it")
      ->check(CLI::ExistingFile);
  app.add_option("--filter-action", o.filter_action, "tag (default) or reject")
      ->capture_default_str()->check(CLI::IsMember({"tag", "reject"}));
  app.add_option("--filter-threshold", o.filter_threshold, "score at which the action applies")
      ->capture_default_str();
  app.add_flag("--quiet", o.quiet, "log only errors");
  app.set_config("--config", "",
                 "read flags from this file: one `name = value` per line, names as the long "
                 "flags without dashes (docs/configuration.md); flags given here win");
  try {
    app.parse(with_environment(app, argc, argv));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    std::fprintf(stderr, "inletd: --tls-cert and --tls-key go together\n");
    return 2;
  }
  return std::nullopt;
}

}  // namespace inletd
