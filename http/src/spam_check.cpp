// The parts of the spam checks without I/O: spamd's reply, rspamd's JSON, Mailpit's JSON.
#include "spam_check.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>

#include "inlet/util/ascii.hpp"

namespace inlet::http::detail {
namespace {

namespace json = boost::json;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
bool is_word(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

// A rule line of spamd's table, as Mailpit's pattern `^\s?(-?[0-9.]+)\s(\w*)(\W*)(.*)`
// reads it: points, one space, the name, the padding, the description.
bool parse_rule(std::string_view l, spam_rule& out) {
  std::size_t i = 0;
  if (i < l.size() && is_space(l[i])) ++i;
  const std::size_t start = i;
  if (i < l.size() && l[i] == '-') ++i;
  const std::size_t digits = i;
  while (i < l.size() && ((l[i] >= '0' && l[i] <= '9') || l[i] == '.')) ++i;
  if (i == digits || i >= l.size() || !is_space(l[i])) return false;
  const std::string_view points = l.substr(start, i - start);
  ++i;
  const std::size_t name = i;
  while (i < l.size() && is_word(l[i])) ++i;
  out.name.assign(l.substr(name, i - name));
  while (i < l.size() && !is_word(l[i])) ++i;
  out.description.assign(l.substr(i));
  double v = 0;
  out.score = parse_double(points, v) ? round_down_1(v) : 0;
  return true;
}

// Numbers as Go's encoding/json writes a float64: the shortest text that reads back,
// without an exponent between 1e-6 and 1e21.
void put_number(std::string& out, double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  const double a = std::fabs(v);
  const auto fmt = (a == 0 || (a >= 1e-6 && a < 1e21)) ? std::chars_format::fixed
                                                       : std::chars_format::scientific;
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v, fmt);
  out.append(buf, ec == std::errc() ? p : buf);
}

// The services' text is bytes: invalid UTF-8 becomes U+FFFD, as Go's encoder writes it.
void put_string(std::string& out, std::string_view s) {
  const std::string clean = sanitize_utf8(s);
  out += json::serialize(json::string_view(clean.data(), clean.size()));
}

void put_rules(std::string& out, const spam_result& r) {
  out += "\"Rules\":";
  if (!r.has_rules) {
    out += "null";
    return;
  }
  out += '[';
  for (std::size_t i = 0; i < r.rules.size(); ++i) {
    if (i) out += ',';
    out += "{\"Score\":";
    put_number(out, r.rules[i].score);
    out += ",\"Name\":";
    put_string(out, r.rules[i].name);
    out += ",\"Description\":";
    put_string(out, r.rules[i].description);
    out += '}';
  }
  out += ']';
}

}  // namespace

double round_down_1(double v) {
  // A small allowance so a decimal read as slightly under itself (0.3 -> 0.29999...)
  // stays itself; spamd's "-0.0" stays -0, as Mailpit writes it.
  if (v == 0) return v;
  return std::floor(v * 10 + 1e-9) / 10;
}

double round_2(double v) {
  return std::round(v * 100) / 100;
}

// ---- spamd ----

spamd_reply_parser::spamd_reply_parser(std::size_t max_bytes, std::size_t max_rules)
    : max_bytes_(max_bytes), max_rules_(max_rules) {}

void spamd_reply_parser::fail(std::string why) {
  state_ = state::failed;
  error_ = std::move(why);
  partial_.clear();
}

bool spamd_reply_parser::feed(std::string_view bytes) {
  if (state_ == state::failed) return false;
  seen_ += bytes.size();
  if (seen_ > max_bytes_) {
    fail("spamd's reply is longer than " + std::to_string(max_bytes_) + " bytes");
    return false;
  }
  while (!bytes.empty()) {
    const auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(bytes);
      break;
    }
    if (partial_.empty()) {
      line(bytes.substr(0, nl));
    } else {
      partial_.append(bytes.substr(0, nl));
      std::string l = std::move(partial_);
      partial_.clear();
      line(l);
    }
    if (state_ == state::failed) return false;
    bytes.remove_prefix(nl + 1);
  }
  return true;
}

void spamd_reply_parser::finish() {
  if (state_ == state::failed) return;
  if (!partial_.empty()) {
    std::string l = std::move(partial_);
    partial_.clear();
    line(l);
  }
  if (state_ == state::status)
    fail("spamd closed the connection without a reply");
  else if (state_ == state::headers && code_ == 0)
    fail("spamd's reply ended in its headers");
}

void spamd_reply_parser::line(std::string_view l) {
  while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r'))
    l.remove_suffix(1);
  switch (state_) {
    case state::status: {
      // SPAMD/1.1 0 EX_OK
      if (!l.starts_with("SPAMD/")) return fail("unexpected reply from spamd");
      auto sp = l.find(' ');
      if (sp == std::string_view::npos) return fail("unexpected reply from spamd");
      auto rest = l.substr(sp + 1);
      auto sp2 = rest.find(' ');
      auto code = rest.substr(0, sp2);
      int v = 0;
      auto [p, ec] = std::from_chars(code.data(), code.data() + code.size(), v);
      if (ec != std::errc() || p != code.data() + code.size() || code.empty())
        return fail("unexpected reply from spamd");
      code_ = v;
      message_ = sp2 == std::string_view::npos ? std::string{} : std::string(rest.substr(sp2 + 1));
      state_ = state::headers;
      return;
    }
    case state::headers: {
      if (l.empty()) {
        state_ = state::body;
        return;
      }
      const auto colon = l.find(':');
      if (colon == std::string_view::npos) return;  // not a header: ignored, as Mailpit
      if (!util::iequals(l.substr(0, colon), "Spam")) return;
      // Spam: True ; 1003.3 / 5.0
      auto v = l.substr(colon + 1);
      const auto semi = v.find(';');
      const auto slash = v.find('/', semi == std::string_view::npos ? 0 : semi);
      if (semi == std::string_view::npos || slash == std::string_view::npos) return;
      double score = 0, threshold = 0;
      if (!parse_double(v.substr(semi + 1, slash - semi - 1), score)) return;
      has_score_ = true;
      score_ = score;
      if (parse_double(v.substr(slash + 1), threshold)) threshold_ = threshold;
      return;
    }
    case state::body:
      return body_line(l);
    case state::failed:
      return;
  }
}

void spamd_reply_parser::body_line(std::string_view l) {
  if (!in_rules_) {
    in_rules_ = l.starts_with("Content analysis details");
    return;
  }
  // spamd wraps a long description onto lines indented by 28 spaces.
  static constexpr std::string_view indent = "                            ";
  if (last_was_rule_ && l.starts_with(indent)) {
    rules_.back().description += ' ';
    rules_.back().description.append(l.substr(indent.size()));
    return;
  }
  spam_rule r;
  last_was_rule_ = rules_.size() < max_rules_ && parse_rule(l, r);
  if (last_was_rule_) rules_.push_back(std::move(r));
}

spam_result spamd_reply_parser::result() const {
  spam_result r;
  if (state_ == state::failed) {
    r.error = error_;
    return r;
  }
  if (code_ != 0) {
    r.error = "spamd answered " + std::to_string(code_) + (message_.empty() ? "" : " ") + message_;
    return r;
  }
  // Mailpit's verdict: a score of 5.0 or more, whatever spamd's own threshold.
  r.is_spam = score_ >= 5.0;
  r.score = round_down_1(score_);
  r.has_rules = true;
  r.rules = rules_;
  return r;
}

// ---- rspamd ----

spam_result read_rspamd_reply(long status, std::string_view body) {
  spam_result r;
  std::error_code ec;
  json::value v = json::parse(json::string_view(body.data(), body.size()), ec);
  auto number = [](const json::object& o, std::string_view key, double& out) {
    const json::value* x = o.if_contains(key);
    if (!x || x->is_null()) return true;
    if (!x->is_number()) return false;
    out = x->to_number<double>();
    return true;
  };
  auto text = [](const json::object& o, std::string_view key, std::string& out) {
    const json::value* x = o.if_contains(key);
    if (!x || x->is_null()) return true;
    if (!x->is_string()) return false;
    out.assign(x->get_string().begin(), x->get_string().end());
    return true;
  };
  double score = 0, required = 0;
  std::string action, error;
  std::vector<spam_rule> rules;
  bool ok = !ec && v.is_object();
  std::vector<std::pair<std::string, double>> thresholds;
  if (ok) {
    const auto& o = v.get_object();
    ok = number(o, "score", score) && number(o, "required_score", required) &&
         text(o, "action", action) && text(o, "error", error);
    if (const json::value* t = o.if_contains("thresholds"); ok && t && !t->is_null()) {
      ok = t->is_object();
      for (const auto& [k, x] : ok ? t->get_object() : json::object{}) {
        if (!x.is_number()) {
          ok = false;
          break;
        }
        thresholds.emplace_back(std::string(k), x.to_number<double>());
      }
    }
    if (const json::value* s = o.if_contains("symbols"); ok && s && !s->is_null()) {
      ok = s->is_object();
      for (const auto& [k, x] : ok ? s->get_object() : json::object{}) {
        spam_rule rule;
        double rs = 0;
        if (!x.is_object() || !number(x.get_object(), "score", rs) ||
            !text(x.get_object(), "name", rule.name) ||
            !text(x.get_object(), "description", rule.description)) {
          ok = false;
          break;
        }
        if (rule.name.empty()) rule.name = std::string(k);
        rule.score = round_2(rs);
        rules.push_back(std::move(rule));
      }
    }
  }
  if (!ok) {
    r.error = status != 200 ? "Rspamd returned HTTP " + std::to_string(status)
                            : std::string("invalid response from Rspamd");
    return r;
  }
  if (status != 200 || !error.empty()) {
    r.error = !error.empty() ? error : "Rspamd returned HTTP " + std::to_string(status);
    return r;
  }
  r.score = round_2(score);
  r.action = action;
  r.threshold = required;
  // rspamd treats a message as spam from the "add header" action upwards.
  for (std::string_view k : {"add header", "reject"}) {
    auto it = std::find_if(thresholds.begin(), thresholds.end(),
                           [&](const auto& t) { return t.first == k; });
    if (it != thresholds.end() && it->second > 0) {
      r.threshold = it->second;
      break;
    }
  }
  r.threshold = round_2(r.threshold);
  if (action == "reject" || action == "add header" || action == "rewrite subject")
    r.is_spam = true;
  else if (action.empty())
    r.is_spam = r.threshold > 0 && score >= r.threshold;
  // Highest impact first, then by name: a stable order.
  std::sort(rules.begin(), rules.end(), [](const spam_rule& a, const spam_rule& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.name < b.name;
  });
  r.has_rules = true;
  r.rules = std::move(rules);
  return r;
}

// ---- Mailpit's JSON ----

namespace {
// The members both of Mailpit's spam answers begin with: IsSpam, Error, Score.
std::string spam_head(const spam_result& r) {
  std::string out = "{\"IsSpam\":";
  out += r.is_spam ? "true" : "false";
  out += ",\"Error\":";
  put_string(out, r.error);
  out += ",\"Score\":";
  put_number(out, r.score);
  return out;
}
}  // namespace

std::string spamassassin_json(const spam_result& r) {
  std::string out = spam_head(r);
  out += ',';
  put_rules(out, r);
  out += "}\n";
  return out;
}

std::string rspamd_json(const spam_result& r) {
  std::string out = spam_head(r);
  out += ",\"Threshold\":";
  put_number(out, r.threshold);
  out += ",\"Action\":";
  put_string(out, r.action);
  out += ',';
  put_rules(out, r);
  out += "}\n";
  return out;
}

}  // namespace inlet::http::detail

namespace inlet::http {

// ---- --enable-rspamd ----

std::string parse_rspamd_service(std::string_view text, spam_check_config& out) {
  std::string s(detail::trim(text));
  if (!s.starts_with("http://") && !s.starts_with("https://")) s = "http://" + s;
  const auto scheme_end = s.find("://") + 3;
  auto auth_end = s.find_first_of("/?#", scheme_end);
  if (auth_end == std::string::npos) auth_end = s.size();
  std::string authority = s.substr(scheme_end, auth_end - scheme_end);
  std::string rest = s.substr(auth_end);
  std::string password;
  if (const auto at = authority.rfind('@'); at != std::string::npos) {
    std::string user = authority.substr(0, at);
    authority.erase(0, at + 1);
    // rspamd has no user name: "https://:password@host" and "https://password@host".
    const auto colon = user.find(':');
    std::string enc = colon == std::string::npos ? user : user.substr(colon + 1);
    for (std::size_t i = 0; i < enc.size(); ++i) {
      if (enc[i] == '%') {
        int v = 0;
        if (i + 2 >= enc.size()) return "invalid Rspamd address";
        auto [p, ec] = std::from_chars(enc.data() + i + 1, enc.data() + i + 3, v, 16);
        if (ec != std::errc() || p != enc.data() + i + 3) return "invalid Rspamd address";
        password += static_cast<char>(v);
        i += 2;
      } else {
        password += enc[i];
      }
    }
  }
  if (authority.empty() || authority.front() == ':')
    return "invalid Rspamd address: missing host";
  if (authority.find_first_of(" \t\r\n\\") != std::string::npos) return "invalid Rspamd address";
  if (rest.find_first_of("?#") != std::string::npos) rest.erase(rest.find_first_of("?#"));
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  out.rspamd = s.substr(0, scheme_end) + authority + rest;
  out.rspamd_password = std::move(password);
  return {};
}

}  // namespace inlet::http
