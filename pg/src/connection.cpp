// The connection engine: libpq non-blocking pipeline mode driven by Asio readiness waits.
// See DESIGN.md for the request queue, the result router and the cancel race. The engine's
// state is in conn_impl.hpp.
#include "conn_impl.hpp"

namespace inlet::pg {
namespace detail {

void start_request(const conn_ptr& c, request_base* r) {
  c->async_used_.store(true, std::memory_order_relaxed);
  if (c->in_own_executor())
    c->start(r);
  else
    asio::post(c->ex_, [c, r] { c->start(r); });
}
bool running_in(const asio::any_io_executor& ex) noexcept {
  using io_ex = asio::io_context::executor_type;
  if (auto* e = ex.target<io_ex>()) return e->running_in_this_thread();
  if (auto* s = ex.target<asio::strand<asio::any_io_executor>>())
    return s->running_in_this_thread();
  if (auto* s = ex.target<asio::strand<io_ex>>()) return s->running_in_this_thread();
  return false;
}
void start_connect(const conn_ptr& c, std::string dsn, request_base* r) {
  c->async_used_.store(true, std::memory_order_relaxed);
  // Posted, never run inside the initiating call: a connect may fail at once.
  asio::post(c->ex_,
             [c, r, dsn = std::move(dsn)]() mutable { c->start_connect(std::move(dsn), r); });
}
void cancel_request(const conn_ptr& c, const std::shared_ptr<cancel_link>& l) {
  auto run = [c, l] {
    if (l->op) c->abandon(l->op, std::make_error_code(std::errc::operation_canceled));
  };
  if (c->in_own_executor())
    run();
  else
    asio::post(c->ex_, std::move(run));
}
/// Runs f on c's executor: now if already there, else posted. Used for close and
/// teardown from other threads; a connection that never went asynchronous (only the
/// synchronous forms) has no handler that could run concurrently and closes at once.
template <class F>
void on_executor(const conn_ptr& c, F f) {
  if (!c->async_used_.load(std::memory_order_relaxed) || c->in_own_executor())
    f();
  else
    asio::post(c->ex_, std::move(f));
}
const conn_ptr& impl_of(const connection& c) noexcept {
  return c.impl_;
}
void set_listener_hooks(const conn_ptr& c, std::function<void(const PGnotify&)> on_notify,
                        std::function<void(std::error_code)> on_lost) {
  c->on_notify_ = std::move(on_notify);
  c->on_lost_ = std::move(on_lost);
  c->arm_read();
}
const asio::any_io_executor& executor_of(const conn_impl& c) noexcept {
  return c.ex_;
}
diagnostics& diag_of(conn_impl& c) noexcept {
  return c.diag_;
}

}  // namespace detail

connection::connection(executor_type ex, connection_options opts)
    : impl_(std::make_shared<detail::conn_impl>(std::move(ex), opts)) {}
connection::~connection() {
  if (impl_) detail::on_executor(impl_, [c = impl_] { c->close(); });
}
connection& connection::operator=(connection&& o) noexcept {
  if (this != &o) {
    if (impl_) detail::on_executor(impl_, [c = impl_] { c->close(); });
    impl_ = std::move(o.impl_);
  }
  return *this;
}
connection::executor_type connection::get_executor() const noexcept {
  return impl_->ex_;
}
bool connection::is_open() const noexcept {
  return impl_ && impl_->state_ == detail::conn_impl::state::open &&
         PQstatus(impl_->pg_) == CONNECTION_OK;
}
bool connection::is_idle_clean() const noexcept {
  return is_open() && impl_->count_ == 0 && impl_->owner_ == 0 && !impl_->held_head_ &&
         PQtransactionStatus(impl_->pg_) == PQTRANS_IDLE;
}
bool connection::probe_alive() const noexcept {
  if (!is_open()) return false;
  char c;
  ssize_t n = ::recv(PQsocket(impl_->pg_), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return false;  // orderly shutdown by the server
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
  return true;  // pending bytes (a notice, a termination message): reading will tell
}
bool connection::probe_quiet() const noexcept {
  if (!is_open()) return false;
  char c;
  ssize_t n = ::recv(PQsocket(impl_->pg_), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
std::size_t connection::in_flight() const noexcept {
  return impl_ ? impl_->count_ : 0;
}
void connection::close() {
  if (impl_) detail::on_executor(impl_, [c = impl_] { c->close(); });
}
const diagnostics& connection::last_diagnostics() const noexcept {
  return impl_->diag_;
}
diagnostics& connection::diag_ref() noexcept {
  return impl_->diag_;
}
connection_stats connection::stats() const noexcept {
  return impl_->stats_;
}
PGconn* connection::native_handle() const noexcept {
  return impl_->pg_;
}

void connection::connect(const std::string& dsn, std::error_code& ec) {
  auto& c = *impl_;
  c.close();
  c.pg_ = PQconnectdb(dsn.c_str());
  if (!c.pg_ || PQstatus(c.pg_) != CONNECTION_OK || !c.setup_open()) {
    c.diag_.clear();
    c.diag_.client_message = c.pg_ ? PQerrorMessage(c.pg_) : "out of memory";
    c.state_ = detail::conn_impl::state::broken;
    ec = errc::connection_error;
    return;
  }
  boost::system::error_code e;
  c.sock_.assign(PQsocket(c.pg_), e);
  ec = {};
}
void connection::connect(const std::string& dsn) {
  std::error_code ec;
  connect(dsn, ec);
  if (ec) throw error(ec, last_diagnostics());
}
void connection::run_sync(detail::request_base& op, std::error_code& ec) {
  impl_->run_sync(op, ec);
}

}  // namespace inlet::pg
