#include "inlet/smtp/chaos.hpp"

#include <cctype>
#include <charconv>
#include <random>
#include <vector>

namespace inlet::smtp {

chaos_triggers chaos_state::get() const {
  std::lock_guard lk(mutex_);
  return triggers_;
}

void chaos_state::set(const chaos_triggers& t) {
  std::lock_guard lk(mutex_);
  triggers_ = t;
}

bool chaos_state::valid(const chaos_trigger& t) noexcept {
  return t.error_code >= 400 && t.error_code <= 599 && t.probability <= 100;
}

std::optional<unsigned> chaos_state::smtp_error(chaos_stage stage) const {
  chaos_trigger t;
  {
    std::lock_guard lk(mutex_);
    t = stage == chaos_stage::sender      ? triggers_.sender
        : stage == chaos_stage::recipient ? triggers_.recipient
                                          : triggers_.authentication;
  }
  if (t.probability == 0) return std::nullopt;
  thread_local std::mt19937 gen{std::random_device{}()};
  std::uniform_int_distribution<unsigned> d(1, 100);
  if (d(gen) > t.probability) return std::nullopt;
  return t.error_code;
}

bool chaos_state::parse(std::string_view text, chaos_triggers& out, std::string& error) {
  chaos_triggers t;
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.remove_suffix(1);
    if (item.empty()) continue;
    std::vector<std::string_view> f;
    for (std::size_t at = 0;;) {
      auto colon = item.find(':', at);
      f.push_back(
          item.substr(at, colon == std::string_view::npos ? std::string_view::npos : colon - at));
      if (colon == std::string_view::npos) break;
      at = colon + 1;
    }
    if (f.size() != 3) {
      error = "chaos trigger \"" + std::string(item) + "\" is not stage:code:probability";
      return false;
    }
    std::string stage;
    for (char c : f[0])
      stage.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    chaos_trigger* target = stage == "sender"           ? &t.sender
                            : stage == "recipient"      ? &t.recipient
                            : stage == "authentication" ? &t.authentication
                                                        : nullptr;
    if (!target) {
      error =
          "unknown chaos stage \"" + std::string(f[0]) + "\" (Sender, Recipient, Authentication)";
      return false;
    }
    chaos_trigger v;
    auto num = [](std::string_view s, unsigned& n) {
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      return ec == std::errc{} && p == s.data() + s.size();
    };
    if (!num(f[1], v.error_code) || !num(f[2], v.probability) || !valid(v)) {
      error =
          "chaos trigger \"" + std::string(item) + "\": code must be 400-599, probability 0-100";
      return false;
    }
    *target = v;
  }
  out = t;
  return true;
}

policy_hook chaos_policy(std::shared_ptr<const chaos_state> state) {
  return [state = std::move(state)](policy_stage stage,
                                    std::string_view) -> std::optional<delivery_status> {
    chaos_stage c = chaos_stage::authentication;
    const char* what = "authentication";
    if (stage == policy_stage::mail) {
      c = chaos_stage::sender;
      what = "sender";
    } else if (stage == policy_stage::rcpt) {
      c = chaos_stage::recipient;
      what = "recipient";
    }
    auto code = state->smtp_error(c);
    if (!code) return std::nullopt;
    // An enhanced code of the same class, as ENHANCEDSTATUSCODES asks.
    std::string enhanced =
        std::to_string(*code / 100) + (c == chaos_stage::authentication ? ".7.0" : ".1.0");
    return delivery_status::rejected(static_cast<int>(*code), enhanced,
                                     std::string("Chaos ") + what + " error");
  };
}

}  // namespace inlet::smtp
