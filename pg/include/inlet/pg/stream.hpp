// Reading large results without holding them: rows handed over as they arrive (libpq's
// single-row mode), or fetched in chunks from a server-side cursor. Memory stays flat
// whatever the number of rows.
//
//   // a stream on any connection (or transaction): typed chunks as the rows arrive
//   auto s = pg::stream<event>(conn, pg::sql("SELECT id, at, body FROM events WHERE box = $1",
//   box)); std::vector<event> rows; while (co_await s.async_next(rows) > 0) { use(rows);
//   rows.clear(); }
//
//   // a cursor in a transaction: fetch n rows at a time, whenever the caller wants
//   auto tx = co_await pg::async_begin(pool);
//   auto cur = co_await pg::async_declare<event>(tx, pg::sql("SELECT id, at, body FROM events"));
//   while (co_await cur.async_fetch(rows, 10'000) > 0) { use(rows); rows.clear(); }
//   co_await std::move(cur).async_close();
//   co_await std::move(tx).async_commit();
//
// A stream is one statement in the connection's pipeline: requests after it wait until
// it has been read to the end, and while its reader is not asking for rows (a chunk is
// full) the connection stops reading the socket, so the server waits: that is the
// back-pressure that keeps memory flat. Dropping a stream before its end cancels the
// statement on the server and discards what is left. A stream has no query_timeout.
// Column count and types are checked against Row on the first row (type_mismatch, with
// the column named in the diagnostics, and the statement is cancelled).
//
// Thread-safety: one async_next at a time; the stream and the vector it fills are the
// caller's until the operation completes.
#pragma once
#include <iterator>
#include <string>
#include <vector>

#include "inlet/pg/detail/erased_handler.hpp"
#include "inlet/pg/transaction.hpp"

namespace inlet::pg {

struct stream_options {
  std::size_t chunk =
      1024;  ///< rows collected before the reader is handed them (and reading pauses)
};

namespace detail {
void stream_resume(conn_impl& c);
void stream_drop(const conn_ptr& c, request_base* r);

template <class T>
struct is_view : std::bool_constant<std::is_same_v<T, std::string_view> ||
                                    std::is_same_v<T, std::span<const std::byte>>> {};
template <class T>
struct is_view<std::optional<T>> : is_view<T> {};
template <class Row, std::size_t... I>
constexpr bool has_view_field(std::index_sequence<I...>) {
  return (is_view<typename row_traits<Row>::template type<I>>::value || ...);
}

/// The typed part of a stream, on the connection's executor.
template <row_type Row>
struct stream_rows : stream_base {
  static_assert(
      !has_view_field<Row>(std::make_index_sequence<row_traits<Row>::size>{}),
      "a streamed row must own its fields: each arrives in its own result, freed once decoded "
      "(use std::string / std::vector<std::byte>, not views)");
  using next_op = std::unique_ptr<erased_handler<std::error_code, std::size_t>>;
  std::size_t chunk = 1024;
  std::vector<Row> buf;
  bool checked = false, ended = false;
  std::error_code fail;  // a row that does not fit Row, or the statement's error
  std::unique_ptr<diagnostics> fail_diag;
  next_op next;
  std::vector<Row>* out = nullptr;

  bool rows(conn_impl& c, result res) override {
    if (dropped || fail) return false;
    diagnostics d;
    if (!checked && res.columns() > 0) {
      if (auto ec = res.check<Row>(&d)) return reject(c, ec, d);
      checked = true;
    }
    const int n = res.rows();
    for (int i = 0; i < n; ++i) {
      auto& r = buf.emplace_back();
      if (auto ec = res.read_row(i, r, &d)) {
        buf.pop_back();
        return reject(c, ec, d);
      }
    }
    if (next && buf.size() >= chunk) hand_over(c);
    return !next && buf.size() >= chunk;
  }
  void drained(conn_impl& c) override {
    if (next && !buf.empty()) hand_over(c);
  }
  void deliver(conn_impl& c, std::error_code ec,
               completion_from) override {  // the Sync (or a failure)
    ended = true;
    if (!fail && ec) {
      fail = ec;
      fail_diag = std::move(this->diag);
    }
    if (next) hand_over(c);
  }
  /// On the connection's executor: the reader wants rows.
  void want(conn_impl& c, std::vector<Row>* o, next_op op) {
    if (next) {
      auto d = std::make_unique<diagnostics>();
      d->client_message = "another async_next is waiting";
      return op->complete(std::move(d), errc::busy, 0);
    }
    out = o;
    next = std::move(op);
    if (!buf.empty() || ended) return hand_over(c);
    stream_resume(c);
  }
  void hand_over(conn_impl& c) {
    auto op = std::move(next);
    const std::size_t n = buf.size();
    if (n > 0) {
      out->insert(out->end(), std::make_move_iterator(buf.begin()),
                  std::make_move_iterator(buf.end()));
      buf.clear();
      op->complete(nullptr, {}, n);
      stream_resume(c);  // room again
      return;
    }
    op->complete(fail ? std::move(fail_diag) : nullptr, fail, 0);  // the end (n == 0)
  }
  bool reject(conn_impl&, std::error_code ec, const diagnostics& d) {
    fail = ec;
    fail_diag = std::make_unique<diagnostics>(d);
    buf.clear();
    dropped = true;  // the rest is discarded (the Sync still ends it)
    return false;
  }
};

template <row_type Row, class Q>
struct stream_op final : stream_rows<Row> {
  Q q;
  explicit stream_op(Q qq) : q(std::move(qq)) {}
  std::string_view sql() const noexcept override { return q.text(); }
  void bind(param_buffer& pb, std::error_code& e) const override { q.bind(pb, e); }
  void destroy() noexcept override { delete this; }
};

template <row_type Row>
void stream_want(const conn_ptr& c, stream_rows<Row>* s, std::vector<Row>* out,
                 std::unique_ptr<erased_handler<std::error_code, std::size_t>> op) {
  asio::post(executor_of(*c),
             [c, s, out, op = std::move(op)]() mutable { s->want(*c, out, std::move(op)); });
}

template <class Handler>
struct drop_count {  // (ec, n) -> (ec)
  using inlet_wrapped_handler = void;
  Handler inner;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec, std::uint64_t) { std::move(inner)(ec); }
};
template <class Sig, class Handler>
void complete_now_values(Handler h, std::error_code ec) {  // (ec, 0) posted
  auto e = erase_handler<std::error_code, std::size_t>(std::move(h), asio::system_executor());
  e->complete(nullptr, ec, 0);
}

/// A query that owns its SQL text (cursor statements are made per use).
template <class Q>
struct owned_query {
  std::string text_;
  Q q;
  std::string_view text() const noexcept { return text_; }
  void bind(param_buffer& pb, std::error_code& ec) const { q.bind(pb, ec); }
};
}  // namespace detail

template <class Q>
struct is_query<detail::owned_query<Q>> : std::true_type {};

/// The reading end of a streamed statement. Move-only; dropping it before the end
/// cancels the statement.
template <row_type Row>
class row_stream {
 public:
  row_stream() = default;
  row_stream(detail::conn_ptr impl, detail::stream_rows<Row>* op) noexcept
      : impl_(std::move(impl)), op_(op) {}
  row_stream(row_stream&& o) noexcept
      : impl_(std::move(o.impl_)), op_(std::exchange(o.op_, nullptr)) {}
  row_stream& operator=(row_stream&& o) noexcept {
    if (this != &o) {
      reset();
      impl_ = std::move(o.impl_);
      op_ = std::exchange(o.op_, nullptr);
    }
    return *this;
  }
  ~row_stream() { reset(); }

  /// Appends the rows that arrived (at most about `chunk`, at least one) to `out`;
  /// void(error_code, std::size_t rows appended), 0 at the end. The statement's error,
  /// or a type mismatch, comes after the rows before it.
  template <class Token = pg::use_awaitable_t>
  auto async_next(std::vector<Row>& out, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [impl = impl_, op = op_, &out](auto h) {
          if (!impl || !op) {
            auto e = detail::erase_handler<std::error_code, std::size_t>(std::move(h),
                                                                         asio::system_executor());
            return e->complete(nullptr, errc::not_connected, 0);
          }
          detail::stream_want(impl, op, &out,
                              detail::erase_handler<std::error_code, std::size_t>(
                                  std::move(h), detail::executor_of(*impl)));
        },
        token);
  }

 private:
  void reset() {
    if (impl_ && op_) detail::stream_drop(impl_, op_);
    op_ = nullptr;
    impl_.reset();
  }
  detail::conn_ptr impl_;
  detail::stream_rows<Row>* op_ = nullptr;
};

namespace detail {
template <row_type Row, class Q>
row_stream<Row> start_stream(const conn_ptr& impl, Q q, stream_options o, std::uint64_t owner) {
  auto* op = new stream_op<Row, Q>(std::move(q));
  op->chunk = o.chunk ? o.chunk : 1;
  op->buf.reserve(op->chunk);
  op->is_stream = true;
  op->owner = owner;
  op->refs = 2;  // the connection's FIFO, and the row_stream
  start_request(impl, op);
  return row_stream<Row>(impl, op);
}
}  // namespace detail

/// Starts a streamed statement on a connection; its rows come through async_next.
template <row_type Row, class Q>
  requires is_query<Q>::value
row_stream<Row> stream(connection& c, Q q, stream_options o = {}) {
  return detail::start_stream<Row>(detail::impl_of(c), std::move(q), o, 0);
}
/// The same inside a transaction. A finished transaction gives a stream that fails.
template <row_type Row, class Q>
  requires is_query<Q>::value
row_stream<Row> stream(transaction& tx, Q q, stream_options o = {}) {
  if (!tx.active()) return {};
  return detail::start_stream<Row>(tx.state()->impl, std::move(q), o, tx.state()->lease);
}

/// A server-side cursor (DECLARE ... NO SCROLL CURSOR) of a transaction, read in
/// chunks of the caller's size. Move-only; dropping it closes it (if its transaction
/// goes on). Must not outlive its transaction.
template <row_type Row>
class cursor {
 public:
  cursor() = default;
  cursor(detail::tx_ptr t, std::string name) noexcept : t_(std::move(t)), name_(std::move(name)) {}
  cursor(cursor&& o) noexcept : t_(std::move(o.t_)), name_(std::move(o.name_)), done_(o.done_) {}
  cursor& operator=(cursor&& o) noexcept {
    if (this != &o) {
      drop();
      t_ = std::move(o.t_);
      name_ = std::move(o.name_);
      done_ = o.done_;
    }
    return *this;
  }
  ~cursor() { drop(); }
  bool active() const noexcept { return t_ && t_->active() && !name_.empty(); }

  /// FETCH FORWARD n: appends at most n rows to `out`. void(error_code, std::size_t
  /// rows), 0 at the end.
  template <class Token = pg::use_awaitable_t>
  auto async_fetch(std::vector<Row>& out, std::size_t n, Token&& token = {}) {
    using sig = void(std::error_code, std::size_t);
    const bool live = active() && !done_;
    detail::owned_query<pg::query<>> q{
        live ? "FETCH FORWARD " + std::to_string(n) + " FROM " + name_ : std::string(),
        pg::query<>("")};
    return asio::async_initiate<Token, sig>(
        [t = live ? t_ : nullptr, done = done_, this, &out](auto h,
                                                            detail::owned_query<pg::query<>> q) {
          using H = decltype(h);
          if (done) return detail::complete_now_values<sig>(std::move(h), std::error_code{});
          if (!t) return detail::fail_now<sig>(std::move(h), errc::transaction_closed);
          detail::initiate<sig>(
              t->impl, std::move(q), detail::into_sink<Row, std::vector<Row>>{&out},
              fetch_handler<H>{std::move(h), this}, {t->lease, detail::lease_action::none, true});
        },
        token, std::move(q));
  }
  /// CLOSE. void(error_code). Consumes the cursor.
  template <class Token = pg::use_awaitable_t>
  auto async_close(Token&& token = {}) && {
    using sig = void(std::error_code);
    detail::tx_ptr t = active() ? std::move(t_) : nullptr;
    detail::owned_query<pg::query<>> q{t ? "CLOSE " + name_ : std::string(), pg::query<>("")};
    name_.clear();
    return asio::async_initiate<Token, sig>(
        [t](auto h, detail::owned_query<pg::query<>> q) {
          using H = decltype(h);
          if (!t) return detail::fail_now<sig>(std::move(h), errc::transaction_closed);
          detail::initiate<void(std::error_code, std::uint64_t)>(
              t->impl, std::move(q), detail::exec_sink{}, detail::drop_count<H>{std::move(h)},
              {t->lease, detail::lease_action::none, true});
        },
        token, std::move(q));
  }

 private:
  template <class Handler>
  struct fetch_handler {
    using inlet_wrapped_handler = void;
    Handler inner;
    cursor* self;
    void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept {
      detail::pass_diagnostics(inner, d);
    }
    void operator()(std::error_code ec, std::size_t n) {
      if (!ec && n == 0) self->done_ = true;
      std::move(inner)(ec, n);
    }
  };
  void drop() {
    if (active()) detail::drop_cursor(t_, std::move(name_));
    t_.reset();
    name_.clear();
  }
  detail::tx_ptr t_;
  std::string name_;
  bool done_ = false;
};

namespace detail {
template <row_type Row, class Handler>
struct declare_handler {
  using inlet_wrapped_handler = void;
  Handler inner;
  tx_ptr t;
  std::string name;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec, std::uint64_t) {
    if (ec) return std::move(inner)(ec, cursor<Row>{});
    std::move(inner)(ec, cursor<Row>(std::move(t), std::move(name)));
  }
};
}  // namespace detail

/// DECLARE a cursor for q in the transaction. void(error_code, cursor<Row>).
template <row_type Row, class Q, class Token = pg::use_awaitable_t>
  requires is_query<Q>::value
auto async_declare(transaction& tx, Q q, Token&& token = {}) {
  using sig = void(std::error_code, cursor<Row>);
  detail::tx_ptr t = tx.active() ? tx.state() : nullptr;
  std::string name = t ? "inlet_c" + std::to_string(++t->cursors) : std::string();
  detail::owned_query<Q> dq{
      t ? "DECLARE " + name + " NO SCROLL CURSOR FOR " + std::string(q.text()) : std::string(),
      std::move(q)};
  return asio::async_initiate<Token, sig>(
      [t, name](auto h, detail::owned_query<Q> dq) {
        using H = decltype(h);
        if (!t) return detail::fail_now<sig>(std::move(h), errc::transaction_closed);
        detail::initiate<void(std::error_code, std::uint64_t)>(
            t->impl, std::move(dq), detail::exec_sink{},
            detail::declare_handler<Row, H>{std::move(h), t, name},
            {t->lease, detail::lease_action::none, true});
      },
      token, std::move(dq));
}

}  // namespace inlet::pg
