// The query builder: SQL text from literals, values as typed parameters.
//
//   using namespace inlet::pg::literals;
//   auto q = "SELECT mid, st_id, attaches FROM mail.messages WHERE uid = "_SQL + uid +
//            " AND mid = ANY("_SQL + mids + ")"_SQL;
//   // q.text() == "SELECT ... WHERE uid = $1 AND mid = ANY($2)", parameters (uid, mids)
//   co_await conn.async_query(q, pg::into(rows));
//
// Design: the text is part of the type. "..."_SQL is a sql_builder<S> whose S is the
// literal (a fixed_string template argument); `+ value` appends a placeholder mark to S
// and the value's type to the parameter pack; `+ "..."_SQL` appends text. So the whole
// text, with $1..$n numbered, is a constant computed at compile time (text() views a
// static array: no allocation, valid for the program's life), and the only run-time
// state is the tuple of values. A value can never become SQL text: only _SQL literals
// reach S, and a bare string literal on the right of + does not compile (it would be
// ambiguous). std::cref(v) binds a reference instead of a copy (v must then outlive
// every use of the query). A built query is a value: store it, copy it, run it again.
//
// Thread-safety: a value type (const use from several threads is safe).
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "inlet/pg/query.hpp"

namespace inlet::pg {

/// A string usable as a template argument (the builder's text).
template <std::size_t N>
struct fixed_string {
  char data[N]{};
  constexpr fixed_string() = default;
  constexpr fixed_string(const char (&s)[N]) {  // NOLINT: implicit from a literal
    for (std::size_t i = 0; i < N; ++i) data[i] = s[i];
  }
  static constexpr std::size_t size() noexcept { return N - 1; }
  constexpr std::string_view view() const noexcept { return {data, N - 1}; }
};

namespace detail {
inline constexpr char param_mark = '\x01';  // where a parameter goes, before numbering

template <std::size_t A, std::size_t B>
constexpr fixed_string<A + B - 1> concat(const fixed_string<A>& a, const fixed_string<B>& b) {
  fixed_string<A + B - 1> r;
  for (std::size_t i = 0; i + 1 < A; ++i) r.data[i] = a.data[i];
  for (std::size_t i = 0; i < B; ++i) r.data[A - 1 + i] = b.data[i];
  return r;
}
inline constexpr fixed_string<2> mark_text{{param_mark, '\0'}};

constexpr std::size_t digits(std::size_t n) {
  std::size_t d = 1;
  while (n >= 10) n /= 10, ++d;
  return d;
}
// The text with each mark replaced by $1, $2, ... (computed at compile time).
template <fixed_string S>
struct rendered {
  static constexpr std::size_t length = [] {
    std::size_t len = 0, k = 0;
    for (char c : S.view()) len += c == param_mark ? 1 + digits(++k) : 1;
    return len;
  }();
  static constexpr std::array<char, length + 1> text = [] {
    std::array<char, length + 1> out{};
    std::size_t at = 0, k = 0;
    for (char c : S.view()) {
      if (c != param_mark) {
        out[at++] = c;
        continue;
      }
      out[at++] = '$';
      const std::size_t n = ++k, d = digits(n);
      for (std::size_t i = 0, v = n; i < d; ++i, v /= 10)
        out[at + d - 1 - i] = static_cast<char>('0' + v % 10);
      at += d;
    }
    return out;
  }();
};

template <class T>
struct unwrap_ref {
  using type = T;
};
template <class T>
struct unwrap_ref<std::reference_wrapper<T>> {
  using type = std::remove_const_t<T>;
};
template <class T>
const auto& unref(const T& v) noexcept {
  if constexpr (requires {
                  v.get();
                  typename T::type;
                })
    return v.get();
  else
    return v;
}
}  // namespace detail

template <fixed_string S, class... Args>
class sql_builder;
namespace detail {
template <class T>
inline constexpr bool is_sql_builder = false;
template <fixed_string S, class... B>
inline constexpr bool is_sql_builder<sql_builder<S, B...>> = true;
}  // namespace detail

/// A query built from _SQL literals and values: its text (with $n) is a compile-time
/// constant, its parameters a tuple of values (or std::reference_wrapper).
template <fixed_string S, class... Args>
class sql_builder {
 public:
  static_assert((pg_value<typename detail::unwrap_ref<Args>::type> && ...),
                "every parameter must be a PostgreSQL value type");
  static constexpr std::size_t size = sizeof...(Args);

  constexpr sql_builder() = default;
  constexpr explicit sql_builder(std::tuple<Args...> a) : args_(std::move(a)) {}

  /// "... $1 ... $2 ...": a view of a static array (valid for the program's life).
  static constexpr std::string_view text() noexcept {
    return {detail::rendered<S>::text.data(), detail::rendered<S>::length};
  }
  constexpr const std::tuple<Args...>& params() const noexcept { return args_; }
  /// The seed syntax `(... + ...).build()`: the builder already is the query.
  const sql_builder& build() const noexcept { return *this; }
  void bind(detail::param_buffer& pb, std::error_code& ec) const {
    detail::type_scope scope(pb.user_types);
    std::apply([&](const auto&... a) { (pb.add(detail::unref(a), ec), ...); }, args_);
  }

  // The left operand is taken by value: a chain of + moves the values along (each value
  // is copied once, into the first builder that holds it).
  /// Text + text.
  template <fixed_string S2, class... B>
  friend constexpr auto operator+(sql_builder a, const sql_builder<S2, B...>& b) {
    return sql_builder<detail::concat(S, S2), Args..., B...>(std::tuple_cat(std::move(a.args_), b.params()));
  }
  /// Text + a value: the value becomes the next parameter.
  template <class V>
    requires(!detail::is_sql_builder<std::remove_cvref_t<V>>)
  friend auto operator+(sql_builder a, V&& v) {
    using D = std::decay_t<V>;
    static_assert(
        !std::is_same_v<D, const char*> && !std::is_same_v<D, char*>,
        "a string literal after + would be a parameter: write \"...\"_SQL for SQL text, or "
        "std::string_view(\"...\") for a text value");
    return sql_builder<detail::concat(S, detail::mark_text), Args..., D>(
        std::tuple_cat(std::move(a.args_), std::tuple<D>(std::forward<V>(v))));
  }

 private:
  std::tuple<Args...> args_;
};

template <fixed_string S, class... A>
struct is_query<sql_builder<S, A...>> : std::true_type {};

namespace literals {
/// "SELECT ..."_SQL: SQL text, a builder with no parameters.
template <fixed_string S>
constexpr auto operator""_SQL() {
  static_assert(S.view().find(detail::param_mark) == std::string_view::npos,
                "_SQL text must not contain \\x01");
  return sql_builder<S>{};
}
}  // namespace literals

}  // namespace inlet::pg
