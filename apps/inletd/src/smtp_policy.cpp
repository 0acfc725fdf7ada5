#include "smtp_policy.hpp"

#include <memory>
#include <regex>

namespace inletd {

std::string apply_smtp_policy(const options& o, inlet::smtp::session_config& s) {
  if (o.smtp_require_starttls) {
    if (o.tls_cert.empty()) return "--smtp-require-starttls needs --tls-cert and --tls-key";
    s.require_starttls = true;
  }
  s.ignore_rejected_recipients = o.smtp_ignore_rejected_recipients;
  if (o.smtp_allowed_recipients.empty()) return {};
  std::shared_ptr<const std::regex> re;
  try {
    // Mailpit matches anywhere in the address (Go's MatchString), case-sensitive.
    re = std::make_shared<const std::regex>(o.smtp_allowed_recipients, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return "--smtp-allowed-recipients: bad regular expression: " + std::string(e.what());
  }
  // A const std::regex is safe to match from many connection threads at once.
  s.recipient_allowed = [re](std::string_view address) {
    return std::regex_search(address.begin(), address.end(), *re);
  };
  return {};
}

}  // namespace inletd
