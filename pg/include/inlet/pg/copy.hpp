// COPY in and out, binary format, typed rows (tuples, Describe structs, plain aggregates:
// the same codecs as queries) or raw bytes.
//
//   // typed, one call: rows from any range
//   std::uint64_t n = co_await pg::async_copy_in(conn, "COPY msg (id, body) FROM STDIN (FORMAT
//   binary)", rows);
//   // streaming: a writer, in pieces of the caller's choosing
//   auto w = co_await pg::async_copy_in(conn, "COPY msg (id, body) FROM STDIN (FORMAT binary)");
//   co_await w.async_write_rows(batch1);
//   co_await w.async_write_rows(batch2);
//   n = co_await std::move(w).async_finish();
//   // out: typed chunks, or raw bytes
//   auto r = co_await pg::async_copy_out(conn, "COPY msg TO STDOUT (FORMAT binary)");
//   std::vector<msg_row> rows;
//   while (co_await r.async_read(rows) > 0) { use(rows); rows.clear(); }
//
// A COPY owns its connection while it runs: it starts once the requests before it are
// answered, and requests issued meanwhile (by anyone) wait until it ends. Inside a
// transaction, pass the transaction instead of the connection.
//
// Types: binary COPY carries no type OIDs, so the C++ types must match the columns
// exactly (int4 for int4, ...): the server rejects a mismatch on the way in (22P03
// "incorrect binary data format", or 08P01 "insufficient data left in message" for a
// value shorter than the column's type; the connection stays usable even though 08P01
// compares equal to condition::connection_error), and on the way out a field whose length does not
// fit the C++ type fails with invalid_value. Errors mid-copy (a bad value, a constraint, a writer
// or reader dropped early, an encoding failure) end the COPY cleanly: the connection stays usable.
// Dropping a writer aborts its COPY (nothing is inserted); dropping a reader cancels its COPY on
// the server and discards the rest.
//
// Thread-safety: a writer or reader is used by one caller at a time, one operation at a
// time (a second one fails with errc::busy).
#pragma once
#include <cstring>
#include <iterator>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include "inlet/pg/detail/erased_handler.hpp"
#include "inlet/pg/transaction.hpp"

namespace inlet::pg {

namespace detail {
void start_copy(const conn_ptr& c, std::string sql, bool out, std::uint64_t owner,
                std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> h);
void copy_write(const conn_ptr& c, std::uint64_t session, std::string data,
                std::unique_ptr<erased_handler<std::error_code>> h);
void copy_end(const conn_ptr& c, std::uint64_t session, std::string abort_msg,
              std::unique_ptr<erased_handler<std::error_code, std::uint64_t>> h);
void copy_read(const conn_ptr& c, std::uint64_t session, std::size_t max,
               std::unique_ptr<erased_handler<std::error_code, std::string, bool>> h);
void copy_drop(const conn_ptr& c, std::uint64_t session);

// ---- binary COPY format ---------------------------------------------------------------
inline constexpr char copy_signature[11] = {'P',  'G',    'C',  'O',  'P', 'Y',
                                            '\n', '\377', '\r', '\n', '\0'};
inline void copy_header(std::string& out) {
  out.append(copy_signature, 11);
  out.append(8, '\0');  // flags 0 (no OIDs), header extension length 0
}
inline void copy_trailer(std::string& out) {
  out.append("\xff\xff", 2);
}

template <class Row, std::size_t... I>
void copy_encode_fields(const Row& r, std::string& out, std::error_code& ec,
                        std::index_sequence<I...>) {
  auto& row = const_cast<Row&>(r);  // row_traits::get takes a mutable row; nothing is modified
  (
      [&] {
        const std::size_t at = out.size();
        out.append(4, '\0');
        const bool present = encode_value(row_traits<Row>::template get<I>(row), out, ec);
        const std::int32_t len = present ? static_cast<std::int32_t>(out.size() - at - 4) : -1;
        const std::uint32_t be = __builtin_bswap32(static_cast<std::uint32_t>(len));
        std::memcpy(out.data() + at, &be, 4);
      }(),
      ...);
}
/// Appends one tuple in binary COPY format (field count, then length + bytes per field).
template <row_type Row>
void copy_encode_row(const Row& r, std::string& out, std::error_code& ec) {
  constexpr std::size_t n = row_traits<Row>::size;
  const std::uint16_t be = __builtin_bswap16(static_cast<std::uint16_t>(n));
  out.append(reinterpret_cast<const char*>(&be), 2);
  copy_encode_fields(r, out, ec, std::make_index_sequence<n>{});
}
}  // namespace detail

/// Incremental parser of the binary COPY format (sans-io): feed it bytes split anywhere;
/// it calls back once per complete tuple with views of its fields, valid during the
/// call. Only a tuple that straddles two feeds is copied.
class copy_parser {
 public:
  struct field {
    const char* data = nullptr;
    int length = -1;  ///< -1: NULL
  };
  /// Parses `in`; on_row(std::span<const field>) per tuple, returning an error_code to
  /// stop. errc::invalid_value on a malformed stream (bad signature, OIDs, lengths, bytes
  /// after the trailer).
  template <class F>
  std::error_code feed(std::string_view in, F&& on_row) {
    if (carry_.empty()) {
      std::size_t used = 0;
      auto ec = parse(in, used, on_row);
      if (!ec && used < in.size()) carry_.assign(in.substr(used));
      return ec;
    }
    carry_.append(in);
    std::size_t used = 0;
    auto ec = parse(carry_, used, on_row);
    carry_.erase(0, used);
    return ec;
  }
  bool finished() const noexcept { return done_; }
  /// Bytes of an incomplete tuple held back for the next feed.
  std::size_t pending() const noexcept { return carry_.size(); }

 private:
  static std::uint32_t be32(const char* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return __builtin_bswap32(v);
  }
  template <class F>
  std::error_code parse(std::string_view in, std::size_t& used, F& on_row) {
    const char* p = in.data();
    const std::size_t n = in.size();
    std::size_t pos = 0;
    if (!header_) {
      if (n < 19) return {};
      if (std::memcmp(p, detail::copy_signature, 11) != 0)
        return make_error_code(errc::invalid_value);
      if (be32(p + 11) & (1u << 16))
        return make_error_code(errc::invalid_value);  // OIDs: not produced here
      const std::uint32_t ext = be32(p + 15);
      if (ext > (1u << 20)) return make_error_code(errc::invalid_value);
      if (n < 19 + ext) return {};
      pos = used = 19 + ext;
      header_ = true;
    }
    while (pos < n) {
      if (done_) return make_error_code(errc::invalid_value);  // bytes after the trailer
      if (n - pos < 2) break;
      const auto count = static_cast<std::int16_t>((static_cast<unsigned char>(p[pos]) << 8) |
                                                   static_cast<unsigned char>(p[pos + 1]));
      if (count == -1) {
        done_ = true;
        pos = used = pos + 2;
        continue;
      }
      if (count < 0) return make_error_code(errc::invalid_value);
      std::size_t q = pos + 2;
      fields_.clear();
      bool complete = true;
      for (int i = 0; i < count; ++i) {
        if (n - q < 4) {
          complete = false;
          break;
        }
        const auto len = static_cast<std::int32_t>(be32(p + q));
        q += 4;
        if (len < -1) return make_error_code(errc::invalid_value);
        if (len == -1) {
          fields_.push_back({nullptr, -1});
          continue;
        }
        if (n - q < static_cast<std::size_t>(len)) {
          complete = false;
          break;
        }
        fields_.push_back({p + q, len});
        q += static_cast<std::size_t>(len);
      }
      if (!complete) break;
      if (auto ec = on_row(std::span<const field>(fields_))) return ec;
      pos = used = q;
    }
    return {};
  }

  std::string carry_;
  std::vector<field> fields_;
  bool header_ = false, done_ = false;
};

namespace detail {
template <class Row, std::size_t... I>
std::error_code copy_decode_fields(std::span<const copy_parser::field> f, Row& out,
                                   std::index_sequence<I...>) {
  std::error_code ec;
  ((ec = decode_value(f[I].data, f[I].length, row_traits<Row>::template get<I>(out))) || ...);
  return ec;
}
/// One tuple into Row: the field count must match; each field is decoded by its C++ type.
template <row_type Row>
std::error_code copy_decode_row(std::span<const copy_parser::field> f, Row& out) {
  constexpr std::size_t n = row_traits<Row>::size;
  if (f.size() != n) return make_error_code(errc::column_count_mismatch);
  return copy_decode_fields(f, out, std::make_index_sequence<n>{});
}

/// Which connection and owner tag a COPY runs under: a connection's, or a transaction's.
struct copy_target {
  conn_ptr impl;
  std::uint64_t owner = 0;
  bool closed = false;  // a finished transaction
};
inline copy_target target_of(connection& c) {
  return {impl_of(c), 0, false};
}
inline copy_target target_of(transaction& t) {
  if (!t.active()) return {nullptr, 0, true};
  return {t.state()->impl, t.state()->lease, false};
}

template <class... Args, class Handler>
void complete_now(Handler h, std::error_code ec, Args... args) {
  auto op = erase_handler<std::error_code, Args...>(std::move(h),
                                                    asio::any_io_executor(asio::system_executor()));
  auto d = std::make_unique<diagnostics>();
  d->client_message = ec.message();
  op->complete(std::move(d), ec, std::move(args)...);
}
template <class Handler>
struct drop_count_handler {  // (ec, rows) -> (ec)
  using inlet_wrapped_handler = void;
  Handler inner;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec, std::uint64_t) { std::move(inner)(ec); }
};
}  // namespace detail

/// The writing side of a COPY ... FROM STDIN. Move-only; dropping an active writer
/// aborts its COPY.
class copy_writer {
 public:
  copy_writer() = default;
  copy_writer(detail::conn_ptr impl, std::uint64_t session) noexcept
      : impl_(std::move(impl)), session_(session) {}
  copy_writer(copy_writer&& o) noexcept
      : impl_(std::move(o.impl_)), session_(std::exchange(o.session_, 0)), typed_(o.typed_) {}
  copy_writer& operator=(copy_writer&& o) noexcept {
    if (this != &o) {
      drop();
      impl_ = std::move(o.impl_);
      session_ = std::exchange(o.session_, 0);
      typed_ = o.typed_;
    }
    return *this;
  }
  ~copy_writer() { drop(); }
  bool active() const noexcept { return impl_ && session_ != 0; }

  /// Raw bytes, in the format the COPY statement names (binary: with its header, which
  /// the caller writes). void(error_code); completes once the kernel has them.
  template <class Token = pg::use_awaitable_t>
  auto async_write(std::string data, Token&& token = {}) {
    return write(std::move(data), std::forward<Token>(token));
  }
  template <class Token = pg::use_awaitable_t>
  auto async_write(std::span<const std::byte> data, Token&& token = {}) {
    return write(std::string(reinterpret_cast<const char*>(data.data()), data.size()),
                 std::forward<Token>(token));
  }
  /// Typed rows in binary format (the header goes before the first ones, the trailer at
  /// async_finish). An encoding error aborts the COPY. void(error_code)
  template <class Range, class Token = pg::use_awaitable_t>
    requires std::ranges::input_range<const Range&>
  auto async_write_rows(const Range& rows, Token&& token = {}) {
    std::string buf;
    if (!typed_) detail::copy_header(buf);
    typed_ = true;
    std::error_code ec;
    for (const auto& r : rows) {
      detail::copy_encode_row(r, buf, ec);
      if (ec) break;
    }
    if (ec && active()) {  // the COPY cannot go on with a bad value: abort it
      detail::copy_drop(impl_, std::exchange(session_, 0));
      buf.clear();
    }
    return write(std::move(buf), std::forward<Token>(token), ec);
  }
  /// Ends the COPY (the binary trailer first, after typed rows). void(error_code,
  /// std::uint64_t rows copied). Consumes the writer.
  template <class Token = pg::use_awaitable_t>
  auto async_finish(Token&& token = {}) && {
    auto impl = std::move(impl_);
    const auto session = std::exchange(session_, 0);
    const bool trailer = typed_;
    return asio::async_initiate<Token, void(std::error_code, std::uint64_t)>(
        [impl, session, trailer](auto h) {
          if (!impl || session == 0)
            return detail::complete_now<std::uint64_t>(std::move(h), errc::copy_closed, 0);
          auto op = detail::erase_handler<std::error_code, std::uint64_t>(
              std::move(h), detail::executor_of(*impl));
          if (!trailer) return detail::copy_end(impl, session, {}, std::move(op));
          std::string t;
          detail::copy_trailer(t);
          detail::copy_write(impl, session, std::move(t),
                             detail::erase_handler<std::error_code>(
                                 [impl, session, op = std::move(op)](std::error_code ec) mutable {
                                   if (ec) return op->complete(nullptr, ec, 0);
                                   detail::copy_end(impl, session, {}, std::move(op));
                                 },
                                 detail::executor_of(*impl)));
        },
        token);
  }
  /// Aborts the COPY: nothing of it is kept; the connection goes on. void(error_code).
  template <class Token = pg::use_awaitable_t>
  auto async_abort(std::string why, Token&& token = {}) && {
    auto impl = std::move(impl_);
    const auto session = std::exchange(session_, 0);
    return asio::async_initiate<Token, void(std::error_code)>(
        [impl, session](auto h, std::string why) {
          if (!impl || session == 0) return detail::complete_now<>(std::move(h), errc::copy_closed);
          using H = decltype(h);
          detail::copy_end(
              impl, session, why.empty() ? std::string("aborted by the client") : std::move(why),
              detail::erase_handler<std::error_code, std::uint64_t>(
                  detail::drop_count_handler<H>{std::move(h)}, detail::executor_of(*impl)));
        },
        token, std::move(why));
  }

 private:
  // One initiation for every outcome, so that each token sees one operation type.
  template <class Token>
  auto write(std::string data, Token&& token, std::error_code failed = {}) {
    return asio::async_initiate<Token, void(std::error_code)>(
        [impl = impl_, session = session_, failed](auto h, std::string data) {
          if (failed) return detail::complete_now<>(std::move(h), failed);
          if (!impl || session == 0) return detail::complete_now<>(std::move(h), errc::copy_closed);
          detail::copy_write(
              impl, session, std::move(data),
              detail::erase_handler<std::error_code>(std::move(h), detail::executor_of(*impl)));
        },
        token, std::move(data));
  }
  void drop() {
    if (active()) detail::copy_drop(impl_, session_);
    session_ = 0;
  }

  detail::conn_ptr impl_;
  std::uint64_t session_ = 0;
  bool typed_ = false;
};

/// The reading side of a COPY ... TO STDOUT. Move-only; dropping an active reader
/// cancels its COPY on the server and discards the rest.
class copy_reader {
 public:
  copy_reader() = default;
  copy_reader(detail::conn_ptr impl, std::uint64_t session) noexcept
      : impl_(std::move(impl)), session_(session) {}
  copy_reader(copy_reader&& o) noexcept
      : impl_(std::move(o.impl_)),
        session_(std::exchange(o.session_, 0)),
        parser_(std::move(o.parser_)) {}
  copy_reader& operator=(copy_reader&& o) noexcept {
    if (this != &o) {
      drop();
      impl_ = std::move(o.impl_);
      session_ = std::exchange(o.session_, 0);
      parser_ = std::move(o.parser_);
    }
    return *this;
  }
  ~copy_reader() { drop(); }
  /// True until the end of the data was read (or the COPY failed).
  bool active() const noexcept { return impl_ && session_ != 0; }

  /// The next bytes (whole rows as the server sent them, up to about max_bytes);
  /// empty at the end. void(error_code, std::string).
  template <class Token = pg::use_awaitable_t>
  auto async_read_raw(std::size_t max_bytes = 256 * 1024, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::string)>(
        [this, max_bytes](auto h) {
          using H = decltype(h);
          if (!active())
            return detail::complete_now<std::string>(std::move(h), std::error_code{},
                                                     std::string{});
          detail::copy_read(impl_, session_, max_bytes,
                            detail::erase_handler<std::error_code, std::string, bool>(
                                raw_handler<H>{std::move(h), this}, detail::executor_of(*impl_)));
        },
        token);
  }
  /// Typed rows (binary format) appended to `out`; void(error_code, std::size_t rows
  /// appended), 0 at the end. The reader must outlive the operation.
  template <row_type Row, class Token = pg::use_awaitable_t>
  auto async_read(std::vector<Row>& out, Token&& token = {}) {
    return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        [this, &out](auto h) {
          using H = decltype(h);
          typed_handler<H, Row>{std::move(h), this, &out, nullptr}.next();
        },
        token);
  }

 private:
  template <class Handler>
  struct raw_handler {
    using inlet_wrapped_handler = void;
    Handler inner;
    copy_reader* self;
    void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept {
      detail::pass_diagnostics(inner, d);
    }
    void operator()(std::error_code ec, std::string data, bool end) {
      if (ec || end) self->session_ = 0;
      std::move(inner)(ec, std::move(data));
    }
  };
  // Reads chunks until at least one row was decoded, or the end.
  template <class Handler, class Row>
  struct typed_handler {
    using inlet_wrapped_handler = void;
    Handler inner;
    copy_reader* self;
    std::vector<Row>* out;
    std::unique_ptr<diagnostics> diag;
    void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { diag = std::move(d); }
    void next() {
      if (!self->active()) return finish({}, 0);
      auto impl = self->impl_;
      const auto session = self->session_;
      detail::copy_read(impl, session, 256 * 1024,
                        detail::erase_handler<std::error_code, std::string, bool>(
                            std::move(*this), detail::executor_of(*impl)));
    }
    void operator()(std::error_code ec, std::string data, bool end) {
      if (ec) {
        self->session_ = 0;
        return finish(ec, 0);
      }
      const std::size_t before = out->size();
      ec = self->parser_.feed(data, [&](std::span<const copy_parser::field> f) -> std::error_code {
        auto& r = out->emplace_back();
        auto e = detail::copy_decode_row(f, r);
        if (e) out->pop_back();
        return e;
      });
      const std::size_t n = out->size() - before;
      if (end) self->session_ = 0;
      if (ec) {  // a row the C++ type cannot hold: stop the COPY, report it
        if (self->active()) detail::copy_drop(self->impl_, std::exchange(self->session_, 0));
        diag = std::make_unique<diagnostics>();
        diag->client_message = "binary COPY data does not fit the C++ row type: " + ec.message();
        return finish(ec, n);
      }
      if (n == 0 && !end) return next();
      finish({}, n);
    }
    void finish(std::error_code ec, std::size_t n) {
      detail::pass_diagnostics(inner, diag);
      std::move(inner)(ec, n);
    }
  };

  void drop() {
    if (active()) detail::copy_drop(impl_, session_);
    session_ = 0;
  }

  detail::conn_ptr impl_;
  std::uint64_t session_ = 0;
  copy_parser parser_;
};

namespace detail {
template <class Handler, class Result>
struct copy_start_handler {
  using inlet_wrapped_handler = void;
  Handler inner;
  conn_ptr impl;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(inner, d); }
  void operator()(std::error_code ec, std::uint64_t session) {
    if (ec) return std::move(inner)(ec, Result{});
    std::move(inner)(ec, Result(impl, session));
  }
};

template <class Sig, class Source, class Token, class F>
auto copy_initiate(Source& src, Token&& token, F f) {
  copy_target t = target_of(src);
  return asio::async_initiate<Token, Sig>(
      [t = std::move(t), f = std::move(f)](auto h) mutable {
        if (t.closed || !t.impl) return fail_now<Sig>(std::move(h), errc::transaction_closed);
        f(t, std::move(h));
      },
      token);
}

/// The one-call typed COPY IN: start, rows in pieces of about 256 KiB, trailer, end.
template <class Handler, class Range>
struct copy_in_all {
  using inlet_wrapped_handler = void;
  Handler inner;
  const Range* rows;
  std::ranges::iterator_t<const Range> it;
  conn_ptr impl;
  std::uint64_t session = 0;
  bool header_sent = false;
  std::unique_ptr<diagnostics> diag;
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { diag = std::move(d); }

  void start(const copy_target& t, std::string sql) {
    impl = t.impl;
    auto impl2 = impl;
    auto ex = executor_of(*impl);
    start_copy(impl2, std::move(sql), false, t.owner,
               erase_handler<std::error_code, std::uint64_t>(started{std::move(*this)}, ex));
  }
  struct started {
    using inlet_wrapped_handler = void;
    copy_in_all inner;
    void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { inner.diag = std::move(d); }
    void operator()(std::error_code ec, std::uint64_t session) {
      if (ec) return inner.done(ec, 0);
      inner.session = session;
      inner.it = std::ranges::begin(*inner.rows);
      inner.pump();
    }
  };
  struct wrote {
    using inlet_wrapped_handler = void;
    copy_in_all inner;
    void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { inner.diag = std::move(d); }
    void operator()(std::error_code ec) {
      if (ec) return inner.done(ec, 0);
      inner.pump();
    }
  };
  struct ended {
    using inlet_wrapped_handler = void;
    copy_in_all inner;
    void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { inner.diag = std::move(d); }
    void operator()(std::error_code ec, std::uint64_t n) { inner.done(ec, n); }
  };
  void pump() {
    std::string buf;
    if (!header_sent) {
      copy_header(buf);
      header_sent = true;
    }
    std::error_code ec;
    const auto end = std::ranges::end(*rows);
    while (it != end && buf.size() < 256 * 1024) {
      copy_encode_row(*it, buf, ec);
      ++it;
      if (ec) break;
    }
    auto ex = executor_of(*impl);
    if (ec) {  // abort: the server forgets what it got; report the encoding error
      auto impl2 = impl;
      auto s = session;
      auto d = std::make_unique<diagnostics>();
      d->client_message = "a row could not be encoded: " + ec.message();
      diag = std::move(d);
      copy_end(impl2, s, "a row could not be encoded",
               erase_handler<std::error_code, std::uint64_t>(aborted{std::move(*this), ec}, ex));
      return;
    }
    if (it == end) {
      copy_trailer(buf);
      auto impl2 = impl;
      auto s = session;
      copy_write(impl2, s, std::move(buf),
                 erase_handler<std::error_code>(
                     [self = std::move(*this)](std::error_code e) mutable {
                       if (e) return self.done(e, 0);
                       auto impl3 = self.impl;
                       auto s3 = self.session;
                       auto ex3 = executor_of(*impl3);
                       copy_end(impl3, s3, {},
                                erase_handler<std::error_code, std::uint64_t>(
                                    ended{std::move(self)}, ex3));
                     },
                     ex));
      return;
    }
    auto impl2 = impl;
    auto s = session;
    copy_write(impl2, s, std::move(buf),
               erase_handler<std::error_code>(wrote{std::move(*this)}, ex));
  }
  struct aborted {
    using inlet_wrapped_handler = void;
    copy_in_all inner;
    std::error_code why;
    void operator()(std::error_code, std::uint64_t) { inner.done(why, 0); }
  };
  void done(std::error_code ec, std::uint64_t n) {
    pass_diagnostics(inner, diag);
    std::move(inner)(ec, n);
  }
};
}  // namespace detail

/// COPY ... FROM STDIN: a writer once the server is ready. void(error_code, copy_writer).
/// `source`: a connection, or a transaction (the COPY runs inside it).
template <class Source, class Token = pg::use_awaitable_t>
  requires(!std::ranges::input_range<std::remove_cvref_t<Token>>)  // rows go to the overload below
auto async_copy_in(Source& source, std::string sql, Token&& token = {}) {
  using sig = void(std::error_code, copy_writer);
  return detail::copy_initiate<sig>(
      source, std::forward<Token>(token), [sql = std::move(sql)](auto& t, auto h) mutable {
        using H = decltype(h);
        auto ex = detail::executor_of(*t.impl);
        detail::start_copy(
            t.impl, std::move(sql), false, t.owner,
            detail::erase_handler<std::error_code, std::uint64_t>(
                detail::copy_start_handler<H, copy_writer>{std::move(h), t.impl}, ex));
      });
}

/// Typed rows from a range, in one call (binary format). void(error_code, std::uint64_t
/// rows copied). The range must outlive the operation.
template <class Source, class Range, class Token = pg::use_awaitable_t>
  requires std::ranges::input_range<const Range&>
auto async_copy_in(Source& source, std::string sql, const Range& rows, Token&& token = {}) {
  using sig = void(std::error_code, std::uint64_t);
  return detail::copy_initiate<sig>(
      source, std::forward<Token>(token), [sql = std::move(sql), &rows](auto& t, auto h) mutable {
        using H = decltype(h);
        detail::copy_in_all<H, Range> op{std::move(h), &rows, {}, nullptr, 0, false, nullptr};
        op.start(t, std::move(sql));
      });
}

/// COPY ... TO STDOUT: a reader once the server is ready. void(error_code, copy_reader).
template <class Source, class Token = pg::use_awaitable_t>
auto async_copy_out(Source& source, std::string sql, Token&& token = {}) {
  using sig = void(std::error_code, copy_reader);
  return detail::copy_initiate<sig>(
      source, std::forward<Token>(token), [sql = std::move(sql)](auto& t, auto h) mutable {
        using H = decltype(h);
        auto ex = detail::executor_of(*t.impl);
        detail::start_copy(
            t.impl, std::move(sql), true, t.owner,
            detail::erase_handler<std::error_code, std::uint64_t>(
                detail::copy_start_handler<H, copy_reader>{std::move(h), t.impl}, ex));
      });
}

}  // namespace inlet::pg
