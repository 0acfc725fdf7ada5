// The interface every message store implements: the bounded memory store, and the
// durable PostgreSQL store (sharded, several inletd in front).
//
// Every operation is asynchronous. A store completes either at once (the memory store,
// which never waits) or later from its own I/O threads (PostgreSQL). Callers use the
// `async_xxx(args..., token)` front ends with any Asio completion token; the default
// token makes `co_await` work (`auto [ec, page] = co_await store.async_list(req);`),
// callbacks and `asio::deferred` work too. A handler always runs on its associated
// executor (dispatched: inline when the store completes on that executor already).
// No operation blocks the calling thread, so the HTTP server can call them from its I/O
// threads, and a slow part of a distributed store (one shard) delays only the requests
// that need it.
//
// Write path: `put` takes a plain callback (the SMTP drivers answer "250" from it, never
// before): it runs exactly once, inline (memory) or from a store thread (PostgreSQL,
// after the transaction holding the message committed on every shard it goes to).
//
// Thread-safety: every member may be called from any thread concurrently.
// Views: results hold `message_ptr`s (shared ownership); they stay valid after the
// message is evicted or deleted.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "inlet/store/error.hpp"
#include "inlet/store/search.hpp"
#include "inlet/store/types.hpp"

namespace inlet::store {

namespace asio = boost::asio;

/// Completion of put: on success `ec` is empty and `msg` is the stored record.
using put_handler = std::function<void(std::error_code ec, message_ptr msg)>;

/// Told of every change, after it became visible to readers. Runs on a store thread (the
/// writer's, for the memory store); must be quick, must not block and must not call back
/// into the store synchronously.
using event_observer = std::function<void(const store_event&)>;

/// What a listing wants.
///
/// Not an aggregate on purpose: g++ 12 destroys an aggregate-initialised temporary with
/// string members wrongly when it appears inside a `co_await` expression (a crash in
/// the string's destructor), so `co_await s.async_list({})` must construct it through a
/// constructor. Name such requests before the `co_await` in code that g++ 12 builds.
struct list_request {
  list_request() noexcept {}
  list_request(std::size_t start_, std::size_t limit_) noexcept : start(start_), limit(limit_) {}

  std::string mailbox;    ///< non-empty: only messages whose envelope recipients include
                          ///< it (compared after normalize_mailbox)
  search::query query;    ///< empty: every message in scope
  std::size_t start = 0;  ///< offset among the matches, newest first
  std::size_t limit = 50;
  /// Non-empty: only messages older than the message with this ID (keyset paging; then
  /// `start` counts from there). An unknown ID gives errc::not_found.
  std::string before_id;
};

/// Which messages an update or a delete acts on. There is no implicit "all": an empty
/// ID list selects nothing; `everything()` must be asked for. Built by its factories
/// (not an aggregate, for the g++ 12 reason given at list_request).
struct selection {
  enum class kind { ids, search, all };
  kind what = kind::ids;
  std::vector<std::string> ids;  ///< kind::ids
  search::query query;           ///< kind::search (within `mailbox` when set)
  std::string mailbox;           ///< kind::search and kind::all: limit to one mailbox

  selection() noexcept {}
  static selection of_ids(std::vector<std::string> v) {
    selection s;
    s.ids = std::move(v);
    return s;
  }
  static selection matching(search::query q, std::string mailbox = {}) {
    selection s;
    s.what = kind::search;
    s.query = std::move(q);
    s.mailbox = std::move(mailbox);
    return s;
  }
  static selection everything(std::string mailbox = {}) {
    selection s;
    s.what = kind::all;
    s.mailbox = std::move(mailbox);
    return s;
  }
};

template <class Signature>
using handler = asio::any_completion_handler<Signature>;

/// The default completion token: `co_await` gives a tuple (error_code first), so an
/// expected outcome such as not_found is a value to test, not an exception.
using default_token = asio::as_tuple_t<asio::use_awaitable_t<>>;

class store {
 public:
  virtual ~store() = default;

  /// Store `msg` (raw moved in); `done` runs exactly once, possibly inline.
  virtual void put(new_message msg, put_handler done) = 0;

  /// void(std::error_code, page): newest first.
  template <class Token = default_token>
  auto async_list(list_request req, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, page)>(
        [this](auto h, list_request r) { do_list(std::move(r), std::move(h)); }, token,
        std::move(req));
  }

  /// void(std::error_code, message_ptr): the whole message, raw bytes loaded;
  /// errc::not_found for an unknown ID. Does not change the read flag.
  template <class Token = default_token>
  auto async_get(std::string id, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, message_ptr)>(
        [this](auto h, std::string i) { do_get(std::move(i), std::move(h)); }, token,
        std::move(id));
  }

  /// void(std::error_code, std::size_t removed)
  template <class Token = default_token>
  auto async_remove(selection which, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this](auto h, selection s) { do_remove(std::move(s), std::move(h)); }, token,
        std::move(which));
  }

  /// void(std::error_code, std::size_t changed): marks the selection read (or unread).
  template <class Token = default_token>
  auto async_set_read(selection which, bool read, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this, read](auto h, selection s) { do_set_read(std::move(s), read, std::move(h)); }, token,
        std::move(which));
  }

  /// void(std::error_code, std::size_t changed): replaces the tags of the selected
  /// messages with `tags` (empty: removes every tag). Tags are kept as given, compared
  /// case-insensitively; duplicates are dropped.
  template <class Token = default_token>
  auto async_set_tags(selection which, std::vector<std::string> tags, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this](auto h, selection s, std::vector<std::string> t) {
          do_set_tags(std::move(s), std::move(t), std::move(h));
        },
        token, std::move(which), std::move(tags));
  }

  /// void(std::error_code, std::vector<std::string>): every tag in use, sorted.
  template <class Token = default_token>
  auto async_list_tags(Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::vector<std::string>)>(
        [this](auto h) { do_list_tags(std::move(h)); }, token);
  }

  /// void(std::error_code, std::size_t changed): renames a tag on every message (merging
  /// into `to` where a message has both).
  template <class Token = default_token>
  auto async_rename_tag(std::string from, std::string to, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this](auto h, std::string f, std::string t) {
          do_rename_tag(std::move(f), std::move(t), std::move(h));
        },
        token, std::move(from), std::move(to));
  }

  /// void(std::error_code, std::size_t changed): removes a tag from every message.
  template <class Token = default_token>
  auto async_delete_tag(std::string tag, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this](auto h, std::string t) { do_delete_tag(std::move(t), std::move(h)); }, token,
        std::move(tag));
  }

  /// Cheap, never blocks: counters (see store_stats).
  virtual store_stats stats() const = 0;

  /// Cheap, never blocks: whether the store can take work now.
  virtual store_health health() const = 0;

  /// Cheap, never blocks: whether a message for `mailbox` could be stored now. False while
  /// the part of the store that holds the mailbox is known to be down (a shard), so SMTP
  /// refuses that recipient at RCPT (451 4.3.0) and takes the message for the others;
  /// true when unsure (the put decides).
  virtual bool accepts_mailbox(std::string_view mailbox) const {
    (void)mailbox;
    return true;
  }

  /// Registers an observer of changes; returns a handle for unsubscribe(). A call already
  /// in flight on another thread may still finish after unsubscribe() returns: an
  /// observer must own (or share) whatever state it touches.
  virtual std::uint64_t subscribe(event_observer observer) = 0;
  virtual void unsubscribe(std::uint64_t handle) = 0;

  /// Synchronous put for callers that can wait (tests, tools). For a store that
  /// completes asynchronously this blocks until the handler ran: never call it from a
  /// thread the store needs in order to complete.
  message_ptr put_sync(new_message msg, std::error_code& ec);

 protected:
  virtual void do_list(list_request req, handler<void(std::error_code, page)> h) = 0;
  virtual void do_get(std::string id, handler<void(std::error_code, message_ptr)> h) = 0;
  virtual void do_remove(selection which, handler<void(std::error_code, std::size_t)> h) = 0;
  virtual void do_set_read(selection which, bool read,
                           handler<void(std::error_code, std::size_t)> h) = 0;
  virtual void do_set_tags(selection which, std::vector<std::string> tags,
                           handler<void(std::error_code, std::size_t)> h) = 0;
  virtual void do_list_tags(handler<void(std::error_code, std::vector<std::string>)> h) = 0;
  virtual void do_rename_tag(std::string from, std::string to,
                             handler<void(std::error_code, std::size_t)> h) = 0;
  virtual void do_delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) = 0;
};

/// Normalises a mailbox address for lookups: trims, strips <>, lower-cases ASCII.
std::string normalize_mailbox(std::string_view address);

/// A fresh random ID of id_length base62 characters (2 x 64 random bits from a per-thread
/// generator seeded by std::random_device), held inline.
message_id make_message_id();

}  // namespace inlet::store
