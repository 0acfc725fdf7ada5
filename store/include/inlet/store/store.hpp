// The interface every message store implements (memory now, PostgreSQL later).
//
// Write path (put) is asynchronous-capable: the completion handler runs exactly once,
// either inline before put() returns (memory store) or later on a backend thread (a
// PostgreSQL store completes when the INSERT is committed). An SMTP driver answers "250"
// from that handler, never before.
//
// Reads and deletes are synchronous. A backend with I/O (PostgreSQL) implements them by
// running the query on its own connection pool and blocking the calling thread until the
// rows are in; callers (the HTTP server) call them from threads that may block, never
// from an SMTP I/O thread.
//
// Thread-safety: every member function may be called from any thread concurrently.
// Views: results are `message_ptr`s (shared ownership); they stay valid after the message
// is evicted or deleted.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "inlet/store/error.hpp"
#include "inlet/store/types.hpp"

namespace inlet::store {

/// Completion of put: on success `ec` is empty and `msg` is the stored record.
using put_handler = std::function<void(std::error_code ec, message_ptr msg)>;

/// Called for every message a store accepted, after it became visible to readers.
/// Runs on the writer's thread; must be quick and must not call back into put().
using new_message_observer = std::function<void(const message_ptr&)>;

class store {
 public:
  virtual ~store() = default;

  /// Store `msg` (raw moved in); `done` runs exactly once, possibly inline.
  virtual void put(new_message msg, put_handler done) = 0;

  /// Newest first; messages [start, start+limit) of the whole store.
  virtual page list(std::size_t start, std::size_t limit) const = 0;

  /// Newest first; the messages whose envelope recipients include `mailbox`
  /// (compared case-insensitively).
  virtual page list_mailbox(std::string_view mailbox, std::size_t start,
                            std::size_t limit) const = 0;

  /// The message, or nullptr when unknown.
  virtual message_ptr get(std::string_view id) const = 0;

  /// Removes those IDs that exist; returns how many were removed.
  virtual std::size_t remove(std::span<const std::string> ids) = 0;

  /// Removes every message; returns how many were removed.
  virtual std::size_t clear() = 0;

  /// Marks the messages with these IDs read (or unread); every message when `ids` is
  /// empty. Returns how many changed state.
  virtual std::size_t set_read(std::span<const std::string> ids, bool read) = 0;

  virtual store_stats stats() const = 0;

  /// Registers an observer of new messages; returns a handle for unsubscribe().
  /// A call already in flight on another thread may still finish after unsubscribe()
  /// returns: an observer must own (or share) whatever state it touches.
  virtual std::uint64_t subscribe(new_message_observer observer) = 0;
  virtual void unsubscribe(std::uint64_t handle) = 0;

  /// Synchronous put for callers that can wait (tests, tools). For a backend that
  /// completes asynchronously this blocks until the handler ran.
  message_ptr put_sync(new_message msg, std::error_code& ec);
};

/// Normalises a mailbox address for lookups: trims, strips <>, lower-cases ASCII.
std::string normalize_mailbox(std::string_view address);

/// A fresh random ID of id_length base62 characters (2 x 64 random bits from a per-thread
/// generator seeded by std::random_device).
std::string make_message_id();

}  // namespace inlet::store
