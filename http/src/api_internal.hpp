// What the API's translation units share: the api's state (`api::context`), the request
// target after cleaning, JSON and response helpers, and `offload` (run blocking work on
// the api's thread pool and resume the awaiting coroutine on its own executor).
#pragma once

// g++ 12 reports asio's awaitable frames (operator new / sized operator delete of
// awaitable_frame_base) as mismatched when it inlines a coroutine's destruction: a known
// false positive of -Wmismatched-new-delete with coroutines.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <exception>
#include <initializer_list>
#include <optional>
#include <span>
#include <type_traits>

#include "inlet/http/api.hpp"
#include "inlet/mail/read_view.hpp"
#include "inlet/util/ascii.hpp"
#include "rate_limit.hpp"
#include "render_cache.hpp"

namespace inlet::http {

struct api::context {
  context(store::store& s, api_config c);

  store::store& store;
  api_config cfg;
  std::string root;  // webroot with a leading and trailing '/', e.g. "/" or "/mail/"
  static constexpr std::array<unsigned, 13> counted{200, 400, 401, 404, 405, 408, 413,
                                                    431, 500, 503, 204, 403, 429};
  mutable std::array<std::atomic<std::uint64_t>, counted.size() + 1> requests{};
  mutable std::atomic<std::int64_t> event_clients{0};
  mutable boost::asio::thread_pool workers;
  std::unique_ptr<detail::rate_limiter> limiter;  // null: no rate limit
  std::unique_ptr<detail::render_cache> rendered;  // the catchers' messages, as rendered
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

namespace detail {

namespace asio = boost::asio;
namespace bh = boost::beast::http;
namespace json = boost::json;

// The read view of a stored message (part IDs, bodies, headers) is the mail library's.
using inlet::mail::message_view;
using inlet::mail::part_entry;
using asio::awaitable;
using ctx_t = api::context;

/// A request's path (duplicate slashes collapsed, the webroot taken off; "" when the path
/// is outside the webroot) and raw query string.
struct target {
  std::string path;
  std::string_view query;
  target(std::string_view t, std::string_view root);
};

/// Accept-Encoding takes gzip (listed, not with q=0).
bool accepts_gzip(std::string_view accept_encoding);
/// `in` gzip'd into `out` (fastest level); false on a zlib failure.
bool gzip(std::string_view in, std::string& out);

/// The process's resident memory (/proc/self/statm), for info and metrics.
std::uint64_t resident_bytes();
/// Mailpit's mailpit_tag_messages gauge ({tag="..."} per tag, sorted), HELP and TYPE
/// included even when there is no tag, as Mailpit writes it.
std::string tag_metric(const std::vector<std::pair<std::string, std::size_t>>& counts);
/// Each tag with the number of messages that carry it (Mailpit's info Tags and its
/// mailpit_tag_messages metric).
awaitable<std::pair<std::error_code, std::vector<std::pair<std::string, std::size_t>>>>
tag_counts(const ctx_t& c);

// ---- JSON ----
json::string js(std::string_view s);
json::object address_json(const store::address& a);
json::array addresses_json(std::span<const store::address> v);
json::array strings_json(std::span<const std::string> v);
json::object summary_object(const store::stored_message& m);
/// Mailpit has no such field: the "Totals" object when a list of `s` holds only its first
/// entries, else none. `attachments`: the whole message's count where the caller has it
/// (then the attachment list is never the cut one).
std::optional<json::object> totals_object(const store::summary& s,
                                          std::optional<std::size_t> attachments = std::nullopt);

using inlet::util::iequals;
/// The members of a JSON body matched to `keys` case-insensitively (as Mailpit's decoder
/// does). False when the body is not an object, names a key twice or a key not in `keys`.
bool body_members(const json::value& v, std::initializer_list<std::string_view> keys,
                  std::vector<const json::value*>& out);
/// An array of strings (absent and null: empty); false when it is something else.
bool string_array(const json::value* v, std::vector<std::string>& out);

// ---- requests and responses ----
enum class param { absent, found, malformed };
param query_param(std::string_view query, std::string_view key, std::string& value);
bool parse_size(std::string_view query, std::string_view key, std::size_t& out);
bool is_id(std::string_view id);
bool blank(std::string_view s);

response make_response(const request& req, unsigned status, std::string_view content_type,
                       std::string body);
response json_response(const request& req, const json::value& v, unsigned status = 200);
/// An error as Mailpit answers it: plain text, the message as the body; every 404 says
/// "404 page not found" (Mailpit's words), whatever was not found.
response error_response(const request& req, unsigned status, std::string_view message);
/// 405 with the methods the path allows.
response not_allowed(const request& req, std::string_view allow);
/// The JSON error of POST /api/v1/send (Mailpit's JSONErrorResponse): {"Error": "..."}.
response json_error_response(const request& req, unsigned status, std::string_view message);
response ok_response(const request& req);  // 200 text/plain "ok", as Mailpit
response store_error(const request& req, std::error_code ec);
/// Headers for bytes that come from a message (a part, the raw source, its HTML): never
/// run as this origin's content.
void sandbox(response& res);

/// The ID a path names: `latest` is the newest message; "" when there is none or the ID
/// is malformed.
awaitable<std::string> resolve_id(const ctx_t& c, std::string id);
/// The message a path names (ID or latest), raw bytes loaded; null with a 404 response
/// in `fail` when there is none.
awaitable<store::message_ptr> fetch_message(const ctx_t& c, const request& req, std::string id,
                                            std::optional<response>& fail);

/// Runs `f()` on the api's thread pool and resumes the awaiting coroutine on its own
/// executor with the result (an exception from f is rethrown in the coroutine).
template <class F>
awaitable<std::invoke_result_t<F>> offload(const ctx_t& c, F f) {
  using R = std::invoke_result_t<F>;
  auto token = asio::as_tuple(asio::use_awaitable);
  auto [ep, r] = co_await asio::async_initiate<decltype(token), void(std::exception_ptr, R)>(
      [&c](auto handler, F fn) {
        asio::post(c.workers, [h = std::move(handler), fn = std::move(fn)]() mutable {
          std::exception_ptr e;
          R res{};
          try {
            res = fn();
          } catch (...) {
            e = std::current_exception();
          }
          auto ex = asio::get_associated_executor(h);
          asio::dispatch(ex, [h = std::move(h), e, res = std::move(res)]() mutable {
            std::move(h)(e, std::move(res));
          });
        });
      },
      token, std::move(f));
  if (ep) std::rethrow_exception(ep);
  co_return std::move(r);
}

// ---- handlers (one translation unit per group) ----
// api_messages.cpp
awaitable<reply> list_messages(const ctx_t& c, const request& req, const target& t,
                               std::string mailbox, bool search);
awaitable<response> delete_messages(const ctx_t& c, const request& req);
awaitable<response> delete_search(const ctx_t& c, const request& req, const target& t);
awaitable<response> set_read(const ctx_t& c, const request& req, const target& t);
awaitable<response> get_message(const ctx_t& c, const request& req, std::string id, bool mark_read);
awaitable<response> get_headers(const ctx_t& c, const request& req, std::string id);
awaitable<reply> get_raw(const ctx_t& c, const request& req, const target& t, std::string id);
awaitable<response> get_part(const ctx_t& c, const request& req, std::string id, std::string part,
                             bool view);
awaitable<response> get_thumbnail(const ctx_t& c, const request& req, std::string id,
                                  std::string part);
awaitable<response> view_html(const ctx_t& c, const request& req, const target& t, std::string id);
awaitable<response> view_text(const ctx_t& c, const request& req, std::string id);
// api_more.cpp
awaitable<response> list_tags(const ctx_t& c, const request& req);
awaitable<response> set_tags(const ctx_t& c, const request& req);
awaitable<response> rename_tag(const ctx_t& c, const request& req, std::string tag);
awaitable<response> delete_tag(const ctx_t& c, const request& req, std::string tag);
awaitable<response> app_info(const ctx_t& c, const request& req);
response webui_config(const ctx_t& c, const request& req);
response chaos_get(const ctx_t& c, const request& req);
response chaos_set(const ctx_t& c, const request& req);
awaitable<response> send_message(const ctx_t& c, const request& req);
awaitable<response> release_message(const ctx_t& c, const request& req, std::string id);
awaitable<response> link_check(const ctx_t& c, const request& req, const target& t, std::string id);
awaitable<response> html_check(const ctx_t& c, const request& req, std::string id);
awaitable<response> sa_check(const ctx_t& c, const request& req, std::string id);
awaitable<response> rspamd_check(const ctx_t& c, const request& req, std::string id);
response livez(const ctx_t& c, const request& req);
response readyz(const ctx_t& c, const request& req);

}  // namespace detail
}  // namespace inlet::http
