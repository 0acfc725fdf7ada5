// One in-flight request on a connection: the state the connection's result router needs
// (pipeline position, prepare step, first error, last result) plus virtual hooks the
// typed operation implements. Internal.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "inlet/pg/batch.hpp"
#include "inlet/pg/query.hpp"
#include "inlet/pg/result.hpp"

namespace inlet::pg::detail {

class conn_impl;
struct timer_slot;  // per-request timeout timer (src/connection.cpp)

/// Where a completion is delivered from (request_base::deliver).
enum class completion_from : unsigned char { initiation, own_executor, any_thread };

/// What a request does to its connection's exclusive owner (a transaction): `begin`
/// takes the connection for a new owner (later requests of others wait), `end` gives it
/// back once its Sync has arrived.
enum class lease_action : unsigned char { none, begin, end };

struct request_base;
/// Shared by a request and the handler installed in its cancellation slot. The slot
/// handler runs on whichever thread emits the signal; it only posts to the connection's
/// executor, where `op` is read. `op` is cleared (on that executor) when the request is
/// freed, so a late cancellation finds nothing.
struct cancel_link {
  request_base* op = nullptr;
};

struct request_base {
  request_base* next = nullptr;  // intrusive FIFO of the pipeline
  int refs = 1;                  // queue + pending timer
  int prepare_results = 0;       // leading results that belong to a Parse we sent
  bool finished = false;         // completion delivered (or abandoned)
  bool sent = false;
  std::uint64_t seq = 0;    // send order on its connection (owner of pending statements)
  std::uint64_t owner = 0;  // the transaction (lease) it belongs to, 0 for none
  lease_action lease = lease_action::none;
  bool is_copy = false;  // a copy_request (COPY start), not a statement
  batch* bat = nullptr;  // an explicit batch (its own result routing), else null
  std::string stmt_key;  // cache key when this request prepared a statement
  std::error_code ec;    // first error of this request
  result res;            // last data result, or the error result
  timer_slot* timer = nullptr;
  std::unique_ptr<diagnostics> diag;    // this request's failure detail (made on failure only)
  std::shared_ptr<cancel_link> cancel;  // only when the handler has a cancellation slot

  virtual ~request_base() = default;
  virtual std::string_view sql() const noexcept = 0;
  virtual void bind(param_buffer& pb, std::error_code& e) const = 0;
  /// Called once. `w` says where from: inside the initiating call (the handler must be
  /// posted), from the connection's own executor (the router: a handler on that same
  /// executor runs inline), or from anywhere (close(), cancellation: dispatch).
  virtual void deliver(conn_impl& c, std::error_code e, completion_from w) = 0;
  virtual void destroy() noexcept = 0;
};

}  // namespace inlet::pg::detail
