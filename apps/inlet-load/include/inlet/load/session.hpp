#pragma once
// The client side of one SMTP connection as a sans-io state machine. The driver feeds it
// replies and asks it to send messages; it answers with the byte ranges to write (views into
// the envelope and the prepared corpus, never copies) and with events to count.
//
//   connect -> 220 -> EHLO -> 250 [-> STARTTLS -> 220 -> (driver: TLS handshake) -> EHLO -> 250]
//            -> ready --send()--> MAIL/RCPT/DATA (or BDAT) ... 250
//            -> ready (or QUIT after messages_per_connection messages) -> closed
//
// PIPELINING (RFC 2920) sends MAIL+RCPT+DATA in one write, and with CHUNKING (RFC 3030)
// MAIL+RCPT+BDAT+payload in one write. Either is used only if the server advertises it.
// A failed transaction is counted once (first failing code) and followed by RSET.
//
// Thread-safety: none; one session per connection, used by the connection's thread.
// View invalidation: views in an output point into the envelope and the message passed to
// send(); both must outlive the writes (the driver keeps them for the whole run).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/load/message.hpp"
#include "inlet/load/reply.hpp"

namespace inlet::load {

// Command bytes shared by every session of a run; built once. `rcpt` holds one RCPT line
// per recipient (what a pipelined transaction sends at once); `rcpt_lines` views each.
struct envelope {
  static constexpr std::size_t max_recipients = 64;
  envelope(std::string_view helo, std::string_view from, std::string_view to);
  // Precondition: 1 <= to.size() <= max_recipients.
  envelope(std::string_view helo, std::string_view from, const std::vector<std::string>& to);
  envelope(const envelope&) = delete;  // rcpt_lines view into rcpt
  envelope& operator=(const envelope&) = delete;
  std::string ehlo, mail, rcpt, data, mail_rcpt, mail_rcpt_data, rset, quit, starttls;
  std::vector<std::string_view> rcpt_lines;
};

struct session_config {
  bool pipelining = true;
  bool bdat = false;
  bool starttls = false;  // STARTTLS after the first EHLO (RFC 3207); refused = connection fails
  std::uint32_t messages_per_connection = 0;  // 0: keep the connection for the whole run
};

struct session_output {
  enum class event : std::uint8_t {
    none,
    message_ok,       // the 250 after the message data (code in `code`)
    message_failed,   // the transaction failed (first failing code in `code`)
    connect_failed,   // greeting or EHLO refused (code in `code`); close follows
    protocol_error,   // a reply the state machine did not expect; close follows
    closed,           // reply to QUIT received
    start_tls,        // 220 to STARTTLS: the driver runs the handshake, then on_tls_established()
    tls_refused,      // STARTTLS not offered (code 0) or refused (its code); close follows
  };
  std::array<std::string_view, 4> writes{};
  std::uint8_t n_writes = 0;
  bool body_started = false;  // these writes begin the message data: start the clock
  bool close = false;         // close the connection once the writes are done
  event ev = event::none;
  int code = 0;

  void add(std::string_view s) noexcept { writes[n_writes++] = s; }
};

class client_session {
 public:
  client_session(const envelope& env, const session_config& cfg) noexcept
      : env_(&env), cfg_(cfg) {}

  // Start of a new connection (also after a reconnect): expect the greeting.
  void on_connected() noexcept;
  session_output on_reply(const reply& r) noexcept;
  // The TLS handshake after start_tls completed: EHLO again (RFC 3207 4.2: the server
  // forgets what it knew; so does the client, the capabilities are read again).
  session_output on_tls_established() noexcept;

  // May a message be sent now?
  bool ready() const noexcept { return state_ == state::ready; }
  // Precondition: ready(). `env` (default: the session's) gives this message's envelope
  // and must outlive the transaction.
  session_output send(const prepared_message& m, const envelope* env = nullptr) noexcept;
  // Precondition: ready(). Ends the connection politely.
  session_output quit() noexcept;

  bool server_pipelining() const noexcept { return srv_pipelining_; }
  bool server_chunking() const noexcept { return srv_chunking_; }
  std::uint32_t messages_on_connection() const noexcept { return done_on_conn_; }

 private:
  enum class state : std::uint8_t {
    idle, greeting, ehlo, starttls, handshake, ready, in_transaction, rset, quit
  };
  enum class expect : std::uint8_t { mail, rcpt, data, body, bdat };

  void push(expect e) noexcept { pending_[(head_ + count_++) % pending_.size()] = e; }
  expect pop() noexcept {
    const expect e = pending_[head_];
    head_ = (head_ + 1) % pending_.size();
    --count_;
    return e;
  }
  session_output on_transaction_reply(const reply& r) noexcept;
  session_output finish_transaction(int code, bool ok) noexcept;
  void parse_ehlo(std::string_view text) noexcept;

  const envelope* env_;
  const envelope* tx_env_ = nullptr;  // this transaction's
  session_config cfg_;
  const prepared_message* msg_ = nullptr;
  state state_ = state::idle;
  // MAIL, every RCPT, DATA or BDAT, the body.
  std::array<expect, envelope::max_recipients + 3> pending_{};
  std::uint8_t head_ = 0, count_ = 0;
  bool pipelined_ = false, chunked_ = false;  // what this transaction uses
  bool srv_pipelining_ = false, srv_chunking_ = false, srv_starttls_ = false;
  bool tls_ = false;  // this connection runs over TLS (after the handshake)
  int failed_code_ = 0;
  std::size_t rcpt_next_ = 0;  // non-pipelined: RCPT lines sent so far
  std::uint32_t done_on_conn_ = 0;
};

}  // namespace inlet::load
