// Mailpit's "chaos" triggers: SMTP failures injected on purpose, so an application's
// error handling can be tested. Each trigger (sender at MAIL FROM, recipient at RCPT TO,
// authentication at AUTH) answers with its error code with the given probability.
//
// The HTTP API reads and sets the triggers (GET/PUT /api/v1/chaos); the SMTP server asks
// `smtp_error()` at each of the three commands through its policy hook and, when it
// returns a code, answers the command with it instead of going on. Chaos is off unless
// the application creates a chaos_state (inletd --enable-chaos).
//
// Thread-safety: every member may be called from any thread at once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <memory>

#include "inlet/smtp/server_session.hpp"

namespace inlet::smtp {

enum class chaos_stage : std::uint8_t { sender, recipient, authentication };

struct chaos_trigger {
  unsigned error_code = 451;  ///< 400..599
  unsigned probability = 0;   ///< percent, 0..100; 0 is off
  friend bool operator==(const chaos_trigger&, const chaos_trigger&) = default;
};

struct chaos_triggers {
  chaos_trigger sender, recipient, authentication;
  friend bool operator==(const chaos_triggers&, const chaos_triggers&) = default;
};

class chaos_state {
 public:
  chaos_state() = default;
  explicit chaos_state(chaos_triggers initial) : triggers_(initial) {}

  chaos_triggers get() const;
  void set(const chaos_triggers& t);

  /// Called by the SMTP server at MAIL FROM (sender), RCPT TO (recipient) and AUTH
  /// (authentication): the SMTP reply code to fail the command with, drawn with the
  /// trigger's probability, or nullopt to carry on normally.
  std::optional<unsigned> smtp_error(chaos_stage stage) const;

  /// Parses Mailpit's --chaos-triggers text, e.g. "Sender:451:10,Recipient:550:50"
  /// (stage:code:probability, comma-separated; stages are case-insensitive). Returns
  /// false and says why in `error` on a malformed value.
  static bool parse(std::string_view text, chaos_triggers& out, std::string& error);

  /// Whether a trigger's values are in range (code 400..599, probability 0..100).
  static bool valid(const chaos_trigger& t) noexcept;

 private:
  mutable std::mutex mutex_;
  chaos_triggers triggers_;
};

/// The session's policy hook for chaos: at MAIL, RCPT and AUTH, the code `state` draws
/// (Mailpit's text, "Chaos sender error", with an enhanced code of the same class), or
/// nullopt to carry on.
policy_hook chaos_policy(std::shared_ptr<const chaos_state> state);

}  // namespace inlet::smtp
