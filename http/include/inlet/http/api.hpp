// The HTTP API as a coroutine from a request to a response: Mailpit's API v1 (every
// operation of its swagger), inlet's additions (/api/v1/mailbox/{address}, the Envelope
// and Read fields, /metrics), the views (/view/...), health, the web page. No sockets
// here: `server` feeds it requests read by Beast, tests feed it requests built in memory
// and run the coroutine on a local io_context (see test/api_test.cpp).
//
// Every store call goes through the store's asynchronous interface and is awaited; work
// that blocks (image thumbnails, link checks, SMTP release) runs on the api's own small
// thread pool and is awaited too. So a request never blocks an I/O thread.
//
// Thread-safety: `api::handle` and the other const members may be called from any number
// of threads at once (the store is thread-safe; counters are atomics). The hooks in
// api_config are called concurrently and must be thread-safe themselves.
// Views: responses own their bodies; nothing refers back into the store after return.
#pragma once

#include <inlet/mail/submission.hpp>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "inlet/auth/password_file.hpp"
#include "inlet/smtp/chaos.hpp"
#include "inlet/http/error.hpp"
#include "inlet/outbound/smtp_relay.hpp"
#include "inlet/store/store.hpp"

namespace inlet::http {

/// MailHog's chaos monkey "Jim" (its /api/v2/jim settings, MailHog's field names and
/// defaults). Chances are 0..1; link speeds bytes per second.
struct jim_settings {
  double disconnect_chance = 0.005;
  double accept_chance = 0.99;
  double link_speed_affect = 0.1;
  double link_speed_min = 1024;
  double link_speed_max = 10240;
  double reject_sender_chance = 0.05;
  double reject_recipient_chance = 0.05;
  double reject_auth_chance = 0.05;
  friend bool operator==(const jim_settings&, const jim_settings&) = default;
};

/// Jim over inlet's chaos: while Jim is in, its three rejection chances are the chaos
/// triggers (MAIL and RCPT fail with 550, AUTH with 535, as MailHog answers; chances
/// rounded to whole percent); turning Jim out turns the triggers off. Its other settings
/// (disconnect, accept, link speed) have no inlet counterpart: kept and echoed only.
/// Thread-safety: every member may be called from any thread at once.
class jim_state {
 public:
  explicit jim_state(std::shared_ptr<inlet::smtp::chaos_state> chaos) : chaos_(std::move(chaos)) {}

  /// The settings while Jim is in, nullopt while it is out.
  std::optional<jim_settings> get() const;
  /// Invites Jim (or updates it) with `s`, or turns it out (nullopt).
  void set(std::optional<jim_settings> s);
  /// The settings a POST without a readable body invites Jim with: the last ones set
  /// (at first MailHog's defaults), as MailHog does.
  jim_settings last() const;

  /// The chaos triggers that `s` maps onto.
  static inlet::smtp::chaos_triggers triggers(const jim_settings& s);
  /// Reads "Name:value,..." with MailHog's JSON field names (RejectSenderChance:0.5);
  /// unnamed fields keep their value in `out`. False, with why, on a malformed list.
  static bool parse(std::string_view text, jim_settings& out, std::string& error);
  /// MailHog's JSON of the settings (its field order; numbers as Go writes them).
  static std::string json(const jim_settings& s);

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<inlet::smtp::chaos_state> chaos_;
  std::optional<jim_settings> current_;
  jim_settings last_;
};

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = boost::beast::http::response<boost::beast::http::string_body>;

/// A response body produced piece by piece, so that a large answer (a listing of big
/// summaries, a large raw message) is written as it is made and never held whole: the
/// server asks for about `window` bytes at a time and writes each piece before asking
/// again. Design: a pull generator; the source holds what it reads (shared message
/// records), never the bytes it has given.
/// Thread-safety: used by one thread at a time (the session's strand).
class body_source {
 public:
  virtual ~body_source() = default;
  /// Appends the next bytes to `out` (about `window`; one item may make a piece larger).
  /// False once everything has been given (nothing is appended then).
  virtual bool next(std::string& out, std::size_t window) = 0;
  /// The body's length when known before it is made: the server then sends
  /// Content-Length, else chunked transfer coding (HTTP/1.1) or a close (HTTP/1.0).
  virtual std::optional<std::uint64_t> size() const { return std::nullopt; }
};

/// An answer: `res` with its body, or, when `body` is set, `res`'s status and headers
/// with the body to come from `body` (res.body() is empty then).
struct reply {
  reply() = default;
  reply(response r) : res(std::move(r)) {}  // NOLINT: every plain response is a reply
  reply(response r, std::shared_ptr<body_source> b) : res(std::move(r)), body(std::move(b)) {}
  response res;
  std::shared_ptr<body_source> body;
};

/// Who sent a request, as the server saw the connection. Not an aggregate (see the g++ 12
/// note at store::list_request): it is passed inside co_await expressions.
struct client_info {
  client_info() noexcept {}
  explicit client_info(std::string key_) : key(std::move(key_)) {}
  /// What rate limits count by: the IPv4 address, or the /64 prefix of an IPv6 address.
  /// Empty: unknown (in-process callers, tests); never rate-limited.
  std::string key;
};

/// Appends Prometheus text-format lines to /metrics (the application's own counters).
using metrics_hook = std::function<void(std::string& out)>;

/// A message to store as if received (POST /api/v1/send): the application ingests it
/// (mail::ingest::submit) and completes with the stored ID. `done` may run on any
/// thread, once.
using submission = inlet::mail::submission;
using submit_hook =
    std::function<void(submission msg, std::function<void(std::error_code, std::string id)> done)>;

/// Counters of the SMTP side for /api/v1/info (RuntimeStats).
struct app_counters {
  std::uint64_t smtp_accepted = 0;
  std::uint64_t smtp_accepted_bytes = 0;
  std::uint64_t smtp_rejected = 0;
  std::uint64_t smtp_ignored = 0;
};
using app_counters_hook = std::function<app_counters()>;

/// The SMTP server that POST /api/v1/message/{ID}/release sends through (Mailpit's
/// --smtp-relay-config). Unset: release answers 400. The outbound component's SMTP
/// client sends it, as it sends auto-relay and forwarding.
using relay_config = outbound::smtp_relay_config;

struct link_check_config {
  std::size_t max_links = 100;              ///< links checked per message
  std::chrono::milliseconds timeout{5000};  ///< per link, connect to last byte
  std::size_t parallel = 8;                 ///< links in flight at once
  bool allow_untrusted_tls = false;         ///< Mailpit's --allow-untrusted-tls
  /// Mailpit's --allow-internal-http-requests. Off: a link whose address is loopback,
  /// private, link-local, multicast or otherwise reserved is not fetched (a message must
  /// not make the server probe its own network), checked on the address actually
  /// connected to, so redirects and DNS answers cannot slip past.
  bool allow_internal = false;
};

/// Spam scores of a message (Mailpit's --enable-spamassassin and --enable-rspamd), asked
/// of the service on the api's thread pool, never on an I/O thread.
struct spam_check_config {
  /// spamd's address: "HOST:PORT" or "unix:/path"; empty: GET .../sa-check answers 400.
  std::string spamassassin;
  /// rspamd's base URL (http or https, no trailing slash, no password); empty: off.
  std::string rspamd;
  std::string rspamd_password;              ///< sent as rspamd's Password header
  std::chrono::milliseconds timeout{8000};  ///< per check, connect to last byte (Mailpit's 8 s)
  std::size_t max_reply_bytes = 10u << 20;  ///< a longer reply is an error
};

/// Reads --enable-rspamd as Mailpit does: a URL or HOST:PORT (http assumed), an optional
/// password as the URL's user information (percent-encoded). Fills `rspamd` and
/// `rspamd_password`; returns a message for a value that is not an address, else "".
std::string parse_rspamd_service(std::string_view text, spam_check_config& out);

struct thumbnail_config {
  std::size_t max_input_bytes = 20u << 20;  ///< larger images get the blank thumbnail
  std::uint64_t max_pixels = 40'000'000;    ///< width x height decoded, at most
  std::uint32_t max_side = 16384;           ///< width and height, each
};

struct api_config {
  metrics_hook extra_metrics;
  submit_hook submit;  ///< unset: POST /api/v1/send answers 400
  app_counters_hook app_counters;
  std::size_t default_limit = 50;   ///< `limit` absent or 0
  std::size_t max_limit = 1000;     ///< larger `limit`s are clamped
  std::string version = "inlet";    ///< /api/v1/info Version
  std::string database = "memory";  ///< /api/v1/info Database (the store's description)
  std::string label;                ///< Mailpit's --label
  std::string webroot = "/";        ///< Mailpit's --webroot: every path lives under it
  std::string cors_origin;          ///< Mailpit's --api-cors; empty: no CORS headers
  std::shared_ptr<const inlet::auth::password_file> ui_auth;  ///< basic auth for API and page; null: open
  /// Mailpit's --send-api-auth-file: POST /api/v1/send takes these credentials only (and
  /// not ui_auth's). Null: the send API is guarded as the rest is.
  std::shared_ptr<const inlet::auth::password_file> send_auth;
  /// Mailpit's --send-api-auth-accept-any: POST /api/v1/send needs no credentials.
  bool send_auth_accept_any = false;
  std::shared_ptr<inlet::smtp::chaos_state> chaos;            ///< null: chaos disabled (400 on /api/v1/chaos)
  /// MailHog's Jim over `chaos` (/api/v2/jim); null when chaos is: Jim is not available.
  std::shared_ptr<jim_state> jim;
  std::optional<relay_config> relay;
  link_check_config link_check;
  spam_check_config spam_check;
  thumbnail_config thumbnails;
  bool block_remote_css_and_fonts = false;
  /// Mailpit's --enable-prometheus: /metrics carries Mailpit's metric names (mailpit_*)
  /// beside inlet's, so its dashboards and alerts keep working.
  bool mailpit_metrics = false;
  /// Mailpit's --ignore-duplicate-ids is on (told to the page in /api/v1/webui).
  bool duplicates_ignored = false;
  /// A server that answers /metrics alone, without authentication (Mailpit's separate
  /// Prometheus listener, --enable-prometheus ADDR); every other path is 404.
  bool metrics_only = false;
  bool hide_delete_all_button = false;    ///< Mailpit's: told to the page in /api/v1/webui
  bool disable_http_compression = false;  ///< Mailpit's: no gzip
  std::size_t workers = 2;  ///< threads for blocking work (thumbnails, link check, relay)

  /// Host header names accepted besides loopback names (localhost, *.localhost), IP
  /// literals and the listen address: a page whose DNS name was rebound to this server
  /// must not read or delete mail. "*" accepts any; ".example.com" any name under it.
  std::vector<std::string> allowed_hosts;
  /// Mailpit's --allowed-hosts was given: a single-label name must be listed too.
  bool only_allowed_hosts = false;
  /// Disposable-inbox deployments: only mailbox-scoped reads (a mailbox's list, a message
  /// and its parts by ID, the page); no global listing or search, no changes but the read
  /// flag a message gets when opened, no admin operations (docs/api.md, "Public mode").
  bool public_mode = false;
  /// MailHog's flavour of the one path that collides: GET/DELETE /api/v1/messages answer
  /// as MailHog (an array; delete all) instead of Mailpit (docs/api.md, "MailHog").
  bool mailhog_v1 = false;
  /// API requests per second per client (client_info::key), with bursts of `rate_burst`;
  /// past it 429 with Retry-After. 0: no limit. The page's own files are not counted.
  double rate_limit = 0;
  double rate_burst = 0;  ///< 0: max(10, 2 x rate_limit)
  /// A listing's JSON stops adding messages once it holds this many bytes (at least one
  /// message is always given; `count` says how many were). With the store's bounded
  /// summaries a page is far below it; it bounds what a request can make the server build.
  std::size_t max_list_bytes = 8u << 20;
  /// MailHog's and MailDev's views keep each message as rendered (it never changes) for
  /// the next listing, up to this many bytes (least recently used out first); 0: none.
  std::size_t catcher_cache_bytes = 64u << 20;
};

class api {
 public:
  api(store::store& store, api_config cfg);
  ~api();
  api(const api&) = delete;
  api& operator=(const api&) = delete;

  /// Answers one request. Never throws; unknown paths 404, wrong methods 405, malformed
  /// input 400, missing credentials 401, a Host header naming another server or a route
  /// closed in public mode 403, over the rate limit 429, each with a JSON body
  /// {"Error": "..."}; a store that fails 503.
  boost::asio::awaitable<response> handle(request req, client_info client = client_info()) const;

  /// As handle(), but a large body (listings, search results, raw messages) comes as a
  /// body_source to write piece by piece; handle() is this with the body collected. HEAD
  /// answers carry Content-Length and no source.
  boost::asio::awaitable<reply> handle_streamed(request req,
                                                client_info client = client_info()) const;

  /// The checks made before routing: the Host header, public mode, the rate limit and
  /// basic auth. A refusal to send, or nullopt when the request may proceed. handle()
  /// calls it; the server calls it before it upgrades an events request.
  std::optional<response> screen(const request& req, const client_info& client) const;

  /// True for `GET /api/events` (under the webroot), which the server answers with a
  /// websocket or an event stream instead of calling handle().
  bool is_events_request(const request& req) const { return events_feed(req) != feed::none; }
  /// Which event stream a request asks for: Mailpit's /api/events, or MailHog's
  /// /api/v1/events (SSE) and /api/v2/websocket, which carry each new message whole.
  enum class feed : std::uint8_t { none, mailpit, mailhog };
  feed events_feed(const request& req) const;
  /// MailHog's event for a new message (its data.Message JSON); empty when the event
  /// does not carry the raw bytes.
  std::string mailhog_event(const store::stored_message& m) const;

  /// Whether the request may proceed (basic auth, when configured). The server asks
  /// before it upgrades an events request; handle() asks by itself.
  bool authorized(const request& req) const;

  /// A JSON error response (also used by the server for parse errors and limits).
  response error(unsigned status, std::string_view message, unsigned version = 11,
                 bool keep_alive = false) const;

  /// Mailpit's MessageSummary of one message, as JSON text.
  std::string summary_json(const store::stored_message& m) const;

  /// A store event as Mailpit's websocket messages ({"Type": ..., "Data": ...}), one
  /// (type, JSON text) per message: "new" (a MessageSummary), "delete" ({"ID"}), "update"
  /// ({"ID", "Read"} or {"ID", "Tags"}), "prune" (many changed: reload).
  std::vector<std::pair<std::string, std::string>> event_messages(
      const store::store_event& e) const;

  /// Mailpit's "stats" message: {"Type":"stats","Data":{"Total","Unread","Version"}}.
  std::string stats_message() const;

  /// The Prometheus exposition of the store, HTTP counters and the extra hook.
  std::string metrics_text() const;

  /// Counts a response status (handle() counts its own; the server counts the rest).
  void count(unsigned status) const noexcept;

  /// Gauge of connected event-stream clients, maintained by the server.
  std::atomic<std::int64_t>& event_clients() const noexcept;

  store::store& backing_store() const noexcept;
  const api_config& config() const noexcept;

  struct context;  // the state every handler reads (src/api_internal.hpp)

 private:
  std::unique_ptr<context> ctx_;
};

/// The web page's document served at "/" (its script and stylesheet are served beside it).
std::string_view web_page() noexcept;

/// Mailpit's API description (OpenAPI 2.0), as served at /api/v1/swagger.json.
std::string_view swagger_json() noexcept;

/// Decodes %XX escapes (and '+' as space when `plus_is_space`); false on a malformed
/// escape.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

/// Replaces invalid UTF-8 sequences with U+FFFD (messages are hostile input; JSON must be
/// valid UTF-8).
std::string sanitize_utf8(std::string_view in);

/// RFC 3339 in UTC with milliseconds, e.g. "2026-11-22T02:10:00.123Z".
std::string format_rfc3339(store::time_point t);

}  // namespace inlet::http
