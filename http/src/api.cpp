#include "inlet/http/api.hpp"

#include <boost/json.hpp>
#include <charconv>
#include <ctime>
#include <initializer_list>

namespace inlet::http {
namespace bh = boost::beast::http;
namespace json = boost::json;

namespace {

json::string js(std::string_view s) { return json::string(sanitize_utf8(s)); }

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
      {"Read", m.read.load(std::memory_order_relaxed)},
      {"From", address_json(m.summary.from)},
      {"To", addresses_json(m.summary.to)},
      {"Cc", addresses_json(m.summary.cc)},
      {"Bcc", addresses_json(m.summary.bcc)},
      {"ReplyTo", addresses_json(m.summary.reply_to)},
      {"Subject", js(m.summary.subject)},
      {"Created", format_rfc3339(m.created)},
      {"Tags", strings_json(m.tags)},
      {"Size", m.size()},
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

}  // namespace

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

bool api::is_events_request(const request& req) {
  auto t = std::string_view(req.target());
  return req.method() == bh::verb::get && t.substr(0, t.find('?')) == "/api/events";
}

response api::handle(const request& req) const {
  response res;
  const bool head = req.method() == bh::verb::head;
  try {
    if (head) {
      // HEAD (RFC 9110 9.3.2): the GET answer's status and headers, Content-Length
      // included, without its body. The event stream is GET only.
      request get = req;
      get.method(bh::verb::get);
      res = is_events_request(get) ? error(405, "method not allowed", req.version(),
                                           req.keep_alive())
                                   : route(get, true);
      if (res.result_int() == 405) res.set(bh::field::allow, "GET");
    } else {
      res = route(req);
    }
  } catch (const std::exception&) {  // bad_alloc, json errors: never escape to the server
    res = error(500, "internal error", req.version(), req.keep_alive());
  }
  if (head) {
    const auto length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
  count(res.result_int());
  return res;
}

response api::route(const request& req, bool head) const {
  std::string_view target = req.target();
  auto qpos = target.find('?');
  std::string_view path = target.substr(0, qpos);
  std::string_view query = qpos == std::string_view::npos ? "" : target.substr(qpos + 1);
  const auto method = req.method();
  auto only = [&](bh::verb v) { return method == v; };
  auto not_allowed = [&](std::string_view allow) {
    auto r = error(405, "method not allowed", req.version(), req.keep_alive());
    r.set(bh::field::allow, allow);
    return r;
  };

  if (path == "/" || path == "/index.html")
    return only(bh::verb::get) ? page_html(req) : not_allowed("GET, HEAD");
  if (path == "/metrics") return only(bh::verb::get) ? metrics(req) : not_allowed("GET, HEAD");
  if (path == "/api/events")  // streamed by the server; here only the method check
    return only(bh::verb::get) ? error(404, "event stream needs the server", req.version(),
                                       req.keep_alive())
                               : not_allowed("GET, HEAD");
  if (path == "/api/v1/messages") {
    if (only(bh::verb::get)) return list_messages(req, query, {});
    if (only(bh::verb::delete_)) return delete_messages(req);
    if (only(bh::verb::put)) return set_read(req);
    return not_allowed("GET, HEAD, PUT, DELETE");
  }
  constexpr std::string_view msg_prefix = "/api/v1/message/";
  if (path.starts_with(msg_prefix)) {
    auto rest = path.substr(msg_prefix.size());
    auto slash = rest.find('/');
    auto id = rest.substr(0, slash);
    auto tail = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    if (tail.empty() || tail == "/raw") {
      if (!only(bh::verb::get)) return not_allowed("GET, HEAD");
      return tail.empty() ? get_message(req, id, !head) : get_raw(req, id);
    }
  }
  constexpr std::string_view box_prefix = "/api/v1/mailbox/";
  if (path.starts_with(box_prefix) && path.size() > box_prefix.size()) {
    if (!only(bh::verb::get)) return not_allowed("GET, HEAD");
    std::string mailbox;
    if (!percent_decode(path.substr(box_prefix.size()), mailbox, false) ||
        mailbox.find('/') != std::string::npos)
      return error(400, "malformed mailbox address", req.version(), req.keep_alive());
    return list_messages(req, query, mailbox);
  }
  return error(404, "not found", req.version(), req.keep_alive());
}

response api::list_messages(const request& req, std::string_view query,
                            std::string_view mailbox) const {
  std::size_t start = 0, limit = 0;
  if (!parse_size(query, "start", start) || !parse_size(query, "limit", limit))
    return error(400, "start and limit must be non-negative integers", req.version(),
                 req.keep_alive());
  if (limit == 0) limit = cfg_.default_limit;
  limit = std::min(limit, cfg_.max_limit);
  auto p = mailbox.data() ? store_.list_mailbox(mailbox, start, limit) : store_.list(start, limit);
  json::array msgs;
  msgs.reserve(p.messages.size());
  for (const auto& m : p.messages) msgs.push_back(summary_object(*m));
  json::object o{
      {"total", p.total},  {"unread", p.unread},       {"count", p.messages.size()},
      {"messages_count", p.total}, {"start", p.start}, {"tags", json::array{}},
      {"messages", std::move(msgs)},
  };
  return json_response(req, o);
}

response api::delete_messages(const request& req) const {
  const auto& body = req.body();
  bool blank = body.find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank) {  // Mailpit: no body deletes every message
    store_.clear();
    return make_response(req, 200, "text/plain", "ok");
  }
  std::error_code ec;
  json::value v = json::parse(body, ec);
  std::vector<const json::value*> m;
  if (ec || !body_members(v, {"IDs"}, m) || (m[0] && !m[0]->is_array() && !m[0]->is_null()))
    return error(400, "body must be {\"IDs\": [\"...\"]}", req.version(), req.keep_alive());
  std::vector<std::string> ids;
  if (!ids_of(m[0], ids)) return error(400, "IDs must be strings", req.version(), req.keep_alive());
  if (ids.empty())
    store_.clear();
  else
    store_.remove(ids);
  return make_response(req, 200, "text/plain", "ok");
}

response api::set_read(const request& req) const {
  std::error_code ec;
  json::value v = json::parse(req.body(), ec);
  std::vector<const json::value*> m;
  const bool ok = !ec && body_members(v, {"IDs", "Read"}, m);
  const json::value* ids_v = ok ? m[0] : nullptr;
  const json::value* read_v = ok ? m[1] : nullptr;
  if (!ok || !read_v || !read_v->is_bool() || (ids_v && !ids_v->is_array() && !ids_v->is_null()))
    return error(400, "body must be {\"IDs\": [\"...\"], \"Read\": true|false}", req.version(),
                 req.keep_alive());
  std::vector<std::string> ids;
  if (!ids_of(ids_v, ids)) return error(400, "IDs must be strings", req.version(), req.keep_alive());
  store_.set_read(ids, read_v->get_bool());  // no IDs: every message
  return make_response(req, 200, "text/plain", "ok");
}

response api::get_message(const request& req, std::string_view id, bool mark_read) const {
  auto m = is_id(id) ? store_.get(id) : nullptr;
  if (!m) return error(404, "message not found", req.version(), req.keep_alive());
  if (mark_read && !m->read.load(std::memory_order_relaxed)) {
    const std::string one{id};  // opening a message marks it read, as Mailpit does
    store_.set_read(std::span(&one, 1), true);
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
      {"Read", m->read.load(std::memory_order_relaxed)},
      {"From", address_json(s.from)},
      {"To", addresses_json(s.to)},
      {"Cc", addresses_json(s.cc)},
      {"Bcc", addresses_json(s.bcc)},
      {"ReplyTo", addresses_json(s.reply_to)},
      {"ReturnPath", js(m->envelope.mail_from)},
      {"Subject", js(s.subject)},
      {"Date", s.date ? json::value(format_rfc3339(*s.date)) : json::value(nullptr)},
      {"Created", format_rfc3339(m->created)},
      {"Tags", strings_json(m->tags)},
      {"Text", js(body.text)},
      {"HTML", js(body.html)},
      {"Size", m->size()},
      {"Inline", parts_json(body.inline_parts)},
      {"Attachments", parts_json(body.attachments)},
      {"Envelope", json::object{{"From", js(m->envelope.mail_from)},
                                {"To", strings_json(m->envelope.rcpt_to)},
                                {"Helo", js(m->envelope.helo)},
                                {"Remote", js(m->envelope.remote)},
                                {"Protocol", js(m->envelope.protocol)}}},
  };
  return json_response(req, o);
}

response api::get_raw(const request& req, std::string_view id) const {
  auto m = is_id(id) ? store_.get(id) : nullptr;
  if (!m) return error(404, "message not found", req.version(), req.keep_alive());
  // The one copy on the read path: Beast's string_body owns its bytes.
  return make_response(req, 200, "text/plain", m->raw);
}

response api::page_html(const request& req) const {
  auto res = make_response(req, 200, "text/html; charset=utf-8", std::string(web_page()));
  // Inline script/style only; message HTML goes into a sandboxed srcdoc iframe that
  // inherits this policy (no remote images, no scripts).
  res.set("Content-Security-Policy",
          "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
          "img-src data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; "
          "form-action 'none'; frame-ancestors 'none'");
  res.set("Referrer-Policy", "no-referrer");
  return res;
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
  metric("inlet_store_bytes", "gauge", "Raw message bytes held by the store.", st.bytes);
  metric("inlet_store_unread", "gauge", "Messages held by the store and not yet read.",
         st.unread);
  metric("inlet_store_stored_total", "counter", "Messages accepted by the store.",
         st.stored_total);
  metric("inlet_store_evicted_total", "counter", "Messages evicted to respect the bounds.",
         st.evicted_total);
  metric("inlet_store_deleted_total", "counter", "Messages removed by delete requests.",
         st.deleted_total);
  metric("inlet_store_rejected_total", "counter", "Messages the store refused.",
         st.rejected_total);
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

}  // namespace inlet::http
