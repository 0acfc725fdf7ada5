#include "inlet/outbound/smtp_relay.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>

namespace inlet::outbound {
namespace {

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

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

// libcurl's debug hook, on only with forward-smtp-errors: keeps the server's refusal
// (libcurl's error text has the code alone).
int keep_reply(CURL*, curl_infotype type, char* data, std::size_t size, void* p) {
  if (type != CURLINFO_HEADER_IN) return 0;
  std::string_view line(data, size);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.size() > 512) line = line.substr(0, 512);  // a reply we pass on stays short
  // The first refusal wins: libcurl may still say QUIT after it (and read "221").
  auto& kept = *static_cast<std::string*>(p);
  if (kept.empty() || (kept[0] != '4' && kept[0] != '5')) kept.assign(line);
  return 0;
}

// The options every transfer of `cfg` shares; set once per handle.
void set_server(CURL* h, const smtp_relay_config& cfg, const std::string& url,
                const std::string& mech) {
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
  curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(h, CURLOPT_READFUNCTION, read_upload);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, static_cast<long>(cfg.timeout.count()));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
                   static_cast<long>(std::min<long>(cfg.timeout.count(), 10)));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  // libcurl's default is forward-smtp-errors; Mailpit's default skips refused recipients.
#if LIBCURL_VERSION_NUM >= 0x080200
  curl_easy_setopt(h, CURLOPT_MAIL_RCPT_ALLOWFAILS, cfg.forward_smtp_errors ? 0L : 1L);
#else
  curl_easy_setopt(h, CURLOPT_MAIL_RCPT_ALLLOWFAILS, cfg.forward_smtp_errors ? 0L : 1L);
#endif
  if (cfg.starttls) curl_easy_setopt(h, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
  if (cfg.allow_insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!cfg.username.empty()) {
    curl_easy_setopt(h, CURLOPT_USERNAME, cfg.username.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, cfg.password.c_str());
    curl_easy_setopt(h, CURLOPT_LOGIN_OPTIONS, mech.c_str());
  }
}

std::string url_of(const smtp_relay_config& cfg) {
  return std::string(cfg.tls ? "smtps://" : "smtp://") + cfg.host + ":" + std::to_string(cfg.port);
}

std::string mech_of(const smtp_relay_config& cfg) {
  return cfg.auth == "plain"      ? "AUTH=PLAIN"
         : cfg.auth == "login"    ? "AUTH=LOGIN"
         : cfg.auth == "cram-md5" ? "AUTH=CRAM-MD5"
                                  : "AUTH=*";
}

// The connection broke under us (a kept one the server closed while idle).
bool connection_lost(CURLcode rc) {
  return rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING ||
         rc == CURLE_WEIRD_SERVER_REPLY;
}

// One transfer on `h`, its server options set already.
CURLcode transfer(CURL* h, const std::string& mail_from, const std::vector<std::string>& rcpt,
                  const std::string& raw, char* err) {
  curl_slist* to = nullptr;
  for (const auto& r : rcpt) to = curl_slist_append(to, ("<" + r + ">").c_str());
  const std::string from = "<" + mail_from + ">";
  upload up{&raw};
  err[0] = 0;
  curl_easy_setopt(h, CURLOPT_MAIL_FROM, from.c_str());
  curl_easy_setopt(h, CURLOPT_MAIL_RCPT, to);
  curl_easy_setopt(h, CURLOPT_READDATA, &up);
  curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(raw.size()));
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  const CURLcode rc = curl_easy_perform(h);
  curl_easy_setopt(h, CURLOPT_MAIL_RCPT, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(to);
  return rc;
}

std::string why(CURLcode rc, const char* err) {
  return std::string("relay failed: ") + (err[0] ? err : curl_easy_strerror(rc));
}

}  // namespace

smtp_client::smtp_client(smtp_relay_config cfg) : cfg_(std::move(cfg)) {}

smtp_client::~smtp_client() {
  if (handle_) curl_easy_cleanup(static_cast<CURL*>(handle_));
}

std::string smtp_client::send(const std::string& mail_from, const std::vector<std::string>& rcpt,
                              const std::string& raw) {
  init_curl();
  if (!handle_) {
    handle_ = curl_easy_init();
    if (!handle_) return "cannot create an SMTP transfer";
    connected_ = false;
  }
  auto* h = static_cast<CURL*>(handle_);
  set_server(h, cfg_, url_of(cfg_), mech_of(cfg_));  // libcurl copies option strings
  last_reply_.clear();
  if (cfg_.forward_smtp_errors) {
    curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, keep_reply);
    curl_easy_setopt(h, CURLOPT_DEBUGDATA, &last_reply_);
    curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
  }
  char err[CURL_ERROR_SIZE] = {0};
  CURLcode rc = transfer(h, mail_from, rcpt, raw, err);
  if (rc != CURLE_OK && connected_ && connection_lost(rc)) {
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    rc = transfer(h, mail_from, rcpt, raw, err);
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 0L);
  }
  if (rc == CURLE_OK) {
    connected_ = true;
    return {};
  }
  // A failed transfer may leave the session in any state: start over next time (the
  // QUIT's reply is not the refusal kept above).
  curl_easy_setopt(h, CURLOPT_VERBOSE, 0L);
  curl_easy_cleanup(h);
  handle_ = nullptr;
  connected_ = false;
  return why(rc, err);
}

std::string send_mail(const smtp_relay_config& cfg, const std::string& mail_from,
                      const std::vector<std::string>& rcpt, const std::string& raw) {
  smtp_client c(cfg);
  return c.send(mail_from, rcpt, raw);
}

std::string prepare_release(std::string_view raw, const smtp_relay_config& cfg,
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

}  // namespace inlet::outbound
