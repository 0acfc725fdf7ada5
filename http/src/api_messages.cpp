// Messages: listing, search, read flags, deletion, one message, its headers, its raw
// bytes, its parts and thumbnails, and the /view pages.
#include "api_internal.hpp"
#include "outbound.hpp"

#include <algorithm>
#include <cctype>

namespace inlet::http::detail {

namespace {

// Answers up to this size are built whole (one buffer, Content-Length); larger ones are
// written as they are made.
constexpr std::size_t whole_answer_bytes = 1u << 20;

// A listing's JSON made piece by piece: the head (counts, tags, `"messages":[`), each
// summary serialised when the writer asks for it, then the closing `]}`. It holds the
// page's records (shared with the store), never the text it has given.
class list_source final : public body_source {
 public:
  list_source(std::string head, std::vector<store::message_ptr> msgs, std::size_t count)
      : head_(std::move(head)), msgs_(std::move(msgs)), count_(std::min(count, msgs_.size())) {}

  bool next(std::string& out, std::size_t window) override {
    if (done_) return false;
    const std::size_t start = out.size();
    out += head_;
    std::string().swap(head_);
    while (i_ < count_ && out.size() - start < window) {
      if (i_ > 0) out += ',';
      out += json::serialize(summary_object(*msgs_[i_]));
      msgs_[i_].reset();
      ++i_;
    }
    if (i_ == count_) {
      out += "]}";
      done_ = true;
    }
    return true;
  }

 private:
  std::string head_;
  std::vector<store::message_ptr> msgs_;
  std::size_t count_;
  std::size_t i_ = 0;
  bool done_ = false;
};

// A message's raw bytes, in windows, from the shared record (no copy of the whole).
class raw_source final : public body_source {
 public:
  explicit raw_source(store::message_ptr m) : m_(std::move(m)) {}
  bool next(std::string& out, std::size_t window) override {
    if (at_ >= m_->raw.size()) return false;
    const std::size_t n = std::min(window, m_->raw.size() - at_);
    out.append(m_->raw, at_, n);
    at_ += n;
    return true;
  }
  std::optional<std::uint64_t> size() const override { return m_->raw.size(); }

 private:
  store::message_ptr m_;
  std::size_t at_ = 0;
};

}  // namespace

awaitable<reply> list_messages(const ctx_t& c, const request& req, const target& t,
                               std::string mailbox, bool search) {
  std::size_t start = 0, limit = 0;
  if (!parse_size(t.query, "start", start) || !parse_size(t.query, "limit", limit))
    co_return error_response(req, 400, "start and limit must be non-negative integers");
  if (limit == 0) limit = c.cfg.default_limit;
  limit = std::min(limit, c.cfg.max_limit);
  store::list_request lr(start, limit);
  lr.mailbox = std::move(mailbox);
  if (search) {
    std::string text, tz;
    if (query_param(t.query, "query", text) != param::found || blank(text))
      co_return error_response(req, 400, "a search needs a query");
    if (query_param(t.query, "tz", tz) == param::malformed)
      co_return error_response(req, 400, "malformed tz");
    std::string why;
    if (store::search::parse(text, tz, lr.query, &why)) co_return error_response(req, 400, why);
  }
  // Mailpit's `before`: only messages received before that date (an unreadable date is
  // ignored, as Mailpit ignores it).
  if (std::string before; query_param(t.query, "before", before) == param::found && !blank(before)) {
    std::string tz;
    query_param(t.query, "tz", tz);
    store::search::term bt;
    bt.what = store::search::kind::before;
    if (!store::search::read_date(before, tz, bt.when)) lr.query.terms.push_back(std::move(bt));
  }
  auto [ec, p] = co_await c.store.async_list(std::move(lr));
  if (ec) co_return store_error(req, ec);
  auto [tec, tags] = co_await c.store.async_list_tags();
  // The tag list is every shard's: with one down it is the others' (the listing itself
  // may be whole, a mailbox on a healthy shard), and the answer says it is partial.
  if (tec && tec != store::errc::unavailable) co_return store_error(req, tec);
  if (tec) p.partial = true;
  // The page stops once its summaries hold max_list_bytes (at least one message), and
  // `count`, which comes first, says how many it gives: so each summary is serialised
  // once to measure it. A small page keeps those pieces and is answered whole; a large
  // one is serialised again as it is written (list_source), so what a request holds is
  // one window, whatever the messages hold.
  std::vector<std::string> pieces;
  std::size_t bytes = 0, count = 0;
  bool stream = false;
  for (const auto& m : p.messages) {
    if (count > 0 && bytes >= c.cfg.max_list_bytes) break;
    std::string piece = json::serialize(summary_object(*m));
    bytes += piece.size() + 1;
    ++count;
    if (stream) continue;
    if (bytes > whole_answer_bytes) {
      stream = true;
      std::vector<std::string>().swap(pieces);
    } else {
      pieces.push_back(std::move(piece));
    }
  }
  json::object o{
      {"total", p.total},
      {"unread", p.unread},
      {"count", count},
      {"messages_count", p.matched},
      {"messages_unread", p.matched_unread},
      {"start", p.start},
      {"tags", strings_json(tags)},
  };
  // inlet's addition: a sharded store answered from some shards only.
  if (p.partial) {
    json::array missing;
    for (auto shard : p.missing) missing.push_back(shard);
    o["Partial"] = true;
    o["MissingShards"] = std::move(missing);
  }
  std::string out = json::serialize(o);
  out.pop_back();  // the object's closing brace: the messages go last, as in Mailpit
  out += ",\"messages\":[";
  if (stream) {
    auto src = std::make_shared<list_source>(std::move(out), std::move(p.messages), count);
    co_return reply(make_response(req, 200, "application/json", std::string{}), std::move(src));
  }
  out.reserve(out.size() + bytes + 16);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (i) out += ',';
    out += pieces[i];
    std::string().swap(pieces[i]);
  }
  out += "]}";
  co_return make_response(req, 200, "application/json", std::move(out));
}

awaitable<response> delete_messages(const ctx_t& c, const request& req) {
  const auto& body = req.body();
  if (blank(body)) {  // Mailpit: no body deletes every message
    auto all = store::selection::everything();
    auto [ec, n] = co_await c.store.async_remove(std::move(all));
    if (ec) co_return store_error(req, ec);
    co_return ok_response(req);
  }
  std::error_code ec;
  json::value v = json::parse(body, ec);
  std::vector<const json::value*> m;
  std::vector<std::string> ids;
  if (ec || !body_members(v, {"IDs"}, m) || !string_array(m[0], ids))
    co_return error_response(req, 400, "body must be {\"IDs\": [\"...\"]}");
  // As Mailpit: no IDs deletes every message.
  auto sel =
      ids.empty() ? store::selection::everything() : store::selection::of_ids(std::move(ids));
  auto [rec, n] = co_await c.store.async_remove(std::move(sel));
  if (rec) co_return store_error(req, rec);
  co_return ok_response(req);
}

awaitable<response> delete_search(const ctx_t& c, const request& req, const target& t) {
  std::string text, tz;
  if (query_param(t.query, "query", text) != param::found || blank(text))
    co_return error_response(req, 400, "a search needs a query");
  if (query_param(t.query, "tz", tz) == param::malformed)
    co_return error_response(req, 400, "malformed tz");
  store::search::query q;
  std::string why;
  if (store::search::parse(text, tz, q, &why)) co_return error_response(req, 400, why);
  if (q.empty())  // only ignored terms ("to:"): never widen a search delete to everything
    co_return error_response(req, 400, "the query selects nothing to search for");
  auto sel = store::selection::matching(std::move(q));
  auto [ec, n] = co_await c.store.async_remove(std::move(sel));
  if (ec) co_return store_error(req, ec);
  co_return ok_response(req);
}

awaitable<response> set_read(const ctx_t& c, const request& req, const target& t) {
  std::error_code ec;
  json::value v = json::parse(req.body(), ec);
  std::vector<const json::value*> m;
  const bool ok = !ec && body_members(v, {"IDs", "Read", "Search"}, m);
  const json::value* read_v = ok ? m[1] : nullptr;
  const json::value* search_v = ok ? m[2] : nullptr;
  std::vector<std::string> ids;
  // Read is optional and false when left out, as Mailpit decodes it: `{}` marks all unread.
  if (!ok || (read_v && !read_v->is_bool()) || !string_array(m[0], ids) ||
      (search_v && !search_v->is_string() && !search_v->is_null()))
    co_return error_response(
        req, 400, "body must be {\"IDs\": [\"...\"], \"Search\": \"...\", \"Read\": true|false}");
  std::string search_text =
      search_v && search_v->is_string() ? std::string(search_v->get_string()) : "";
  // As Mailpit: IDs if given, else the search if given, else every message.
  store::selection sel;
  if (!ids.empty()) {
    sel = store::selection::of_ids(std::move(ids));
  } else if (!blank(search_text)) {
    std::string tz;
    if (query_param(t.query, "tz", tz) == param::malformed)
      co_return error_response(req, 400, "malformed tz");
    store::search::query q;
    std::string why;
    if (store::search::parse(search_text, tz, q, &why)) co_return error_response(req, 400, why);
    if (q.empty()) co_return error_response(req, 400, "the search selects nothing to search for");
    sel = store::selection::matching(std::move(q));
  } else {
    sel = store::selection::everything();
  }
  auto [sec, n] = co_await c.store.async_set_read(std::move(sel), read_v && read_v->get_bool());
  if (sec) co_return store_error(req, sec);
  co_return ok_response(req);
}

namespace {

json::array parts_json(const std::vector<part_entry>& v, bool want_inline) {
  json::array out;
  for (const auto& p : v) {
    if (p.is_inline != want_inline) continue;
    out.push_back(json::object{
        {"PartID", js(p.part_id)},
        {"FileName", js(p.filename)},
        {"ContentType", js(p.content_type)},
        {"ContentID", js(p.content_id)},
        {"Size", p.size},
        {"Checksums",
         json::object{{"MD5", p.sums.md5}, {"SHA1", p.sums.sha1}, {"SHA256", p.sums.sha256}}}});
  }
  return out;
}

}  // namespace

awaitable<response> get_message(const ctx_t& c, const request& req, std::string id,
                                bool mark_read) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  bool read = m->is_read();
  if (mark_read && !read) {  // opening a message marks it read, as Mailpit does
    std::vector<std::string> one{m->id};
    auto sel = store::selection::of_ids(std::move(one));  // named: see the g++ 12 note in store.hpp
    auto [rec, n] = co_await c.store.async_set_read(std::move(sel), true);
    if (rec) co_return store_error(req, rec);
    read = true;
  }
  const message_view view(m->raw);
  const auto parts = view.parts(true);
  const auto unsub = view.unsubscribe();
  std::string return_path = view.return_path();
  if (return_path.empty()) return_path = m->envelope.mail_from;
  const auto& s = m->summary;
  json::object o{
      {"ID", m->id},
      {"MessageID", js(s.message_id)},
      {"Read", read},
      {"From", address_json(s.from)},
      {"To", addresses_json({s.to.data(), s.to.size()})},
      {"Cc", addresses_json(s.cc)},
      {"Bcc", addresses_json(s.bcc)},
      {"ReplyTo", addresses_json(s.reply_to)},
      {"ReturnPath", js(return_path)},
      {"Subject", js(s.subject)},
      {"ListUnsubscribe", json::object{{"Header", js(unsub.header)},
                                       {"HeaderPost", js(unsub.header_post)},
                                       {"Links", strings_json(unsub.links)},
                                       {"Errors", js(unsub.errors)}}},
      // Mailpit: the Date header when the message has one, else when it was received.
      {"Date", format_rfc3339(s.date.value_or(m->created))},
      {"Created", format_rfc3339(m->created)},
      {"Username", js(m->envelope.auth_user)},
      {"Tags", strings_json(*m->tags())},
      {"Text", js(view.text())},
      {"HTML", js(view.html())},
      {"Size", m->size},
      {"Inline", parts_json(parts, true)},
      {"Attachments", parts_json(parts, false)},
      {"Envelope",
       json::object{{"From", js(m->envelope.mail_from)},
                    {"To", strings_json({m->envelope.rcpt_to.data(), m->envelope.rcpt_to.size()})},
                    {"Helo", js(m->envelope.helo)},
                    {"Remote", js(m->envelope.remote)},
                    {"Protocol", js(m->envelope.protocol)}}},
  };
  // The attachments here come from the whole message, so only an address list is cut.
  if (auto totals = totals_object(s, o["Attachments"].as_array().size()))
    o["Totals"] = std::move(*totals);
  co_return json_response(req, o);
}

awaitable<response> get_headers(const ctx_t& c, const request& req, std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  const message_view view(m->raw);
  json::object o;
  for (const auto& [name, values] : view.headers())
    o.emplace(sanitize_utf8(name), strings_json(values));
  co_return json_response(req, o);
}

awaitable<reply> get_raw(const ctx_t& c, const request& req, const target& t, std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  // A small message is copied into the answer (Beast's string_body owns its bytes); a
  // large one is written from the shared record in windows.
  const bool stream = m->raw.size() > whole_answer_bytes;
  auto res = make_response(req, 200, "text/plain; charset=utf-8", stream ? std::string{} : m->raw);
  std::string dl;
  if (query_param(t.query, "dl", dl) == param::found && (dl == "1" || dl == "true"))
    res.set(bh::field::content_disposition, "attachment; filename=\"" + m->id.str() + ".eml\"");
  sandbox(res);
  if (stream) {
    res.content_length(m->raw.size());
    co_return reply(std::move(res), std::make_shared<raw_source>(std::move(m)));
  }
  co_return res;
}

namespace {

// The type a part is shown inline with (/view/{ID}/part/{PartID}, the page's "open"): what
// browsers display — images, PDF, plain text, audio, video, and HTML or SVG (which the
// sandbox policy keeps from running script) — as the part says; other text as text/plain;
// anything else is not shown but downloaded, as application/octet-stream.
std::pair<std::string, bool> inline_type(std::string_view declared) {
  std::string t;
  for (char c : declared.substr(0, declared.find(';'))) {
    if (c == ' ' || c == '\t') continue;
    t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  static constexpr std::string_view shown[] = {
      "image/png",  "image/jpeg", "image/gif",  "image/webp",      "image/bmp",
      "image/avif", "image/svg+xml", "application/pdf", "text/plain", "text/html",
      "text/csv",   "application/json"};
  const bool ok_chars = t.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+-./") ==
                        std::string::npos;
  if (ok_chars && (std::ranges::find(shown, t) != std::end(shown) || t.starts_with("audio/") ||
                   t.starts_with("video/")))
    return {t, true};
  if (ok_chars && t.starts_with("text/")) return {"text/plain", true};
  return {"application/octet-stream", false};
}

// A file name safe inside a quoted header parameter.
std::string header_filename(std::string_view name) {
  std::string out;
  for (unsigned char c : name)
    if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) out.push_back(static_cast<char>(c));
  return out;
}

}  // namespace

awaitable<response> get_part(const ctx_t& c, const request& req, std::string id,
                             std::string part_id, bool view) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  const message_view mv(m->raw);
  auto part = mv.part_content(part_id);
  if (!part) co_return error_response(req, 404, "part not found");
  std::string type =
      part->first.content_type.empty() ? "application/octet-stream" : part->first.content_type;
  if (view) {
    auto [t, shown] = inline_type(type);
    type = std::move(t);
    view = shown;
  }
  if (type.starts_with("text/")) {
    auto cs = mime::charset(mv.parsed(), part->first.index);
    if (cs) type += "; charset=" + *cs;
  }
  auto res = make_response(req, 200, type, std::move(part->second));
  const std::string fn = header_filename(part->first.filename);
  if (!fn.empty() || !view)
    res.set(bh::field::content_disposition, std::string(view ? "inline" : "attachment") +
                                                (fn.empty() ? "" : "; filename=\"" + fn + "\""));
  sandbox(res);
  co_return res;
}

awaitable<response> get_thumbnail(const ctx_t& c, const request& req, std::string id,
                                  std::string part_id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  std::string image;
  {
    const message_view mv(m->raw);
    auto part = mv.part_content(part_id);
    if (!part) co_return error_response(req, 404, "part not found");
    if (part->first.content_type.starts_with("image/")) image = std::move(part->second);
  }
  // Decoding an image is CPU work bounded by the limits: on the pool, not on this thread.
  const thumbnail_config limits = c.cfg.thumbnails;
  auto job = [img = std::move(image), limits]() {
    return img.empty() ? blank_thumbnail() : make_thumbnail(img, limits);
  };
  std::string jpeg = co_await offload(c, std::move(job));
  if (jpeg.empty())  // the image library could not be loaded (said on stderr)
    co_return error_response(req, 503, "thumbnails unavailable");
  co_return make_response(req, 200, "image/jpeg", std::move(jpeg));
}

namespace {

// Points cid: references at the API's part URLs; with `embed`, links open a new window.
std::string rewrite_html(std::string html, const std::vector<part_entry>& parts,
                         std::string_view prefix, bool embed) {
  for (const auto& p : parts) {
    if (p.content_id.empty()) continue;
    const std::string from = "cid:" + p.content_id;
    const std::string to = std::string(prefix) + p.part_id;
    for (auto at = html.find(from); at != std::string::npos; at = html.find(from, at + to.size()))
      html.replace(at, from.size(), to);
  }
  if (embed) {
    constexpr std::string_view extra = " target=\"_blank\" rel=\"noreferrer noopener\"";
    for (std::size_t at = 0; (at = html.find('<', at)) != std::string::npos; ++at) {
      if (at + 2 < html.size() && (html[at + 1] == 'a' || html[at + 1] == 'A') &&
          (html[at + 2] == ' ' || html[at + 2] == '>' || html[at + 2] == '\t' ||
           html[at + 2] == '\n'))
        html.insert(at + 2, extra);
    }
  }
  return html;
}

}  // namespace

awaitable<response> view_html(const ctx_t& c, const request& req, const target& t, std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  const message_view mv(m->raw);
  if (!mv.has_html()) co_return error_response(req, 404, "the message has no HTML part");
  std::string embed;
  const bool is_embed =
      query_param(t.query, "embed", embed) == param::found && (embed == "1" || embed == "true");
  const std::string prefix = c.root + "api/v1/message/" + m->id.str() + "/part/";
  auto res = make_response(req, 200, "text/html; charset=utf-8",
                           rewrite_html(mv.html(), mv.parts(false), prefix, is_embed));
  // The message's own HTML: no scripts, an opaque origin, popups only when embedded.
  res.set("Content-Security-Policy",
          std::string("sandbox allow-popups allow-popups-to-escape-sandbox; default-src 'none'; "
                      "img-src * data:; ") +
              (c.cfg.block_remote_css_and_fonts ? "style-src 'unsafe-inline'; font-src 'none'"
                                                : "style-src 'unsafe-inline' *; font-src *"));
  res.set("Referrer-Policy", "no-referrer");
  co_return res;
}

awaitable<response> view_text(const ctx_t& c, const request& req, std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  const message_view mv(m->raw);
  co_return make_response(req, 200, "text/plain; charset=utf-8", mv.text());
}

}  // namespace inlet::http::detail
