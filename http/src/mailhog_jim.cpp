// MailHog's Jim (/api/v2/jim) over inlet's chaos triggers. Jim's rejection chances become
// the Sender/Recipient/Authentication triggers; the settings inlet cannot act on
// (disconnect, accept, link speed) are stored and echoed as MailHog would, not applied.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "catchers.hpp"

namespace inlet::http {

namespace {

struct jim_field {
  std::string_view name;
  double jim_settings::*member;
};

// MailHog's field order (monkey.Jim), which its JSON keeps.
constexpr jim_field fields[] = {
    {"DisconnectChance", &jim_settings::disconnect_chance},
    {"AcceptChance", &jim_settings::accept_chance},
    {"LinkSpeedAffect", &jim_settings::link_speed_affect},
    {"LinkSpeedMin", &jim_settings::link_speed_min},
    {"LinkSpeedMax", &jim_settings::link_speed_max},
    {"RejectSenderChance", &jim_settings::reject_sender_chance},
    {"RejectRecipientChance", &jim_settings::reject_recipient_chance},
    {"RejectAuthChance", &jim_settings::reject_auth_chance},
};

// Go's encoding/json matches field names case-insensitively.
const jim_field* find_field(std::string_view name) {
  for (const auto& f : fields)
    if (f.name.size() == name.size() &&
        std::equal(name.begin(), name.end(), f.name.begin(), [](char a, char b) {
          return (a | 0x20) == (b | 0x20);
        }))
      return &f;
  return nullptr;
}

unsigned percent(double chance) {
  if (!(chance > 0)) return 0;
  return static_cast<unsigned>(std::lround(std::min(chance, 1.0) * 100));
}

}  // namespace

std::optional<jim_settings> jim_state::get() const {
  std::lock_guard lock(mutex_);
  return current_;
}

jim_settings jim_state::last() const {
  std::lock_guard lock(mutex_);
  return last_;
}

void jim_state::set(std::optional<jim_settings> s) {
  std::lock_guard lock(mutex_);
  current_ = s;
  if (s) last_ = *s;
  if (chaos_) chaos_->set(s ? triggers(*s) : inlet::smtp::chaos_triggers{});
}

inlet::smtp::chaos_triggers jim_state::triggers(const jim_settings& s) {
  inlet::smtp::chaos_triggers t;
  // MailHog answers a rejected MAIL or RCPT with 550 and a rejected AUTH with 535.
  t.sender = {550, percent(s.reject_sender_chance)};
  t.recipient = {550, percent(s.reject_recipient_chance)};
  t.authentication = {535, percent(s.reject_auth_chance)};
  return t;
}

bool jim_state::parse(std::string_view text, jim_settings& out, std::string& error) {
  jim_settings s = out;
  for (bool more = !text.empty(); more;) {
    auto comma = text.find(',');
    more = comma != std::string_view::npos;
    auto item = text.substr(0, comma);
    text = more ? text.substr(comma + 1) : std::string_view{};
    auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      error = "expected Name:value, got \"" + std::string(item) + "\"";
      return false;
    }
    const jim_field* f = find_field(item.substr(0, colon));
    if (!f) {
      error = "unknown Jim setting \"" + std::string(item.substr(0, colon)) + "\"";
      return false;
    }
    auto v = item.substr(colon + 1);
    double d = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc{} || p != v.data() + v.size() || !std::isfinite(d)) {
      error = "\"" + std::string(v) + "\" is not a number";
      return false;
    }
    s.*(f->member) = d;
  }
  out = s;
  return true;
}

std::string jim_state::json(const jim_settings& s) {
  std::string out = "{";
  for (const auto& f : fields) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += f.name;
    out += "\":";
    // Shortest round-trip form, as Go's encoding/json writes a float64 (0.005, 1024).
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, s.*(f.member));
    out.append(buf, ec == std::errc{} ? p : buf);
  }
  return out + "}";
}

namespace detail {

namespace {

// A body as MailHog's decoder reads it into a fresh Jim: named numbers set, the rest 0.
std::optional<jim_settings> jim_from_body(std::string_view body) {
  std::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  jim_settings s{0, 0, 0, 0, 0, 0, 0, 0};
  for (const auto& kv : v.as_object()) {
    const jim_field* f = find_field(kv.key());
    if (!f) continue;  // Go ignores unknown fields
    const auto& n = kv.value();
    if (n.is_null()) continue;
    if (!n.is_number()) return std::nullopt;
    s.*(f->member) = n.to_number<double>();
  }
  return s;
}

response jim_reply(const request& req, unsigned status) {
  return make_response(req, status, "text/plain", std::string{});
}

}  // namespace

response mailhog_jim(const ctx_t& c, const request& req) {
  const auto m = req.method();
  if (m != bh::verb::get && m != bh::verb::post && m != bh::verb::put && m != bh::verb::delete_)
    return not_allowed(req, "GET, HEAD, POST, PUT, DELETE");
  if (!c.cfg.jim) {
    if (m == bh::verb::get || m == bh::verb::head) return error_response(req, 404, "not found");
    return error_response(req, 404, "Jim needs chaos: start inletd with --mailhog-api or "
                                    "--enable-chaos");
  }
  auto& jim = *c.cfg.jim;
  auto current = jim.get();
  if (m == bh::verb::get) {
    if (!current) return error_response(req, 404, "not found");
    return make_response(req, 200, "application/json", jim_state::json(*current));
  }
  if (m == bh::verb::delete_) {
    if (!current) return error_response(req, 404, "not found");
    jim.set(std::nullopt);
    return jim_reply(req, 200);
  }
  if (m == bh::verb::post) {
    // MailHog: 400 while Jim is in; an unreadable body invites the last settings.
    if (current) return error_response(req, 400, "Jim is already in");
    jim.set(jim_from_body(req.body()).value_or(jim.last()));
    return jim_reply(req, 201);
  }
  // PUT: 404 while Jim is out, 400 (nothing changed) on an unreadable body.
  if (!current) return error_response(req, 404, "not found");
  auto s = jim_from_body(req.body());
  if (!s) return error_response(req, 400, "body must be Jim's settings as JSON");
  jim.set(*s);
  return jim_reply(req, 200);
}

}  // namespace detail

}  // namespace inlet::http
