// Tags, send, release, checks, chaos, info and the web UI's configuration.
#include <algorithm>
#include <openssl/evp.h>
#include <regex.h>

#include <fstream>

#include "api_internal.hpp"
#include "inlet/store/tags.hpp"
#include "outbound.hpp"
#include "send.hpp"
#include "spam_check.hpp"

namespace inlet::http::detail {

// ---- tags ----

awaitable<response> list_tags(const ctx_t& c, const request& req) {
  auto [ec, tags] = co_await c.store.async_list_tags();
  if (ec) co_return store_error(req, ec);
  co_return json_response(req, strings_json(tags));
}

awaitable<response> set_tags(const ctx_t& c, const request& req) {
  std::error_code ec;
  json::value v = json::parse(req.body(), ec);
  std::vector<const json::value*> m;
  std::vector<std::string> ids, tags;
  // Tags left out (or null) clears them, as Mailpit decodes the body.
  if (ec || !body_members(v, {"IDs", "Tags"}, m) || !m[0] || !string_array(m[0], ids) ||
      !string_array(m[1], tags))
    co_return error_response(req, 400, "body must be {\"IDs\": [\"...\"], \"Tags\": [\"...\"]}");
  auto sel = store::selection::of_ids(std::move(ids));  // no IDs: nothing changes
  auto [sec, n] = co_await c.store.async_set_tags(std::move(sel), store::clean_tags(tags));
  if (sec) co_return store_error(req, sec);
  co_return ok_response(req);
}

awaitable<response> rename_tag(const ctx_t& c, const request& req, std::string tag) {
  std::error_code ec;
  json::value v = json::parse(req.body(), ec);
  std::vector<const json::value*> m;
  if (ec || !body_members(v, {"Name"}, m) || !m[0] || !m[0]->is_string())
    co_return error_response(req, 400, "body must be {\"Name\": \"...\"}");
  std::string name = store::clean_tag(m[0]->get_string());
  if (name.empty()) co_return error_response(req, 400, "the new name has no allowed character");
  auto [rec, n] = co_await c.store.async_rename_tag(std::move(tag), std::move(name));
  if (rec) co_return store_error(req, rec);
  co_return ok_response(req);
}

awaitable<response> delete_tag(const ctx_t& c, const request& req, std::string tag) {
  auto [ec, n] = co_await c.store.async_delete_tag(std::move(tag));
  if (ec) co_return store_error(req, ec);
  co_return ok_response(req);
}

// ---- info, web UI ----

std::uint64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * 4096;
}

std::string tag_metric(const std::vector<std::pair<std::string, std::size_t>>& counts) {
  std::string out =
      "# HELP mailpit_tag_messages Number of messages per tag\n"
      "# TYPE mailpit_tag_messages gauge\n";
  auto sorted = counts;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [tag, n] : sorted) {
    out += "mailpit_tag_messages{tag=\"";
    for (char ch : tag) {  // the exposition format's label escapes
      if (ch == '\\' || ch == '"')
        out += '\\', out += ch;
      else if (ch == '\n')
        out += "\\n";
      else
        out += ch;
    }
    out += "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

awaitable<std::pair<std::error_code, std::vector<std::pair<std::string, std::size_t>>>>
tag_counts(const ctx_t& c) {
  std::vector<std::pair<std::string, std::size_t>> out;
  auto [ec, tags] = co_await c.store.async_list_tags();
  if (ec) co_return std::make_pair(ec, std::move(out));
  for (const auto& t : tags) {  // each a count of the messages with the tag
    store::list_request lr(0, 0);
    std::string q = "tag:\"" + t + "\"";
    if (store::search::parse(q, {}, lr.query)) continue;
    auto [lec, p] = co_await c.store.async_list(std::move(lr));
    if (lec) co_return std::make_pair(lec, std::move(out));
    out.emplace_back(t, p.matched);
  }
  co_return std::make_pair(std::error_code{}, std::move(out));
}

awaitable<response> app_info(const ctx_t& c, const request& req) {
  auto [ec, counts] = co_await tag_counts(c);
  if (ec) co_return store_error(req, ec);
  json::object per_tag;
  for (auto& [t, n] : counts) per_tag.emplace(t, n);
  const auto st = c.store.stats();
  const app_counters app = c.cfg.app_counters ? c.cfg.app_counters() : app_counters{};
  const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - c.started);
  json::object o{
      {"Version", c.cfg.version},
      {"LatestVersion", ""},
      {"Database", c.cfg.database},
      {"DatabaseSize", st.bytes},
      {"Messages", st.messages},
      {"Unread", st.unread},
      {"Tags", std::move(per_tag)},
      {"RuntimeStats", json::object{{"Memory", resident_bytes()},
                                    {"MessagesDeleted", st.deleted_total},
                                    {"SMTPAccepted", app.smtp_accepted},
                                    {"SMTPAcceptedSize", app.smtp_accepted_bytes},
                                    {"SMTPIgnored", app.smtp_ignored},
                                    {"SMTPRejected", app.smtp_rejected},
                                    {"Uptime", static_cast<std::uint64_t>(uptime.count())}}},
  };
  co_return json_response(req, o);
}

response webui_config(const ctx_t& c, const request& req) {
  const auto& r = c.cfg.relay;
  json::object relay{
      {"Enabled", r.has_value()},
      {"SMTPServer", r ? r->host + ":" + std::to_string(r->port) : std::string{}},
      {"AllowedRecipients", r ? r->allowed_recipients : std::string{}},
      {"BlockedRecipients", r ? r->blocked_recipients : std::string{}},
      {"ReturnPath", r ? r->return_path : std::string{}},
      {"OverrideFrom", ""},
      {"PreserveMessageIDs", r ? r->preserve_message_ids : false},
  };
  json::object o{
      {"Label", js(c.cfg.label)},   {"MessageRelay", std::move(relay)},
      {"SpamAssassin", !c.cfg.spam_check.spamassassin.empty()},
      {"Rspamd", !c.cfg.spam_check.rspamd.empty()},
      {"ChaosEnabled", c.cfg.chaos != nullptr},
      {"DuplicatesIgnored", c.cfg.duplicates_ignored},
      {"HideDeleteAllButton", c.cfg.hide_delete_all_button},
  };
  return json_response(req, o);
}

// ---- chaos ----

namespace {

using inlet::smtp::chaos_state;
using inlet::smtp::chaos_trigger;
using inlet::smtp::chaos_triggers;

json::object trigger_json(const chaos_trigger& t) {
  return json::object{{"ErrorCode", t.error_code}, {"Probability", t.probability}};
}

json::object triggers_json(const chaos_triggers& t) {
  return json::object{{"Sender", trigger_json(t.sender)},
                      {"Recipient", trigger_json(t.recipient)},
                      {"Authentication", trigger_json(t.authentication)}};
}

bool read_trigger(const json::value* v, chaos_trigger& out) {
  out = chaos_trigger{};  // omitted: back to the default (off)
  if (!v || v->is_null()) return true;
  std::vector<const json::value*> m;
  if (!body_members(*v, {"ErrorCode", "Probability"}, m)) return false;
  auto number = [](const json::value* n, unsigned& dst) {
    if (!n) return true;
    if (n->is_int64() && n->get_int64() >= 0)
      dst = static_cast<unsigned>(std::min<std::int64_t>(n->get_int64(), 100000));
    else if (n->is_uint64())
      dst = static_cast<unsigned>(std::min<std::uint64_t>(n->get_uint64(), 100000));
    else
      return false;
    return true;
  };
  return number(m[0], out.error_code) && number(m[1], out.probability) && chaos_state::valid(out);
}

}  // namespace

response chaos_get(const ctx_t& c, const request& req) {
  if (!c.cfg.chaos) return error_response(req, 400, "Chaos is not enabled");
  return json_response(req, triggers_json(c.cfg.chaos->get()));
}

response chaos_set(const ctx_t& c, const request& req) {
  if (!c.cfg.chaos) return error_response(req, 400, "Chaos is not enabled");
  std::error_code ec;
  json::value v =
      json::parse(blank(req.body()) ? std::string_view("{}") : std::string_view(req.body()), ec);
  std::vector<const json::value*> m;
  chaos_triggers t;
  if (ec || !body_members(v, {"Sender", "Recipient", "Authentication"}, m) ||
      !read_trigger(m[0], t.sender) || !read_trigger(m[1], t.recipient) ||
      !read_trigger(m[2], t.authentication))
    return error_response(
        req, 400,
        "body must be {\"Sender\"|\"Recipient\"|\"Authentication\": {\"ErrorCode\": 400-599, "
        "\"Probability\": 0-100}}");
  c.cfg.chaos->set(t);
  return json_response(req, triggers_json(t));
}

// ---- send ----

namespace {

// The user of a basic Authorization header (the Send API's "Username").
std::string basic_user(const request& req) {
  auto h = req[bh::field::authorization];
  if (h.size() < 7 || !iequals(h.substr(0, 6), "basic ")) return {};
  std::string_view b64 = h.substr(6);
  std::string out(b64.size() / 4 * 3 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()),
                          static_cast<int>(b64.size()));
  if (n < 0) return {};
  out.resize(static_cast<std::size_t>(n));
  auto colon = out.find(':');
  return colon == std::string::npos ? std::string{} : out.substr(0, colon);
}

}  // namespace

awaitable<response> send_message(const ctx_t& c, const request& req) {
  if (!c.cfg.submit) co_return json_error_response(req, 400, "sending is not enabled");
  std::error_code ec;
  json::value v = json::parse(req.body(), ec);
  if (ec) co_return json_error_response(req, 400, "the body is not JSON");
  composed_message msg;
  std::string why;
  if (!compose_message(v, std::chrono::system_clock::now(), "inlet", msg, why))
    co_return json_error_response(req, 400, why);
  submission sub;
  sub.envelope.helo = "localhost";
  sub.envelope.mail_from = msg.mail_from;
  sub.envelope.rcpt_to.assign(msg.rcpt_to.begin(), msg.rcpt_to.end());
  sub.envelope.protocol = "HTTP";
  if (c.cfg.ui_auth || c.cfg.send_auth) sub.envelope.auth_user = basic_user(req);
  sub.raw = std::move(msg.raw);
  sub.tags = store::clean_tags(msg.tags);
  auto token = asio::as_tuple(asio::use_awaitable);
  auto [sec, id] =
      co_await asio::async_initiate<decltype(token), void(std::error_code, std::string)>(
          [&c](auto handler, submission s) {
            // The hook takes a copyable std::function; the handler is move-only.
            auto h = std::make_shared<decltype(handler)>(std::move(handler));
            c.cfg.submit(std::move(s), [h](std::error_code e, std::string new_id) {
              auto ex = asio::get_associated_executor(*h);
              asio::dispatch(ex, [h, e, new_id = std::move(new_id)]() mutable {
                std::move (*h)(e, std::move(new_id));
              });
            });
          },
          token, std::move(sub));
  if (sec) co_return json_error_response(req, 400, "not stored: " + sec.message());
  json::object o{{"ID", id}};
  co_return json_response(req, o);
}

// ---- release ----

namespace {

struct posix_regex {
  regex_t re{};
  bool ready = false;
  bool compile(const std::string& pattern) {
    ready = ::regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_ICASE | REG_NOSUB) == 0;
    return ready;
  }
  bool search(const std::string& s) const { return ::regexec(&re, s.c_str(), 0, nullptr, 0) == 0; }
  posix_regex() = default;
  posix_regex(const posix_regex&) = delete;
  posix_regex& operator=(const posix_regex&) = delete;
  ~posix_regex() {
    if (ready) ::regfree(&re);
  }
};

}  // namespace

awaitable<response> release_message(const ctx_t& c, const request& req, std::string id) {
  if (!c.cfg.relay) co_return error_response(req, 400, "SMTP relay is not configured");
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  std::error_code ec;
  json::value v = json::parse(req.body(), ec);
  std::vector<const json::value*> mem;
  std::vector<std::string> to;
  if (ec || !body_members(v, {"To"}, mem) || !string_array(mem[0], to) || to.empty())
    co_return error_response(req, 400, "body must be {\"To\": [\"address\", ...]}");
  const relay_config& rc = *c.cfg.relay;
  // POSIX extended regular expressions: Mailpit's (Go) patterns such as '@example\.com$'
  // read the same.
  posix_regex allowed, blocked;
  if ((!rc.allowed_recipients.empty() && !allowed.compile(rc.allowed_recipients)) ||
      (!rc.blocked_recipients.empty() && !blocked.compile(rc.blocked_recipients)))
    co_return error_response(req, 400, "the relay's recipient pattern does not compile");
  for (const auto& addr : to) {
    auto at = addr.find('@');
    if (at == std::string::npos || at == 0 || at + 1 == addr.size() ||
        addr.find_first_of(" <>\r\n,;\"") != std::string::npos)
      co_return error_response(req, 400, "invalid address \"" + addr + "\"");
    if (allowed.ready && !allowed.search(addr))
      co_return error_response(req, 400, "relaying to \"" + addr + "\" is not allowed");
    if (blocked.ready && blocked.search(addr))
      co_return error_response(req, 400, "relaying to \"" + addr + "\" is blocked");
  }
  std::string from = !rc.return_path.empty()          ? rc.return_path
                     : !m->envelope.mail_from.empty() ? m->envelope.mail_from
                                                      : m->summary.from.address;
  std::string raw = outbound::prepare_release(m->raw, rc, store::make_message_id().str() + "@inlet");
  auto job = [rc, from = std::move(from), to = std::move(to), raw = std::move(raw)]() {
    return outbound::send_mail(rc, from, to, raw);
  };
  std::string problem = co_await offload(c, std::move(job));
  if (!problem.empty()) co_return error_response(req, 400, problem);
  co_return ok_response(req);
}

// ---- checks ----

awaitable<response> link_check(const ctx_t& c, const request& req, const target& t,
                               std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  std::vector<std::string> links;
  {
    const message_view mv(m->raw);
    links = extract_links(mv.html(), mv.text(), c.cfg.link_check.max_links);
  }
  std::string f;
  const bool follow =
      query_param(t.query, "follow", f) == param::found && (f == "true" || f == "1");
  auto job = [links = std::move(links), follow, cfg = c.cfg.link_check]() {
    return check_links(links, follow, cfg);
  };
  std::vector<link_status> results = co_await offload(c, std::move(job));
  json::array arr;
  std::size_t errors = 0;
  for (const auto& r : results) {
    if (r.status_code == 0 || r.status_code >= 400) ++errors;
    arr.push_back(
        json::object{{"URL", js(r.url)}, {"StatusCode", r.status_code}, {"Status", js(r.status)}});
  }
  json::object o{{"Errors", errors}, {"Links", std::move(arr)}};
  co_return json_response(req, o);
}

awaitable<response> html_check(const ctx_t& c, const request& req, std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  std::string html;
  {
    const message_view mv(m->raw);
    if (!mv.has_html()) co_return error_response(req, 400, "message does not contain HTML");
    html = mv.html();
  }
  auto job = [html = std::move(html)]() { return html_check_json(html); };
  std::optional<std::string> body = co_await offload(c, std::move(job));
  if (!body)
    co_return error_response(
        req, 400,
        "the HTML check needs caniemail's data: run scripts/fetch-caniemail.sh and rebuild");
  co_return make_response(req, 200, "application/json", std::move(*body));
}

awaitable<response> sa_check(const ctx_t& c, const request& req, std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  // Mailpit's answer when no SpamAssassin is configured.
  if (c.cfg.spam_check.spamassassin.empty())
    co_return error_response(req, 400, "no SpamAssassin service defined");
  auto job = [cfg = c.cfg.spam_check, m]() {
    return spamassassin_json(spamassassin_check(cfg, m->raw));
  };
  std::string body = co_await offload(c, std::move(job));
  co_return make_response(req, 200, "application/json", std::move(body));
}

awaitable<response> rspamd_check(const ctx_t& c, const request& req, std::string id) {
  std::optional<response> fail;
  auto m = co_await fetch_message(c, req, std::move(id), fail);
  if (!m) co_return std::move(*fail);
  if (c.cfg.spam_check.rspamd.empty())
    co_return error_response(req, 400, "no Rspamd service defined");
  auto job = [cfg = c.cfg.spam_check, m]() {
    return rspamd_json(rspamd_check(cfg, m->raw));
  };
  std::string body = co_await offload(c, std::move(job));
  co_return make_response(req, 200, "application/json", std::move(body));
}

}  // namespace inlet::http::detail
