#include "outbound_service.hpp"

#include <cctype>
#include <cstdio>
#include <optional>

#include "inlet/outbound/client_pool.hpp"

namespace inletd {

namespace {

// Sender threads per auto-relay or forwarding destination; each takes a kept connection
// from the process's pool for a batch (the pool keeps two idle per destination).
constexpr std::size_t kConnections = 2;
// Messages waiting per destination: a burst of SMTP at several thousand a second outruns
// the relay for a while; the byte bound is what limits memory.
constexpr std::size_t kQueued = 100000;
constexpr std::size_t kQueuedBytes = std::size_t{128} << 20;

// Messages waiting that one sender takes at once: its client pipelines them over one
// connection (the next message's commands ride behind the previous one's data).
constexpr std::size_t kBatch = 32;

// The copy one destination gets: Mailpit's override-from and subject prefix applied; the
// stored bytes as they are (no copy) without them.
struct copy {
  std::string from;
  std::vector<std::string> to;
  const std::string* raw = nullptr;
  std::string changed;  // raw when a header changed
};

void make_copy(const inlet::outbound::smtp_relay_config& server,
               const inlet::store::stored_message& m, std::vector<std::string> to, copy& c) {
  c.from = server.return_path.empty() ? m.envelope.mail_from : server.return_path;
  c.to = std::move(to);
  c.raw = &m.raw;
  if (server.override_from.empty() && server.subject_prefix.empty()) return;
  c.changed = m.raw;
  if (!server.override_from.empty()) {
    c.changed = inlet::outbound::override_from(c.changed, server.override_from);
    c.from = server.override_from;
  }
  if (!server.subject_prefix.empty())
    c.changed = inlet::outbound::prefix_subject(c.changed, server.subject_prefix, m.summary.subject);
  c.raw = &c.changed;
}

// A batch of stored messages to `server`, each to `recipients(m)`, over a kept connection
// of the process's pool (the one message release to the same server uses too).
template <class Recipients>
std::vector<std::string> send_copies(const inlet::outbound::smtp_relay_config& server,
                                     const std::vector<inlet::store::message_ptr>& ms,
                                     const Recipients& recipients) {
  std::vector<copy> copies(ms.size());
  std::vector<inlet::outbound::mail_item> items;
  items.reserve(ms.size());
  for (std::size_t i = 0; i < ms.size(); ++i) {
    make_copy(server, *ms[i], recipients(*ms[i]), copies[i]);
    items.push_back({&copies[i].from, &copies[i].to, copies[i].raw, server.forward_smtp_errors});
  }
  auto client = inlet::outbound::client_pool::shared().acquire(server);
  return client->send_many(items);
}

// The copy for one destination of a message not stored yet (the gate): the bytes as
// received, Mailpit's override-from and subject prefix applied. "" or why not; `reply`
// the server's refusal line when it gave one.
std::string send_received(const inlet::outbound::smtp_relay_config& server,
                          const std::string& raw, const std::string& mail_from,
                          const std::vector<std::string>& to, std::string& reply) {
  std::string from = server.return_path.empty() ? mail_from : server.return_path;
  const std::string* body = &raw;
  std::string copy;
  if (!server.override_from.empty() || !server.subject_prefix.empty()) {
    copy = raw;
    if (!server.override_from.empty()) {
      copy = inlet::outbound::override_from(copy, server.override_from);
      from = server.override_from;
    }
    if (!server.subject_prefix.empty())
      copy = inlet::outbound::prefix_subject(copy, server.subject_prefix,
                                             inlet::outbound::header_value(copy, "Subject"));
    body = &copy;
  }
  auto client = inlet::outbound::client_pool::shared().acquire(server);
  std::string why = client->send(from, to, *body, true);
  reply = client->last_reply();
  return why;
}

}  // namespace

// Mailpit relays and forwards inside the SMTP transaction when forward-smtp-errors is set;
// the gate does it on a thread of its own, so only that client's reply waits, no I/O thread.
class outbound_service::gate {
 public:
  gate(const config& cfg, bool relay, bool forward) : jobs_(1000) {
    if (relay) relay_.server = cfg.relay;
    if (forward) forward_.server = cfg.forward;
    auto_relay_ = cfg.auto_relay;
    forward_to_ = cfg.forward_to;
    worker_ = std::thread([this] {
      while (auto job = jobs_.pop()) (*job)();
    });
  }
  ~gate() { stop(); }

  void stop() {
    // Each queued delivery still gets its answer (the server waits for every one).
    stopping_ = true;
    jobs_.finish();
    if (worker_.joinable()) worker_.join();
  }

  void deliver(inlet::smtp::received_message&& m, inlet::smtp::delivery_callback done,
               const inlet::smtp::deliver_fn& next) {
    auto msg = std::make_shared<inlet::smtp::received_message>(std::move(m));
    auto cb = std::make_shared<inlet::smtp::delivery_callback>(std::move(done));
    bool queued = jobs_.try_push([this, msg, cb, next] { run(*msg, *cb, next); });
    if (!queued) {
      full_.fetch_add(1, std::memory_order_relaxed);
      (*cb)({inlet::smtp::delivery_status::rejected(451, "4.3.5", "Unable to process mail"), {}});
    }
  }

  // The same metric names as the queued senders', for the destinations the gate has.
  void append_metrics(std::string& out) const {
    auto line = [&](const std::string& name, const char* type, std::uint64_t v) {
      out += "# TYPE " + name + " " + type + "\n" + name + " " + std::to_string(v) + "\n";
    };
    for (const auto* d : {&relay_, &forward_}) {
      if (!d->server) continue;
      const std::string n = std::string("inlet_") + d->name;
      line(n + "_sent_total", "counter", d->sent.load());
      line(n + "_failed_total", "counter", d->failed.load());
      line(n + "_dropped_total", "counter", full_.load());  // answered 451: the gate was full
      line(n + "_queue_depth", "gauge", jobs_.size());
    }
  }

 private:
  void run(inlet::smtp::received_message& m, inlet::smtp::delivery_callback& done,
           const inlet::smtp::deliver_fn& next) {
    if (stopping_) {
      done({inlet::smtp::delivery_status::rejected(421, "4.3.0", "Shutting down"), {}});
      return;
    }
    std::string raw(m.body.size(), '\0');
    m.body.copy_to(raw.data(), 0, raw.size());
    std::string reply;
    if (relay_.server) {
      auto to = relay_recipients(auto_relay_, m.envelope.rcpt_to);
      if (!to.empty() &&
          !taken(relay_, send_received(*relay_.server, raw, m.envelope.mail_from, to, reply),
                 reply, done))
        return;
    }
    if (forward_.server &&
        !taken(forward_,
               send_received(*forward_.server, raw, m.envelope.mail_from, forward_to_, reply),
               reply, done))
      return;
    next(std::move(m), std::move(done));
  }

  struct destination {
    const char* name;
    std::optional<inlet::outbound::smtp_relay_config> server;
    std::atomic<std::uint64_t> sent{0}, failed{0};
  };

  // False (and `done` answered) when `why` says the destination did not take the message.
  static bool taken(destination& d, const std::string& why, const std::string& r,
                    inlet::smtp::delivery_callback& done) {
    if (why.empty()) {
      d.sent.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    d.failed.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "inletd: %s: %s (%s)\n", d.name, why.c_str(), r.c_str());
    inlet::smtp::delivery_status st =
        inlet::smtp::delivery_status::rejected(451, "4.3.5", "Unable to process mail");
    if (r.size() >= 4 && (r[0] == '4' || r[0] == '5') && std::isdigit((unsigned char)r[1]) &&
        std::isdigit((unsigned char)r[2]) && (r[3] == ' ' || r[3] == '-')) {
      // The server's own reply, as Mailpit passes it on: code, enhanced code when given.
      std::string_view rest = std::string_view(r).substr(4);
      std::string enhanced;
      if (auto sp = rest.find(' '); sp != std::string_view::npos && sp >= 5 &&
                                    rest[1] == '.' && (rest[0] == '4' || rest[0] == '5')) {
        enhanced = std::string(rest.substr(0, sp));
        rest.remove_prefix(sp + 1);
      } else {
        enhanced = std::string(1, r[0]) + ".0.0";
      }
      st = inlet::smtp::delivery_status::rejected(std::stoi(r.substr(0, 3)), enhanced, rest);
    }
    done({std::move(st), {}});
    return false;
  }

  destination relay_{"relay", {}}, forward_{"forward", {}};
  std::atomic<std::uint64_t> full_{0};
  config::auto_relay_settings auto_relay_;
  std::vector<std::string> forward_to_;
  inlet::outbound::bounded_queue<std::function<void()>> jobs_;
  std::atomic<bool> stopping_{false};
  std::thread worker_;
};

outbound_service::outbound_service(const config& cfg) : webhook_cfg_(cfg.webhook) {
  const bool relay_on = cfg.auto_relay.all || cfg.auto_relay.matching_re;
  const bool gate_relay = relay_on && cfg.relay.forward_smtp_errors;
  const bool gate_forward = !cfg.forward.host.empty() && cfg.forward.forward_smtp_errors;
  if (gate_relay || gate_forward) gate_ = std::make_unique<gate>(cfg, gate_relay, gate_forward);
  if (relay_on && !gate_relay) {
    relay_ = std::make_unique<inlet::outbound::mail_sender>(
        inlet::outbound::mail_sender_config{"relay", kQueued, kQueuedBytes, kConnections,
                                            kBatch},
        [&cfg]() -> inlet::outbound::mail_sender::batch_send_fn {
          return [server = cfg.relay,
                  a = cfg.auto_relay](const std::vector<inlet::store::message_ptr>& ms) {
            return send_copies(server, ms, [&a](const inlet::store::stored_message& m) {
              return relay_recipients(a, m.envelope.rcpt_to);
            });
          };
        },
        [a = cfg.auto_relay](const inlet::store::stored_message& m) {
          return !relay_recipients(a, m.envelope.rcpt_to).empty();
        });
  }
  if (!cfg.forward.host.empty() && !gate_forward) {
    forward_ = std::make_unique<inlet::outbound::mail_sender>(
        inlet::outbound::mail_sender_config{"forward", kQueued, kQueuedBytes, kConnections,
                                            kBatch},
        [&cfg]() -> inlet::outbound::mail_sender::batch_send_fn {
          return [server = cfg.forward,
                  to = cfg.forward_to](const std::vector<inlet::store::message_ptr>& ms) {
            return send_copies(server, ms,
                               [&to](const inlet::store::stored_message&) { return to; });
          };
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
  return !webhook_cfg_.url.empty() || relay_ || forward_ || gate_;
}

void outbound_service::deliver_through(inlet::smtp::received_message&& m,
                                       inlet::smtp::delivery_callback done,
                                       const inlet::smtp::deliver_fn& next) {
  gate_->deliver(std::move(m), std::move(done), next);
}

void outbound_service::on_stored(const inlet::store::message_ptr& m) {
  if (webhook_) webhook_->enqueue(m);
  if (relay_) relay_->enqueue(m);
  if (forward_) forward_->enqueue(m);
}

void outbound_service::append_metrics(std::string& out) const {
  inlet::outbound::append_client_metrics(out);  // release's client counts here too
  if (gate_) gate_->append_metrics(out);
  if (webhook_) webhook_->append_metrics(out);
  if (relay_) relay_->append_metrics(out);
  if (forward_) forward_->append_metrics(out);
}

void outbound_service::stop() {
  if (gate_) gate_->stop();
  if (webhook_) webhook_->stop();
  if (relay_) relay_->stop();
  if (forward_) forward_->stop();
  inlet::outbound::client_pool::shared().close_idle();  // a polite QUIT to each relay
}

}  // namespace inletd
