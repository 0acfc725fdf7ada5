// The one SMTP client of inletd: message release (POST /api/v1/message/{ID}/release),
// Mailpit's auto-relay and forwarding all send through it. smtp_client is the thin
// blocking driver (a socket with poll, OpenSSL for TLS and STARTTLS) of the sans-io
// smtp_client_session: it moves bytes and bounds every wait by the configured timeout.
//
// Thread-safety: send_mail and prepare_release from any thread; an smtp_client from one
// thread at a time (the outbound senders' worker owns one each).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/outbound/resolve.hpp"

namespace inlet::outbound {

/// An SMTP server to send through (Mailpit's relay configuration, or its forwarding one).
struct smtp_relay_config {
  std::string host;
  std::uint16_t port = 25;
  bool starttls = false;        ///< STARTTLS required
  bool tls = false;             ///< TLS from the start (SMTPS)
  bool allow_insecure = false;  ///< do not verify the server's certificate
  std::string auth = "none";    ///< none (the best offered), plain, login, cram-md5
  std::string username;
  std::string password;
  std::string return_path;         ///< MAIL FROM and Return-Path: of released messages
  std::string allowed_recipients;  ///< ECMAScript regex; empty: any
  std::string blocked_recipients;  ///< ECMAScript regex; empty: none
  bool preserve_message_ids = false;
  std::string override_from;   ///< Mailpit's override-from (auto-relay and forwarding)
  std::string subject_prefix;  ///< Mailpit's subject-prefix (auto-relay and forwarding)
  /// Mailpit's forward-smtp-errors: a recipient the server refuses fails the whole message
  /// (nothing sent). Without it, as in Mailpit, refused recipients are skipped and the
  /// message goes to the others (it fails only when the server takes none).
  bool forward_smtp_errors = false;
  std::chrono::seconds timeout{30};  ///< connect, and every wait for the server after it
  /// A new connection's whole set-up as one bound: resolution, connect, greeting, EHLO,
  /// STARTTLS and AUTH (each wait within it still bounded by `timeout`).
  std::chrono::milliseconds setup_timeout{std::chrono::seconds(60)};
  /// A message's whole transaction (MAIL to the reply after its data): this much, plus its
  /// size at min_data_rate. A server that trickles a byte now and then cannot keep a
  /// sender longer than that.
  std::chrono::milliseconds message_timeout{std::chrono::seconds(60)};
  std::size_t min_data_rate = 500;  ///< bytes a second a body's time is counted at
  lookup_fn lookup;                 ///< name resolution; empty: getaddrinfo (tests hook it)
  /// false: refuse to connect to a loopback, private or link-local address (the address
  /// connected to, after name resolution: Mailpit's --allow-internal-http-requests rule).
  bool allow_internal = true;
};

/// One message of a batch: views of what the caller keeps alive during send_many().
struct mail_item {
  const std::string* mail_from;
  const std::vector<std::string>* rcpt;
  const std::string* raw;
  /// Mailpit's forward-smtp-errors for this message (the client's own config says it too).
  bool all_recipients = false;
};

/// What every smtp_client of the process counted, for /metrics (inlet_outbound_*).
struct client_counters {
  std::uint64_t connections_opened = 0;  ///< connections set up (resolve, connect, ...)
  std::uint64_t connections_reused = 0;  ///< sends over a kept connection
  std::uint64_t resolve_failures = 0;    ///< lookups that failed (timeouts included)
  std::uint64_t timeouts_resolve = 0;    ///< lookups past their bound
  std::uint64_t timeouts_connect = 0;    ///< TCP connects past the relay timeout
  std::uint64_t timeouts_setup = 0;      ///< greeting..AUTH past a wait or the set-up bound
  std::uint64_t timeouts_transaction = 0;  ///< MAIL..data past a wait or the message bound
};
client_counters counters() noexcept;
/// The counters above in Prometheus text (inlet_outbound_connections_total{kind=...}, ...).
void append_client_metrics(std::string& out);

/// One connection to one destination, kept open between messages (the next message starts
/// at MAIL FROM: no new TCP, TLS or AUTH). Messages of a batch are pipelined when the
/// server offers PIPELINING. Messages that had not reached the server when a connection
/// ended (a kept one the server closed while idle, or a server that ends a connection
/// after so many messages) go on over a fresh one, as long as each fresh connection
/// passes at least one message on; nothing else is retried (Mailpit retries nothing).
class smtp_client {
 public:
  explicit smtp_client(smtp_relay_config cfg);
  ~smtp_client();
  smtp_client(const smtp_client&) = delete;
  smtp_client& operator=(const smtp_client&) = delete;

  /// Sends `raw` from `mail_from` to `rcpt`; "" on success, else why not. Blocks; each
  /// wait for the server (connect, a reply, room to write) is bounded by the timeout.
  std::string send(const std::string& mail_from, const std::vector<std::string>& rcpt,
                   const std::string& raw, bool all_recipients = false);
  /// Sends each item in order over the kept connection; per item "" or why not.
  std::vector<std::string> send_many(const std::vector<mail_item>& items);

  const smtp_relay_config& config() const noexcept { return cfg_; }

  /// The server's refusal of the latest send() (first line), e.g. "550 5.1.1 no such
  /// user"; empty when it sent or no reply said why (with forward_smtp_errors the refusal
  /// is the SMTP client's reply).
  const std::string& last_reply() const noexcept { return last_reply_; }

  /// A connection is open and past its set-up (it may still turn out closed at next use).
  bool connected() const noexcept;

  /// Connections opened so far (one per reconnect).
  std::uint64_t connections() const noexcept { return connections_; }

 private:
  struct connection;
  std::vector<std::string> run(const std::vector<mail_item>& items, bool fresh);

  smtp_relay_config cfg_;
  std::string last_reply_;
  std::vector<std::string> last_replies_;
  std::unique_ptr<connection> conn_;
  std::uint64_t connections_ = 0;
};

/// One message through a kept connection of client_pool::shared() (message release): the
/// one the senders to the same destination keep, or a new one kept for the next.
std::string send_mail(const smtp_relay_config& cfg, const std::string& mail_from,
                      const std::vector<std::string>& rcpt, const std::string& raw);

/// The released copy of a message: a new Message-ID (unless preserved), Return-Path set
/// when the relay names one.
std::string prepare_release(std::string_view raw, const smtp_relay_config& cfg,
                            std::string_view new_id);

}  // namespace inlet::outbound
