// inletd's configuration, typed and grouped by concern. The settings are the libraries'
// own configuration structs (smtp::server_config, http::server_config, the stores',
// ingest_options, webhook_config), filled by the flag table (flags.cpp), where every flag
// is defined once: its names (inletd's and Mailpit's), its MP_* variable, its unit, its
// default and its help. The parser, `--help`, the INLET_* variables, the config file and
// docs/configuration.md's tables are all produced from that table.
//
// Reading order: command line, then the environment (MP_* over INLET_*), then the
// --config file, then the default. After parsing, `finish` resolves what depends on more
// than one flag (credentials, tag rules, the relay file, the shard list); main() then only
// builds the parts from the finished configuration.
#pragma once

#include <chrono>
#include <cstdint>
#include <inlet/auth/password_file.hpp>
#include <inlet/http/server.hpp>
#include <inlet/mail/ingest.hpp>
#include <inlet/outbound/webhook.hpp>
#include <inlet/pop3/server.hpp>
#include <inlet/smtp/chaos.hpp>
#include <inlet/smtp/server.hpp>
#include <inlet/store/file_store.hpp>
#include <inlet/store/memory_store.hpp>
#include <inlet/store/pg_store.hpp>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace inletd {

struct host_port {
  std::string host;
  std::uint16_t port = 0;
};

enum class store_kind : std::uint8_t { memory, sink, postgresql, file };
enum class filter_action : std::uint8_t { tag, reject };

struct config {
  config();  ///< inletd's defaults, where they differ from the libraries'

  // ---- SMTP and LMTP: listeners, session limits, admission, I/O model, TLS ----
  inlet::smtp::server_config smtp;
  struct smtp_auth_settings {
    std::string file;         ///< --smtp-auth-file
    std::string users;        ///< MP_SMTP_AUTH: "user:password ..."
    bool accept_any = false;  ///< --smtp-auth-accept-any
  } smtp_auth;
  std::string smtp_allowed_recipients;  ///< the regular expression as given

  // ---- HTTP: listener, limits, the API's options ----
  inlet::http::server_config http;
  struct ui_auth_settings {
    std::string file;   ///< --ui-auth-file
    std::string users;  ///< MP_UI_AUTH
  } ui_auth;
  struct send_auth_settings {
    std::string file;   ///< --send-api-auth-file
    std::string users;  ///< MP_SEND_API_AUTH
  } send_auth;
  double api_rate_limit = -1;  ///< <0: 10 with --public, else 0 (finish)
  /// Mailpit's --enable-prometheus ADDR: a listener of its own for /metrics.
  std::optional<host_port> prometheus_listen;
  /// Message release's relay (--smtp-relay-config, MP_SMTP_RELAY_*, --relay-*); used when
  /// its host is set.
  inlet::http::relay_config relay;
  std::string relay_file;

  // ---- POP3 (Mailpit's: on when POP3 credentials are given) ----
  struct pop3_settings {
    inlet::pop3::server_config server;  ///< listener, TLS, limits; credentials set by finish
    std::string auth_file;              ///< --pop3-auth-file
    std::string users;                  ///< MP_POP3_AUTH: "user:password ..."
    bool enabled = false;               ///< credentials given (finish)
    bool listen_given = false;          ///< --pop3 or MP_POP3_BIND_ADDR
  } pop3;

  // ---- store ----
  struct store_settings {
    store_kind kind = store_kind::memory;
    std::string name = "memory";  ///< as given (a URI is never printed: it may hold a password)
    inlet::store::memory_store_config memory;
    inlet::store::pg_store_config pg;  ///< shards resolved by finish
    /// The file store (--database); its path set means kind `file` (finish), its count
    /// and age bounds are --max's and --max-age's.
    inlet::store::file_store_config file;
    std::string first_shard;           ///< --store's URI
    std::vector<std::string> shards;   ///< --shard
    std::string shards_file;
    std::chrono::seconds max_age{0};  ///< Mailpit's --max-age (every store)
  } store;

  // ---- ingest: tags, tag rules, dates, off-thread work ----
  inlet::mail::ingest_options ingest;
  std::vector<std::string> tag_rules;  ///< --tag
  std::string tag_rules_file;          ///< --tags-config

  // ---- content filter ----
  struct filter_settings {
    std::string terms;  ///< term list file; empty: no filter
    filter_action action = filter_action::tag;
    double threshold = 1.0;
  } filter;

  // ---- outbound ----
  inlet::outbound::webhook_config webhook;
  /// Mailpit's auto-relay: new messages on to their recipients through `relay`.
  struct auto_relay_settings {
    bool all = false;       ///< --smtp-relay-all
    std::string matching;   ///< --smtp-relay-matching: only recipients matching
    std::shared_ptr<const std::regex> matching_re, blocked_re;  ///< compiled by finish
  } auto_relay;
  /// Mailpit's forwarding: a copy of each new message to `forward_to` through `forward`.
  inlet::http::relay_config forward;
  std::vector<std::string> forward_to;
  std::string forward_file;  ///< --smtp-forward-config

  // ---- chaos ----
  struct chaos_settings {
    bool enabled = false;
    std::string triggers;
  } chaos;
  std::string mailhog_jim;  ///< --mailhog-jim: Jim invited with these settings

  // ---- logging ----
  struct log_settings {
    bool quiet = false;
    bool verbose = false;  ///< a line per message stored
    std::string file;      ///< stdout and stderr appended there
  } log;

  /// Mailpit options given that inletd does not support yet: each named once at start.
  std::vector<std::string> ignored;
  /// Deprecated Mailpit spellings given (--smtp-ssl-cert, MP_DATA_FILE, ...).
  std::vector<std::string> deprecated;
};

/// Parses argv (with MailHog's and MailDev's flags and variables translated), the
/// environment and the config file, then `finish`es. On --help or an error, prints to
/// stdout/stderr and returns the exit code to use; otherwise returns nullopt.
std::optional<int> parse_config(int argc, char** argv, config& out);

/// What depends on more than one flag: the relay file and variables, credentials, tag
/// rules, the shard list, the send API's body limit. An error message, or empty.
std::string finish(config& c);

/// docs/configuration.md's flag tables, one per group, as Markdown: each table between
/// `<!-- flags: GROUP -->` and `<!-- /flags -->` lines.
std::string flags_markdown();

/// Parses HOST:PORT or [V6]:PORT (":1025": every interface, as Mailpit's). False on a
/// malformed value.
bool parse_host_port(const std::string& text, host_port& out);

/// Parses a duration: a number with an optional unit s, m, h or d ("90m", "7d"; no unit:
/// seconds). False on a malformed value.
bool parse_duration(const std::string& text, std::uint64_t& seconds);

/// Reads Mailpit's relay configuration file (YAML) into `r`; false and a message in
/// `error` on a file that cannot be read or a key it does not know.
bool read_relay_config(const std::string& path, inlet::http::relay_config& r, std::string& error);

}  // namespace inletd
