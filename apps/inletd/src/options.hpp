// inletd's configuration: every flag, parsed with CLI11 into one plain struct.
// docs/configuration.md lists the flags; keep the two in step.
//
// Mailpit's flags and MP_* environment variables are accepted too, for everything inletd
// has an equivalent of, so a Mailpit command line or compose file works unchanged; the
// Mailpit options inletd has no equivalent for are accepted, reported in `ignored` and
// warned about at start; anything else is refused with a message (exit code 2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inletd {

struct host_port {
  std::string host;
  std::uint16_t port = 0;
};

struct options {
  host_port smtp{"127.0.0.1", 1025};
  host_port http{"127.0.0.1", 8025};
  std::optional<host_port> lmtp;
  std::string store = "memory";  ///< "memory", "sink", "postgresql" or a postgresql:// URI
  // PostgreSQL store (docs/store-pg.md): shards after --store's URI, or from a file.
  std::vector<std::string> shards;
  std::string shards_file;
  std::uint64_t retention_seconds = 0;  ///< 0: keep (set from --max-age when not given)
  std::uint64_t max_age_seconds = 0;    ///< --max-age, MP_MAX_AGE; 0: keep
  std::size_t mailbox_cap = 0;          ///< 0: no cap
  std::uint32_t buckets = 1024;
  unsigned expect_shards = 0;  ///< --expect-shards; 0: not checked
  unsigned pg_writers = 4;
  std::size_t pg_max_batch = 256;
  unsigned pg_batch_wait_us = 0;
  std::size_t max_messages = 10000;
  std::size_t max_store_bytes = std::size_t{1} << 30;
  std::uint64_t max_message_size = 50u << 20;  ///< bytes; 0 = no limit (SIZE 0)
  std::size_t max_recipients = 100;
  std::string hostname = "localhost";
  std::vector<std::string> domains;
  std::string io_model = "coro";
  unsigned threads = 0;
  unsigned reads_per_event = 1;
  unsigned accepts_per_event = 1;
  std::string receive_buffer = "segment";  ///< "segment" (zero-copy) or "flat" (copying baseline)
  std::string parse =
      "after";  ///< "after" (parse the complete message) or "streaming" (while receiving)
  std::size_t heavy_message_bytes = 256 * 1024;  ///< --heavy-message-bytes; 0: never off-thread
  std::size_t max_connections = 10000;
  std::size_t max_connections_per_ip = 1000;
  std::size_t max_connections_per_subnet = 2500;  ///< 0 = no limit
  unsigned subnet_prefix_v4 = 24;
  unsigned subnet_prefix_v6 = 64;
  unsigned pressure_at = 75;  ///< percent of max_connections; 0 = never
  std::size_t pressure_per_ip = 50;
  std::size_t pressure_per_subnet = 200;
  unsigned pressure_timeout_seconds = 10;
  std::size_t min_data_rate = 500;  ///< body octets/s; 0 = off
  bool no_evict = false;
  bool no_release_memory = false;
  std::size_t max_command_line = 512;
  std::size_t max_line_length = 1000;  ///< body text line limit incl. CRLF; 0 = off
  unsigned shutdown_grace_seconds = 30;
  unsigned timeout_seconds = 300;
  std::string tls_cert;
  std::string tls_key;
  bool smtp_require_starttls = false;            ///< Mailpit: MAIL etc. refused before STARTTLS
  std::string smtp_allowed_recipients;           ///< Mailpit: regular expression; empty = all
  bool smtp_ignore_rejected_recipients = false;  ///< Mailpit: refused recipients get 250, dropped
  std::string filter_terms;
  std::string filter_action = "tag";
  double filter_threshold = 1.0;
  bool quiet = false;
  bool verbose = false;             ///< -v, --verbose, MP_VERBOSE: a line per message stored
  std::string log_file;             ///< --log-file, MP_LOG_FILE: stdout and stderr appended there
  bool use_message_dates = false;   ///< --use-message-dates: Date header as the received time
  bool tags_username = false;       ///< --tags-username: the SMTP AUTH user as a tag
  bool hide_delete_all_button = false;    ///< --hide-delete-all-button
  bool disable_http_compression = false;  ///< --disable-http-compression

  // ---- Mailpit's options ----
  std::string label;          ///< --label, MP_LABEL
  std::string webroot = "/";  ///< --webroot, MP_WEBROOT
  std::string ui_auth_file;   ///< --ui-auth-file, MP_UI_AUTH_FILE
  std::string ui_auth;        ///< MP_UI_AUTH: "user:password user2:password2"
  std::string api_cors;       ///< --api-cors, MP_API_CORS
  // HTTP defences (inletd's own)
  std::vector<std::string> allowed_hosts;     ///< --allowed-host (repeatable), --allowed-hosts
  bool only_allowed_hosts = false;            ///< Mailpit's --allowed-hosts was given
  bool public_mode = false;                   ///< --public
  double api_rate_limit = -1;                 ///< --api-rate-limit; <0: 10 with --public, else 0
  double api_rate_burst = 0;                  ///< --api-rate-burst; 0: max(10, 2 x rate)
  std::size_t http_max_connections = 4096;    ///< --http-max-connections
  std::size_t http_max_event_streams = 1024;  ///< --http-max-event-streams
  std::size_t http_max_event_streams_per_client = 32;  ///< --http-max-event-streams-per-client
  bool block_remote_css_and_fonts = false;
  bool allow_untrusted_tls = false;  ///< link check: do not verify certificates
  std::string webhook_url;           ///< --webhook-url, MP_WEBHOOK_URL (outbound_service)
  int webhook_limit = 1;             ///< --webhook-limit, MP_WEBHOOK_LIMIT: a second; 0: any
  int webhook_delay = 0;             ///< --webhook-delay, MP_WEBHOOK_DELAY: seconds
  std::vector<std::string> tags;     ///< --tag, MP_TAG: `tag=query ...` rules
  std::string tags_config;           ///< --tags-config: YAML of match/tags filters
  bool tags_title_case = false;
  std::string tags_disable;    ///< "x-tags", "plus-addresses" (comma-separated)
  bool mailhog_api = false;    ///< --mailhog-api: MailHog's /api/v1/messages (docs/api.md)
  bool enable_chaos = false;   ///< --enable-chaos, MP_ENABLE_CHAOS
  std::string chaos_triggers;  ///< --chaos-triggers, MP_CHAOS_TRIGGERS
  // SMTP AUTH (parsed here, for the SMTP server)
  std::string smtp_auth_file;
  std::string smtp_auth;  ///< MP_SMTP_AUTH: "user:password ..."
  bool smtp_auth_accept_any = false;
  bool smtp_auth_allow_insecure = false;
  /// Message release (POST /api/v1/message/{ID}/release): Mailpit's relay configuration
  /// file, MP_SMTP_RELAY_* variables, or the --relay-* flags.
  struct relay_options {
    std::string config_file;
    std::string host;
    std::uint16_t port = 25;
    bool starttls = false;
    bool tls = false;
    bool allow_insecure = false;
    std::string auth = "none";
    std::string username;
    std::string password;
    std::string return_path;
    std::string allowed_recipients;
    std::string blocked_recipients;
    bool preserve_message_ids = false;
  } relay;
  /// Mailpit options given that inletd does not support yet ("--database", ...): each is
  /// named once at start, never dropped silently.
  std::vector<std::string> ignored;
  /// Deprecated Mailpit spellings given (--smtp-ssl-cert, MP_DATA_FILE, ...), to warn about.
  std::vector<std::string> deprecated;
};

/// Reads Mailpit's relay configuration file (YAML `key: value` lines) into `r`; false and
/// a message in `error` on a file that cannot be read or a key it does not know.
bool read_relay_config(const std::string& path, options::relay_options& r, std::string& error);

/// The MP_SMTP_RELAY_* variables (Mailpit's relay without a file) into `r`, when
/// MP_SMTP_RELAY_HOST is set.
void relay_from_environment(options::relay_options& r);

/// Parses HOST:PORT or [V6]:PORT. Returns false on a malformed value.
bool parse_host_port(const std::string& text, host_port& out);

/// Parses a duration: a number with an optional unit s, m, h or d ("90m", "7d"; no unit:
/// seconds). Returns false on a malformed value.
bool parse_duration(const std::string& text, std::uint64_t& seconds);

/// Parses argv. On --help or an error, prints to stdout/stderr and returns the exit
/// code to use; otherwise returns nullopt and fills `out`.
std::optional<int> parse_options(int argc, char** argv, options& out);

}  // namespace inletd
