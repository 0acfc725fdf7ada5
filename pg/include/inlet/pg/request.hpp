// pg::async_request: one query on anything that satisfies the concepts of concepts.hpp.
//
//   std::vector<message_row> rows;
//   co_await pg::async_request(conn, q, pg::into(rows));    // a connection, or a handle
//   co_await pg::async_request(pool, q, pg::into(rows));    // a provider: acquire, run, release
//   pg::result r = co_await pg::async_request(my_wrapper, q);
//
// On a query target the query runs there; on a connection provider a connection is
// obtained first (async_get_connection) and held until the request completes (a pooled
// connection goes back to its pool then). Typed rows decode with the target's OID map
// (types_of: pg::connection's own, or a user target's types()). For pg::connection
// itself the rows decode inside the connection's completion, as conn.async_query(q,
// into) does; for other targets from the raw result afterwards.
//
// Signatures: void(std::error_code, std::size_t rows) with into(...), else
// void(std::error_code, pg::result). The default token makes co_await work (a failure
// throws pg::error). The target or provider must outlive the operation.
#pragma once
#include <boost/asio/associator.hpp>
#include <memory>

#include "inlet/pg/concepts.hpp"
#include "inlet/pg/connection.hpp"

namespace inlet::pg {

namespace detail {
template <class T>
consteval bool check_request_target() {
  if constexpr (requires { typename T::connection_type; }) {
    static_assert(connection_provider<T>,
                  "pg::async_request: this type declares a connection_type but is not a connection "
                  "provider: it needs async_get_connection(token) completing with "
                  "(std::error_code, connection_type), and connection_type must be a query target");
  } else {
    static_assert(
        has_executor<T> || requires(T& t) { *t; },
        "pg::async_request: this type is not a query target: it has no get_executor() "
        "(and no operator* giving a connection)");
    static_assert(query_target<T>,
                  "pg::async_request: this type is not a query target: it needs get_executor() and "
                  "async_query(pg::query, token) completing with (std::error_code, pg::result), or "
                  "operator* giving such a type");
  }
  return true;
}

struct raw_rows {};  // the raw form: complete with the result itself

template <class T, bool = connection_provider<T>>
struct provider_connection {
  using type = int;  // unused: T is a target
};
template <class T>
struct provider_connection<T, true> {
  using type = typename T::connection_type;
};

// The intermediate completion handler of async_request: passes the provider's connection
// on to the query, decodes the rows, and completes the caller's handler H inline (every
// step already runs on H's associated executor, which this handler reports as its own,
// with H's allocator and cancellation slot: see the associator below). Diagnostics of a
// failed query reach H (pass_diagnostics), so a thrown pg::error carries them.
template <class T, class Q, class Into, class H>
struct request_handler {
  static constexpr bool provider = connection_provider<T>;
  using conn_t = typename provider_connection<T>::type;

  T* target;
  Q q;
  Into into;
  H h;
  std::unique_ptr<conn_t>
      conn{};  // a provider's connection, held until completion (stable address)

  void start() {
    if constexpr (provider)
      target->async_get_connection(std::move(*this));
    else
      run(*target);
  }
  template <class C>
    requires(provider && std::is_same_v<C, conn_t>)
  void operator()(std::error_code ec, C c) {
    if (ec) return finish(ec, result{});
    conn = std::make_unique<conn_t>(std::move(c));
    run(*conn);
  }
  void operator()(std::error_code ec, result r) { finish(ec, std::move(r)); }
  void operator()(std::error_code ec, std::size_t n) {  // pg::connection decoded the rows already
    conn.reset();
    std::move(h)(ec, n);
  }
  void set_diagnostics(std::unique_ptr<diagnostics> d) noexcept { pass_diagnostics(h, d); }

 private:
  template <class C>
  void run(C& c) {
    auto& d = unwrap_connection(c);
    Q qq = std::move(q);  // out of *this before *this moves into the operation
    if constexpr (!std::is_same_v<Into, raw_rows> &&
                  std::is_same_v<std::remove_cvref_t<decltype(d)>, connection>)
      d.async_query(std::move(qq), into, std::move(*this));
    else
      d.async_query(std::move(qq), std::move(*this));
  }
  void finish(std::error_code ec, result r) {
    if constexpr (std::is_same_v<Into, raw_rows>) {
      conn.reset();
      std::move(h)(ec, std::move(r));
    } else {
      std::size_t n = 0;
      if (!ec) {
        const type_map* m = nullptr;
        if constexpr (provider) {
          if (conn) m = inlet::pg::types_of(*conn);
        } else {
          m = inlet::pg::types_of(*target);
        }
        type_scope scope(m);
        ec = r.template read_all<typename Into::row_type>(*into.out);
        if (!ec) n = static_cast<std::size_t>(r.rows());
      }
      conn.reset();
      std::move(h)(ec, n);
    }
  }
};

template <class T, class Q, class Into>
struct request_init {
  T* target;
  template <class H>
  void operator()(H h, Q q, Into into) const {
    using handler = request_handler<T, Q, Into, H>;
    handler{target, std::move(q), into, std::move(h)}.start();
  }
};

template <class T>
struct is_into : std::false_type {};
template <class Row, class Out>
struct is_into<into_t<Row, Out>> : std::true_type {};
}  // namespace detail

/// Runs q on t (a query target or a connection provider) and appends typed rows to
/// into's container. Completes with (std::error_code, std::size_t rows).
template <class T, class Q, class Row, class Out, class Token = pg::use_awaitable_t>
auto async_request(T& t, Q q, into_t<Row, Out> into, Token&& token = {}) {
  static_assert(detail::check_request_target<T>());
  static_assert(is_query<Q>::value,
                "pg::async_request: q must be a query (pg::sql, a _SQL builder, make_query)");
  return asio::async_initiate<Token, void(std::error_code, std::size_t)>(
      detail::request_init<T, Q, into_t<Row, Out>>{&t}, token, std::move(q), into);
}

/// Runs q on t and hands back the raw result. Completes with (std::error_code, result).
template <class T, class Q, class Token = pg::use_awaitable_t>
  requires(!detail::is_into<std::remove_cvref_t<Token>>::value)
auto async_request(T& t, Q q, Token&& token = {}) {
  static_assert(detail::check_request_target<T>());
  static_assert(is_query<Q>::value,
                "pg::async_request: q must be a query (pg::sql, a _SQL builder, make_query)");
  return asio::async_initiate<Token, void(std::error_code, result)>(
      detail::request_init<T, Q, detail::raw_rows>{&t}, token, std::move(q), detail::raw_rows{});
}

}  // namespace inlet::pg

// The intermediate handler has its caller's associated executor, allocator and
// cancellation slot.
template <template <class, class> class Associator, class T, class Q, class Into, class H,
          class Default>
struct boost::asio::associator<Associator, inlet::pg::detail::request_handler<T, Q, Into, H>,
                               Default> {
  using type = typename Associator<H, Default>::type;
  static type get(const inlet::pg::detail::request_handler<T, Q, Into, H>& r) noexcept {
    return Associator<H, Default>::get(r.h);
  }
  static auto get(const inlet::pg::detail::request_handler<T, Q, Into, H>& r,
                  const Default& d) noexcept -> decltype(Associator<H, Default>::get(r.h, d)) {
    return Associator<H, Default>::get(r.h, d);
  }
};
