// Link check and message release over libcurl (Debian libcurl4-openssl-dev), run on the
// api's thread pool. Every transfer is bounded: http(s) or smtp(s) only, connect and total
// timeouts, no body read for link checks, at most a few redirects when asked.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>

#include "outbound.hpp"

namespace inlet::http::detail {
namespace {

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string_view reason(long code) {
  switch (code) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 410:
      return "Gone";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

// Link checks never read a body: the first byte of one ends the transfer (the status
// line and headers are in by then).
std::size_t discard_body(char*, std::size_t, std::size_t, void*) {
  return 0;
}

CURL* new_link_handle(const std::string& url, bool head, bool follow,
                      const link_check_config& cfg) {
  CURL* h = curl_easy_init();
  if (!h) return nullptr;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOBODY, head ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_body);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(cfg.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(cfg.timeout.count()));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "inlet link check");
  curl_easy_setopt(h, CURLOPT_HEADEROPT, CURLHEADER_SEPARATE);
  if (cfg.allow_untrusted_tls) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  return h;
}

bool is_url_char(unsigned char c) {
  return c > 0x20 && c < 0x7f && c != '"' && c != '<' && c != '>' && c != '\'' && c != '`' &&
         c != '{' && c != '}' && c != '|' && c != '\\' && c != '^';
}

void decode_entities(std::string& s) {
  static constexpr std::pair<std::string_view, std::string_view> ents[] = {{"&amp;", "&"},
                                                                           {"&#38;", "&"}};
  for (auto [from, to] : ents)
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
}

}  // namespace

std::vector<std::string> extract_links(std::string_view html, std::string_view text,
                                       std::size_t max) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](std::string url) {
    while (!url.empty() &&
           (url.back() == '.' || url.back() == ',' || url.back() == ')' || url.back() == ';'))
      url.pop_back();
    if (out.size() < max && !url.empty() && seen.insert(url).second) out.push_back(std::move(url));
  };
  auto lower_starts = [](std::string_view s, std::string_view p) {
    if (s.size() < p.size()) return false;
    for (std::size_t i = 0; i < p.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(s[i])) != p[i]) return false;
    return true;
  };
  // HTML: the values of href= and src= attributes that are http(s) URLs.
  for (std::size_t i = 0; i < html.size() && out.size() < max; ++i) {
    std::size_t len = 0;
    if (lower_starts(html.substr(i), "href="))
      len = 5;
    else if (lower_starts(html.substr(i), "src="))
      len = 4;
    if (!len || (i > 0 && std::isalnum(static_cast<unsigned char>(html[i - 1])))) continue;
    std::size_t v = i + len;
    char quote = v < html.size() && (html[v] == '"' || html[v] == '\'') ? html[v] : 0;
    if (quote) ++v;
    std::size_t e = v;
    while (e < html.size() &&
           (quote ? html[e] != quote
                  : !std::isspace(static_cast<unsigned char>(html[e])) && html[e] != '>'))
      ++e;
    std::string url(html.substr(v, e - v));
    decode_entities(url);
    if (lower_starts(url, "http://") || lower_starts(url, "https://")) add(std::move(url));
    i = e;
  }
  // Text: anything that starts like a URL.
  for (std::size_t i = 0; i < text.size() && out.size() < max; ++i) {
    if (!lower_starts(text.substr(i), "http://") && !lower_starts(text.substr(i), "https://"))
      continue;
    std::size_t e = i;
    while (e < text.size() && is_url_char(static_cast<unsigned char>(text[e]))) ++e;
    add(std::string(text.substr(i, e - i)));
    i = e;
  }
  return out;
}

std::vector<link_status> check_links(const std::vector<std::string>& urls, bool follow,
                                     const link_check_config& cfg) {
  init_curl();
  std::vector<link_status> out(urls.size());
  std::vector<bool> tried_get(urls.size(), false);
  CURLM* multi = curl_multi_init();
  if (!multi) return out;
  std::size_t next = 0, running_handles = 0;
  std::vector<CURL*> active;  // attached to `multi`, freed by the end whatever happens
  const std::size_t parallel = std::max<std::size_t>(1, cfg.parallel);
  auto start = [&](std::size_t i, bool head) {
    CURL* h = new_link_handle(urls[i], head, follow, cfg);
    if (!h) {
      out[i].status = "cannot create a request";
      return;
    }
    curl_easy_setopt(h, CURLOPT_PRIVATE, reinterpret_cast<void*>(i));
    curl_multi_add_handle(multi, h);
    active.push_back(h);
    ++running_handles;
  };
  for (std::size_t i = 0; i < urls.size(); ++i) out[i].url = urls[i];
  // Overall bound: every link's own timeout, twice (HEAD then GET), in waves.
  const auto waves = (urls.size() + parallel - 1) / parallel + 1;
  const auto deadline =
      std::chrono::steady_clock::now() + cfg.timeout * 2 * static_cast<long>(waves);
  while ((next < urls.size() || running_handles > 0) &&
         std::chrono::steady_clock::now() < deadline) {
    while (next < urls.size() && running_handles < parallel) start(next++, true);
    int still = 0;
    curl_multi_perform(multi, &still);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* h = msg->easy_handle;
      void* priv = nullptr;
      curl_easy_getinfo(h, CURLINFO_PRIVATE, &priv);
      const auto i = reinterpret_cast<std::size_t>(priv);
      long code = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
      const CURLcode rc = msg->data.result;
      curl_multi_remove_handle(multi, h);
      curl_easy_cleanup(h);
      active.erase(std::find(active.begin(), active.end(), h));
      --running_handles;
      // A server that refuses HEAD (405, 501, or no answer to it) gets a GET.
      if (!tried_get[i] && (code == 405 || code == 501 ||
                            (code == 0 && rc != CURLE_OPERATION_TIMEDOUT &&
                             rc != CURLE_COULDNT_RESOLVE_HOST && rc != CURLE_COULDNT_CONNECT))) {
        tried_get[i] = true;
        start(i, false);
        continue;
      }
      out[i].status_code = static_cast<int>(code);
      if (code > 0) {
        auto r = reason(code);
        out[i].status = r.empty() ? std::to_string(code) : std::string(r);
      } else {
        out[i].status = curl_easy_strerror(rc);
      }
    }
    if (running_handles > 0) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  // Whatever is still running at the deadline is a timeout.
  for (CURL* h : active) {
    curl_multi_remove_handle(multi, h);
    curl_easy_cleanup(h);
  }
  for (auto& r : out)
    if (r.status.empty()) r.status = "timed out";
  curl_multi_cleanup(multi);
  return out;
}

// ---- release ----

namespace {

struct upload {
  const std::string* data;
  std::size_t at = 0;
};

std::size_t read_upload(char* buf, std::size_t size, std::size_t n, void* p) {
  auto* u = static_cast<upload*>(p);
  const std::size_t left = u->data->size() - u->at;
  const std::size_t k = std::min(left, size * n);
  std::memcpy(buf, u->data->data() + u->at, k);
  u->at += k;
  return k;
}

}  // namespace

std::string relay_message(const relay_config& cfg, const std::string& mail_from,
                          const std::vector<std::string>& rcpt, const std::string& raw) {
  init_curl();
  CURL* h = curl_easy_init();
  if (!h) return "cannot create an SMTP transfer";
  const std::string url =
      std::string(cfg.tls ? "smtps://" : "smtp://") + cfg.host + ":" + std::to_string(cfg.port);
  curl_slist* to = nullptr;
  for (const auto& r : rcpt) to = curl_slist_append(to, ("<" + r + ">").c_str());
  const std::string from = "<" + mail_from + ">";
  upload up{&raw};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
  curl_easy_setopt(h, CURLOPT_MAIL_FROM, from.c_str());
  curl_easy_setopt(h, CURLOPT_MAIL_RCPT, to);
  curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(h, CURLOPT_READFUNCTION, read_upload);
  curl_easy_setopt(h, CURLOPT_READDATA, &up);
  curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(raw.size()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT, static_cast<long>(cfg.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
                   static_cast<long>(std::min<long>(cfg.timeout.count(), 10)));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  if (cfg.starttls) curl_easy_setopt(h, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
  if (cfg.allow_insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!cfg.username.empty()) {
    curl_easy_setopt(h, CURLOPT_USERNAME, cfg.username.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, cfg.password.c_str());
    std::string mech = cfg.auth == "plain"      ? "AUTH=PLAIN"
                       : cfg.auth == "login"    ? "AUTH=LOGIN"
                       : cfg.auth == "cram-md5" ? "AUTH=CRAM-MD5"
                                                : "AUTH=*";
    curl_easy_setopt(h, CURLOPT_LOGIN_OPTIONS, mech.c_str());
  }
  char err[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  const CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(to);
  curl_easy_cleanup(h);
  if (rc == CURLE_OK) return {};
  return std::string("relay failed: ") + (err[0] ? err : curl_easy_strerror(rc));
}

std::string prepare_release(std::string_view raw, const relay_config& cfg,
                            std::string_view new_id) {
  // The header block, without the fields we replace (and their folded continuations).
  auto end = raw.find("\r\n\r\n");
  std::size_t body_at = end == std::string_view::npos ? raw.size() : end + 2;
  std::string head;
  bool skipping = false;
  std::size_t i = 0;
  auto drop = [&](std::string_view line) {
    auto colon = line.find(':');
    std::string name(line.substr(0, colon));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return (name == "message-id" && !cfg.preserve_message_ids) ||
           (name == "return-path" && !cfg.return_path.empty());
  };
  while (i < body_at) {
    auto nl = raw.find('\n', i);
    std::size_t e = nl == std::string_view::npos ? body_at : std::min(nl + 1, body_at);
    std::string_view line = raw.substr(i, e - i);
    const bool continuation = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (!continuation) skipping = drop(line);
    if (!skipping) head.append(line);
    i = e;
  }
  std::string out;
  out.reserve(raw.size() + 128);
  if (!cfg.return_path.empty()) out += "Return-Path: <" + cfg.return_path + ">\r\n";
  if (!cfg.preserve_message_ids) out += "Message-ID: <" + std::string(new_id) + ">\r\n";
  out += head;
  out.append(raw.substr(body_at));
  return out;
}

}  // namespace inlet::http::detail

namespace inlet::http {

std::string send_mail(const relay_config& cfg, const std::string& mail_from,
                      const std::vector<std::string>& rcpt, const std::string& raw) {
  return detail::relay_message(cfg, mail_from, rcpt, raw);
}

}  // namespace inlet::http
