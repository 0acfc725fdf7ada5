// COPY on the connection engine (DESIGN.md, "COPY"): a COPY waits until the request FIFO
// is empty, leaves pipeline mode (libpq has no COPY in pipeline mode), runs, and enters
// pipeline mode again; requests issued meanwhile are held and started afterwards.
//
//   none -> waiting (FIFO not empty) -> starting (COPY sent) -> in | out
//   in   --end/abort--> ending --final result, NULL--> none
//   out  --PQgetCopyData -1--> ending --final result, NULL--> none
//   out  --reader dropped--> draining (cancel sent, data discarded) --> none
//   any  --connection lost--> none (every waiting operation fails)
#include "inlet/pg/copy.hpp"

#include "conn_impl.hpp"

namespace inlet::pg {
namespace detail {

namespace {
std::unique_ptr<diagnostics> client_diag(std::string msg) {
  auto d = std::make_unique<diagnostics>();
  d->client_message = std::move(msg);
  return d;
}
constexpr std::size_t chunk = 64 * 1024;  // PQputCopyData per call
}  // namespace

using mode = copy_state::mode;

void conn_impl::copy_begin(copy_request* r) {
  if (state_ != state::open) {
    finish(r, errc::not_connected, completion_from::initiation);
    release(r);
    return;
  }
  copy_.m = mode::waiting;
  copy_.session = r->session = ++copy_sessions_;
  copy_.start_req = r;
  // Requests before it must be answered first (pipeline mode can only be left idle);
  // posted, so that a start inside the router's loop never reads the COPY's results.
  asio::post(ex_, [self = shared_from_this()] {
    if (!self->head_ && self->copy_.m == mode::waiting) self->copy_send();
  });
}

void conn_impl::copy_send() {
  if (copy_.m != mode::waiting || head_ || state_ != state::open) return;
  auto* r = copy_.start_req;
  uncork();
  if (PQexitPipelineMode(pg_) != 1 ||
      !PQsendQueryParams(pg_, r->text.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0))
    return fail_all(errc::connection_error, PQerrorMessage(pg_));
  copy_.m = mode::starting;
  const int f = PQflush(pg_);
  if (f < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
  if (f == 1) arm_write();
  copy_reading_ = true;
  arm_read();
}

void conn_impl::copy_readable() {
  if (!PQconsumeInput(pg_)) return fail_all(errc::connection_error, PQerrorMessage(pg_));
  switch (copy_.m) {
    case mode::starting: {
      if (PQisBusy(pg_)) return arm_read();
      PGresult* res = PQgetResult(pg_);
      const auto st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
      if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT) {
        PQclear(res);
        copy_.m = st == PGRES_COPY_IN ? mode::in : mode::out;
        copy_reading_ = false;
        auto* r = std::exchange(copy_.start_req, nullptr);
        if (r->out != (st == PGRES_COPY_OUT)) {  // COPY FROM started as a reader or the reverse
          copy_.ec = errc::protocol_error;
          copy_.diag = client_diag(r->out ? "the statement is a COPY FROM STDIN, not TO STDOUT"
                                          : "the statement is a COPY TO STDOUT, not FROM STDIN");
          finish(r, copy_.ec, completion_from::own_executor);
          release(r);
          copy_.diag.reset();
          copy_.ec = {};
          return copy_drop(copy_.session);
        }
        finish(r, {}, completion_from::own_executor);
        release(r);
        return;
      }
      // Not a COPY (an error, or another statement): its outcome, then the end.
      if (res && st == PGRES_FATAL_ERROR && PQresultErrorField(res, PG_DIAG_SQLSTATE)) {
        copy_.ec = make_sqlstate_error(PQresultErrorField(res, PG_DIAG_SQLSTATE));
        copy_.diag = std::make_unique<diagnostics>();
        fill_diag(*copy_.diag, res);
      } else {
        copy_.ec = res && st == PGRES_FATAL_ERROR ? std::error_code(errc::connection_error)
                                                  : std::error_code(errc::protocol_error);
        copy_.diag =
            client_diag(res ? PQresultErrorMessage(res) : "no result for the COPY statement");
      }
      if (res) PQclear(res);
      copy_.m = mode::ending;
      return copy_collect_final();
    }
    case mode::out:
    case mode::draining:
      return copy_service_read();
    case mode::ending:
      return copy_collect_final();
    default:
      return;
  }
}

void conn_impl::copy_writable() {
  if (copy_.m == mode::in && copy_.write_op) return copy_pump_write();
  if (copy_.m == mode::in && copy_.end_op && !copy_.end_sent)
    return copy_end(copy_.session, copy_.end_msg, nullptr);
  const int f = PQflush(pg_);
  if (f < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
  if (f == 1) arm_write();
}

void conn_impl::copy_write(std::uint64_t session, std::string data,
                           std::unique_ptr<erased_handler<std::error_code>> op) {
  if (state_ != state::open) return op->complete(client_diag("not connected"), errc::not_connected);
  if (copy_.m != mode::in || session != copy_.session)
    return op->complete(client_diag("the COPY is over"), errc::copy_closed);
  if (copy_.write_op || copy_.end_op)
    return op->complete(client_diag("another write or the end of this COPY is in progress"),
                        errc::busy);
  copy_.wbuf = std::move(data);
  copy_.woff = 0;
  copy_.write_op = std::move(op);
  copy_pump_write();
}

/// Hands the pending data to libpq in chunks; completes the write once the kernel has
/// it all (PQflush 0), which is what paces the writer.
void conn_impl::copy_pump_write() {
  while (copy_.woff < copy_.wbuf.size()) {
    const std::size_t n = std::min(copy_.wbuf.size() - copy_.woff, chunk);
    const int rc = PQputCopyData(pg_, copy_.wbuf.data() + copy_.woff, static_cast<int>(n));
    if (rc == 1) {
      copy_.woff += n;
      stats_.bytes_sent += n;
      continue;
    }
    if (rc == 0) return arm_write();  // libpq's buffer is full: when the socket drains
    return fail_all(errc::connection_error, PQerrorMessage(pg_));
  }
  const int f = PQflush(pg_);
  if (f < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
  if (f == 1) return arm_write();
  copy_.wbuf.clear();
  auto op = std::move(copy_.write_op);
  op->complete(nullptr, {});
}

void conn_impl::copy_end(std::uint64_t session, std::string abort_msg,
                         std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> op) {
  if (op) {  // a new request (else: a retry after the socket became writable)
    if (state_ != state::open)
      return op->complete(client_diag("not connected"), errc::not_connected, 0);
    if (copy_.m != mode::in || session != copy_.session)
      return op->complete(client_diag("the COPY is over"), errc::copy_closed, 0);
    if (copy_.write_op || copy_.end_op)
      return op->complete(client_diag("a write of this COPY is in progress"), errc::busy, 0);
    copy_.end_op = std::move(op);
    copy_.end_msg = std::move(abort_msg);
  }
  const int rc = PQputCopyEnd(pg_, copy_.end_msg.empty() ? nullptr : copy_.end_msg.c_str());
  if (rc == 0) return arm_write();
  if (rc < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
  copy_.end_sent = true;
  copy_.m = mode::ending;
  const int f = PQflush(pg_);
  if (f < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
  if (f == 1) arm_write();
  copy_collect_final();
}

void conn_impl::copy_read(std::uint64_t session, std::size_t max,
                          std::unique_ptr<erased_handler<std::error_code, std::string, bool>> op) {
  if (state_ != state::open)
    return op->complete(client_diag("not connected"), errc::not_connected, {}, true);
  if (copy_.m != mode::out || session != copy_.session)
    return op->complete(client_diag("the COPY is over"), errc::copy_closed, {}, true);
  if (copy_.read_op)
    return op->complete(client_diag("another read is in progress"), errc::busy, {}, false);
  copy_.read_op = std::move(op);
  copy_.read_max = max;
  copy_service_read();
}

/// Moves rows libpq has into the reader's buffer (or drops them while draining) until
/// the buffer is full, libpq needs more input, or the COPY's data ended.
void conn_impl::copy_service_read() {
  const bool draining = copy_.m == mode::draining;
  if (!draining && !copy_.read_op) return;  // nobody asked: the socket backs up
  for (;;) {
    char* buf = nullptr;
    const int n = PQgetCopyData(pg_, &buf, 1);
    if (n > 0) {
      if (!draining) copy_.rbuf.append(buf, static_cast<std::size_t>(n));
      PQfreemem(buf);
      stats_.bytes_received += static_cast<std::uint64_t>(n);
      if (!draining && copy_.rbuf.size() >= copy_.read_max) break;
      continue;
    }
    if (n == 0) {
      if (!draining && !copy_.rbuf.empty()) break;
      copy_reading_ = true;
      return arm_read();
    }
    if (n == -1) {  // the data ended: the final result follows
      copy_.out_done = true;
      copy_.m = mode::ending;
      return copy_collect_final();
    }
    return fail_all(errc::connection_error, PQerrorMessage(pg_));
  }
  copy_reading_ = false;
  auto op = std::move(copy_.read_op);
  op->complete(nullptr, {}, std::exchange(copy_.rbuf, {}), false);
}

/// The COPY statement's own result(s), then the NULL that ends it.
void conn_impl::copy_collect_final() {
  for (;;) {
    if (PQisBusy(pg_)) {
      copy_reading_ = true;
      return arm_read();
    }
    PGresult* res = PQgetResult(pg_);
    if (!res) return copy_finished();
    const auto st = PQresultStatus(res);
    if (st == PGRES_COMMAND_OK) {
      const char* t = PQcmdTuples(res);
      copy_.rows = t && *t ? std::strtoull(t, nullptr, 10) : 0;
    } else if (st == PGRES_FATAL_ERROR && !copy_.ec) {
      const char* sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
      copy_.ec = sqlstate ? make_sqlstate_error(sqlstate) : std::error_code(errc::connection_error);
      copy_.diag = std::make_unique<diagnostics>();
      if (sqlstate)
        fill_diag(*copy_.diag, res);
      else
        copy_.diag->client_message = PQresultErrorMessage(res);
    } else if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT) {  // cannot happen after the end
      PQclear(res);
      return fail_all(errc::protocol_error, "COPY did not end");
    }
    PQclear(res);
  }
}

void conn_impl::copy_finished() {
  copy_reading_ = false;
  if (PQenterPipelineMode(pg_) != 1) return fail_all(errc::connection_error, PQerrorMessage(pg_));
  copy_state done = std::move(copy_);
  copy_ = copy_state{};
  // An abort the caller asked for is confirmed by the server's 57014: that is success.
  if (!done.end_msg.empty() && done.ec == condition::query_canceled) {
    done.ec = {};
    done.diag.reset();
  }
  if (done.ec) diag_ = done.diag ? *done.diag : diagnostics{};
  if (done.start_req) {
    done.start_req->diag = std::move(done.diag);
    finish(done.start_req, done.ec ? done.ec : std::error_code(errc::protocol_error),
           completion_from::own_executor);
    release(done.start_req);
  } else if (done.end_op) {
    done.end_op->complete(std::move(done.diag), done.ec, done.ec ? 0 : done.rows);
  } else if (done.read_op) {
    done.read_op->complete(std::move(done.diag), done.ec, std::move(done.rbuf), true);
  }
  pump_pending_ = held_head_ != nullptr;
  pump_held();
  arm_read();
}

void conn_impl::copy_drop(std::uint64_t session) {
  if (session != copy_.session || state_ != state::open) return;
  switch (copy_.m) {
    case mode::in:
      if (copy_.end_op) return;  // already ending
      if (copy_.write_op) {
        auto op = std::move(copy_.write_op);
        op->complete(client_diag("the COPY writer was destroyed"), errc::copy_closed);
      }
      copy_.wbuf.clear();
      copy_.end_msg = "the client gave up the COPY";
      copy_.end_op = nullptr;
      {
        const int rc = PQputCopyEnd(pg_, copy_.end_msg.c_str());
        if (rc < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
        if (rc == 0) {  // rare: retried by hand until libpq takes it
          const int f = PQflush(pg_);
          if (f < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
          return copy_drop(session);
        }
      }
      copy_.end_sent = true;
      copy_.m = mode::ending;
      if (PQflush(pg_) == 1) arm_write();
      return copy_collect_final();
    case mode::out:
      if (copy_.read_op) return;  // a read is in flight: it ends first
      send_cancel();              // the server stops sending; what is on the way is dropped
      copy_.m = mode::draining;
      copy_.rbuf.clear();
      return copy_service_read();
    default:
      return;
  }
}

void conn_impl::copy_fail(std::error_code ec, const char* msg) {
  copy_reading_ = false;
  copy_state done = std::move(copy_);
  copy_ = copy_state{};
  const std::string text = msg ? msg : ec.message();
  if (done.start_req) {
    finish(done.start_req, ec, completion_from::any_thread);
    release(done.start_req);
  }
  if (done.write_op) done.write_op->complete(client_diag(text), ec);
  if (done.end_op) done.end_op->complete(client_diag(text), ec, 0);
  if (done.read_op) done.read_op->complete(client_diag(text), ec, {}, true);
}

void start_copy(const conn_ptr& c, std::string sql, bool out, std::uint64_t owner,
                std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> h) {
  auto* r = new copy_request;
  r->text = std::move(sql);
  r->out = out;
  r->h = std::move(h);
  r->owner = owner;
  r->is_copy = true;
  start_request(c, r);
}
void copy_write(const conn_ptr& c, std::uint64_t session, std::string data,
                std::unique_ptr<erased_handler<std::error_code>> h) {
  asio::post(c->ex_, [c, session, d = std::move(data), h = std::move(h)]() mutable {
    c->copy_write(session, std::move(d), std::move(h));
  });
}
void copy_end(const conn_ptr& c, std::uint64_t session, std::string abort_msg,
              std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> h) {
  asio::post(c->ex_, [c, session, m = std::move(abort_msg), h = std::move(h)]() mutable {
    c->copy_end(session, std::move(m), std::move(h));
  });
}
void copy_read(const conn_ptr& c, std::uint64_t session, std::size_t max,
               std::unique_ptr<erased_handler<std::error_code, std::string, bool>> h) {
  asio::post(c->ex_, [c, session, max, h = std::move(h)]() mutable {
    c->copy_read(session, max, std::move(h));
  });
}
void copy_drop(const conn_ptr& c, std::uint64_t session) {
  asio::post(c->ex_, [c, session] { c->copy_drop(session); });
}

}  // namespace detail
}  // namespace inlet::pg
