// The API's front: cleaning the path, authentication, CORS, HEAD, routing; the helpers
// every handler shares; events and metrics. Handlers live in api_messages.cpp and
// api_more.cpp.
#include <boost/asio/ip/address.hpp>
#include <boost/asio/this_coro.hpp>
#include <charconv>

#include "api_internal.hpp"
#include "catchers.hpp"
#include "page_assets.hpp"

namespace inlet::http {
namespace detail {

// ---- target ----

target::target(std::string_view t, std::string_view root) {
  auto q = t.find('?');
  query = q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
  std::string_view raw = t.substr(0, q);
  // `//api/v1/messages` is `/api/v1/messages` (as Mailpit's router cleans it).
  std::string clean;
  clean.reserve(raw.size() + 1);
  for (char c : raw)
    if (!(c == '/' && !clean.empty() && clean.back() == '/')) clean.push_back(c);
  if (clean.empty() || clean.front() != '/') clean.insert(clean.begin(), '/');
  if (root.size() > 1) {
    // Under a webroot "/mail/": "/mail" and "/mail/..." are ours, anything else is not.
    std::string_view r = root.substr(0, root.size() - 1);
    if (clean == r) {
      clean = "/";
    } else if (clean.starts_with(root)) {
      clean.erase(0, r.size());
    } else {
      clean.clear();
    }
  }
  path = std::move(clean);
}

// ---- JSON ----

json::string js(std::string_view s) {
  return json::string(sanitize_utf8(s));
}

json::object address_json(const store::address& a) {
  return json::object{{"Name", js(a.name)}, {"Address", js(a.address)}};
}

json::array addresses_json(std::span<const store::address> v) {
  json::array out;
  out.reserve(v.size());
  for (const auto& a : v) out.push_back(address_json(a));
  return out;
}

json::array strings_json(std::span<const std::string> v) {
  json::array out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(js(s));
  return out;
}

std::optional<json::object> totals_object(const store::summary& s,
                                          std::optional<std::size_t> attachments) {
  const auto& t = s.totals;
  auto all = [](std::uint32_t total, std::size_t kept) {
    return std::max<std::uint64_t>(total, kept);
  };
  const bool cut = t.to > s.to.size() || t.cc > s.cc.size() || t.bcc > s.bcc.size() ||
                   t.reply_to > s.reply_to.size() ||
                   (!attachments && t.attachments > s.attachments.size());
  if (!cut) return std::nullopt;
  return json::object{
      {"To", all(t.to, s.to.size())},
      {"Cc", all(t.cc, s.cc.size())},
      {"Bcc", all(t.bcc, s.bcc.size())},
      {"ReplyTo", all(t.reply_to, s.reply_to.size())},
      {"Attachments", attachments ? *attachments : all(t.attachments, s.attachments.size())}};
}

json::object summary_object(const store::stored_message& m) {
  const auto& s = m.summary;
  json::object o{
      {"ID", m.id},
      {"MessageID", js(m.summary.message_id)},
      {"Read", m.is_read()},
      {"From", address_json(m.summary.from)},
      {"To", addresses_json({m.summary.to.data(), m.summary.to.size()})},
      {"Cc", addresses_json(m.summary.cc)},
      {"Bcc", addresses_json(m.summary.bcc)},
      {"ReplyTo", addresses_json(m.summary.reply_to)},
      {"Subject", js(m.summary.subject)},
      {"Created", format_rfc3339(m.created)},
      {"Username", js(m.envelope.auth_user)},
      {"Tags", strings_json(*m.tags())},
      {"Size", m.size},
      {"Attachments", std::max<std::uint64_t>(s.totals.attachments, s.attachments.size())},
      {"Snippet", js(m.summary.snippet)},
  };
  if (auto totals = totals_object(s)) o["Totals"] = std::move(*totals);
  return o;
}


bool body_members(const json::value& v, std::initializer_list<std::string_view> keys,
                  std::vector<const json::value*>& out) {
  const json::object* o = v.if_object();
  if (!o) return false;
  out.assign(keys.size(), nullptr);
  for (const auto& kv : *o) {
    std::size_t i = 0;
    for (auto k : keys) {
      if (iequals(kv.key(), k)) break;
      ++i;
    }
    if (i == keys.size() || out[i]) return false;
    out[i] = &kv.value();
  }
  return true;
}

bool string_array(const json::value* v, std::vector<std::string>& out) {
  if (!v || v->is_null()) return true;
  if (!v->is_array()) return false;
  for (const auto& e : v->get_array()) {
    if (!e.is_string()) return false;
    out.emplace_back(e.get_string());
  }
  return true;
}

// ---- requests and responses ----

param query_param(std::string_view query, std::string_view key, std::string& value) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = pair.find('=');
    auto k = pair.substr(0, eq);
    if (k != key) continue;
    auto v = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    return percent_decode(v, value, true) ? param::found : param::malformed;
  }
  return param::absent;
}

bool parse_size(std::string_view query, std::string_view key, std::size_t& out) {
  std::string v;
  auto r = query_param(query, key, v);
  if (r == param::malformed) return false;
  if (r == param::absent || v.empty()) return true;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && p == v.data() + v.size();
}

bool is_id(std::string_view id) {
  if (id.size() != store::id_length) return false;
  for (char c : id) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!ok) return false;
  }
  return true;
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

response make_response(const request& req, unsigned status, std::string_view content_type,
                       std::string body) {
  response res{static_cast<bh::status>(status), req.version()};
  res.set(bh::field::content_type, content_type);
  res.set(bh::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

response json_response(const request& req, const json::value& v, unsigned status) {
  return make_response(req, status, "application/json", json::serialize(v));
}

response error_response(const request& req, unsigned status, std::string_view message) {
  if (status == 404) message = "404 page not found";
  return make_response(req, status, "text/plain; charset=utf-8", std::string(message));
}

response json_error_response(const request& req, unsigned status, std::string_view message) {
  json::object o{{"Error", js(message)}};
  return make_response(req, status, "application/json", json::serialize(o));
}

response ok_response(const request& req) {
  return make_response(req, 200, "text/plain", "ok");
}

response store_error(const request& req, std::error_code ec) {
  if (ec == store::errc::not_found) return error_response(req, 404, "message not found");
  if (ec == store::errc::invalid_argument) return error_response(req, 400, ec.message());
  return error_response(req, 503, "store unavailable: " + ec.message());
}

void sandbox(response& res) {
  res.set("Content-Security-Policy",
          "sandbox; default-src 'none'; img-src * data:; style-src 'unsafe-inline' *");
}

awaitable<std::string> resolve_id(const ctx_t& c, std::string id) {
  if (id != "latest") co_return is_id(id) ? id : std::string{};
  store::list_request lr(0, 1);
  auto [ec, p] = co_await c.store.async_list(std::move(lr));
  if (ec || p.messages.empty()) co_return std::string{};
  co_return p.messages.front()->id;
}

awaitable<store::message_ptr> fetch_message(const ctx_t& c, const request& req, std::string id,
                                            std::optional<response>& fail) {
  if (id == "latest")
    id = co_await resolve_id(c, std::move(id));  // else no frame for it
  else if (!is_id(id))
    id.clear();
  if (id.empty()) {
    fail = error_response(req, 404, "message not found");
    co_return nullptr;
  }
  auto [ec, m] = co_await c.store.async_get(id);
  if (ec || !m) {
    fail = store_error(req, ec ? ec : make_error_code(store::errc::not_found));
    co_return nullptr;
  }
  co_return m;
}

response livez(const ctx_t&, const request& req) {
  return ok_response(req);
}

response readyz(const ctx_t& c, const request& req) {
  auto h = c.store.health();
  if (h.ready) return ok_response(req);
  return make_response(req, 503, "text/plain", "not ready: " + h.detail);
}

response not_allowed(const request& req, std::string_view allow) {
  auto r = error_response(req, 405, "method not allowed");
  r.set(bh::field::allow, allow);
  return r;
}

namespace {

// Splits "a/b/c" into at most `n` segments; the last takes the rest.
std::vector<std::string_view> segments(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    auto slash = s.find('/');
    out.push_back(s.substr(0, slash));
    if (slash == std::string_view::npos) break;
    s = s.substr(slash + 1);
  }
  return out;
}

// Routes a path of /api/v1/message/{ID}/...
awaitable<reply> route_message(const ctx_t& c, const request& req, const target& t, bool head,
                               std::string_view rest) {
  const auto m = req.method();
  auto seg = segments(rest);
  if (seg.empty() || seg[0].empty()) co_return error_response(req, 404, "not found");
  std::string id(seg[0]);
  const std::size_t n = seg.size();
  auto is = [&](std::size_t i, std::string_view s) { return i < n && seg[i] == s; };
  if (n == 1) {
    if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
    co_return co_await get_message(c, req, std::move(id), !head);
  }
  if (n == 2 && is(1, "release")) {
    if (m != bh::verb::post) co_return not_allowed(req, "POST");
    co_return co_await release_message(c, req, std::move(id));
  }
  if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
  if (n == 2 && is(1, "headers")) co_return co_await get_headers(c, req, std::move(id));
  if (n == 2 && is(1, "raw")) co_return co_await get_raw(c, req, t, std::move(id));
  if (n == 2 && is(1, "html-check")) co_return co_await html_check(c, req, std::move(id));
  if (n == 2 && is(1, "link-check")) co_return co_await link_check(c, req, t, std::move(id));
  if (n == 2 && is(1, "sa-check")) co_return co_await sa_check(c, req, std::move(id));
  if (n == 2 && is(1, "rspamd-check")) co_return co_await rspamd_check(c, req, std::move(id));
  if (n == 3 && is(1, "part"))
    co_return co_await get_part(c, req, std::move(id), std::string(seg[2]), false);
  if (n == 4 && is(1, "part") && is(3, "thumb"))
    co_return co_await get_thumbnail(c, req, std::move(id), std::string(seg[2]));
  co_return error_response(req, 404, "not found");
}

// /view/{ID}.html, /view/{ID}.txt, /view/{ID}/part/{PartID}
awaitable<response> route_view(const ctx_t& c, const request& req, const target& t,
                               std::string_view rest) {
  if (req.method() != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
  auto seg = segments(rest);
  if (seg.size() == 1 && seg[0].ends_with(".html"))
    co_return co_await view_html(c, req, t, std::string(seg[0].substr(0, seg[0].size() - 5)));
  if (seg.size() == 1 && seg[0].ends_with(".txt"))
    co_return co_await view_text(c, req, std::string(seg[0].substr(0, seg[0].size() - 4)));
  if (seg.size() == 3 && seg[1] == "part")
    co_return co_await get_part(c, req, std::string(seg[0]), std::string(seg[2]), true);
  // /view/{ID} and /view/latest: the message in the page, as Mailpit's links open it.
  if (seg.size() == 1 && seg[0].find('.') == std::string_view::npos) {
    auto id = co_await resolve_id(c, std::string(seg[0]));
    if (id.empty()) co_return error_response(req, 404, "message not found");
    auto res = make_response(req, 302, "text/plain", std::string{});
    res.set(bh::field::location, c.root + "?m=" + id);
    res.set(bh::field::cache_control, "no-store");  // "latest" moves
    co_return res;
  }
  co_return error_response(req, 404, "not found");
}

awaitable<reply> route(const ctx_t& c, const request& req, const target& t, bool head) {
  const std::string& path = t.path;
  const auto method = req.method();
  auto only = [&](bh::verb v) { return method == v; };

  if (path.empty()) co_return error_response(req, 404, "not found");  // outside the webroot
  if (auto page = web::page_route(req, path, !c.cfg.disable_http_compression))
    co_return std::move(*page);
  if (auto r = co_await mailhog_route(c, req, t)) co_return std::move(*r);
  if (auto r = co_await maildev_route(c, req, t)) co_return std::move(*r);
  if (path == "/livez")
    co_return only(bh::verb::get) ? livez(c, req) : not_allowed(req, "GET, HEAD");
  if (path == "/readyz")
    co_return only(bh::verb::get) ? readyz(c, req) : not_allowed(req, "GET, HEAD");
  if (path == "/metrics") {
    if (!only(bh::verb::get)) co_return not_allowed(req, "GET, HEAD");
    co_return make_response(req, 200, "text/plain; version=0.0.4", std::string{});  // filled by api
  }
  if (path == "/api/events")  // streamed by the server; here only the method check
    co_return only(bh::verb::get) ? error_response(req, 404, "event stream needs the server")
                                  : not_allowed(req, "GET, HEAD");
  if (path == "/api/v1/swagger.json") {
    if (!only(bh::verb::get)) co_return not_allowed(req, "GET, HEAD");
    co_return make_response(req, 200, "application/json", std::string(swagger_json()));
  }
  if (path == "/api/v1/messages") {
    if (only(bh::verb::get)) co_return co_await list_messages(c, req, t, std::string{}, false);
    if (only(bh::verb::delete_)) co_return co_await delete_messages(c, req);
    if (only(bh::verb::put)) co_return co_await set_read(c, req, t);
    co_return not_allowed(req, "GET, HEAD, PUT, DELETE");
  }
  if (path == "/api/v1/search") {
    if (only(bh::verb::get)) co_return co_await list_messages(c, req, t, std::string{}, true);
    if (only(bh::verb::delete_)) co_return co_await delete_search(c, req, t);
    co_return not_allowed(req, "GET, HEAD, DELETE");
  }
  if (path == "/api/v1/send") {
    if (!only(bh::verb::post)) co_return not_allowed(req, "POST");
    co_return co_await send_message(c, req);
  }
  if (path == "/api/v1/tags") {
    if (only(bh::verb::get)) co_return co_await list_tags(c, req);
    if (only(bh::verb::put)) co_return co_await set_tags(c, req);
    co_return not_allowed(req, "GET, HEAD, PUT");
  }
  if (path.starts_with("/api/v1/tags/") && path.size() > 13) {
    std::string tag;
    if (!percent_decode(std::string_view(path).substr(13), tag, false))
      co_return error_response(req, 400, "malformed tag");
    if (only(bh::verb::put)) co_return co_await rename_tag(c, req, std::move(tag));
    if (only(bh::verb::delete_)) co_return co_await delete_tag(c, req, std::move(tag));
    co_return not_allowed(req, "PUT, DELETE");
  }
  if (path == "/api/v1/chaos") {
    if (only(bh::verb::get)) co_return chaos_get(c, req);
    if (only(bh::verb::put)) co_return chaos_set(c, req);
    co_return not_allowed(req, "GET, HEAD, PUT");
  }
  if (path == "/api/v1/info") {
    if (!only(bh::verb::get)) co_return not_allowed(req, "GET, HEAD");
    co_return co_await app_info(c, req);
  }
  if (path == "/api/v1/webui")
    co_return only(bh::verb::get) ? webui_config(c, req) : not_allowed(req, "GET, HEAD");
  if (path.starts_with("/api/v1/message/"))
    co_return co_await route_message(c, req, t, head, std::string_view(path).substr(16));
  if (path.starts_with("/view/"))
    co_return co_await route_view(c, req, t, std::string_view(path).substr(6));
  constexpr std::string_view box_prefix = "/api/v1/mailbox/";
  if (path.starts_with(box_prefix) && path.size() > box_prefix.size()) {
    if (!only(bh::verb::get)) co_return not_allowed(req, "GET, HEAD");
    std::string mailbox;
    if (!percent_decode(std::string_view(path).substr(box_prefix.size()), mailbox, false) ||
        mailbox.find('/') != std::string::npos || mailbox.empty())
      co_return error_response(req, 400, "malformed mailbox address");
    co_return co_await list_messages(c, req, t, std::move(mailbox), false);
  }
  co_return error_response(req, 404, "not found");
}

// The Access-Control-Allow-Origin for a request's Origin under Mailpit's --api-cors: a
// comma-separated list of host names (or origins, or "*"); the matching origin is echoed,
// "*" as itself; "" when none matches (no CORS header then).
std::string cors_allow_origin(std::string_view list, std::string_view origin) {
  // The Origin's host: "https://a.example.com:8443" -> "a.example.com".
  std::string_view host = origin;
  if (auto scheme = host.find("://"); scheme != std::string_view::npos) host.remove_prefix(scheme + 3);
  if (auto colon = host.rfind(':'); colon != std::string_view::npos && host.find(']') == host.npos)
    host = host.substr(0, colon);
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item == "*") return "*";
    if (!origin.empty() && !item.empty() &&
        (iequals(item, origin) || iequals(item, host) ||
         (item.find("://") != item.npos && iequals(item.substr(item.find("://") + 3), host))))
      return std::string(origin);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return {};
}

// A CORS preflight (OPTIONS) of an API path, answered as Mailpit answers it; the CORS
// headers only for an origin --api-cors allows.
response preflight(const ctx_t& c, const request& req) {
  auto res = make_response(req, 204, "text/plain", std::string{});
  if (auto allow = cors_allow_origin(c.cfg.cors_origin, req[bh::field::origin]); !allow.empty())
    res.set("Access-Control-Allow-Origin", allow);
  res.set(bh::field::vary, "Origin");
  res.set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
  std::string_view asked = req["Access-Control-Request-Headers"];
  res.set("Access-Control-Allow-Headers",
          asked.empty() ? std::string_view("Content-Type, Authorization") : asked);
  res.set("Access-Control-Max-Age", "600");
  return res;
}

// ---- screening: Host header, public mode ----

bool host_allowed(const api_config& c, std::string_view host) {
  if (host.empty()) return true;  // HTTP/1.0 without Host: no browser sends that
  if (host.front() == '[') {      // an IPv6 literal, with or without a port
    auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    boost::system::error_code ec;
    boost::asio::ip::make_address_v6(host.substr(1, close - 1), ec);
    return !ec;
  }
  if (auto colon = host.rfind(':'); colon != std::string_view::npos) {
    auto port = host.substr(colon + 1);
    if (port.find_first_not_of("0123456789") != std::string_view::npos) return false;
    host = host.substr(0, colon);
  }
  std::string name;
  name.reserve(host.size());
  for (char ch : host) name.push_back(ch >= 'A' && ch <= 'Z' ? char(ch - 'A' + 'a') : ch);
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (name.empty()) return false;
  // An IP literal names no DNS entry an attacker could rebind.
  boost::system::error_code ec;
  boost::asio::ip::make_address_v4(name, ec);
  if (!ec) return true;
  if (name == "localhost" || name.ends_with(".localhost")) return true;
  // A single-label name (a compose service, "mailpit") cannot be rebound from the public
  // DNS: answered, unless Mailpit's --allowed-hosts made the list the only names.
  if (name.find('.') == std::string::npos && !c.only_allowed_hosts) return true;
  for (const auto& allowed : c.allowed_hosts) {
    if (allowed == "*" || allowed == name) return true;
    if (allowed.front() == '.' &&
        (name.ends_with(allowed) || std::string_view(allowed).substr(1) == name))
      return true;
  }
  return false;
}

// What public mode leaves open: the page, health, and reads of one mailbox or of one
// message named by its ID (never `latest`, which reaches across mailboxes).
bool public_allowed(const request& req, const target& t) {
  const auto m = req.method();
  if (m != bh::verb::get && m != bh::verb::head && m != bh::verb::options) return false;
  const std::string_view p = t.path;
  if (p == "/metrics" || p == "/api/events") return false;
  if (p.starts_with("/api/v1/mailbox/")) return true;
  auto by_id = [](std::string_view rest, bool view) {
    auto id = rest.substr(0, rest.find('/'));
    if (view && rest.find('/') == std::string_view::npos) id = id.substr(0, id.rfind('.'));
    if (!is_id(id)) return false;
    auto sub = rest.substr(id.size());
    // outbound requests, spam checks
    return sub != "/link-check" && sub != "/sa-check" && sub != "/rspamd-check";
  };
  if (p.starts_with("/api/v1/message/")) return by_id(p.substr(16), false);
  if (p.starts_with("/view/")) return by_id(p.substr(6), true);
  if (p.starts_with("/api/")) return p == "/api/v1/webui" || p == "/api/v1/swagger.json";
  return true;  // the page's files, /livez, /readyz; unknown paths 404
}

}  // namespace
}  // namespace detail

// ---- api ----

api::context::context(store::store& s, api_config c)
    : store(s), cfg(std::move(c)), workers(cfg.workers == 0 ? 1 : cfg.workers) {
  rendered = std::make_unique<detail::render_cache>(cfg.catcher_cache_bytes);
  root = cfg.webroot;
  if (root.empty() || root.front() != '/') root.insert(root.begin(), '/');
  if (root.back() != '/') root.push_back('/');
  for (auto& h : cfg.allowed_hosts) {
    for (auto& ch : h)
      if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
    if (!h.empty() && h.back() == '.') h.pop_back();
  }
  std::erase_if(cfg.allowed_hosts, [](const std::string& h) { return h.empty() || h == "."; });
  if (cfg.rate_limit > 0) {
    double burst = cfg.rate_burst > 0 ? cfg.rate_burst : std::max(10.0, 2 * cfg.rate_limit);
    limiter = std::make_unique<detail::rate_limiter>(cfg.rate_limit, burst);
  }
}

api::api(store::store& store, api_config cfg)
    : ctx_(std::make_unique<context>(store, std::move(cfg))) {}

api::~api() {
  ctx_->workers.join();  // no blocking work outlives the api
}

store::store& api::backing_store() const noexcept {
  return ctx_->store;
}
const api_config& api::config() const noexcept {
  return ctx_->cfg;
}
std::atomic<std::int64_t>& api::event_clients() const noexcept {
  return ctx_->event_clients;
}

void api::count(unsigned status) const noexcept {
  std::size_t i = 0;
  while (i < context::counted.size() && context::counted[i] != status) ++i;
  ctx_->requests[i].fetch_add(1, std::memory_order_relaxed);
}

response api::error(unsigned status, std::string_view message, unsigned version,
                    bool keep_alive) const {
  request fake{boost::beast::http::verb::get, "/", version};
  fake.keep_alive(keep_alive);
  return detail::error_response(fake, status, message);
}

api::feed api::events_feed(const request& req) const {
  if (req.method() != boost::beast::http::verb::get) return feed::none;
  const auto path = detail::target(req.target(), ctx_->root).path;
  if (path == "/api/events") return feed::mailpit;
  if (path == "/api/v1/events" || path == "/api/v1/events/" || path == "/api/v2/websocket")
    return feed::mailhog;
  return feed::none;
}

std::string api::mailhog_event(const store::stored_message& m) const {
  if (m.raw.empty()) return {};
  return detail::mailhog_message_text(m);
}

bool api::authorized(const request& req) const {
  if (!ctx_->cfg.ui_auth) return true;
  auto h = req[boost::beast::http::field::authorization];
  return ctx_->cfg.ui_auth->check_basic(h);
}

std::optional<response> api::screen(const request& req, const client_info& client) const {
  namespace bh = boost::beast::http;
  const context& c = *ctx_;
  if (c.cfg.metrics_only) {  // a Prometheus listener: /metrics, open, and nothing else
    const detail::target mt(req.target(), c.root);
    if (mt.path == "/metrics" && req.method() == bh::verb::get) return std::nullopt;
    return detail::error_response(req, 404, "not found");
  }
  if (!detail::host_allowed(c.cfg, req[bh::field::host]))
    return detail::error_response(req, 403, "this server does not answer to that Host name");
  const detail::target t(req.target(), c.root);
  const bool counted = t.path.starts_with("/api/") || t.path.starts_with("/view/") ||
                       t.path == "/metrics" || t.path.empty();
  unsigned retry_after = 0;
  if (c.limiter && counted && !client.key.empty() &&
      !c.limiter->take(client.key, std::chrono::steady_clock::now(), retry_after)) {
    auto res = detail::error_response(req, 429, "too many requests");
    res.set(bh::field::retry_after, std::to_string(retry_after));
    return res;
  }
  if (c.cfg.public_mode && !detail::public_allowed(req, t))
    return detail::error_response(req, 403, "not available on this public server");
  const bool preflight = req.method() == bh::verb::options && t.path.starts_with("/api/");
  // The send API may have credentials of its own, or none (Mailpit's send-api-auth flags).
  const bool send = req.method() == bh::verb::post && t.path == "/api/v1/send";
  const bool allowed =
      send && c.cfg.send_auth_accept_any ? true
      : send && c.cfg.send_auth ? c.cfg.send_auth->check_basic(req[bh::field::authorization])
                                : authorized(req);
  if (!preflight && !allowed && t.path != "/livez" && t.path != "/readyz") {
    auto res = detail::error_response(req, 401, "authentication required");
    res.set(bh::field::www_authenticate, "Basic realm=\"Login\"");
    return res;
  }
  return std::nullopt;
}

boost::asio::awaitable<response> api::handle(request req, client_info client) const {
  auto r = co_await handle_streamed(std::move(req), std::move(client));
  if (r.body) {
    std::string all;
    try {
      while (r.body->next(all, 1u << 20)) {
      }
    } catch (const std::exception&) {
      request fake{boost::beast::http::verb::get, "/", r.res.version()};
      fake.keep_alive(r.res.keep_alive());
      co_return detail::error_response(fake, 500, "internal error");
    }
    r.res.body() = std::move(all);
    r.res.prepare_payload();
  }
  co_return std::move(r.res);
}

namespace {

// Text answers worth compressing (JSON, HTML, plain text, the metrics).
bool compressible(std::string_view type) {
  return type.starts_with("application/json") || type.starts_with("text/");
}

}  // namespace

boost::asio::awaitable<reply> api::handle_streamed(request req, client_info client) const {
  namespace bh = boost::beast::http;
  const context& c = *ctx_;
  const detail::target t(req.target(), c.root);
  reply rep(response{});
  response& res = rep.res;
  bool streamed_head = false;  // a HEAD whose length was counted from a body source
  const bool head = req.method() == bh::verb::head;
  const bool api_path = t.path.starts_with("/api/");
  bool failed = false;
  if (auto refusal = screen(req, client)) {
    res = std::move(*refusal);
  } else if (req.method() == bh::verb::options && api_path) {
    res = detail::preflight(c, req);
  } else {
    try {
      if (head) {
        // HEAD (RFC 9110 9.3.2): the GET answer's status and headers, Content-Length
        // included, without its body. The event stream is GET only.
        req.method(bh::verb::get);
        if (t.path == "/api/events") {
          res = detail::error_response(req, 405, "method not allowed");
        } else {
          rep = co_await detail::route(c, req, t, true);
        }
        if (res.result_int() == 405) res.set(bh::field::allow, "GET");
      } else {
        rep = co_await detail::route(c, req, t, false);
      }
      if (t.path == "/metrics" && res.result_int() == 200) {
        res.body() = metrics_text();
        if (c.cfg.mailpit_metrics) {  // Mailpit's per-tag gauge needs the store's counts
          auto [tec, counts] = co_await detail::tag_counts(c);
          if (!tec) res.body() += detail::tag_metric(counts);
        }
        res.prepare_payload();
      }
      if (head && rep.body) {  // the length of the GET answer, counted piece by piece
        std::uint64_t length = 0;
        if (auto known = rep.body->size()) {
          length = *known;
        } else {
          std::string piece;
          while (rep.body->next(piece, 1u << 16)) {
            length += piece.size();
            piece.clear();
          }
        }
        rep.body.reset();
        res.body() = std::string();
        res.content_length(length);
        streamed_head = true;
      }
    } catch (const std::exception&) {  // bad_alloc, json errors: never escape to the server
      failed = true;
    }
    if (failed) {
      rep.body.reset();
      res = detail::error_response(req, 500, "internal error");
    }
  }
  if (!c.cfg.cors_origin.empty() && api_path) {
    if (auto allow = detail::cors_allow_origin(c.cfg.cors_origin, req[bh::field::origin]);
        !allow.empty())
      res.set("Access-Control-Allow-Origin", allow);
    res.set(bh::field::vary, "Origin");
  }
  // Mailpit's answers are gzip'd for clients that take it (--disable-http-compression:
  // never); bodies under 1 KiB gain nothing, streamed bodies (raw, parts) go as they are.
  if (!c.cfg.disable_http_compression && !rep.body && res.body().size() >= 1024 &&
      res[bh::field::content_encoding].empty() && compressible(res[bh::field::content_type]) &&
      detail::accepts_gzip(req[bh::field::accept_encoding])) {
    std::string packed;
    if (detail::gzip(res.body(), packed) && packed.size() < res.body().size()) {
      res.body() = std::move(packed);
      res.set(bh::field::content_encoding, "gzip");
      const auto vary = res[bh::field::vary];
      res.set(bh::field::vary,
              vary.empty() ? std::string("Accept-Encoding") : std::string(vary) + ", Accept-Encoding");
      res.prepare_payload();
    }
  }
  if (head && !streamed_head) {
    const auto length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
  count(res.result_int());
  co_return rep;
}

std::string api::metrics_text() const {
  const context& c = *ctx_;
  auto st = c.store.stats();
  std::string out;
  out.reserve(2048);
  auto metric = [&](std::string_view name, std::string_view type, std::string_view help,
                    std::uint64_t v) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
    out.append(name).append(" ").append(std::to_string(v)).append("\n");
  };
  metric("inlet_store_messages", "gauge", "Messages held by the store.", st.messages);
  metric("inlet_store_bytes", "gauge",
         "Bytes held by the store (raw messages and what is kept beside them).", st.bytes);
  metric("inlet_store_unread", "gauge", "Messages held by the store and not yet read.", st.unread);
  metric("inlet_store_stored_total", "counter", "Messages accepted by the store.", st.stored_total);
  metric("inlet_store_evicted_total", "counter", "Messages evicted to respect the bounds.",
         st.evicted_total);
  metric("inlet_store_deleted_total", "counter", "Messages removed by delete requests.",
         st.deleted_total);
  metric("inlet_store_rejected_total", "counter", "Messages the store refused.", st.rejected_total);
  auto clients = c.event_clients.load(std::memory_order_relaxed);
  metric("inlet_http_event_clients", "gauge", "Connected event-stream clients.",
         clients < 0 ? 0 : static_cast<std::uint64_t>(clients));
  out.append("# HELP inlet_http_requests_total HTTP responses by status code.\n");
  out.append("# TYPE inlet_http_requests_total counter\n");
  for (std::size_t i = 0; i <= context::counted.size(); ++i) {
    auto code =
        i < context::counted.size() ? std::to_string(context::counted[i]) : std::string("other");
    out.append("inlet_http_requests_total{code=\"").append(code).append("\"} ");
    out.append(std::to_string(c.requests[i].load(std::memory_order_relaxed))).append("\n");
  }
  if (c.cfg.extra_metrics) c.cfg.extra_metrics(out);
  if (c.cfg.mailpit_metrics) {  // Mailpit's names, for its users' dashboards
    const app_counters app = c.cfg.app_counters ? c.cfg.app_counters() : app_counters{};
    const auto up = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - c.started);
    metric("mailpit_database_size_bytes", "gauge", "Size of the database in bytes", st.bytes);
    metric("mailpit_memory_usage_bytes", "gauge", "Memory usage in bytes",
           detail::resident_bytes());
    metric("mailpit_messages", "gauge", "Total number of messages in the database", st.messages);
    metric("mailpit_messages_deleted_total", "counter", "Total number of messages deleted",
           st.deleted_total);
    metric("mailpit_messages_unread", "gauge", "Number of unread messages in the database",
           st.unread);
    metric("mailpit_smtp_accepted_size_bytes_total", "counter",
           "Total size of accepted SMTP messages in bytes", app.smtp_accepted_bytes);
    metric("mailpit_smtp_accepted_total", "counter", "Total number of SMTP messages accepted",
           app.smtp_accepted);
    metric("mailpit_smtp_ignored_total", "counter",
           "Total number of SMTP messages ignored (duplicates)", app.smtp_ignored);
    metric("mailpit_smtp_rejected_total", "counter", "Total number of SMTP messages rejected",
           app.smtp_rejected);
    metric("mailpit_uptime_seconds", "gauge", "Uptime of Mailpit in seconds",
           static_cast<std::uint64_t>(up.count()));
  }
  return out;
}

std::string api::summary_json(const store::stored_message& m) const {
  return boost::json::serialize(detail::summary_object(m));
}

std::vector<std::pair<std::string, std::string>> api::event_messages(
    const store::store_event& e) const {
  namespace json = boost::json;
  using k = store::store_event::kind;
  std::vector<std::pair<std::string, std::string>> out;
  auto push = [&](std::string_view type, json::value data) {
    json::object o{{"Type", type}, {"Data", std::move(data)}};
    out.emplace_back(std::string(type), json::serialize(o));
  };
  switch (e.what) {
    case k::created:
      if (e.message) push("new", detail::summary_object(*e.message));
      break;
    case k::deleted:
      for (const auto& id : e.ids) push("delete", json::object{{"ID", id}});
      break;
    case k::read_changed:
      for (const auto& id : e.ids) push("update", json::object{{"ID", id}, {"Read", e.read}});
      break;
    case k::tags_changed:
      if (e.message)
        push("update", json::object{{"ID", e.message->id},
                                    {"Tags", detail::strings_json(*e.message->tags())}});
      break;
    case k::cleared:
      push("prune", nullptr);
      break;
  }
  return out;
}

std::string api::stats_message() const {
  auto st = ctx_->store.stats();
  boost::json::object o{
      {"Type", "stats"},
      {"Data", boost::json::object{
                   {"Total", st.messages}, {"Unread", st.unread}, {"Version", ctx_->cfg.version}}}};
  return boost::json::serialize(o);
}

}  // namespace inlet::http
