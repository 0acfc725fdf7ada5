#include "inlet/http/api.hpp"

#include "page_assets.hpp"

// g++ 12 reports asio's awaitable frames (operator new / sized operator delete of
// awaitable_frame_base) as mismatched when it inlines a coroutine's destruction: a known
// false positive of -Wmismatched-new-delete with coroutines.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <ctime>
#include <initializer_list>

namespace inlet::http {
namespace asio = boost::asio;
namespace bh = boost::beast::http;
namespace json = boost::json;
using asio::awaitable;

namespace {

json::string js(std::string_view s) {
  return json::string(sanitize_utf8(s));
}

json::object address_json(const store::address& a) {
  return json::object{{"Name", js(a.name)}, {"Address", js(a.address)}};
}

json::array addresses_json(const std::vector<store::address>& v) {
  json::array out;
  out.reserve(v.size());
  for (const auto& a : v) out.push_back(address_json(a));
  return out;
}

json::array strings_json(const std::vector<std::string>& v) {
  json::array out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(js(s));
  return out;
}

json::array parts_json(const std::vector<part_info>& v) {
  json::array out;
  for (const auto& p : v) {
    out.push_back(json::object{{"PartID", js(p.part_id)},
                               {"FileName", js(p.filename)},
                               {"ContentType", js(p.content_type)},
                               {"ContentID", js(p.content_id)},
                               {"Size", p.size}});
  }
  return out;
}

json::object summary_object(const store::stored_message& m) {
  return json::object{
      {"ID", m.id},
      {"MessageID", js(m.summary.message_id)},
      {"Read", m.is_read()},
      {"From", address_json(m.summary.from)},
      {"To", addresses_json(m.summary.to)},
      {"Cc", addresses_json(m.summary.cc)},
      {"Bcc", addresses_json(m.summary.bcc)},
      {"ReplyTo", addresses_json(m.summary.reply_to)},
      {"Subject", js(m.summary.subject)},
      {"Created", format_rfc3339(m.created)},
      {"Username", js(m.envelope.auth_user)},
      {"Tags", strings_json(*m.tags())},
      {"Size", m.size},
      {"Attachments", m.summary.attachments.size()},
      {"Snippet", js(m.summary.snippet)},
  };
}

// The "IDs" member of a request body (absent, null or an array of strings) into `out`;
// false when an element is not a string.
bool ids_of(const json::value* ids_v, std::vector<std::string>& out) {
  if (!ids_v || !ids_v->is_array()) return true;
  for (const auto& e : ids_v->get_array()) {
    if (!e.is_string()) return false;
    out.emplace_back(e.get_string());
  }
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The members of a JSON request body, matched to `keys` case-insensitively as Mailpit's
// decoder matches them (`{"ids": [...]}` is `{"IDs": [...]}`). Fails (nothing changes)
// when the body is not an object, names a key twice, or names a key not in `keys`: a
// body that does not say exactly what to act on must never widen to "every message".
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

enum class param { absent, found, malformed };

// Splits "a=1&b=2" and finds `key` (the first occurrence wins).
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

// Reads an optional unsigned query parameter; false on garbage.
bool parse_size(std::string_view query, std::string_view key, std::size_t& out) {
  std::string v;
  auto r = query_param(query, key, v);
  if (r == param::malformed) return false;
  if (r == param::absent || v.empty()) return true;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && p == v.data() + v.size();
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

response json_response(const request& req, const json::value& v) {
  return make_response(req, 200, "application/json", json::serialize(v));
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

}  // namespace

struct api::target {
  std::string_view path;
  std::string_view query;
  explicit target(std::string_view t) {
    auto q = t.find('?');
    path = t.substr(0, q);
    query = q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
  }
};

api::api(store::store& store, api_config cfg) : store_(store), cfg_(std::move(cfg)) {}

void api::count(unsigned status) const noexcept {
  std::size_t i = 0;
  while (i < counted_.size() && counted_[i] != status) ++i;
  requests_[i].fetch_add(1, std::memory_order_relaxed);
}

response api::error(unsigned status, std::string_view message, unsigned version,
                    bool keep_alive) const {
  request fake{bh::verb::get, "/", version};
  fake.keep_alive(keep_alive);
  json::object o{{"Error", js(message)}};
  return make_response(fake, status, "application/json", json::serialize(o));
}

response api::store_error(const request& req, std::error_code ec) const {
  if (ec == store::errc::not_found)
    return error(404, "message not found", req.version(), req.keep_alive());
  if (ec == store::errc::invalid_argument)
    return error(400, ec.message(), req.version(), req.keep_alive());
  return error(503, "store unavailable: " + ec.message(), req.version(), req.keep_alive());
}

bool api::is_events_request(const request& req) {
  auto t = std::string_view(req.target());
  return req.method() == bh::verb::get && t.substr(0, t.find('?')) == "/api/events";
}

awaitable<response> api::handle(request req) const {
  response res;
  const bool head = req.method() == bh::verb::head;
  bool failed = false;
  try {
    if (head) {
      // HEAD (RFC 9110 9.3.2): the GET answer's status and headers, Content-Length
      // included, without its body. The event stream is GET only.
      req.method(bh::verb::get);
      if (is_events_request(req)) {
        res = error(405, "method not allowed", req.version(), req.keep_alive());
      } else {
        res = co_await route(req, true);
      }
      if (res.result_int() == 405) res.set(bh::field::allow, "GET");
    } else {
      res = co_await route(req, false);
    }
  } catch (const std::exception&) {  // bad_alloc, json errors: never escape to the server
    failed = true;
  }
  if (failed) res = error(500, "internal error", req.version(), req.keep_alive());
  if (head) {
    const auto length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
  count(res.result_int());
  co_return res;
}

awaitable<response> api::route(const request& req, bool head) const {
  const target t(req.target());
  const std::string_view path = t.path;
  const auto method = req.method();
  auto only = [&](bh::verb v) { return method == v; };
  auto not_allowed = [&](std::string_view allow) {
    auto r = error(405, "method not allowed", req.version(), req.keep_alive());
    r.set(bh::field::allow, allow);
    return r;
  };

  if (auto page = web::page_route(req, path)) co_return std::move(*page);
  if (path == "/metrics") co_return only(bh::verb::get) ? metrics(req) : not_allowed("GET, HEAD");
  if (path == "/api/events")  // streamed by the server; here only the method check
    co_return only(bh::verb::get)
        ? error(404, "event stream needs the server", req.version(), req.keep_alive())
        : not_allowed("GET, HEAD");
  if (path == "/api/v1/messages") {
    if (only(bh::verb::get)) co_return co_await list_messages(req, t, std::string{}, false);
    if (only(bh::verb::delete_)) co_return co_await delete_messages(req);
    if (only(bh::verb::put)) co_return co_await set_read(req, t);
    co_return not_allowed("GET, HEAD, PUT, DELETE");
  }
  if (path == "/api/v1/search") {
    if (only(bh::verb::get)) co_return co_await list_messages(req, t, std::string{}, true);
    if (only(bh::verb::delete_)) co_return co_await delete_search(req, t);
    co_return not_allowed("GET, HEAD, DELETE");
  }
  constexpr std::string_view msg_prefix = "/api/v1/message/";
  if (path.starts_with(msg_prefix)) {
    auto rest = path.substr(msg_prefix.size());
    auto slash = rest.find('/');
    std::string id(rest.substr(0, slash));
    auto tail = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    if (tail.empty() || tail == "/raw") {
      if (!only(bh::verb::get)) co_return not_allowed("GET, HEAD");
      if (tail.empty()) co_return co_await get_message(req, std::move(id), !head);
      co_return co_await get_raw(req, std::move(id));
    }
  }
  constexpr std::string_view box_prefix = "/api/v1/mailbox/";
  if (path.starts_with(box_prefix) && path.size() > box_prefix.size()) {
    if (!only(bh::verb::get)) co_return not_allowed("GET, HEAD");
    std::string mailbox;
    if (!percent_decode(path.substr(box_prefix.size()), mailbox, false) ||
        mailbox.find('/') != std::string::npos || mailbox.empty())
      co_return error(400, "malformed mailbox address", req.version(), req.keep_alive());
    co_return co_await list_messages(req, t, std::move(mailbox), false);
  }
  co_return error(404, "not found", req.version(), req.keep_alive());
}

awaitable<response> api::list_messages(const request& req, const target& t, std::string mailbox,
                                       bool search) const {
  std::size_t start = 0, limit = 0;
  if (!parse_size(t.query, "start", start) || !parse_size(t.query, "limit", limit))
    co_return error(400, "start and limit must be non-negative integers", req.version(),
                    req.keep_alive());
  if (limit == 0) limit = cfg_.default_limit;
  limit = std::min(limit, cfg_.max_limit);
  store::list_request lr(start, limit);
  lr.mailbox = std::move(mailbox);
  if (search) {
    std::string text, tz;
    if (query_param(t.query, "query", text) != param::found || blank(text))
      co_return error(400, "a search needs a query", req.version(), req.keep_alive());
    if (query_param(t.query, "tz", tz) == param::malformed)
      co_return error(400, "malformed tz", req.version(), req.keep_alive());
    std::string why;
    if (store::search::parse(text, tz, lr.query, &why))
      co_return error(400, why, req.version(), req.keep_alive());
  }
  auto [ec, p] = co_await store_.async_list(std::move(lr));
  if (ec) co_return store_error(req, ec);
  auto [tec, tags] = co_await store_.async_list_tags();
  if (tec) co_return store_error(req, tec);
  json::array msgs;
  msgs.reserve(p.messages.size());
  for (const auto& m : p.messages) msgs.push_back(summary_object(*m));
  json::object o{
      {"total", p.total},
      {"unread", p.unread},
      {"count", p.messages.size()},
      {"messages_count", p.matched},
      {"messages_unread", p.matched_unread},
      {"start", p.start},
      {"tags", strings_json(tags)},
      {"messages", std::move(msgs)},
  };
  co_return json_response(req, o);
}

awaitable<response> api::delete_messages(const request& req) const {
  const auto& body = req.body();
  if (blank(body)) {  // Mailpit: no body deletes every message
    auto all = store::selection::everything();
    auto [ec, n] = co_await store_.async_remove(std::move(all));
    if (ec) co_return store_error(req, ec);
    co_return make_response(req, 200, "text/plain", "ok");
  }
  std::error_code ec;
  json::value v = json::parse(body, ec);
  std::vector<const json::value*> m;
  if (ec || !body_members(v, {"IDs"}, m) || (m[0] && !m[0]->is_array() && !m[0]->is_null()))
    co_return error(400, "body must be {\"IDs\": [\"...\"]}", req.version(), req.keep_alive());
  std::vector<std::string> ids;
  if (!ids_of(m[0], ids))
    co_return error(400, "IDs must be strings", req.version(), req.keep_alive());
  // As Mailpit: no IDs deletes every message.
  auto sel =
      ids.empty() ? store::selection::everything() : store::selection::of_ids(std::move(ids));
  auto [rec, n] = co_await store_.async_remove(std::move(sel));
  if (rec) co_return store_error(req, rec);
  co_return make_response(req, 200, "text/plain", "ok");
}

awaitable<response> api::delete_search(const request& req, const target& t) const {
  std::string text, tz;
  if (query_param(t.query, "query", text) != param::found || blank(text))
    co_return error(400, "a search needs a query", req.version(), req.keep_alive());
  if (query_param(t.query, "tz", tz) == param::malformed)
    co_return error(400, "malformed tz", req.version(), req.keep_alive());
  store::search::query q;
  std::string why;
  if (store::search::parse(text, tz, q, &why))
    co_return error(400, why, req.version(), req.keep_alive());
  if (q.empty())  // only ignored terms ("to:"): never widen a search delete to everything
    co_return error(400, "the query selects nothing to search for", req.version(),
                    req.keep_alive());
  auto sel = store::selection::matching(std::move(q));
  auto [ec, n] = co_await store_.async_remove(std::move(sel));
  if (ec) co_return store_error(req, ec);
  co_return make_response(req, 200, "text/plain", "ok");
}

awaitable<response> api::set_read(const request& req, const target& t) const {
  std::error_code ec;
  json::value v = json::parse(req.body(), ec);
  std::vector<const json::value*> m;
  const bool ok = !ec && body_members(v, {"IDs", "Read", "Search"}, m);
  const json::value* ids_v = ok ? m[0] : nullptr;
  const json::value* read_v = ok ? m[1] : nullptr;
  const json::value* search_v = ok ? m[2] : nullptr;
  if (!ok || !read_v || !read_v->is_bool() || (ids_v && !ids_v->is_array() && !ids_v->is_null()) ||
      (search_v && !search_v->is_string() && !search_v->is_null()))
    co_return error(400,
                    "body must be {\"IDs\": [\"...\"], \"Search\": \"...\", \"Read\": true|false}",
                    req.version(), req.keep_alive());
  std::vector<std::string> ids;
  if (!ids_of(ids_v, ids))
    co_return error(400, "IDs must be strings", req.version(), req.keep_alive());
  std::string search_text =
      search_v && search_v->is_string() ? std::string(search_v->get_string()) : "";
  // As Mailpit: IDs if given, else the search if given, else every message.
  store::selection sel;
  if (!ids.empty()) {
    sel = store::selection::of_ids(std::move(ids));
  } else if (!blank(search_text)) {
    std::string tz;
    if (query_param(t.query, "tz", tz) == param::malformed)
      co_return error(400, "malformed tz", req.version(), req.keep_alive());
    store::search::query q;
    std::string why;
    if (store::search::parse(search_text, tz, q, &why))
      co_return error(400, why, req.version(), req.keep_alive());
    if (q.empty())
      co_return error(400, "the search selects nothing to search for", req.version(),
                      req.keep_alive());
    sel = store::selection::matching(std::move(q));
  } else {
    sel = store::selection::everything();
  }
  auto [sec, n] = co_await store_.async_set_read(std::move(sel), read_v->get_bool());
  if (sec) co_return store_error(req, sec);
  co_return make_response(req, 200, "text/plain", "ok");
}

awaitable<std::string> api::resolve_id(std::string id) const {
  if (id != "latest") co_return is_id(id) ? id : std::string{};
  store::list_request lr(0, 1);
  auto [ec, p] = co_await store_.async_list(std::move(lr));
  if (ec || p.messages.empty()) co_return std::string{};
  co_return p.messages.front()->id;
}

awaitable<response> api::get_message(const request& req, std::string id, bool mark_read) const {
  id = co_await resolve_id(std::move(id));
  if (id.empty()) co_return error(404, "message not found", req.version(), req.keep_alive());
  auto [ec, m] = co_await store_.async_get(id);
  if (ec || !m) co_return store_error(req, ec ? ec : make_error_code(store::errc::not_found));
  bool read = m->is_read();
  if (mark_read && !read) {  // opening a message marks it read, as Mailpit does
    std::vector<std::string> one{id};
    auto sel = store::selection::of_ids(std::move(one));  // named: see the g++ 12 note in store.hpp
    auto [rec, n] = co_await store_.async_set_read(std::move(sel), true);
    if (rec) co_return store_error(req, rec);
    read = true;
  }
  rendered_body body;
  if (cfg_.render) {
    body = cfg_.render(m->raw);
  } else {
    for (std::size_t i = 0; i < m->summary.attachments.size(); ++i) {
      const auto& a = m->summary.attachments[i];
      body.attachments.push_back({std::to_string(i + 1), a.filename, a.content_type, {}, a.size});
    }
  }
  const auto& s = m->summary;
  json::object o{
      {"ID", m->id},
      {"MessageID", js(s.message_id)},
      {"Read", read},
      {"From", address_json(s.from)},
      {"To", addresses_json(s.to)},
      {"Cc", addresses_json(s.cc)},
      {"Bcc", addresses_json(s.bcc)},
      {"ReplyTo", addresses_json(s.reply_to)},
      {"ReturnPath", js(m->envelope.mail_from)},
      {"Subject", js(s.subject)},
      {"Date", s.date ? json::value(format_rfc3339(*s.date)) : json::value(nullptr)},
      {"Created", format_rfc3339(m->created)},
      {"Username", js(m->envelope.auth_user)},
      {"Tags", strings_json(*m->tags())},
      {"Text", js(body.text)},
      {"HTML", js(body.html)},
      {"Size", m->size},
      {"Inline", parts_json(body.inline_parts)},
      {"Attachments", parts_json(body.attachments)},
      {"Envelope", json::object{{"From", js(m->envelope.mail_from)},
                                {"To", strings_json(m->envelope.rcpt_to)},
                                {"Helo", js(m->envelope.helo)},
                                {"Remote", js(m->envelope.remote)},
                                {"Protocol", js(m->envelope.protocol)}}},
  };
  co_return json_response(req, o);
}

awaitable<response> api::get_raw(const request& req, std::string id) const {
  id = co_await resolve_id(std::move(id));
  if (id.empty()) co_return error(404, "message not found", req.version(), req.keep_alive());
  auto [ec, m] = co_await store_.async_get(id);
  if (ec || !m) co_return store_error(req, ec ? ec : make_error_code(store::errc::not_found));
  // The one copy on the read path: Beast's string_body owns its bytes.
  co_return make_response(req, 200, "text/plain", m->raw);
}

std::string api::metrics_text() const {
  auto st = store_.stats();
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
  auto clients = event_clients_.load(std::memory_order_relaxed);
  metric("inlet_http_event_clients", "gauge", "Connected event-stream clients.",
         clients < 0 ? 0 : static_cast<std::uint64_t>(clients));
  out.append("# HELP inlet_http_requests_total HTTP responses by status code.\n");
  out.append("# TYPE inlet_http_requests_total counter\n");
  for (std::size_t i = 0; i <= counted_.size(); ++i) {
    auto code = i < counted_.size() ? std::to_string(counted_[i]) : std::string("other");
    out.append("inlet_http_requests_total{code=\"").append(code).append("\"} ");
    out.append(std::to_string(requests_[i].load(std::memory_order_relaxed))).append("\n");
  }
  if (cfg_.extra_metrics) cfg_.extra_metrics(out);
  return out;
}

response api::metrics(const request& req) const {
  return make_response(req, 200, "text/plain; version=0.0.4", metrics_text());
}

std::string api::summary_json(const store::stored_message& m) const {
  return json::serialize(summary_object(m));
}

std::vector<std::pair<std::string, std::string>> api::event_messages(
    const store::store_event& e) const {
  using k = store::store_event::kind;
  std::vector<std::pair<std::string, std::string>> out;
  auto push = [&](std::string_view type, json::value data) {
    json::object o{{"Type", type}, {"Data", std::move(data)}};
    out.emplace_back(std::string(type), json::serialize(o));
  };
  switch (e.what) {
    case k::created:
      if (e.message) push("new", summary_object(*e.message));
      break;
    case k::deleted:
      for (const auto& id : e.ids) push("delete", json::object{{"ID", id}});
      break;
    case k::read_changed:
      for (const auto& id : e.ids) push("update", json::object{{"ID", id}, {"Read", e.read}});
      break;
    case k::tags_changed:
      if (e.message)
        push("update",
             json::object{{"ID", e.message->id}, {"Tags", strings_json(*e.message->tags())}});
      break;
    case k::cleared:
      push("prune", nullptr);
      break;
  }
  return out;
}

std::string api::stats_message() const {
  auto st = store_.stats();
  json::object o{
      {"Type", "stats"},
      {"Data", json::object{{"Total", st.messages}, {"Unread", st.unread}, {"Version", "inlet"}}}};
  return json::serialize(o);
}

}  // namespace inlet::http
