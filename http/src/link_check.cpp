// Link checks over libcurl (Debian libcurl4-openssl-dev), run on the
// api's thread pool. Every transfer is bounded: http(s) only, connect and total
// timeouts, no body read for link checks, at most a few redirects when asked.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <memory>
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

// Refuses a connection to an internal address (see link_check_config::allow_internal),
// noting the address in the link's slot for its status text.
curl_socket_t open_public_socket(void* blocked, curlsocktype, struct curl_sockaddr* a) {
  if (internal_address(&a->addr)) {
    *static_cast<bool*>(blocked) = true;
    return CURL_SOCKET_BAD;
  }
  return ::socket(a->family, a->socktype, a->protocol);
}

CURL* new_link_handle(const std::string& url, bool head, bool follow,
                      const link_check_config& cfg, bool* blocked) {
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
  if (!cfg.allow_internal) {
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_public_socket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, static_cast<void*>(blocked));
  }
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

bool internal_v4(std::uint32_t a) {  // host byte order
  struct range {
    std::uint32_t net;
    int bits;
  };
  // Loopback, private, link-local, multicast, and what RFC 6890 says is not globally
  // reachable (this network, CGNAT, IETF protocol, documentation, benchmarking, 6to4
  // relay, reserved), plus the cloud metadata address Azure uses.
  static constexpr range ranges[] = {
      {0x00000000, 8},  {0x0A000000, 8},  {0x64400000, 10}, {0x7F000000, 8},
      {0xA9FE0000, 16}, {0xAC100000, 12}, {0xC0000000, 24}, {0xC0000200, 24},
      {0xC0586300, 24}, {0xC0A80000, 16}, {0xC6120000, 15}, {0xC6336400, 24},
      {0xCB007100, 24}, {0xE0000000, 4},  {0xF0000000, 4},  {0xA83F8110, 32},
  };
  for (const auto& r : ranges) {
    const std::uint32_t mask = r.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - r.bits);
    if ((a & mask) == r.net) return true;
  }
  return false;
}

std::uint32_t be32(const unsigned char* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

bool internal_v6(const unsigned char* b) {
  auto prefix = [&](std::initializer_list<unsigned char> bytes, int bits) {
    int i = 0;
    for (unsigned char v : bytes) {
      const int take = std::min(8, bits - i * 8);
      if (take <= 0) break;
      const unsigned char mask = static_cast<unsigned char>(0xFF << (8 - take));
      if ((b[i] & mask) != (v & mask)) return false;
      ++i;
    }
    return true;
  };
  bool zero = true;
  for (int i = 0; i < 16; ++i) zero = zero && b[i] == 0;
  if (zero) return true;                                // unspecified
  if ((b[0] & 0xFE) == 0xFC) return true;               // unique local fc00::/7
  if (b[0] == 0xFF) return true;                        // multicast
  if (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) return true;  // link-local fe80::/10
  if (b[0] == 0xFE && (b[1] & 0xC0) == 0xC0) return true;  // site-local fec0::/10
  if (prefix({0x20, 0x01, 0x0D, 0xB8}, 32)) return true;  // documentation
  // Forms that carry an IPv4 address, judged by that address: IPv4-compatible and
  // -mapped (::/96, ::ffff:0:0/96, ::ffff:0:0:0/96 translated), NAT64 (64:ff9b::/96,
  // 64:ff9b:1::/48), 6to4 (2002::/16), Teredo (2001::/32, inverted), ISATAP (::5efe:).
  bool first10_zero = true;
  for (int i = 0; i < 10; ++i) first10_zero = first10_zero && b[i] == 0;
  if (first10_zero && ((b[10] == 0 && b[11] == 0) || (b[10] == 0xFF && b[11] == 0xFF)))
    return internal_v4(be32(b + 12));  // ::1 lands here as 0.0.0.1: "this network"
  bool translated = true;
  for (int i = 0; i < 8; ++i) translated = translated && b[i] == 0;
  if (translated && b[8] == 0xFF && b[9] == 0xFF && b[10] == 0 && b[11] == 0)
    return internal_v4(be32(b + 12));
  if (prefix({0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0}, 96) ||
      prefix({0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01}, 48))
    return internal_v4(be32(b + 12));
  if (prefix({0x20, 0x02}, 16)) return internal_v4(be32(b + 2));
  if (prefix({0x20, 0x01, 0x00, 0x00}, 32)) return internal_v4(~be32(b + 12));
  if (b[10] == 0x5E && b[11] == 0xFE) return internal_v4(be32(b + 12));
  return false;
}

}  // namespace

bool internal_address(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(a);
    return internal_v4(ntohl(v4->sin_addr.s_addr));
  }
  if (a->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a);
    return internal_v6(v6->sin6_addr.s6_addr);
  }
  return true;  // not an internet address: never fetched
}

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
  std::unique_ptr<bool[]> blocked(new bool[urls.size()]());  // refused: internal address
  CURLM* multi = curl_multi_init();
  if (!multi) return out;
  std::size_t next = 0, running_handles = 0;
  std::vector<CURL*> active;  // attached to `multi`, freed by the end whatever happens
  const std::size_t parallel = std::max<std::size_t>(1, cfg.parallel);
  auto start = [&](std::size_t i, bool head) {
    CURL* h = new_link_handle(urls[i], head, follow, cfg, &blocked[i]);
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
      } else if (blocked[i]) {
        out[i].status = "private/reserved address";  // Mailpit's words
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

}  // namespace inlet::http::detail
