// inletd's outbound side (inlet::outbound): Mailpit's webhook, auto-relay and forwarding,
// built from the configuration before the ingest pipeline (which hands every stored
// message over through ingest_options::on_stored) and started once the HTTP API exists,
// whose MessageSummary JSON is the webhook's payload.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "config.hpp"
#include "inlet/outbound/mail_sender.hpp"
#include "inlet/outbound/smtp_relay.hpp"
#include "inlet/outbound/webhook.hpp"
#include "inlet/smtp/message.hpp"

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

  /// Mailpit's forward-smtp-errors on auto-relay or forwarding: such a destination gets
  /// the message before it is stored, and its refusal is the SMTP client's reply.
  bool gates_delivery() const noexcept { return gate_ != nullptr; }

  /// With gates_delivery(): sends `m` to the gated destinations on the gate's thread
  /// (never the caller's), then hands it to `next` (the store), or answers `done` with the
  /// relay's refusal ("451 4.3.5 Unable to process mail" when it gave none) as Mailpit
  /// does. A full gate queue answers 451 at once.
  void deliver_through(inlet::smtp::received_message&& m, inlet::smtp::delivery_callback done,
                       const inlet::smtp::deliver_fn& next);

  void append_metrics(std::string& out) const;
  void stop();

  /// Auto-relay's recipients of a message: its envelope's, less the relay's blocked ones,
  /// only those matching --smtp-relay-matching unless --smtp-relay-all.
  template <class Recipients>
  static std::vector<std::string> relay_recipients(const config::auto_relay_settings& a,
                                                   const Recipients& rcpt_to) {
    std::vector<std::string> out;
    for (const auto& r : rcpt_to) {
      if (a.blocked_re && std::regex_search(r, *a.blocked_re)) continue;
      if (!a.all && (!a.matching_re || !std::regex_search(r, *a.matching_re))) continue;
      out.push_back(r);
    }
    return out;
  }

 private:
  class gate;
  std::unique_ptr<gate> gate_;
  inlet::outbound::webhook_config webhook_cfg_;
  std::unique_ptr<inlet::outbound::webhook_sender> webhook_;
  std::unique_ptr<inlet::outbound::mail_sender> relay_, forward_;
};

}  // namespace inletd
