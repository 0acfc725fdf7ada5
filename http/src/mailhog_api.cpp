// MailHog's API v1 and v2 over inlet's store: each message as MailHog's data.Message
// (ID, From, To, Content{Headers, Body, Size, MIME}, Created, MIME, Raw), built from the
// stored envelope and raw bytes with the mail library's read view.
#include <algorithm>
#include <charconv>

#include "catchers.hpp"
#include "catchers_json.hpp"

namespace inlet::http::detail {

namespace {


// "user@domain" as MailHog's Path: {Relays, Mailbox, Domain, Params}.
void append_path(std::string& out, std::string_view addr) {
  auto at = addr.rfind('@');
  out.append("{\"Relays\":null,\"Mailbox\":");
  append_json_string(out, at == std::string_view::npos ? addr : addr.substr(0, at));
  out.append(",\"Domain\":");
  append_json_string(out, at == std::string_view::npos ? std::string_view{} : addr.substr(at + 1));
  out.append(",\"Params\":\"\"}");
}

// A header value unfolded: line breaks dropped, leading blanks trimmed.
std::string_view unfold(std::string_view v, std::string& scratch) {
  auto b = v.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  v.remove_prefix(b);
  if (v.find_first_of("\r\n") == std::string_view::npos) return v;
  scratch.clear();
  for (char ch : v)
    if (ch != '\r' && ch != '\n') scratch.push_back(ch);
  b = scratch.find_first_not_of(" \t");
  return b == std::string::npos ? std::string_view{} : std::string_view(scratch).substr(b);
}

// One part of the tree as MailHog's Content: its headers (names in first-seen order,
// repeated names gathered), raw body and, for a multipart, its children.
void append_content(std::string& out, const mime::parsed_message& m, std::uint32_t p) {
  const auto& part = m.parts()[p];
  std::string scratch, folded;
  // Names in canonical case; a name seen before adds its value to the first one's list.
  std::vector<std::pair<std::string, std::vector<std::uint32_t>>> names;
  for (std::uint32_t i = 0; i < part.header_count; ++i) {
    const auto& h = m.headers()[part.first_header + i];
    auto name = inlet::mail::canonical_header_name(m.view(h.name, scratch));
    auto it = std::find_if(names.begin(), names.end(),
                           [&](const auto& e) { return e.first == name; });
    if (it == names.end()) {
      names.emplace_back(std::move(name), std::vector<std::uint32_t>{});
      it = std::prev(names.end());
    }
    it->second.push_back(part.first_header + i);
  }
  out.append("{\"Headers\":{");
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (k) out.push_back(',');
    append_json_string(out, names[k].first);
    out.append(":[");
    for (std::size_t v = 0; v < names[k].second.size(); ++v) {
      if (v) out.push_back(',');
      const auto& h = m.headers()[names[k].second[v]];
      append_json_string(out, unfold(m.view(h.value, scratch), folded));
    }
    out.push_back(']');
  }
  const std::string_view body = m.view(part.body, scratch);
  out.append("},\"Size\":");
  out.append(std::to_string(body.size()));
  out.append(",\"Body\":");
  append_json_string(out, body);
  out.append(",\"MIME\":");
  if (part.kind == mime::part_kind::multipart) {
    out.append("{\"Parts\":[");
    bool first = true;
    for (auto ch = part.first_child; ch != mime::no_index; ch = m.parts()[ch].next_sibling) {
      if (!first) out.push_back(',');
      first = false;
      append_content(out, m, ch);
    }
    out.append("]}");
  } else {
    out.append("null");
  }
  out.push_back('}');
}

// The message as MailHog's data.Message: {ID, From, To, Content, Created, MIME, Raw}.
// Content is the root part with the whole message's header map (as the read view gives
// it), the raw size and no MIME; the top-level MIME (the root's children) is beside it.
std::string message_text(const store::stored_message& msg) {
  inlet::mail::message_view view(msg.raw);
  const auto& m = view.parsed();
  std::string out;
  out.reserve(2 * msg.raw.size() + msg.raw.size() / 8 + 1024);
  out.append("{\"ID\":");
  append_json_string(out, msg.id.str());
  out.append(",\"From\":");
  append_path(out, msg.envelope.mail_from);
  out.append(",\"To\":[");
  for (std::size_t i = 0; i < msg.envelope.rcpt_to.size(); ++i) {
    if (i) out.push_back(',');
    append_path(out, msg.envelope.rcpt_to[i]);
  }
  out.append("],\"Content\":{\"Headers\":{");
  std::string scratch;
  bool first = true;
  for (auto& [name, values] : view.headers()) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, name);
    out.append(":[");
    for (std::size_t v = 0; v < values.size(); ++v) {
      if (v) out.push_back(',');
      append_json_string(out, unfold(values[v], scratch));
    }
    out.push_back(']');
  }
  const auto& root = m.parts()[0];
  out.append("},\"Size\":");
  out.append(std::to_string(msg.raw.size()));
  out.append(",\"Body\":");
  append_json_string(out, m.view(root.body, scratch));
  out.append(",\"MIME\":null},\"Created\":");
  append_json_string(out, format_rfc3339(msg.created));
  out.append(",\"MIME\":");
  if (root.kind == mime::part_kind::multipart) {
    out.append("{\"Parts\":[");
    bool first_part = true;
    for (auto ch = root.first_child; ch != mime::no_index; ch = m.parts()[ch].next_sibling) {
      if (!first_part) out.push_back(',');
      first_part = false;
      append_content(out, m, ch);
    }
    out.append("]}");
  } else {
    out.append("null");
  }
  out.append(",\"Raw\":{\"From\":");
  append_json_string(out, msg.envelope.mail_from);
  out.append(",\"To\":[");
  for (std::size_t i = 0; i < msg.envelope.rcpt_to.size(); ++i) {
    if (i) out.push_back(',');
    append_json_string(out, msg.envelope.rcpt_to[i]);
  }
  out.append("],\"Data\":");
  append_json_string(out, msg.raw);
  out.append(",\"Helo\":");
  append_json_string(out, msg.envelope.helo);
  out.append("}}");
  return out;
}

render_cache::entry render_message(const store::stored_message& m) {
  return render_cache::entry{message_text(m), std::string::npos};
}

// An answer whose body is `head`, the items as a JSON array of data.Message (each
// rendered once and kept), then `tail`.
reply items_reply(const ctx_t& c, const request& req, std::string head,
                  std::vector<catcher_item>& items, std::string tail) {
  std::vector<rendered_source::item> texts;
  texts.reserve(items.size());
  for (auto& it : items)
    texts.push_back({catcher_rendered(c, mailhog_view, *it.msg, std::move(it.rendered),
                                      render_message),
                     {}});
  auto res = make_response(req, 200, "application/json", std::string{});
  return rendered_source::answer(
      std::move(res), std::make_shared<rendered_source>(std::move(head) + '[', std::move(texts),
                                                        ']' + std::move(tail)));
}

// MailHog's start and limit: a value that is not a positive integer is ignored (start 0,
// limit 50), the limit is at most 250; MailHog never refuses them.
std::size_t read_index(std::string_view q, std::string_view key, std::size_t dflt) {
  std::string v;
  if (query_param(q, key, v) != param::found) return dflt;
  std::size_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && p == v.data() + v.size() && out > 0 ? out : dflt;
}

// A search value as one quoted term of Mailpit's language (quotes inside dropped).
std::string quoted(std::string_view v) {
  std::string s = "\"";
  for (char ch : v)
    if (ch != '"') s.push_back(ch);
  return s + "\"";
}

// MailHog's search (its storage's Search): kind=from finds the envelope sender (MAIL FROM,
// "mailbox@domain") or else the From: header; kind=to an envelope recipient or else the
// To: header; each a case-insensitive substring. kind=containing: the message's text.
std::error_code search_query(std::string_view kind, std::string_view q, store::search::query& out,
                             std::string& why) {
  namespace se = store::search;
  if (kind == "containing") return se::parse(quoted(q), "", out, &why);
  const bool from = kind == "from";
  // Parsed as Mailpit's from:/to: term (folded, whitespace collapsed), then widened.
  if (auto ec = se::parse((from ? "from:" : "to:") + quoted(q), "", out, &why)) return ec;
  for (auto& t : out.terms) {
    t.where = from ? se::field::envelope_from : se::field::envelope_to;
    t.also = {from ? se::field::from : se::field::to};
  }
  return {};
}

awaitable<reply> v2_list(const ctx_t& c, const request& req, const target& t, bool search) {
  const std::size_t start = read_index(t.query, "start", 0);
  const std::size_t limit = std::min({read_index(t.query, "limit", 50), std::size_t{250},
                                      c.cfg.max_limit});
  store::list_request lr(start, limit);
  if (search) {
    std::string kind, q;
    if (query_param(t.query, "kind", kind) != param::found ||
        (kind != "from" && kind != "to" && kind != "containing"))
      co_return error_response(req, 400, "kind must be from, to or containing");
    if (query_param(t.query, "query", q) != param::found || q.empty())
      co_return error_response(req, 400, "query is required");
    std::string why;
    if (search_query(kind, q, lr.query, why)) co_return error_response(req, 400, why);
  }
  std::vector<catcher_item> items;
  auto [ec, p] = co_await catcher_list(c, std::move(lr), mailhog_view, items);
  if (ec) co_return store_error(req, ec);
  // MailHog's messagesResult: total (all messages, or all matches), count, start as asked.
  std::string head = "{\"total\":" + std::to_string(p.matched) +
                     ",\"count\":" + std::to_string(items.size()) +
                     ",\"start\":" + std::to_string(start) + ",\"items\":";
  co_return items_reply(c, req, std::move(head), items, "}");
}

awaitable<reply> v1_list(const ctx_t& c, const request& req) {
  // MailHog v1 lists every message; bounded here by max_limit.
  store::list_request lr(0, c.cfg.max_limit);
  std::vector<catcher_item> items;
  auto [ec, p] = co_await catcher_list(c, std::move(lr), mailhog_view, items);
  if (ec) co_return store_error(req, ec);
  co_return items_reply(c, req, {}, items, {});
}

awaitable<reply> delete_all(const ctx_t& c, const request& req) {
  auto [ec, n] = co_await c.store.async_remove(store::selection::everything());
  (void)n;
  if (ec) co_return store_error(req, ec);
  co_return make_response(req, 200, "text/plain", std::string{});
}

awaitable<reply> one_message(const ctx_t& c, const request& req, std::string_view rest) {
  std::vector<std::string_view> seg;
  for (std::size_t at = 0; at <= rest.size();) {
    auto e = rest.find('/', at);
    if (e == std::string_view::npos) e = rest.size();
    seg.push_back(rest.substr(at, e - at));
    at = e + 1;
  }
  std::string id(seg[0]);
  const auto m = req.method();
  if (seg.size() == 1) {
    if (m == bh::verb::delete_) {
      if (!is_id(id)) co_return error_response(req, 404, "not found");
      auto [ec, n] = co_await c.store.async_remove(store::selection::of_ids(std::vector<std::string>(1, id)));
      if (ec) co_return store_error(req, ec);
      if (n == 0) co_return error_response(req, 404, "not found");
      co_return make_response(req, 200, "text/plain", std::string{});
    }
    if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD, DELETE");
    std::optional<response> fail;
    auto msg = co_await fetch_message(c, req, std::move(id), fail);
    if (!msg) co_return std::move(*fail);
    co_return make_response(
        req, 200, "application/json",
        catcher_rendered(c, mailhog_view, *msg, nullptr, render_message)->text);
  }
  if (seg.size() == 2 && seg[1] == "release") {
    // MailHog relays to the server named in the body; inlet releases through its
    // configured relay only (no open relay through the API).
    if (m != bh::verb::post) co_return not_allowed(req, "POST");
    co_return co_await release_message(c, req, std::move(id));
  }
  if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
  std::optional<response> fail;
  if (seg.size() == 2 && seg[1] == "download") {
    auto msg = co_await fetch_message(c, req, std::move(id), fail);
    if (!msg) co_return std::move(*fail);
    auto res = make_response(req, 200, "message/rfc822", msg->raw);
    res.set(bh::field::content_disposition, "attachment; filename=\"" + msg->id.str() + ".eml\"");
    sandbox(res);
    co_return res;
  }
  if (seg.size() == 5 && seg[1] == "mime" && seg[2] == "part" && seg[4] == "download") {
    // MailHog numbers the top-level MIME parts from 0.
    std::size_t index = 0;
    auto [pe, pec] = std::from_chars(seg[3].data(), seg[3].data() + seg[3].size(), index);
    if (pec != std::errc{} || pe != seg[3].data() + seg[3].size())
      co_return error_response(req, 404, "not found");
    auto msg = co_await fetch_message(c, req, std::move(id), fail);
    if (!msg) co_return std::move(*fail);
    auto got = catcher_part(msg->raw, std::to_string(index + 1));
    if (!got) co_return error_response(req, 404, "not found");
    auto res = make_response(req, 200, "application/octet-stream", std::move(got->second));
    res.set(bh::field::content_disposition, "attachment; filename=\"" + msg->id.str() + "-part-" +
                                                std::string(seg[3]) + "\"");
    sandbox(res);
    co_return res;
  }
  co_return error_response(req, 404, "not found");
}

}  // namespace

awaitable<std::optional<reply>> mailhog_route(const ctx_t& c, const request& req,
                                              const target& t) {
  const std::string& path = t.path;
  const auto m = req.method();
  if (path == "/api/v2/messages") {
    if (m == bh::verb::get) co_return co_await v2_list(c, req, t, false);
    if (m == bh::verb::delete_) co_return co_await delete_all(c, req);
    co_return not_allowed(req, "GET, HEAD, DELETE");
  }
  if (path == "/api/v2/search") {
    if (m != bh::verb::get) co_return not_allowed(req, "GET, HEAD");
    co_return co_await v2_list(c, req, t, true);
  }
  if (path == "/api/v2/jim") co_return mailhog_jim(c, req);
  if (path == "/api/v1/messages" && c.cfg.mailhog_v1) {
    if (m == bh::verb::get) co_return co_await v1_list(c, req);
    if (m == bh::verb::delete_) co_return co_await delete_all(c, req);
    co_return not_allowed(req, "GET, HEAD, DELETE");
  }
  constexpr std::string_view one = "/api/v1/messages/";
  if (path.starts_with(one) && path.size() > one.size())
    co_return co_await one_message(c, req, std::string_view(path).substr(one.size()));
  co_return std::nullopt;
}

// ---- the read model (one place to adapt when the model moves) ----

std::vector<std::pair<std::string, std::vector<std::string>>> catcher_headers(
    std::string_view raw) {
  return inlet::mail::message_view(raw).headers();
}

std::pair<std::string, std::string> catcher_bodies(std::string_view raw) {
  inlet::mail::message_view v(raw);
  return {v.text(), v.html()};
}

std::vector<part_entry> catcher_parts(std::string_view raw) {
  return inlet::mail::message_view(raw).parts(false);
}

std::optional<std::pair<part_entry, std::string>> catcher_part(std::string_view raw,
                                                               std::string_view part_id) {
  return inlet::mail::message_view(raw).part_content(part_id);
}

awaitable<std::error_code> catcher_load(const ctx_t& c,
                                        const std::vector<store::message_ptr>& messages,
                                        char view, std::vector<catcher_item>& items) {
  items.clear();
  // Listings may come without raw bytes: a message not rendered yet is loaded in full.
  // The answers hold each message in full (MailHog's about three times its raw size), so
  // a page stops once its raw bytes pass a third of max_list_bytes (at least one).
  std::size_t bytes = 0;
  for (const auto& listed : messages) {
    if (!items.empty() && bytes >= c.cfg.max_list_bytes / 3) break;
    bytes += listed->size;
    store::message_ptr m = listed;
    auto cached = c.rendered->find(view, m->id.str());
    if (!cached && !m->has_raw) {
      std::string id(m->id.str());
      auto [gec, full] = co_await c.store.async_get(std::move(id));
      if (gec == store::errc::not_found) continue;  // deleted meanwhile
      if (gec) co_return gec;
      m = std::move(full);
    }
    items.push_back(catcher_item{std::move(m), std::move(cached)});
  }
  co_return std::error_code{};
}

awaitable<std::pair<std::error_code, store::page>> catcher_list(
    const ctx_t& c, store::list_request lr, char view, std::vector<catcher_item>& items) {
  auto [ec, p] = co_await c.store.async_list(std::move(lr));
  if (ec) co_return std::pair{ec, store::page{}};
  if (auto lec = co_await catcher_load(c, p.messages, view, items))
    co_return std::pair{lec, store::page{}};
  p.messages.clear();
  for (auto& it : items) p.messages.push_back(it.msg);
  co_return std::pair{ec, std::move(p)};
}

std::string mailhog_message_text(const store::stored_message& msg) {
  return message_text(msg);
}

}  // namespace inlet::http::detail
