#include "inlet/outbound/mail_sender.hpp"

#include <cstdio>
#include <inlet/util/ascii.hpp>

namespace inlet::outbound {

namespace {

mail_sender::batch_send_fn one_by_one(mail_sender::send_fn send) {
  return [send = std::move(send)](const std::vector<store::message_ptr>& ms) {
    std::vector<std::string> out;
    out.reserve(ms.size());
    for (const auto& m : ms) out.push_back(send(*m));
    return out;
  };
}

}  // namespace

mail_sender::mail_sender(mail_sender_config cfg, send_fn send, wants_fn wants)
    : cfg_(std::move(cfg)), wants_(std::move(wants)), queue_(cfg_.queue_capacity) {
  sends_.assign(cfg_.workers == 0 ? 1 : cfg_.workers, one_by_one(std::move(send)));
  start();
}

mail_sender::mail_sender(mail_sender_config cfg, const std::function<send_fn()>& make_send,
                         wants_fn wants)
    : cfg_(std::move(cfg)), wants_(std::move(wants)), queue_(cfg_.queue_capacity) {
  for (std::size_t i = 0; i < (cfg_.workers == 0 ? 1 : cfg_.workers); ++i)
    sends_.push_back(one_by_one(make_send()));
  start();
}

mail_sender::mail_sender(mail_sender_config cfg,
                         const std::function<batch_send_fn()>& make_batch_send, wants_fn wants)
    : cfg_(std::move(cfg)), wants_(std::move(wants)), queue_(cfg_.queue_capacity) {
  for (std::size_t i = 0; i < (cfg_.workers == 0 ? 1 : cfg_.workers); ++i)
    sends_.push_back(make_batch_send());
  start();
}

void mail_sender::start() {
  for (const auto& send : sends_) workers_.emplace_back([this, &send] { run(send); });
}

mail_sender::~mail_sender() { stop(); }

void mail_sender::enqueue(store::message_ptr m) {
  if (!m) return;
  if (wants_ && !wants_(*m)) return;
  const std::size_t bytes = m->raw.size();
  if (queued_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes > cfg_.queue_bytes ||
      !queue_.try_push(std::move(m))) {
    queued_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void mail_sender::stop() {
  dropped_.fetch_add(queue_.close(), std::memory_order_relaxed);
  for (auto& w : workers_)
    if (w.joinable()) w.join();
}

void mail_sender::append_metrics(std::string& out) const {
  const std::string& n = cfg_.name;
  auto line = [&](const char* what, const char* type, std::uint64_t v) {
    out += "# TYPE inlet_" + n + "_" + what + " " + type + "\ninlet_" + n + "_" + what + " " +
           std::to_string(v) + "\n";
  };
  line("sent_total", "counter", sent_.load());
  line("failed_total", "counter", failed_.load());
  line("dropped_total", "counter", dropped_.load());
  line("queue_depth", "gauge", queue_.size());
}

void mail_sender::run(const batch_send_fn& send) {
  for (;;) {
    auto batch = queue_.pop_some(cfg_.batch);
    if (batch.empty()) return;
    for (const auto& m : batch) queued_bytes_.fetch_sub(m->raw.size(), std::memory_order_relaxed);
    const auto why = send(batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::string no_answer = "no result from the sender";
      const std::string& w = i < why.size() ? why[i] : no_answer;
      if (w.empty()) {
        sent_.fetch_add(1, std::memory_order_relaxed);
      } else {
        failed_.fetch_add(1, std::memory_order_relaxed);
        std::fprintf(stderr, "inletd: %s of %s: %s\n", cfg_.name.c_str(),
                     batch[i]->id.str().c_str(), w.c_str());
      }
    }
  }
}

namespace {

// The header block of `raw`: up to and including the blank line's CRLF (or LF).
std::size_t header_end(std::string_view raw) {
  auto e = raw.find("\r\n\r\n");
  if (e != std::string_view::npos) return e + 2;
  e = raw.find("\n\n");
  return e == std::string_view::npos ? raw.size() : e + 1;
}

bool names(std::string_view line, std::string_view name) {
  return line.size() > name.size() && line[name.size()] == ':' &&
         util::iequals(line.substr(0, name.size()), name);
}

}  // namespace

std::string with_header(std::string_view raw, std::string_view name, std::string_view value) {
  const std::size_t end = header_end(raw);
  std::string out;
  out.reserve(raw.size() + value.size() + name.size() + 4);
  out.append(name).append(": ").append(value).append("\r\n");
  bool skipping = false;
  for (std::size_t i = 0; i < end;) {
    auto nl = raw.find('\n', i);
    const std::size_t e = nl == std::string_view::npos || nl >= end ? end : nl + 1;
    std::string_view line = raw.substr(i, e - i);
    const bool continuation = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (!continuation) skipping = names(line, name);
    if (!skipping) out.append(line);
    i = e;
  }
  out.append(raw.substr(end));
  return out;
}

std::string header_value(std::string_view raw, std::string_view name) {
  const std::size_t end = header_end(raw);
  std::string value;
  bool in = false;
  for (std::size_t i = 0; i < end;) {
    auto nl = raw.find('\n', i);
    const std::size_t e = nl == std::string_view::npos || nl >= end ? end : nl + 1;
    std::string_view line = raw.substr(i, e - i);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    const bool continuation = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (in && continuation) {
      value.append(line);
    } else if (in) {
      break;
    } else if (!continuation && names(line, name)) {
      in = true;
      value.assign(line.substr(name.size() + 1));
    }
    i = e;
  }
  auto b = value.find_first_not_of(" \t");
  return b == std::string::npos ? std::string() : value.substr(b);
}

}  // namespace inlet::outbound

namespace inlet::outbound {

std::string override_from(std::string_view raw, std::string_view address) {
  const std::string old = header_value(raw, "From");
  if (old.empty()) return "From: " + std::string(address) + "\r\n" + std::string(raw);
  std::string original = old, from(address);
  if (auto lt = old.rfind('<'); lt != std::string::npos) {
    auto gt = old.find('>', lt);
    original = old.substr(lt + 1, gt == std::string::npos ? std::string::npos : gt - lt - 1);
    std::string name = old.substr(0, lt);
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) from = name + " <" + std::string(address) + ">";
  }
  return "X-Original-From: " + original + "\r\n" + with_header(raw, "From", from);
}

std::string prefix_subject(std::string_view raw, std::string_view prefix,
                           std::string_view subject) {
  std::string value(prefix);
  if (!subject.empty()) value.append(" ").append(subject);
  bool ascii = true;
  for (unsigned char c : value) ascii = ascii && c >= 0x20 && c < 0x7f;
  if (!ascii) {  // one RFC 2047 Q-encoded word
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string q = "=?utf-8?q?";
    for (unsigned char c : value) {
      if (c == ' ') {
        q += '_';
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '!' || c == '*' || c == '+' || c == '-' || c == '/') {
        q += static_cast<char>(c);
      } else {
        q += '=';
        q += hex[c >> 4];
        q += hex[c & 15];
      }
    }
    value = q + "?=";
  }
  return with_header(raw, "Subject", value);
}

}  // namespace inlet::outbound
