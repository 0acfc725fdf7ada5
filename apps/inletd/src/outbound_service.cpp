#include "outbound_service.hpp"

namespace inletd {

outbound_service::outbound_service(inlet::outbound::webhook_config webhook)
    : webhook_cfg_(std::move(webhook)) {}

outbound_service::~outbound_service() { stop(); }

void outbound_service::start(
    std::function<std::string(const inlet::store::stored_message&)> summary) {
  if (!webhook_cfg_.url.empty())
    webhook_ = std::make_unique<inlet::outbound::webhook_sender>(webhook_cfg_, std::move(summary));
}

void outbound_service::on_stored(const inlet::store::message_ptr& m) {
  if (webhook_) webhook_->enqueue(m);
}

void outbound_service::append_metrics(std::string& out) const {
  if (webhook_) webhook_->append_metrics(out);
}

void outbound_service::stop() {
  if (webhook_) webhook_->stop();
}

}  // namespace inletd
