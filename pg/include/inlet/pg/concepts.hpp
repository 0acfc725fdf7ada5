// What a query can run on, and what yields one: the two concepts that let a user type
// stand in for pg::connection and pg::pool (a wrapper that logs or meters, a test double
// without a server, another pool). pg::async_request (request.hpp) takes either.
//
//   query target   something with get_executor() and async_query(query, token)
//                  completing with (std::error_code, pg::result): pg::connection, a
//                  handle whose operator* gives one (pg::pooled_connection,
//                  std::unique_ptr<pg::connection>, ...), a user's type. Optionally
//                  types() -> const pg::type_map* (the OID map its results decode with).
//   connection     something with a connection_type (a query target, or a handle to
//   provider       one) and async_get_connection(token) completing with
//                  (std::error_code, connection_type): pg::pool, a user's type.
//                  Completion handlers run on their associated executor (or, for a
//                  handler without one, wherever the provider chooses).
//
// The concepts check the member calls with a probe completion handler; a type that does
// not satisfy them is rejected by async_request with a static_assert naming what is
// missing.
#pragma once
#include <concepts>
#include <system_error>
#include <type_traits>
#include <utility>

#include "inlet/pg/oid_map.hpp"
#include "inlet/pg/query.hpp"
#include "inlet/pg/result.hpp"

namespace inlet::pg {

namespace detail {
/// Completion handlers used only to test the member calls in the concepts.
struct probe_result_handler {
  void operator()(std::error_code, result) const {}
};
template <class C>
struct probe_connection_handler {
  void operator()(std::error_code, C) const {}
};

template <class C>
concept has_executor = requires(const C& c) { c.get_executor(); };
template <class C>
concept runs_queries =
    requires(C& c, query<> q) { c.async_query(std::move(q), probe_result_handler{}); };
}  // namespace detail

/// A type a query runs on directly.
template <class C>
concept direct_query_target = detail::has_executor<C> && detail::runs_queries<C>;

/// A query target: a direct one, or a handle (one operator* away) to a direct one.
template <class C>
concept query_target =
    direct_query_target<C> || (requires(C& c) {
      *c;
    } && direct_query_target<std::remove_cvref_t<decltype(*std::declval<C&>())>>);

/// The direct target behind c (c itself, or *c for a handle).
template <query_target C>
decltype(auto) unwrap_connection(C& c) noexcept {
  if constexpr (direct_query_target<C>)
    return (c);
  else
    return (*c);
}

/// The OID map results of c decode with: c.types() when c has it, else none.
template <query_target C>
const type_map* types_of(C& c) noexcept {
  auto& d = unwrap_connection(c);
  if constexpr (requires {
                  { d.types() } -> std::convertible_to<const type_map*>;
                })
    return d.types();
  else
    return nullptr;
}

/// A connection provider: asynchronously yields a connection_type (a query target).
template <class P>
concept connection_provider = requires {
  typename P::connection_type;
} && query_target<typename P::connection_type> && requires(P& p) {
  p.async_get_connection(detail::probe_connection_handler<typename P::connection_type>{});
};

}  // namespace inlet::pg
