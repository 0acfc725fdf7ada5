#include "outbound_service.hpp"

namespace inletd {

namespace {

// One message through `server` (Mailpit's override-from and subject prefix applied), by
// the SMTP client message release uses.
std::string send_copy(const inlet::http::relay_config& server, const inlet::store::stored_message& m,
                      const std::vector<std::string>& to) {
  std::string raw = m.raw;
  std::string from = server.return_path.empty() ? m.envelope.mail_from : server.return_path;
  if (!server.override_from.empty()) {
    raw = inlet::outbound::override_from(raw, server.override_from);
    from = server.override_from;
  }
  if (!server.subject_prefix.empty())
    raw = inlet::outbound::prefix_subject(raw, server.subject_prefix, m.summary.subject);
  return inlet::http::send_mail(server, from, to, raw);
}

}  // namespace

std::vector<std::string> outbound_service::relay_recipients(
    const config::auto_relay_settings& a, const inlet::store::stored_message& m) {
  std::vector<std::string> out;
  for (const auto& r : m.envelope.rcpt_to) {
    if (a.blocked_re && std::regex_search(r, *a.blocked_re)) continue;
    if (!a.all && (!a.matching_re || !std::regex_search(r, *a.matching_re))) continue;
    out.push_back(r);
  }
  return out;
}

outbound_service::outbound_service(const config& cfg) : webhook_cfg_(cfg.webhook) {
  if (cfg.auto_relay.all || cfg.auto_relay.matching_re) {
    relay_ = std::make_unique<inlet::outbound::mail_sender>(
        inlet::outbound::mail_sender_config{"relay", 1000},
        [server = cfg.relay, a = cfg.auto_relay](const inlet::store::stored_message& m) {
          return send_copy(server, m, relay_recipients(a, m));
        },
        [a = cfg.auto_relay](const inlet::store::stored_message& m) {
          return !relay_recipients(a, m).empty();
        });
  }
  if (!cfg.forward.host.empty()) {
    forward_ = std::make_unique<inlet::outbound::mail_sender>(
        inlet::outbound::mail_sender_config{"forward", 1000},
        [server = cfg.forward, to = cfg.forward_to](const inlet::store::stored_message& m) {
          return send_copy(server, m, to);
        });
  }
}

outbound_service::~outbound_service() { stop(); }

void outbound_service::start(
    std::function<std::string(const inlet::store::stored_message&)> summary) {
  if (!webhook_cfg_.url.empty())
    webhook_ = std::make_unique<inlet::outbound::webhook_sender>(webhook_cfg_, std::move(summary));
}

bool outbound_service::active() const noexcept {
  return !webhook_cfg_.url.empty() || relay_ || forward_;
}

void outbound_service::on_stored(const inlet::store::message_ptr& m) {
  if (webhook_) webhook_->enqueue(m);
  if (relay_) relay_->enqueue(m);
  if (forward_) forward_->enqueue(m);
}

void outbound_service::append_metrics(std::string& out) const {
  if (webhook_) webhook_->append_metrics(out);
  if (relay_) relay_->append_metrics(out);
  if (forward_) forward_->append_metrics(out);
}

void outbound_service::stop() {
  if (webhook_) webhook_->stop();
  if (relay_) relay_->stop();
  if (forward_) forward_->stop();
}

}  // namespace inletd
