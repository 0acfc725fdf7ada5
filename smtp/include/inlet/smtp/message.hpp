// What a finished SMTP/LMTP transaction hands to the application: the envelope,
// the body, and the asynchronous delivery hook with its result.
#pragma once

#include <array>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <functional>
#include <inlet/buffer/segment.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace inlet::smtp {

/// The body type handed to the delivery hook: the fragments the driver read the
/// message into, shared (reference-counted), not copied. Its spans() are the
/// unstuffed body in order; stuffed dots are simply not part of any span. The
/// segment may be moved to any thread; it keeps its fragments alive until
/// destroyed, so an application that keeps the message long should copy it once
/// (to_string(), or spans() into its own storage) and drop the segment.
using message_body = inlet::buffer::segment;

enum class protocol : std::uint8_t { smtp, esmtp, lmtp };

/// BODY= parameter of MAIL (RFC 1652 / 6152).
enum class body_type : std::uint8_t { unspecified, seven_bit, eight_bit_mime };

std::string_view to_string(protocol p) noexcept;

/// The forward-paths of one transaction. Nearly every message has one recipient: it
/// stays inline (no heap block per message); more spill to the heap like a vector.
using recipient_list = boost::container::small_vector<std::string, 1>;

/// The envelope of one transaction. Plain value type; no views into session input.
struct envelope {
  std::string helo;                    ///< argument of the last EHLO/HELO/LHLO
  std::string mail_from;               ///< reverse-path without <>; empty = null sender
  recipient_list rcpt_to;              ///< accepted forward-paths without <>
  body_type body = body_type::unspecified;
  bool smtputf8 = false;               ///< SMTPUTF8 given on MAIL (RFC 6531)
  std::uint64_t declared_size = 0;     ///< SIZE= of MAIL, 0 if absent
  protocol proto = protocol::smtp;
  bool tls = false;                    ///< transaction ran over STARTTLS
  bool chunked = false;                ///< body came with BDAT (RFC 3030)
  std::string auth_user;               ///< SMTP AUTH user of the session; empty if none
  std::string remote_address;          ///< peer IP as text, set by the driver
  std::uint16_t remote_port = 0;       ///< peer port, set by the driver
};

/// Watches one message body while it is being received, e.g. a streaming parser
/// (server_config::body_observer). The driver creates one from the factory when a
/// body starts and tells it, in this order:
///   begin()        once, before any data (also for an empty body);
///   data(piece)    every body piece in order, after dot-unstuffing: exactly the
///                  bytes appended to received_message::body. A piece stays valid,
///                  at the same address, as long as that body segment (or a segment
///                  sharing its fragments) lives;
///   end()          the body is complete; the observer then travels with the
///                  received_message (received_message::observer) to the deliver hook;
///   abort()        instead of end(): the message was dropped (size or line limit,
///                  RSET between BDAT chunks, connection lost, server stopped).
///                  The pieces may be gone already; the observer is disposed of
///                  right after.
/// Calls come from the connection's I/O thread (or strand), one at a time. The
/// observer is disposed of with dispose() (default: delete), on whichever thread
/// drops the received_message; an application may pool observers there.
class body_observer {
 public:
  virtual void begin() = 0;
  virtual void data(std::string_view piece) = 0;
  virtual void end() = 0;
  virtual void abort() noexcept = 0;
  /// Releases this observer (after end() or abort()). Default: delete this.
  virtual void dispose() noexcept { delete this; }

 protected:
  virtual ~body_observer() = default;
};

struct body_observer_disposer {
  void operator()(body_observer* o) const noexcept { o->dispose(); }
};
using body_observer_ptr = std::unique_ptr<body_observer, body_observer_disposer>;

/// Makes the observer of one message body. Called on the I/O threads (in the
/// process model: in the connection's child), concurrently: must be thread-safe.
/// May return null (this message is not observed).
using body_observer_factory = std::function<body_observer_ptr()>;

struct received_message {
  smtp::envelope envelope;
  message_body body;  ///< exactly the bytes received, after dot-unstuffing (zero-copy)
  /// The observer that watched `body` arrive (end() was called), when the server
  /// has a body_observer factory; null otherwise. It may hold views into `body`:
  /// drop it before (or with) the body.
  body_observer_ptr observer = {};
};

/// One SMTP reply status chosen by the application for a delivery.
struct delivery_status {
  /// Longest queue ID that accepted() keeps inline.
  static constexpr std::size_t max_inline_queue_id = 32;

  int code = 250;                 ///< 250, or 4xx / 5xx
  std::string enhanced = "2.0.0"; ///< RFC 3463 code, e.g. "5.7.1"
  /// Reply text. Empty: "Ok: queued as ID" when queue_id() is set, else "Ok" / "Error".
  std::string text;
  /// Set by accepted() for an ID of up to max_inline_queue_id bytes (a longer one goes
  /// to `text`): the reply is formatted from it, so accepting costs no allocation.
  std::array<char, max_inline_queue_id> queue_id_bytes{};
  std::uint8_t queue_id_size = 0;

  static delivery_status accepted(std::string_view queue_id);
  static delivery_status rejected(int code, std::string_view enhanced, std::string_view text);
  bool ok() const noexcept { return code >= 200 && code < 300; }
  std::string_view queue_id() const noexcept { return {queue_id_bytes.data(), queue_id_size}; }
};

/// The answer of the delivery hook. For SMTP `status` is the one reply after the
/// data. For LMTP one status per accepted recipient, in RCPT order; when
/// `per_recipient` is empty `status` is used for every recipient.
struct delivery_result {
  delivery_status status;
  std::vector<delivery_status> per_recipient;
};

/// Called exactly once per delivery, inline or from any thread. Drivers post the
/// result back to the connection's executor before touching the session.
/// The call must have returned before the server is destroyed (server::wait()
/// does not return while a delivery is unanswered).
using delivery_callback = std::function<void(delivery_result)>;

/// The hook the application provides: take the message, answer later.
using deliver_fn = std::function<void(received_message&&, delivery_callback)>;

}  // namespace inlet::smtp
