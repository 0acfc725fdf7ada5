// The connection engine's state and its inline paths (send, route, read), shared by the
// files that implement it: connection.cpp (requests, connect, leases), copy.cpp (COPY).
// Internal: included by the library's own sources only.
#pragma once
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <thread>

#include "conninfo.hpp"
#include "inlet/pg/connection.hpp"
#include "inlet/pg/detail/erased_handler.hpp"
#include "stmt_cache.hpp"

namespace inlet::pg {
namespace detail {

struct timer_slot {
  asio::steady_timer t;
};

/// Starts a COPY (copy.cpp): goes through the request path like a query (lease, held
/// while another COPY runs), waits for the FIFO to drain, then takes the connection out
/// of pipeline mode. Its handler gets the COPY's session number.
struct copy_request final : request_base {
  std::string text;
  bool out = false;  // COPY ... TO STDOUT
  std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> h;
  std::uint64_t session = 0;
  std::string_view sql() const noexcept override { return text; }
  void bind(param_buffer&, std::error_code&) const override {}
  void deliver(conn_impl&, std::error_code e, completion_from) override {
    auto hh = std::move(h);
    hh->complete(std::move(diag), e, e ? 0 : session);
  }
  void destroy() noexcept override { delete this; }
};

/// The COPY in progress on a connection (at most one).
struct copy_state {
  enum class mode : unsigned char { none, waiting, starting, in, out, ending, draining };
  mode m = mode::none;
  std::uint64_t session = 0;          // writers/readers of another session get copy_closed
  copy_request* start_req = nullptr;  // until COPY_IN/COPY_OUT (or its error) arrived
  // COPY IN
  std::unique_ptr<erased_handler<std::error_code>> write_op;
  std::string wbuf;
  std::size_t woff = 0;
  std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> end_op;
  std::string end_msg;  // abort message (PQputCopyEnd), empty: a normal end
  bool end_sent = false;
  // COPY OUT
  std::unique_ptr<erased_handler<std::error_code, std::string, bool>> read_op;
  std::size_t read_max = 0;
  std::string rbuf;
  bool out_done = false;  // PQgetCopyData returned -1: only the final result is left
  // the outcome
  std::error_code ec;
  std::unique_ptr<diagnostics> diag;
  std::uint64_t rows = 0;
};

inline void fill_diag(diagnostics& d, const PGresult* r) {
  auto f = [&](int code) {
    const char* s = PQresultErrorField(r, code);
    return std::string(s ? s : "");
  };
  d.clear();
  d.severity = f(PG_DIAG_SEVERITY_NONLOCALIZED);
  d.sqlstate = f(PG_DIAG_SQLSTATE);
  d.message = f(PG_DIAG_MESSAGE_PRIMARY);
  d.detail = f(PG_DIAG_MESSAGE_DETAIL);
  d.hint = f(PG_DIAG_MESSAGE_HINT);
  d.context = f(PG_DIAG_CONTEXT);
  d.schema = f(PG_DIAG_SCHEMA_NAME);
  d.table = f(PG_DIAG_TABLE_NAME);
  d.column = f(PG_DIAG_COLUMN_NAME);
  d.constraint = f(PG_DIAG_CONSTRAINT_NAME);
  auto pos = f(PG_DIAG_STATEMENT_POSITION);
  d.position = pos.empty() ? 0 : std::atoi(pos.c_str());
}
class conn_impl : public std::enable_shared_from_this<conn_impl> {
 public:
  conn_impl(asio::any_io_executor ex, connection_options o)
      : ex_(std::move(ex)), opts_(o), sock_(ex_), cache_(o.statement_cache_size) {
    pb_.user_types = opts_.types.get();
    using io_ex = asio::io_context::executor_type;
    if ((own_io_ = ex_.target<io_ex>()))
      own_kind_ = own::io;
    else if ((own_strand_any_ = ex_.target<asio::strand<asio::any_io_executor>>()))
      own_kind_ = own::strand_any;
    else if ((own_strand_io_ = ex_.target<asio::strand<io_ex>>()))
      own_kind_ = own::strand_io;
  }
  ~conn_impl() { close(); }

  enum class state { closed, connecting, open, broken };

  asio::any_io_executor ex_;  // never reassigned: the typed pointers below point into it
  // What ex_ holds, found once (running_in() asks any_io_executor for its target type
  // on every call, which costs ~25 instructions per query twice over; callgrind).
  enum class own : unsigned char { other, io, strand_any, strand_io };
  own own_kind_ = own::other;
  const asio::io_context::executor_type* own_io_ = nullptr;
  const asio::strand<asio::any_io_executor>* own_strand_any_ = nullptr;
  const asio::strand<asio::io_context::executor_type>* own_strand_io_ = nullptr;
  bool in_own_executor() const noexcept {
    switch (own_kind_) {
      case own::io:
        return own_io_->running_in_this_thread();
      case own::strand_any:
        return own_strand_any_->running_in_this_thread();
      case own::strand_io:
        return own_strand_io_->running_in_this_thread();
      default:
        return false;
    }
  }
  connection_options opts_;
  PGconn* pg_ = nullptr;
  asio::posix::stream_descriptor sock_;
  state state_ = state::closed;
  request_base* head_ = nullptr;
  request_base* tail_ = nullptr;
  // Exclusive owner (a transaction's lease, 0: none) and the requests of others that
  // wait for it to end, in arrival order (see DESIGN.md, "Transactions").
  std::uint64_t owner_ = 0, next_lease_ = 0;
  request_base* held_head_ = nullptr;
  request_base* held_tail_ = nullptr;
  bool pump_pending_ = false;
  std::size_t count_ = 0;
  std::uint64_t seq_ = 0;
  bool reading_ = false, writing_ = false, flush_posted_ = false;
  bool cork_ok_ = false, corked_ = false;  // TCP socket (set in setup_open); TCP_CORK is on
  param_buffer pb_;
  std::string key_, sql_;
  stmt_cache cache_;
  connection_stats stats_;
  diagnostics diag_;
  std::string fail_msg_;  // client text for the requests fail_all() completes
  request_base* connect_req_ = nullptr;
  // Connect state (start_connect): hosts, which one, which pass, the deadline timer.
  conninfo cinfo_;
  std::size_t host_ = 0;
  int pass_ = 0;
  int hard_failures_ = 0;  // host attempts that failed other than by their deadline
  std::uint64_t connect_attempt_ = 0;
  std::string connect_errors_;
  asio::steady_timer connect_timer_{ex_};
  std::atomic<bool> async_used_{false};  // set by any async initiation (read by ~connection)
  // A listener's hooks (listener.cpp): notifications, and the loss of an open connection.
  copy_state copy_;            // copy.cpp
  bool copy_reading_ = false;  // a COPY needs the reader armed
  bool paused_ = false;        // a streamed statement's reader is full: stop reading
  std::uint64_t copy_sessions_ = 0;
  std::function<void(const PGnotify&)> on_notify_;
  std::function<void(std::error_code)> on_lost_;

  // ---- lifetime ---------------------------------------------------------------------
  void release(request_base* r) {
    if (--r->refs == 0) {
      if (r->cancel) r->cancel->op = nullptr;  // a late cancellation finds nothing
      r->destroy();
    }
  }
  void finish(request_base* r, std::error_code ec, completion_from w) {
    if (r->timer) r->timer->t.cancel();
    if (r->finished) return;
    r->finished = true;
    ++stats_.queries;
    if (ec) [[unlikely]] {
      ++stats_.errors;
      if (!r->diag) {  // a client-side failure: say what and why
        r->diag = std::make_unique<diagnostics>();
        r->diag->client_message = fail_msg_.empty() ? ec.message() : fail_msg_;
      }
    }
    r->deliver(*this, ec, w);
  }
  void detach_socket() {
    if (sock_.is_open()) {
      boost::system::error_code ignored;
      sock_.cancel(ignored);
      sock_.release();
    }
  }
  void fail_all(std::error_code ec, const char* msg) {
    if (msg) {
      diag_.clear();
      diag_.client_message = msg;
      while (!diag_.client_message.empty() && diag_.client_message.back() == '\n')
        diag_.client_message.pop_back();
      fail_msg_ = diag_.client_message;
    }
    const bool lost_open = state_ == state::open;
    if (state_ == state::open || state_ == state::connecting) state_ = state::broken;
    detach_socket();
    ++connect_attempt_;  // a pending connect wait or deadline is stale now
    connect_timer_.cancel();
    if (connect_req_) {
      auto* r = connect_req_;
      connect_req_ = nullptr;
      finish(r, ec, completion_from::any_thread);
      release(r);
    }
    while (head_) {
      auto* r = pop();
      finish(r, ec, completion_from::any_thread);
      release(r);
    }
    if (copy_.m != copy_state::mode::none) copy_fail(ec, msg);
    owner_ = 0;
    if (on_lost_ && lost_open && ec != std::errc::operation_canceled) {  // lost: tell the listener
      asio::post(ex_, [f = on_lost_, ec] { f(ec); });
    }
    while (held_head_) {
      auto* r = held_head_;
      held_head_ = r->next;
      if (!held_head_) held_tail_ = nullptr;
      finish(r, ec, completion_from::any_thread);
      release(r);
    }
    fail_msg_.clear();
  }
  void close() {
    fail_all(std::make_error_code(std::errc::operation_canceled), nullptr);
    if (pg_) PQfinish(pg_);
    pg_ = nullptr;
    state_ = state::closed;
    cache_.clear();
  }

  // ---- queue ------------------------------------------------------------------------
  void push(request_base* r) {
    r->next = nullptr;
    if (tail_)
      tail_->next = r;
    else
      head_ = r;
    tail_ = r;
    ++count_;
  }
  request_base* pop() {
    auto* r = head_;
    head_ = r->next;
    if (!head_) tail_ = nullptr;
    --count_;
    return r;
  }

  // ---- connect ----------------------------------------------------------------------
  // One host at a time (the DSN's host list, libpq's target_session_attrs per host), each
  // with its own deadline: libpq ignores connect_timeout in asynchronous connects, and a
  // host that accepts and never answers would otherwise hold the connect forever.
  // prefer-standby takes two passes (standby, then any), as libpq does.
  void start_connect(std::string dsn, request_base* r) {
    close();
    connect_req_ = r;
    std::string err;
    if (!conninfo::parse(dsn, cinfo_, err)) return connect_failed(errc::connection_error, err);
    connect_errors_.clear();
    host_ = 0;
    pass_ = 0;
    hard_failures_ = 0;
    state_ = state::connecting;
    connect_host();
  }
  std::chrono::milliseconds connect_deadline() const {
    if (opts_.connect_timeout.count() > 0) return opts_.connect_timeout;
    if (cinfo_.connect_timeout.count() > 0) return cinfo_.connect_timeout;
    return std::chrono::seconds(10);
  }
  const std::string& pass_target() const {
    static const std::string standby = "standby", any = "any";
    if (cinfo_.target_session_attrs != "prefer-standby") return cinfo_.target_session_attrs;
    return pass_ == 0 ? standby : any;
  }
  void connect_host() {
    if (pg_) PQfinish(pg_);
    auto a = cinfo_.for_host(host_, pass_target());
    pg_ = PQconnectStartParams(a.keys.data(), a.values.data(), 0);
    if (!pg_ || PQstatus(pg_) == CONNECTION_BAD)
      return host_failed(pg_ ? PQerrorMessage(pg_) : "out of memory", false);
    const auto attempt = ++connect_attempt_;
    connect_timer_.expires_after(connect_deadline());
    connect_timer_.async_wait([self = shared_from_this(), attempt](boost::system::error_code ec) {
      if (ec || self->connect_attempt_ != attempt || self->state_ != state::connecting) return;
      auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(self->connect_deadline()).count();
      self->host_failed(("timed out after " + std::to_string(ms) + " ms").c_str(), true);
    });
    poll_connect(PGRES_POLLING_WRITING);
  }
  /// This host failed: the next one (or the next pass), else the connect fails.
  void host_failed(const char* why, bool timed_out) {
    if (!timed_out) ++hard_failures_;
    detach_socket();
    ++connect_attempt_;
    std::string msg = why ? why : "";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    if (!connect_errors_.empty()) connect_errors_ += "; ";
    connect_errors_ += cinfo_.hosts[host_].label() + ": " + msg;
    if (++host_ >= cinfo_.hosts.size()) {
      host_ = 0;
      if (cinfo_.target_session_attrs != "prefer-standby" || ++pass_ > 1)
        return connect_failed(hard_failures_ == 0 ? errc::connect_timeout : errc::connection_error,
                              connect_errors_);
    }
    connect_host();
  }
  void connect_failed(std::error_code ec, const std::string& msg) {
    connect_timer_.cancel();
    detach_socket();  // before PQfinish closes the descriptor
    if (pg_) PQfinish(pg_);
    pg_ = nullptr;
    fail_all(ec, msg.c_str());
    state_ = state::broken;
  }
  void poll_connect(PostgresPollingStatusType st) {
    if (st == PGRES_POLLING_OK) return connected();
    if (st == PGRES_POLLING_FAILED) return host_failed(PQerrorMessage(pg_), false);
    detach_socket();  // libpq may switch sockets between polls (several addresses)
    boost::system::error_code e;
    sock_.assign(PQsocket(pg_), e);
    if (e) return host_failed("cannot watch the socket", false);
    auto w = st == PGRES_POLLING_READING ? asio::posix::descriptor_base::wait_read
                                         : asio::posix::descriptor_base::wait_write;
    sock_.async_wait(
        w, [self = shared_from_this(), attempt = connect_attempt_](boost::system::error_code ec) {
          if (self->state_ != state::connecting || self->connect_attempt_ != attempt) return;
          if (ec) return self->host_failed("socket error while connecting", false);
          self->poll_connect(PQconnectPoll(self->pg_));
        });
  }
  bool setup_open() {
    if (PQsetnonblocking(pg_, 1) != 0 || PQenterPipelineMode(pg_) != 1) return false;
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    cork_ok_ = ::getsockname(PQsocket(pg_), reinterpret_cast<sockaddr*>(&sa), &len) == 0 &&
               (sa.ss_family == AF_INET || sa.ss_family == AF_INET6);
    corked_ = false;
    state_ = state::open;
    return true;
  }
  void connected() {
    ++connect_attempt_;
    connect_timer_.cancel();
    if (!setup_open()) return connect_failed(errc::connection_error, PQerrorMessage(pg_));
    if (!sock_.is_open()) {
      boost::system::error_code e;
      sock_.assign(PQsocket(pg_), e);
    }
    diag_.clear();
    auto* r = connect_req_;
    connect_req_ = nullptr;
    finish(r, {}, completion_from::own_executor);
    release(r);
    if (on_notify_) arm_read();  // a listener reads while idle
  }

  // ---- send -------------------------------------------------------------------------
  /// Encodes and hands a request to libpq (Parse if not cached, Bind/Execute, Sync).
  std::error_code send(request_base* r) {
    if (state_ != state::open) return errc::not_connected;
    r->seq = ++seq_;
    if (r->bat) return send_batch(r, *r->bat);
    pb_.clear();
    std::error_code ec;
    r->bind(pb_, ec);
    if (ec) return ec;
    pb_.finish();
    const int n = static_cast<int>(pb_.types.size());
    std::string_view text = r->sql();
    int ok;
    if (cache_.capacity() == 0 || r->unnamed) {
      sql_.assign(text);  // libpq wants NUL-terminated text
      ok = PQsendQueryParams(pg_, sql_.c_str(), n, pb_.types.data(), pb_.values.data(),
                             pb_.lengths.data(), pb_.formats.data(), 1);
    } else {
      const std::string* name = nullptr;
      const char* unnamed_text = nullptr;  // NUL-terminated SQL for an unnamed statement
      ok = 1;
      if (const auto* e = lookup(text, pb_.types.data(), pb_.types.size())) {
        if (e->owner == 0)
          name = &e->name;  // else: another request's Parse is in flight
        else
          unnamed_text = e->key.c_str();  // the key starts with the NUL-terminated text
      } else {
        std::optional<std::string> evicted;
        name = &cache_.insert(key_, evicted, r->seq);
        if (evicted) deallocate(*evicted);
        ok = PQsendPrepare(pg_, name->c_str(), key_.c_str(), n,
                           pb_.types.data());  // key_ starts with the NUL-terminated text
        r->prepare_results = 1;
        r->stmt_key = key_;
        ++stats_.prepares;
      }
      if (ok && name)
        ok = PQsendQueryPrepared(pg_, name->c_str(), n, pb_.values.data(), pb_.lengths.data(),
                                 pb_.formats.data(), 1);
      else if (ok)
        ok = PQsendQueryParams(pg_, unnamed_text, n, pb_.types.data(), pb_.values.data(),
                               pb_.lengths.data(), pb_.formats.data(), 1);
    }
    if (!ok || !PQpipelineSync(pg_)) {
      diag_.clear();
      diag_.client_message = PQerrorMessage(pg_);
      if (PQstatus(pg_) == CONNECTION_BAD) state_ = state::broken;
      return errc::connection_error;
    }
    stats_.bytes_sent += text.size() + pb_.data.size();
    r->sent = true;
    push(r);
    return {};
  }
  /// The cache entry for (text, OIDs): the last statement's without hashing, else by key
  /// (key_ is then built, also on a miss, ready for insert()).
  const stmt_cache::entry* lookup(std::string_view text, const oid_t* types, std::size_t n) {
    std::string_view oids(reinterpret_cast<const char*>(types), n * sizeof(oid_t));
    if (const auto* e = cache_.find_last(text, oids)) return e;
    make_key(text, types, n);
    return cache_.find(key_);
  }
  /// Cache key: the SQL text, a NUL, then the parameter OIDs (so key_.c_str() is the text).
  void make_key(std::string_view text, const oid_t* types, std::size_t n) {
    key_.assign(text);
    key_.push_back('\0');
    key_.append(reinterpret_cast<const char*>(types), n * sizeof(oid_t));
  }

  /// An explicit batch: [Parse] Bind/Execute for every statement, then one Sync. Records
  /// one step per result libpq will return so the router can attribute each of them.
  /// Statements evicted from the cache meanwhile are deallocated after the Sync (a
  /// DEALLOCATE segment in the middle would split the batch).
  std::error_code send_batch(request_base* r, batch& b) {
    if (b.ec_) {
      if (b.params_.unmapped) {
        r->diag = std::make_unique<diagnostics>();
        r->diag->client_message =
            "pg::batch: a parameter of a user-defined type was added without an OID map that knows "
            "it; "
            "construct the batch with the connection's map: pg::batch b(conn.types())";
      }
      return b.ec_;
    }
    b.steps_.clear();
    b.keys_.clear();
    b.cursor_ = 0;
    b.out_ = batch_result{};
    b.out_.results.resize(b.stmts_.size());
    b.params_.finish();
    const bool cached = cache_.capacity() > 0;
    std::vector<std::string> evicted_names;
    int ok = 1;
    for (std::size_t i = 0; i < b.stmts_.size() && ok; ++i) {
      const auto& st = b.stmts_[i];
      const int n = static_cast<int>(st.n_params);
      const oid_t* types = b.params_.types.data() + st.first_param;
      const char* const* values = b.params_.values.data() + st.first_param;
      const int* lengths = b.params_.lengths.data() + st.first_param;
      const int* formats = b.params_.formats.data() + st.first_param;
      const std::string* name = nullptr;
      const char* unnamed_text = nullptr;
      if (cached) {
        if (const auto* e = lookup(st.sql, types, st.n_params)) {
          if (e->owner == 0 || e->owner == r->seq)
            name = &e->name;
          else
            unnamed_text = e->key.c_str();
        } else {
          std::optional<std::string> evicted;
          name = &cache_.insert(key_, evicted, r->seq);
          if (evicted) evicted_names.push_back(std::move(*evicted));
          ok = PQsendPrepare(pg_, name->c_str(), key_.c_str(), n, types);
          b.steps_.push_back(
              {static_cast<std::uint32_t>(i), static_cast<std::int32_t>(b.keys_.size())});
          b.keys_.push_back(key_);
          ++stats_.prepares;
        }
      }
      if (!ok) break;
      if (!cached) {  // libpq wants NUL-terminated text
        sql_.assign(st.sql);
        unnamed_text = sql_.c_str();
      }
      ok = name ? PQsendQueryPrepared(pg_, name->c_str(), n, values, lengths, formats, 1)
                : PQsendQueryParams(pg_, unnamed_text, n, types, values, lengths, formats, 1);
      b.steps_.push_back({static_cast<std::uint32_t>(i), -1});
      stats_.bytes_sent += st.sql.size();
    }
    if (!ok || !PQpipelineSync(pg_)) {
      // Part of the batch may be queued in libpq without its Sync: the connection's
      // pipeline is no longer in a known state.
      for (const auto& k : b.keys_) cache_.erase_pending(k, r->seq);
      diag_.clear();
      diag_.client_message = PQerrorMessage(pg_);
      state_ = state::broken;
      return errc::connection_error;
    }
    stats_.bytes_sent += b.params_.data.size();
    r->sent = true;
    push(r);
    for (const auto& name : evicted_names) deallocate(name);
    return {};
  }

  void deallocate(const std::string& name) {
    struct internal final : request_base {
      std::string text;
      std::string_view sql() const noexcept override { return text; }
      void bind(param_buffer&, std::error_code&) const override {}
      void deliver(conn_impl&, std::error_code, completion_from) override {}
      void destroy() noexcept override { delete this; }
    };
    auto* r = new internal;
    r->text = "DEALLOCATE " + name;
    r->finished = true;  // nobody waits for it
    if (PQsendQueryParams(pg_, r->text.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 1) &&
        PQpipelineSync(pg_)) {
      push(r);
    } else {
      delete r;
    }
  }

  void start(request_base* r) {
    if (r->finished) [[unlikely]] {  // cancelled before it could start
      release(r);
      return;
    }
    if (copy_.m != copy_state::mode::none) [[unlikely]] {  // a COPY holds the connection
      hold(r);
      return;
    }
    if (r->owner != owner_ || r->lease == lease_action::begin) [[unlikely]] {
      if (!admit(r)) return;
    }
    if (r->is_copy) [[unlikely]]
      return copy_begin(static_cast<copy_request*>(r));
    if (r->bat && r->bat->empty() && state_ == state::open) {  // nothing to send
      r->bat->out_ = batch_result{};
      finish(r, {}, completion_from::initiation);
      release(r);
      return;
    }
    // A lone request goes out at once. Requests issued while others are in flight
    // (or behind a lone one in the same turn of the event loop) are corked and leave
    // together at the turn's posted flush: libpq 15's PQpipelineSync always writes, so
    // without the cork every request would be its own send and its own TCP segment.
    const bool lone = head_ == nullptr && !flush_posted_;
    if (!lone) cork();
    if (auto ec = send(r)) {
      if (r->lease != lease_action::none && owner_ == r->owner) end_lease();  // never sent
      finish(r, ec, completion_from::initiation);
      release(r);
      if (corked_) schedule_flush();
      pump_held();
      return;
    }
    arm_timeout(r);
    if (lone)
      do_flush();
    else
      schedule_flush();
    arm_read();
  }

  // ---- exclusive owner (transactions) ------------------------------------------------
  /// A request whose owner differs from the connection's, or that begins a lease. False
  /// when it must not be sent now: it was held (another transaction owns the connection)
  /// or failed (its own transaction is over).
  bool admit(request_base* r) {
    if (r->owner != 0 && r->owner != owner_) {
      finish(r, errc::transaction_closed, completion_from::initiation);
      release(r);
      return false;
    }
    if (owner_ != 0 && r->owner != owner_) {  // another transaction's: wait for its end
      hold(r);
      return false;
    }
    if (r->lease == lease_action::begin) owner_ = r->owner = ++next_lease_;
    return true;
  }
  void hold(request_base* r) {
    r->next = nullptr;
    if (held_tail_)
      held_tail_->next = r;
    else
      held_head_ = r;
    held_tail_ = r;
  }
  void end_lease() {
    owner_ = 0;
    pump_pending_ = held_head_ != nullptr;
  }
  /// The Sync of a request that begins or ends a lease. A BEGIN that failed ends it; a
  /// BEGIN whose caller gave up before the answer (timeout, cancellation) left a
  /// transaction nobody owns: roll it back, still under the lease.
  void lease_synced(request_base* r) {
    if (owner_ != r->owner) return;
    if (r->lease == lease_action::end || r->ec) return end_lease();
    if (r->finished) rollback_orphan(r->owner);
  }
  void rollback_orphan(std::uint64_t owner) {
    struct internal final : request_base {
      std::string_view sql() const noexcept override { return "ROLLBACK"; }
      void bind(param_buffer&, std::error_code&) const override {}
      void deliver(conn_impl&, std::error_code, completion_from) override {}
      void destroy() noexcept override { delete this; }
    };
    auto* r = new internal;
    r->owner = owner;
    r->lease = lease_action::end;
    start(r);
  }
  /// Starts the requests that waited for a lease, in order, until one of them takes the
  /// connection again (the rest keep waiting).
  void pump_held() {
    if (!pump_pending_) return;
    pump_pending_ = false;
    request_base* r = held_head_;
    held_head_ = held_tail_ = nullptr;
    while (r) {
      request_base* next = r->next;
      start(r);  // holds it again if a request before it began a new lease
      r = next;
    }
  }

  /// TCP_CORK on libpq's socket until the posted flush (uncork_): the requests of one
  /// turn leave in one segment train instead of one transmit (and on loopback one
  /// wake-up of the server) per request. Not for Unix sockets (cork_ok_ is false).
  void cork() {
    if (!cork_ok_ || corked_) return;
    int one = 1;
    corked_ = ::setsockopt(PQsocket(pg_), IPPROTO_TCP, TCP_CORK, &one, sizeof one) == 0;
    if (!corked_) cork_ok_ = false;
  }
  void uncork() {
    if (!corked_) return;
    corked_ = false;
    int zero = 0;
    ::setsockopt(PQsocket(pg_), IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
  }

  void arm_timeout(request_base* r) {
    if (opts_.query_timeout.count() <= 0 || r->is_stream)
      return;  // a stream lasts as its reader wants
    r->timer = new timer_slot{asio::steady_timer(ex_)};
    ++r->refs;
    r->timer->t.expires_after(opts_.query_timeout);
    r->timer->t.async_wait([self = shared_from_this(), r](boost::system::error_code ec) {
      if (!ec && !r->finished) self->abandon(r, errc::timeout);
      delete r->timer;
      r->timer = nullptr;
      self->release(r);
    });
  }

  /// Completes r now; its results are still read (and dropped) when they arrive. When
  /// r is the statement running on the server, a cancel request is sent.
  void abandon(request_base* r, std::error_code ec) {
    if (r->finished) return;
    if (r == connect_req_) {  // a connect in progress: give it up
      fail_msg_ = "connect cancelled";
      connect_failed(ec, "connect cancelled");
      return;
    }
    if (r == head_ && pg_) send_cancel();  // before finish: the handler may run inline
    finish(r, ec, completion_from::any_thread);
  }
  void send_cancel() {
    PGcancel* pc = PQgetCancel(pg_);
    if (!pc) return;
    ++stats_.cancels;
    // PQcancel blocks (it opens a connection): run it off the executor.
    std::thread([pc] {
      char buf[256];
      PQcancel(pc, buf, sizeof buf);
      PQfreeCancel(pc);
    }).detach();
  }

  // ---- flush and read ---------------------------------------------------------------
  void schedule_flush() {
    if (flush_posted_) return;
    flush_posted_ = true;
    asio::post(ex_, [self = shared_from_this()] {
      self->flush_posted_ = false;
      self->do_flush();
    });
  }
  void do_flush() {
    if (state_ != state::open) return;
    int r = PQflush(pg_);
    uncork();  // what libpq could not write yet follows when the socket is writable
    if (r < 0) return fail_all(errc::connection_error, PQerrorMessage(pg_));
    if (r == 1) arm_write();
  }
  void arm_write() {
    if (writing_) return;
    writing_ = true;
    sock_.async_wait(asio::posix::descriptor_base::wait_write,
                     [self = shared_from_this()](boost::system::error_code ec) {
                       self->writing_ = false;
                       if (ec || self->state_ != state::open) return;
                       if (self->copy_.m >= copy_state::mode::starting)
                         return self->copy_writable();
                       self->do_flush();
                     });
  }
  void arm_read() {
    if (reading_ || paused_ || (!head_ && !on_notify_ && !copy_reading_) || state_ != state::open)
      return;
    reading_ = true;
    sock_.async_wait(asio::posix::descriptor_base::wait_read,
                     [self = shared_from_this()](boost::system::error_code ec) {
                       self->reading_ = false;
                       if (self->state_ != state::open) return;
                       if (ec) return self->fail_all(errc::connection_error, "socket wait failed");
                       self->on_readable();
                     });
  }
  /// Reads what the socket has, then waits again. (Asio's reactor is edge-triggered,
  /// but every new async_wait re-arms the descriptor with EPOLL_CTL_MOD, which reports
  /// bytes libpq left in the kernel buffer, so no readiness is lost.)
  ///
  /// With TLS, OpenSSL may hold decrypted bytes the socket no longer shows (libpq asks
  /// SSL_read for at most its free buffer space, which can be less than a 16 KiB
  /// record): keep reading while OpenSSL has bytes pending, then wait on the socket.
  void on_readable() {
    if (copy_.m >= copy_state::mode::starting) return copy_readable();  // else: still pipelining
    do {
      if (!read_once()) return;
    } while ((head_ || on_notify_) && tls_pending());
    arm_read();
  }
  bool tls_pending() const {
    if (!pg_ || !PQsslInUse(pg_)) return false;
    auto* ssl = static_cast<SSL*>(PQsslStruct(pg_, "OpenSSL"));
    return ssl && SSL_pending(ssl) > 0;
  }
  bool read_once() {
    if (!PQconsumeInput(pg_)) {
      fail_all(errc::connection_error, PQerrorMessage(pg_));
      return false;
    }
    drain();
    if (state_ == state::open && PQstatus(pg_) == CONNECTION_BAD)
      fail_all(errc::connection_error, PQerrorMessage(pg_));
    return state_ == state::open;
  }
  void drain() {
    int nulls = 0;
    while (pg_ && state_ == state::open && copy_.m < copy_state::mode::starting && !paused_) {
      // A streamed statement at the head: single-row mode must be set before libpq
      // parses its first row (after its Parse, if any, and before PQisBusy).
      if (head_ && head_->is_stream && !head_->single_row && head_->prepare_results == 0)
          [[unlikely]]
        head_->single_row = PQsetSingleRowMode(pg_) == 1;
      if (PQisBusy(pg_)) break;
      PGresult* res = PQgetResult(pg_);
      if (!res) {
        if (++nulls >= 2 || !head_) break;
        continue;
      }
      nulls = 0;
      route(res);
    }
    if (head_ && head_->is_stream) [[unlikely]]  // rows of this read go out together
      static_cast<stream_base*>(head_)->drained(*this);
    if (on_notify_) [[unlikely]]
      deliver_notifications();
  }
  /// A listener's connection: notifications parsed by libpq go to its hook.
  void deliver_notifications() {
    while (pg_ && on_notify_) {
      PGnotify* n = PQnotifies(pg_);
      if (!n) break;
      on_notify_(*n);
      PQfreemem(n);
    }
  }
  void route(PGresult* res) {
    request_base* r = head_;
    if (!r) {
      PQclear(res);
      return;
    }
    auto st = PQresultStatus(res);
    if (st == PGRES_PIPELINE_SYNC) {
      PQclear(res);
      pop();
      if (r->lease != lease_action::none) [[unlikely]]
        lease_synced(r);
      finish(r, r->ec, completion_from::own_executor);
      release(r);
      if (!head_ && copy_.m == copy_state::mode::waiting) [[unlikely]]  // after this drain loop
        asio::post(ex_, [self = shared_from_this()] { self->copy_send(); });
      if (pump_pending_) [[unlikely]]
        pump_held();
      return;
    }
    if (r->bat) return route_batch(r, *r->bat, res, st);
    if (st == PGRES_FATAL_ERROR) {
      if (!r->ec)
        r->res = record_error(r, res);
      else
        PQclear(res);
      if (r->prepare_results > 0) {
        --r->prepare_results;
        cache_.erase_pending(r->stmt_key, r->seq);
      }
      return;
    }
    if (r->prepare_results > 0) {  // the Parse of a statement we prepared: nothing to keep
      --r->prepare_results;
      if (st == PGRES_COMMAND_OK)
        cache_.confirm(r->stmt_key, r->seq);
      else
        cache_.erase_pending(r->stmt_key, r->seq);
      PQclear(res);
      return;
    }
    if (r->is_stream && (st == PGRES_SINGLE_TUPLE || st == PGRES_TUPLES_OK)) [[unlikely]] {
      if (r->ec || r->finished) {
        PQclear(res);
        return;
      }
      count_bytes(res);
      auto* s = static_cast<stream_base*>(r);
      if (s->rows(*this, result(res))) paused_ = true;  // the consumer is full
      // Dropped (by its reader, or a row that did not fit) while more rows come: the
      // server is still producing them, so stop it rather than read them all.
      if (s->dropped && !s->cancel_sent && st == PGRES_SINGLE_TUPLE) {
        s->cancel_sent = true;
        send_cancel();
      }
      return;
    }
    switch (st) {
      case PGRES_TUPLES_OK:
      case PGRES_COMMAND_OK:
      case PGRES_EMPTY_QUERY:
        if (!r->ec) {
          if (!r->finished) count_bytes(res);
          r->res = result(res);
        } else {
          PQclear(res);
        }
        break;
      case PGRES_PIPELINE_ABORTED:
        if (!r->ec) r->ec = errc::pipeline_aborted;
        PQclear(res);
        break;
      default:
        if (!r->ec) r->ec = errc::protocol_error;
        PQclear(res);
        break;
    }
  }
  /// First error of a request: its code and the connection's diagnostics.
  result record_error(request_base* r, PGresult* res) {
    r->diag = std::make_unique<diagnostics>();
    if (PQstatus(pg_) == CONNECTION_BAD || !PQresultErrorField(res, PG_DIAG_SQLSTATE)) {
      r->ec = errc::connection_error;
      r->diag->client_message = PQresultErrorMessage(res);
    } else {
      r->ec = make_sqlstate_error(PQresultErrorField(res, PG_DIAG_SQLSTATE));
      fill_diag(*r->diag, res);
    }
    diag_ = *r->diag;
    return result(res);
  }
  /// One result of an explicit batch, attributed by the steps recorded at send time.
  void route_batch(request_base* r, batch& b, PGresult* res, ExecStatusType st) {
    if (b.cursor_ >= b.steps_.size()) {  // more results than statements: cannot happen
      if (!r->ec) r->ec = errc::protocol_error;
      PQclear(res);
      return;
    }
    const auto step = b.steps_[b.cursor_++];
    if (step.key >= 0) {  // our Parse: confirm the name, or forget it (failed or skipped)
      const auto& key = b.keys_[static_cast<std::size_t>(step.key)];
      if (st == PGRES_COMMAND_OK)
        cache_.confirm(key, r->seq);
      else
        cache_.erase_pending(key, r->seq);
    }
    if (st == PGRES_FATAL_ERROR) {
      if (!r->ec) {
        b.out_.failed = step.stmt;
        b.out_.results[step.stmt] = record_error(r, res);
      } else {
        PQclear(res);
      }
      return;
    }
    if (step.key < 0 &&
        (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK || st == PGRES_EMPTY_QUERY)) {
      if (!r->finished) count_bytes(res);
      b.out_.results[step.stmt] = result(res);
      return;
    }
    if (st == PGRES_PIPELINE_ABORTED) {
      if (!r->ec) r->ec = errc::pipeline_aborted;
    } else if (step.key < 0 && !r->ec) {
      r->ec = errc::protocol_error;
    }
    PQclear(res);
  }
  void count_bytes(const PGresult* res) {
    // O(1): libpq's memory for the result (rows, fields, headers). Walking every field
    // for an exact byte count cost as much as reading the result (callgrind).
    stats_.bytes_received += PQresultMemorySize(res);
  }

  // ---- synchronous driver -------------------------------------------------------------
  void run_sync(request_base& op, std::error_code& ec) {
    if (state_ != state::open) {
      ec = errc::not_connected;
      return;
    }
    if (head_ || reading_ || writing_) {
      ec = errc::busy;
      return;
    }
    if ((ec = send(&op))) {  // refused before sending: say why (last_diagnostics)
      diag_.clear();
      if (op.diag)
        diag_ = *op.diag;
      else
        diag_.client_message = ec.message();
      return;
    }
    bool timed_out = false;
    auto deadline = std::chrono::steady_clock::now() + opts_.query_timeout;
    // Also reads internal requests queued behind op (DEALLOCATEs of a batch's evictions),
    // so the next synchronous call does not find the connection busy.
    while ((!op.finished || head_) && state_ == state::open) {
      int fl = PQflush(pg_);
      if (fl < 0) {
        fail_all(errc::connection_error, PQerrorMessage(pg_));
        break;
      }
      pollfd p{PQsocket(pg_), static_cast<short>(POLLIN | (fl == 1 ? POLLOUT : 0)), 0};
      int wait_ms = -1;
      if (opts_.query_timeout.count() > 0 && !timed_out) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        wait_ms = static_cast<int>(std::max<std::int64_t>(0, left.count()));
      }
      int n = 1;
      if (tls_pending())
        p.revents = POLLIN;  // bytes OpenSSL holds (see on_readable)
      else
        n = ::poll(&p, 1, wait_ms);
      if (n == 0) {  // timeout: ask the server to stop, keep reading until Sync
        timed_out = true;
        send_cancel();
        continue;
      }
      if (n < 0) continue;  // EINTR
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) read_once();
    }
    if (!op.finished) finish(&op, errc::connection_error, completion_from::any_thread);
    ec = timed_out ? std::error_code(errc::timeout) : op.ec;
    if (op.refs > 1) op.refs = 1;
  }

  // ---- streamed statements ------------------------------------------------------------
  /// The reader of a stream asked for more: read again (what libpq holds first).
  void stream_resume() {
    if (!paused_) return;
    paused_ = false;
    if (state_ != state::open) return;
    drain();
    arm_read();
  }
  /// The reader of a stream gave up: its remaining rows are dropped; if it is running on
  /// the server, it is cancelled there.
  void stream_drop(request_base* r) {
    auto* s = static_cast<stream_base*>(r);
    if (!r->finished && r == head_ && r->sent && !s->cancel_sent) {
      s->cancel_sent = true;
      send_cancel();
    }
    s->dropped = true;  // a stream not started yet is cancelled when its rows come
    if (r->finished || r == head_) stream_resume();
    release(r);
  }

  // ---- COPY (copy.cpp) ---------------------------------------------------------------
  void copy_begin(copy_request* r);
  void copy_send();
  void copy_readable();
  void copy_writable();
  void copy_write(std::uint64_t session, std::string data,
                  std::unique_ptr<erased_handler<std::error_code>> op);
  void copy_end(std::uint64_t session, std::string abort_msg,
                std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> op);
  void copy_read(std::uint64_t session, std::size_t max,
                 std::unique_ptr<erased_handler<std::error_code, std::string, bool>> op);
  void copy_drop(std::uint64_t session);
  void copy_fail(std::error_code ec, const char* msg);
  void copy_pump_write();
  void copy_service_read();
  void copy_collect_final();
  void copy_finished();
};

}  // namespace detail
}  // namespace inlet::pg
