// MailDev's REST API (3.x under /api, 2.x without the prefix) over inlet's store: each
// message as MailDev's mail object (id, time, read, subject, from, to, cc, bcc, date,
// text, html, headers, priority, attachments, envelope, size, sizeHuman), built from the
// stored envelope and summary and the mail library's read view.
#include <algorithm>
#include <charconv>
#include <cstdio>

#include "catchers.hpp"

namespace inlet::http::detail {

namespace {


json::array md_addresses(std::span<const store::address> v) {
  json::array a;
  for (const auto& x : v) a.emplace_back(json::object{{"address", js(x.address)}, {"name", js(x.name)}});
  return a;
}

std::string lower(std::string s) {
  for (auto& ch : s)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return s;
}

std::string size_human(std::size_t n) {
  const char* units[] = {"B", "KB", "MB", "GB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%zu B", n);
  else
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  return buf;
}

std::string unfold(std::string_view v) {
  std::string out;
  for (char ch : v)
    if (ch != '\r' && ch != '\n') out.push_back(ch);
  auto b = out.find_first_not_of(" \t");
  return b == std::string::npos ? std::string{} : sanitize_utf8(out.substr(b));
}

json::object summary_json(const store::stored_message& m) {
  const auto& s = m.summary;
  json::object o;
  o["id"] = js(m.id.str());
  o["time"] = js(format_rfc3339(m.created));
  o["read"] = m.is_read();
  o["subject"] = js(s.subject);
  o["size"] = m.size;
  o["sizeHuman"] = js(size_human(m.size));
  o["from"] = md_addresses(std::span<const store::address>(&s.from, 1));
  o["to"] = md_addresses(std::span<const store::address>(s.to.data(), s.to.size()));
  o["attachmentCount"] = std::max<std::size_t>(s.attachments.size(), s.totals.attachments);
  o["preview"] = js(s.snippet);
  return o;
}

json::object mail_json(const store::stored_message& m) {
  const auto& s = m.summary;
  json::object o;
  o["id"] = js(m.id.str());
  o["time"] = js(format_rfc3339(m.created));
  o["read"] = m.is_read();
  o["subject"] = js(s.subject);
  o["from"] = md_addresses(std::span<const store::address>(&s.from, 1));
  o["to"] = md_addresses(std::span<const store::address>(s.to.data(), s.to.size()));
  o["cc"] = md_addresses(s.cc);
  o["bcc"] = md_addresses(s.bcc);
  o["date"] = s.date ? json::value(js(format_rfc3339(*s.date))) : json::value(nullptr);
  inlet::mail::message_view view(m.raw);  // one parse for bodies, headers and parts
  o["text"] = js(view.text());
  o["html"] = js(view.html());
  json::object headers;
  std::string priority = "normal";
  for (auto& [name, values] : view.headers()) {
    auto key = lower(name);
    if (values.empty()) continue;
    if (key == "x-priority" && !values[0].empty()) {
      auto d = unfold(values[0]);
      if (!d.empty() && (d[0] == '1' || d[0] == '2')) priority = "high";
      if (!d.empty() && (d[0] == '4' || d[0] == '5')) priority = "low";
    }
    if (values.size() == 1) {
      headers[key] = js(unfold(values[0]));
    } else {
      json::array a;
      for (auto& v : values) a.emplace_back(js(unfold(v)));
      headers[key] = std::move(a);
    }
  }
  o["headers"] = std::move(headers);
  o["priority"] = js(priority);
  json::array atts;
  for (auto& p : view.parts(false)) {
    json::object a;
    a["filename"] = js(p.filename);
    a["generatedFileName"] = js(p.filename.empty() ? p.part_id : p.filename);
    a["contentType"] = js(p.content_type);
    a["contentDisposition"] = p.is_inline ? "inline" : "attachment";
    a["contentId"] = js(p.content_id);
    a["size"] = p.size;
    atts.emplace_back(std::move(a));
  }
  o["attachments"] = std::move(atts);
  json::array to;
  for (const auto& r : m.envelope.rcpt_to) to.emplace_back(json::object{{"address", js(r)}});
  json::object env;
  env["from"] = json::object{{"address", js(m.envelope.mail_from)}};
  env["to"] = std::move(to);
  env["host"] = js(m.envelope.helo);
  auto colon = m.envelope.remote.rfind(':');
  env["remoteAddress"] = js(colon == std::string::npos ? m.envelope.remote
                                                       : m.envelope.remote.substr(0, colon));
  o["envelope"] = std::move(env);
  o["size"] = m.size;
  o["sizeHuman"] = js(size_human(m.size));
  return o;
}

// The mail object with `read` left out: it is spliced in when written.
render_cache::entry render_mail(const store::stored_message& m) {
  auto o = mail_json(m);
  o["read"] = false;
  std::string text = json::serialize(o);
  // "id" and "time" come first and hold no such text: the first match is the field.
  constexpr std::string_view field = ",\"read\":false";
  auto at = text.find(field);
  if (at == std::string::npos) return {std::move(text), std::string::npos};
  at += field.size() - 5;
  text.erase(at, 5);
  return {std::move(text), at};
}

// The items as MailDev's JSON array, each rendered once and kept, `read` as it is now.
reply mail_array(const ctx_t& c, const request& req, std::vector<catcher_item>& items) {
  std::vector<rendered_source::item> texts;
  texts.reserve(items.size());
  for (auto& it : items)
    texts.push_back({catcher_rendered(c, maildev_view, *it.msg, std::move(it.rendered), render_mail),
                     it.msg->is_read() ? "true" : "false"});
  auto res = make_response(req, 200, "application/json", std::string{});
  return rendered_source::answer(std::move(res),
                                 std::make_shared<rendered_source>("[", std::move(texts), "]"));
}

bool number(std::string_view q, std::string_view key, std::optional<std::size_t>& out) {
  std::string v;
  auto r = query_param(q, key, v);
  if (r == param::malformed) return false;
  if (r == param::absent || v.empty()) return true;
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || p != v.data() + v.size()) return false;
  out = n;
  return true;
}

// MailDev's exact-match filters: ?subject=..., ?from.address=..., ?read=false, ...
bool matches(const store::stored_message& m, std::string_view query) {
  for (std::size_t at = 0; at < query.size();) {
    auto e = query.find('&', at);
    if (e == std::string_view::npos) e = query.size();
    auto pair = query.substr(at, e - at);
    at = e + 1;
    auto eq = pair.find('=');
    std::string key, val;
    if (!percent_decode(pair.substr(0, eq), key, true)) return false;
    if (eq != std::string_view::npos && !percent_decode(pair.substr(eq + 1), val, true)) return false;
    if (key == "skip" || key == "limit" || key == "sort" || key.empty()) continue;
    const auto& s = m.summary;
    auto any = [&](std::span<const store::address> v, bool addr) {
      return std::any_of(v.begin(), v.end(),
                         [&](const store::address& a) { return (addr ? a.address : a.name) == val; });
    };
    bool ok = true;
    if (key == "subject") ok = s.subject == val;
    else if (key == "read") ok = (m.is_read() ? "true" : "false") == val;
    else if (key == "id") ok = m.id.str() == val;
    else if (key == "from.address") ok = s.from.address == val;
    else if (key == "from.name") ok = s.from.name == val;
    else if (key == "to.address") ok = any({s.to.data(), s.to.size()}, true);
    else if (key == "to.name") ok = any({s.to.data(), s.to.size()}, false);
    else if (key == "cc.address") ok = any(s.cc, true);
    else ok = false;  // a field this view does not have matches nothing
    if (!ok) return false;
  }
  return true;
}

awaitable<reply> list_all(const ctx_t& c, const request& req, const target& t) {
  std::optional<std::size_t> skip, limit;
  if (!number(t.query, "skip", skip) || !number(t.query, "limit", limit))
    co_return error_response(req, 400, "skip and limit must be non-negative integers");
  std::string sort;
  query_param(t.query, "sort", sort);
  bool filtered = false;
  for (std::size_t at = 0; at < t.query.size();) {
    auto e = t.query.find('&', at);
    if (e == std::string_view::npos) e = t.query.size();
    auto key = t.query.substr(at, std::min(e, t.query.find('=', at)) - at);
    filtered |= !key.empty() && key != "skip" && key != "limit" && key != "sort";
    at = e + 1;
  }
  if (!filtered) {
    // Plain paging: ask the store for the page only (it lists newest first).
    std::size_t k = skip.value_or(0);
    std::size_t lim = std::min(limit.value_or(c.cfg.max_limit), c.cfg.max_limit);
    std::size_t start = k;
    if (sort != "desc") {  // oldest first: count from the end
      store::list_request probe(0, 1);
      auto [pec, pp] = co_await c.store.async_list(std::move(probe));
      if (pec) co_return store_error(req, pec);
      const std::size_t total = pp.total;
      if (k >= total) co_return json_response(req, json::array());
      lim = std::min(lim, total - k);
      start = total - k - lim;
    }
    store::list_request page(start, lim);
    auto [ec, p] = co_await c.store.async_list(std::move(page));
    if (ec) co_return store_error(req, ec);
    // In the order asked before the answer bound cuts it: the answer is then the first
    // messages from `skip` on, as MailDev's (which has no bound).
    if (sort != "desc") std::reverse(p.messages.begin(), p.messages.end());
    std::vector<catcher_item> items;
    if (auto lec = co_await catcher_load(c, p.messages, maildev_view, items))
      co_return store_error(req, lec);
    co_return mail_array(c, req, items);
  }
  // Filters look at every message's summary, as MailDev does (bounded here by
  // max_limit); only the matches of the asked page are loaded and rendered.
  store::list_request lr(0, c.cfg.max_limit);
  auto [ec, p] = co_await c.store.async_list(std::move(lr));
  if (ec) co_return store_error(req, ec);
  std::vector<store::message_ptr> all;
  for (auto& m : p.messages)
    if (matches(*m, t.query)) all.push_back(m);
  if (sort != "desc") std::reverse(all.begin(), all.end());  // arrival order, or asc
  std::size_t from = std::min(skip.value_or(0), all.size());
  std::size_t n = std::min(limit.value_or(all.size()), all.size() - from);
  std::vector<store::message_ptr> wanted(all.begin() + static_cast<std::ptrdiff_t>(from),
                                         all.begin() + static_cast<std::ptrdiff_t>(from + n));
  std::vector<catcher_item> items;
  if (auto lec = co_await catcher_load(c, wanted, maildev_view, items))
    co_return store_error(req, lec);
  co_return mail_array(c, req, items);
}

awaitable<reply> list_summary(const ctx_t& c, const request& req, const target& t) {
  std::optional<std::size_t> skip, limit;
  if (!number(t.query, "skip", skip) || !number(t.query, "limit", limit))
    co_return error_response(req, 400, "skip and limit must be non-negative integers");
  std::size_t lim = std::min<std::size_t>(limit.value_or(50), 200);
  std::string search, sort, unread;
  query_param(t.query, "search", search);
  query_param(t.query, "sort", sort);
  query_param(t.query, "unread", unread);
  std::string text;
  if (!blank(search)) {
    text = "\"";
    for (char ch : search)
      if (ch != '"') text.push_back(ch);
    text += "\"";
  }
  if (unread == "true") text += " is:unread";
  const bool asc = sort == "asc";
  store::list_request lr(skip.value_or(0), lim);
  std::string why;
  if (!text.empty() && store::search::parse(text, "", lr.query, &why))
    co_return error_response(req, 400, why);
  if (asc) lr.limit = c.cfg.max_limit * 10;  // the store lists newest first
  auto [ec, p] = co_await c.store.async_list(std::move(lr));
  if (ec) co_return store_error(req, ec);
  json::array items;
  if (asc) {
    // Oldest first: the page is counted from the end of the newest-first list.
    std::size_t k = skip.value_or(0);
    store::list_request again(p.matched > k + lim ? p.matched - k - lim : 0,
                              p.matched > k ? std::min(lim, p.matched - k) : 0);
    again.query = std::move(lr.query);
    std::vector<store::message_ptr> v;
    if (again.limit > 0) {
      auto [ec2, p2] = co_await c.store.async_list(std::move(again));
      if (ec2) co_return store_error(req, ec2);
      v = std::move(p2.messages);
    }
    std::reverse(v.begin(), v.end());
    for (auto& m : v) items.emplace_back(summary_json(*m));
  } else {
    for (auto& m : p.messages) items.emplace_back(summary_json(*m));
  }
  json::object o;
  o["items"] = std::move(items);
  o["total"] = p.matched;
  o["storeTotal"] = p.total;
  o["unread"] = p.unread;
  o["skip"] = skip.value_or(0);
  o["limit"] = lim;
  co_return json_response(req, o);
}

awaitable<reply> delete_ids(const ctx_t& c, const request& req) {
  boost::system::error_code jec;
  auto v = json::parse(req.body(), jec);
  std::vector<std::string> ids;
  const json::array* a = nullptr;
  if (!jec && v.is_array()) a = &v.as_array();
  if (!jec && v.is_object() && v.as_object().contains("ids") && v.as_object().at("ids").is_array())
    a = &v.as_object().at("ids").as_array();
  if (!a) co_return error_response(req, 400, "expected a JSON array of ids");
  for (const auto& x : *a) {
    if (!x.is_string()) co_return error_response(req, 400, "ids must be strings");
    if (is_id(x.as_string())) ids.emplace_back(x.as_string());
  }
  if (ids.size() > 10000) co_return error_response(req, 400, "too many ids");
  auto [ec, n] = co_await c.store.async_remove(store::selection::of_ids(std::move(ids)));
  if (ec) co_return store_error(req, ec);
  co_return json_response(req, json::value(true));
  (void)n;
}

awaitable<reply> one_email(const ctx_t& c, const request& req, std::string_view rest) {
  std::vector<std::string_view> seg;
  for (std::size_t at = 0; at <= rest.size();) {
    auto e = rest.find('/', at);
    if (e == std::string_view::npos) e = rest.size();
    seg.push_back(rest.substr(at, e - at));
    at = e + 1;
  }
  const auto m = req.method();
  std::string id(seg[0]);
  std::optional<response> fail;
  auto not_found = [&] {
    return make_response(req, 404, "application/json", R"({"error":"Email was not found"})");
  };
  if (seg.size() == 1) {
    if (m == bh::verb::delete_) {
      if (!is_id(id)) co_return not_found();
      auto [ec, n] = co_await c.store.async_remove(store::selection::of_ids(std::vector<std::string>(1, id)));
      if (ec) co_return store_error(req, ec);
      if (n == 0) co_return not_found();
      co_return json_response(req, json::value(true));
    }
    if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD, DELETE");
    auto msg = co_await fetch_message(c, req, id, fail);
    if (!msg) co_return not_found();
    bool read = msg->is_read();
    if (!read) {
      auto [ec, n] = co_await c.store.async_set_read(store::selection::of_ids(std::vector<std::string>(1, id)), true);
      (void)n;
      read = !ec;
    }
    std::string out;
    append_rendered(out, *catcher_rendered(c, maildev_view, *msg, nullptr, render_mail),
                    read ? "true" : "false");
    co_return make_response(req, 200, "application/json", std::move(out));
  }
  if (seg.size() >= 2 && seg[1] == "relay") {
    if (m != bh::verb::post) co_return not_allowed(req, "POST");
    co_return co_await release_message(c, req, std::move(id));
  }
  if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
  auto msg = co_await fetch_message(c, req, id, fail);
  if (!msg) co_return not_found();
  if (seg.size() == 2 && seg[1] == "html") {
    auto res = make_response(req, 200, "text/html; charset=utf-8", catcher_bodies(msg->raw).second);
    sandbox(res);
    co_return res;
  }
  if (seg.size() == 2 && (seg[1] == "source" || seg[1] == "download")) {
    auto res = make_response(req, 200, seg[1] == "source" ? "text/plain; charset=utf-8" : "message/rfc822",
                             msg->raw);
    if (seg[1] == "download")
      res.set(bh::field::content_disposition, "attachment; filename=\"" + id + ".eml\"");
    sandbox(res);
    co_return res;
  }
  if (seg.size() == 3 && seg[1] == "attachment") {
    std::string name;
    if (!percent_decode(seg[2], name, false)) co_return error_response(req, 400, "malformed name");
    for (auto& p : catcher_parts(msg->raw)) {
      if (p.filename != name && p.part_id != name) continue;
      auto got = catcher_part(msg->raw, p.part_id);
      if (!got) break;
      auto res = make_response(req, 200, p.content_type.empty() ? "application/octet-stream"
                                                                : std::string_view(p.content_type),
                               std::move(got->second));
      sandbox(res);
      co_return res;
    }
    co_return make_response(req, 404, "application/json", R"({"error":"Attachment not found"})");
  }
  co_return error_response(req, 404, "not found");
}

}  // namespace

awaitable<std::optional<reply>> maildev_route(const ctx_t& c, const request& req,
                                              const target& t) {
  std::string_view path = t.path;
  if (path.starts_with("/api/")) path.remove_prefix(4);
  const auto m = req.method();
  if (path == "/email") {
    if (m == bh::verb::get) co_return co_await list_all(c, req, t);
    co_return not_allowed(req, "GET, HEAD");
  }
  if (path == "/email/summary") {
    if (m == bh::verb::get) co_return co_await list_summary(c, req, t);
    co_return not_allowed(req, "GET, HEAD");
  }
  if (path == "/email/all") {
    if (m != bh::verb::delete_) co_return not_allowed(req, "DELETE");
    auto [ec, n] = co_await c.store.async_remove(store::selection::everything());
    (void)n;
    if (ec) co_return store_error(req, ec);
    co_return json_response(req, json::value(true));
  }
  if (path == "/email/delete") {
    if (m != bh::verb::post) co_return not_allowed(req, "POST");
    co_return co_await delete_ids(c, req);
  }
  if (path == "/email/read-all") {
    if (m != bh::verb::patch) co_return not_allowed(req, "PATCH");
    auto [ec, n] = co_await c.store.async_set_read(store::selection::everything(), true);
    if (ec) co_return store_error(req, ec);
    co_return json_response(req, json::value(n));
  }
  if (path.starts_with("/email/") && path.size() > 7)
    co_return co_await one_email(c, req, path.substr(7));
  if (path == "/config") {
    if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
    json::object o;
    o["version"] = js(c.cfg.version);
    o["smtpPort"] = 0;
    o["isOutgoingEnabled"] = c.cfg.relay.has_value();
    o["outgoingHost"] = c.cfg.relay ? js(c.cfg.relay->host) : json::value(nullptr);
    co_return json_response(req, o);
  }
  if (path == "/healthz") {
    if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
    co_return json_response(req, json::value(true));
  }
  co_return std::nullopt;
}

}  // namespace inlet::http::detail
