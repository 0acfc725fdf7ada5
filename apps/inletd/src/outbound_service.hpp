// inletd's outbound side (inlet::outbound): Mailpit's webhook, auto-relay and forwarding,
// built from the configuration before the ingest pipeline (which hands every stored
// message over through ingest_options::on_stored) and started once the HTTP API exists,
// whose MessageSummary JSON is the webhook's payload.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config.hpp"
#include "inlet/outbound/mail_sender.hpp"
#include "inlet/outbound/webhook.hpp"

namespace inletd {

class outbound_service {
 public:
  explicit outbound_service(const config& cfg);
  ~outbound_service();

  /// Starts sending; `summary` makes the webhook's payload. Call before any server starts.
  void start(std::function<std::string(const inlet::store::stored_message&)> summary);

  /// For ingest_options::on_stored: hands the message over, never waits.
  void on_stored(const inlet::store::message_ptr& m);

  /// Anything to send at all (a webhook, auto-relay or forwarding configured)?
  bool active() const noexcept;

  void append_metrics(std::string& out) const;
  void stop();

  /// Auto-relay's recipients of a message: its envelope's, less the relay's blocked ones,
  /// only those matching --smtp-relay-matching unless --smtp-relay-all.
  static std::vector<std::string> relay_recipients(const config::auto_relay_settings& a,
                                                   const inlet::store::stored_message& m);

 private:
  inlet::outbound::webhook_config webhook_cfg_;
  std::unique_ptr<inlet::outbound::webhook_sender> webhook_;
  std::unique_ptr<inlet::outbound::mail_sender> relay_, forward_;
};

}  // namespace inletd
