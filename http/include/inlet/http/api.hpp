// The HTTP API as a coroutine from a request to a response: routing, JSON shapes (Mailpit
// API v1), the web page and /metrics. No sockets here: `server` feeds it requests read by
// Beast, tests feed it requests built in memory and run the coroutine on a local
// io_context (see test/api_test.cpp).
//
// Every store call goes through the store's asynchronous interface and is awaited, so a
// request waiting for a slow store (a PostgreSQL shard) suspends its session and never
// blocks an I/O thread.
//
// Thread-safety: `api::handle` and the other const members may be called from any number
// of threads at once (the store is thread-safe; counters are atomics). The hooks in
// api_config are called concurrently and must be thread-safe themselves.
// Views: responses own their bodies; nothing refers back into the store after return.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/http/error.hpp"
#include "inlet/store/store.hpp"

namespace inlet::http {

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = boost::beast::http::response<boost::beast::http::string_body>;

/// One MIME part as Mailpit lists it in Message.Inline / Message.Attachments.
struct part_info {
  std::string part_id;
  std::string filename;
  std::string content_type;
  std::string content_id;
  std::size_t size = 0;
};

/// What a renderer (the MIME parser, wired by the application) extracts from raw bytes.
struct rendered_body {
  std::string text;  ///< decoded text/plain, UTF-8
  std::string html;  ///< decoded text/html, UTF-8 (shown only in a sandboxed iframe)
  std::vector<part_info> inline_parts;
  std::vector<part_info> attachments;
};

/// Renders a message's bodies from its raw bytes. Must not throw; may be called from many
/// threads at once. Unset: Text/HTML are "" and the part lists come from the summary.
using renderer = std::function<rendered_body(std::string_view raw)>;

/// Appends Prometheus text-format lines to /metrics (the application's own counters).
using metrics_hook = std::function<void(std::string& out)>;

struct api_config {
  renderer render;
  metrics_hook extra_metrics;
  std::size_t default_limit = 50;  ///< `limit` absent or 0
  std::size_t max_limit = 1000;    ///< larger `limit`s are clamped
};

class api {
 public:
  api(store::store& store, api_config cfg);

  /// Answers one request. Never throws; unknown paths 404, wrong methods 405, malformed
  /// input 400, each with a JSON body {"Error": "..."}; a store that fails 503.
  boost::asio::awaitable<response> handle(request req) const;

  /// True for `GET /api/events`, which the server answers with an event stream instead
  /// of calling handle().
  static bool is_events_request(const request& req);

  /// A JSON error response (also used by the server for parse errors and limits).
  response error(unsigned status, std::string_view message, unsigned version = 11,
                 bool keep_alive = false) const;

  /// Mailpit's MessageSummary of one message, as JSON text.
  std::string summary_json(const store::stored_message& m) const;

  /// A store event as Mailpit's websocket messages ({"Type": ..., "Data": ...}), one
  /// JSON text per message: "new" (a MessageSummary), "delete" ({"ID"}), "update"
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
  std::atomic<std::int64_t>& event_clients() const noexcept { return event_clients_; }

  store::store& backing_store() const noexcept { return store_; }

 private:
  struct target;  // a request's path and query, split
  // `head`: answering HEAD with the GET route (no side effects such as marking read).
  boost::asio::awaitable<response> route(const request& req, bool head) const;
  boost::asio::awaitable<response> list_messages(const request& req, const target& t,
                                                 std::string mailbox, bool search) const;
  boost::asio::awaitable<response> delete_messages(const request& req) const;
  boost::asio::awaitable<response> delete_search(const request& req, const target& t) const;
  boost::asio::awaitable<response> set_read(const request& req, const target& t) const;
  boost::asio::awaitable<response> get_message(const request& req, std::string id,
                                               bool mark_read) const;
  boost::asio::awaitable<response> get_raw(const request& req, std::string id) const;
  // Resolves "latest" to the newest message's ID; "" when there is none.
  boost::asio::awaitable<std::string> resolve_id(std::string id) const;
  response metrics(const request& req) const;
  response store_error(const request& req, std::error_code ec) const;

  store::store& store_;
  api_config cfg_;
  static constexpr std::array<unsigned, 9> counted_{200, 400, 404, 405, 408, 413, 431, 500, 503};
  mutable std::array<std::atomic<std::uint64_t>, counted_.size() + 1> requests_{};
  mutable std::atomic<std::int64_t> event_clients_{0};
};

/// The web page's document served at "/" (its script and stylesheet are served beside it).
std::string_view web_page() noexcept;

/// Decodes %XX escapes (and '+' as space when `plus_is_space`); false on a malformed
/// escape.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

/// Replaces invalid UTF-8 sequences with U+FFFD (messages are hostile input; JSON must be
/// valid UTF-8).
std::string sanitize_utf8(std::string_view in);

/// RFC 3339 in UTC with milliseconds, e.g. "2026-11-22T02:10:00.123Z".
std::string format_rfc3339(store::time_point t);

}  // namespace inlet::http
