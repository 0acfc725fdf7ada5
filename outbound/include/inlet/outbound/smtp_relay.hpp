// The one SMTP client of inletd: message release (POST /api/v1/message/{ID}/release),
// Mailpit's auto-relay and forwarding all send through it (libcurl, Debian
// libcurl4-openssl-dev). Every transfer is bounded: smtp(s) only, connect and total
// timeouts, no proxy.
//
// Thread-safety: send_mail and prepare_release from any thread; an smtp_client from one
// thread at a time (the outbound senders' worker owns one each).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::outbound {

/// An SMTP server to send through (Mailpit's relay configuration, or its forwarding one).
struct smtp_relay_config {
  std::string host;
  std::uint16_t port = 25;
  bool starttls = false;        ///< STARTTLS required
  bool tls = false;             ///< TLS from the start (SMTPS)
  bool allow_insecure = false;  ///< do not verify the server's certificate
  std::string auth = "none";    ///< none, plain, login, cram-md5 (libcurl picks among them)
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
  std::chrono::seconds timeout{30};
};

/// One destination with its connection kept open between messages (libcurl reuses an easy
/// handle's connection: the next message starts at MAIL FROM, no new TCP, TLS or AUTH).
/// A message that fails on a reused connection the server has dropped meanwhile is tried
/// once more on a fresh one.
class smtp_client {
 public:
  explicit smtp_client(smtp_relay_config cfg);
  ~smtp_client();
  smtp_client(const smtp_client&) = delete;
  smtp_client& operator=(const smtp_client&) = delete;

  /// Sends `raw` from `mail_from` to `rcpt`; "" on success, else why not. Blocks up to
  /// the configured timeout (twice when it retries on a fresh connection).
  std::string send(const std::string& mail_from, const std::vector<std::string>& rcpt,
                   const std::string& raw);

  const smtp_relay_config& config() const noexcept { return cfg_; }

  /// The server's first refusal (else its last reply line) of the latest send(), e.g.
  /// "550 5.1.1 no such user"; kept only with forward_smtp_errors (the refusal is then
  /// the SMTP client's reply).
  const std::string& last_reply() const noexcept { return last_reply_; }

 private:
  smtp_relay_config cfg_;
  std::string last_reply_;
  void* handle_ = nullptr;  // CURL*, kept for the connection it holds
  bool connected_ = false;  // a transfer succeeded on handle_ since it was made
};

/// One message through a connection of its own (release: rare, on the API's pool).
std::string send_mail(const smtp_relay_config& cfg, const std::string& mail_from,
                      const std::vector<std::string>& rcpt, const std::string& raw);

/// The released copy of a message: a new Message-ID (unless preserved), Return-Path set
/// when the relay names one.
std::string prepare_release(std::string_view raw, const smtp_relay_config& cfg,
                            std::string_view new_id);

}  // namespace inlet::outbound
