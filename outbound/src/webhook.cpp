#include "inlet/outbound/webhook.hpp"

#include <arpa/inet.h>
#include <curl/curl.h>

#include <cstdio>
#include <cstring>
#include <mutex>

namespace inlet::outbound {
namespace {

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t discard(char*, std::size_t size, std::size_t n, void*) { return size * n; }

bool internal_ip(std::string_view text) {
  std::string s(text);
  unsigned char a[16];
  if (inet_pton(AF_INET, s.c_str(), a) == 1) {
    return a[0] == 127 || a[0] == 10 || a[0] == 0 || (a[0] == 172 && (a[1] & 0xF0) == 16) ||
           (a[0] == 192 && a[1] == 168) || (a[0] == 169 && a[1] == 254) ||
           (a[0] == 100 && (a[1] & 0xC0) == 64);
  }
  if (inet_pton(AF_INET6, s.c_str(), a) == 1) {
    static const unsigned char zero[16] = {};
    const bool loop = std::memcmp(a, zero, 15) == 0 && (a[15] == 1 || a[15] == 0);
    const bool mapped = std::memcmp(a, zero, 10) == 0 && a[10] == 0xFF && a[11] == 0xFF;
    if (mapped) {
      char v4[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, a + 12, v4, sizeof v4);
      return internal_ip(v4);
    }
    return loop || (a[0] & 0xFE) == 0xFC || (a[0] == 0xFE && (a[1] & 0xC0) == 0x80);
  }
  return false;
}

// Runs after the name was resolved and the connection made, before the request: a name
// that resolves to an internal address is refused as a literal one is.
int refuse_internal(void*, char* primary_ip, char*, int, int) {
  return internal_ip(primary_ip) ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

}  // namespace

std::chrono::nanoseconds webhook_interval(int limit) {
  if (limit <= 0) return std::chrono::nanoseconds{0};
  return std::chrono::nanoseconds{1'000'000'000LL / limit};
}

bool is_internal_url(std::string_view url) {
  auto scheme = url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  std::string_view host;
  if (!rest.empty() && rest[0] == '[') {
    host = rest.substr(1, rest.find(']') - 1);
  } else {
    host = rest.substr(0, rest.find(':'));
  }
  std::string lower(host);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "localhost" || lower.ends_with(".localhost") || internal_ip(lower);
}

webhook_sender::webhook_sender(webhook_config cfg, payload_fn payload)
    : cfg_(std::move(cfg)), payload_(std::move(payload)), queue_(cfg_.queue_capacity) {
  init_curl();
  worker_ = std::thread([this] { run(); });
}

webhook_sender::~webhook_sender() { stop(); }

void webhook_sender::enqueue(store::message_ptr m) {
  if (!m || !queue_.try_push(std::move(m))) dropped_.fetch_add(1, std::memory_order_relaxed);
}

void webhook_sender::stop() {
  dropped_.fetch_add(queue_.close(), std::memory_order_relaxed);
  if (worker_.joinable()) worker_.join();
}

void webhook_sender::append_metrics(std::string& out) const {
  char line[512];
  std::snprintf(line, sizeof line,
                "# TYPE inlet_webhook_sent_total counter\ninlet_webhook_sent_total %llu\n"
                "# TYPE inlet_webhook_failed_total counter\ninlet_webhook_failed_total %llu\n"
                "# TYPE inlet_webhook_dropped_total counter\ninlet_webhook_dropped_total %llu\n"
                "# TYPE inlet_webhook_queue_depth gauge\ninlet_webhook_queue_depth %zu\n",
                static_cast<unsigned long long>(sent_.load()),
                static_cast<unsigned long long>(failed_.load()),
                static_cast<unsigned long long>(dropped_.load()), queue_.size());
  out += line;
}

void webhook_sender::run() {
  // One handle for the sender's life: libcurl keeps the connection open between requests.
  CURL* h = curl_easy_init();
  if (!h) return;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!cfg_.label.empty())
    headers = curl_slist_append(headers, ("Mailpit-Label: " + cfg_.label).c_str());
  curl_easy_setopt(h, CURLOPT_URL, cfg_.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_USERAGENT, cfg_.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_TIMEOUT, static_cast<long>(cfg_.timeout.count()));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
  if (!cfg_.allow_internal) curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, refuse_internal);
  char err[CURL_ERROR_SIZE];
  const auto interval = webhook_interval(cfg_.limit);
  auto next = std::chrono::steady_clock::now();
  while (auto m = queue_.pop()) {
    // Waits end early at stop(): the message in hand is dropped like those queued.
    if (queue_.wait_closed_until(std::max(next, std::chrono::steady_clock::now())) ||
        (cfg_.delay.count() > 0 &&
         queue_.wait_closed_until(std::chrono::steady_clock::now() + cfg_.delay))) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    const std::string body = payload_(**m);
    err[0] = 0;
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    CURLcode rc = curl_easy_perform(h);
    // Spaced from the answer, not the start: the receiver then sees every request at
    // least `interval` after the previous one, however late a request was sent.
    next = std::chrono::steady_clock::now() + interval;
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && status < 400) {
      sent_.fetch_add(1, std::memory_order_relaxed);
    } else {
      failed_.fetch_add(1, std::memory_order_relaxed);
      std::fprintf(stderr, "inletd: webhook %s: %s\n", cfg_.url.c_str(),
                   rc != CURLE_OK ? (err[0] ? err : curl_easy_strerror(rc))
                                  : ("HTTP status " + std::to_string(status)).c_str());
    }
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
}

}  // namespace inlet::outbound
