// inletd's outbound side (inlet::outbound): built from the configuration before the ingest
// pipeline (which hands it every stored message through ingest_options::on_stored) and
// started once the HTTP API exists, whose MessageSummary JSON is the webhook's payload.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "inlet/outbound/webhook.hpp"

namespace inletd {

class outbound_service {
 public:
  explicit outbound_service(inlet::outbound::webhook_config webhook);
  ~outbound_service();

  /// Starts sending; `summary` makes the payload. Call before any server starts.
  void start(std::function<std::string(const inlet::store::stored_message&)> summary);

  /// For ingest_options::on_stored: hands the message over, never waits.
  void on_stored(const inlet::store::message_ptr& m);

  void append_metrics(std::string& out) const;
  void stop();

 private:
  inlet::outbound::webhook_config webhook_cfg_;
  std::unique_ptr<inlet::outbound::webhook_sender> webhook_;
};

}  // namespace inletd
