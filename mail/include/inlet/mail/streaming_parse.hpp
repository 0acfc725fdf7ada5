// inletd --parse streaming: the MIME parse runs while the body arrives. The SMTP
// driver feeds every body piece to a parse_observer (an inlet::smtp::body_observer
// holding an incremental inlet::mime::parser), finishes it at the end of the data,
// and hands it to the deliver hook with the message, which then does not parse again.
//
// Design: one observer per message being received, not per connection, taken from a
// per-thread pool and given back by dispose(). A parser keeps the capacity of its
// tables across reset(), so a warm pool parses with no heap allocation, and an idle
// connection holds no parser (the SMTP drivers keep nothing on idle connections; see
// docs/buffer.md, "Idle connections"). The pool of a thread holds at most
// `pool_limit` observers: about as many as there are messages in flight on it. An
// observer disposed on another thread than the one that made it (a heavy message
// analyzed on a worker) is deleted, not pooled there.
//
// Views: the parse result points into the body pieces it was fed, which are the
// received_message's body fragments: read it before the body is dropped or flattened
// (pipeline.cpp analyzes first, then flattens).
//
// Thread-safety: an observer is used by one thread at a time (the connection's I/O
// thread while receiving, then the deliver hook's, which may be a worker's); the
// pool is per thread.
#pragma once

#include <inlet/mime/parser.hpp>
#include <inlet/smtp/message.hpp>

#include <cstddef>
#include <string_view>

namespace inlet::mail {

class parse_observer final : public inlet::smtp::body_observer {
 public:
  static constexpr std::size_t pool_limit = 1024;

  /// An observer from the calling thread's pool (a new one when it is empty).
  static inlet::smtp::body_observer_ptr make();

  void begin() override { parser_.reset(); }
  void data(std::string_view piece) override { parser_.feed(piece); }
  void end() override { parser_.finish(); }
  void abort() noexcept override { parser_.reset(); }  // drops the views
  void dispose() noexcept override;                     // back to this thread's pool

  bool finished() const noexcept { return parser_.finished(); }
  const inlet::mime::parsed_message& message() const noexcept { return parser_.message(); }

  parse_observer() = default;
  ~parse_observer() override = default;

 private:
  struct pool;
  pool* home_ = nullptr;  // the pool of the thread that made it
  inlet::mime::parser parser_;
};

/// The parse made while `m` was received (--parse streaming), or null.
const inlet::mime::parsed_message* streamed_parse(const inlet::smtp::received_message& m) noexcept;

}  // namespace inlet::mail
