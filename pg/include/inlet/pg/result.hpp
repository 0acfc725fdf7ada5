// Results: a raw result (owning a libpq PGresult in binary format) with rows and fields
// as views, and typed reads into scalars, std::tuple, Describe-annotated structs and
// plain aggregates (Boost.PFR). Column count and OIDs are checked once per result
// against the C++ types; a mismatch gives errc::type_mismatch and a message naming the
// column. Tuples and plain aggregates match columns by position, described structs by
// name (columns in any order; a missing field or an extra column is
// errc::column_count_mismatch naming them).
//
// Thread-safety: a result is a value; distinct objects may be used from distinct threads,
// one object from one thread at a time (const member functions are safe concurrently).
// Views (field, std::string_view, std::span) point into the result and are invalidated
// when it is destroyed or assigned to.
#pragma once
#include <libpq-fe.h>

#include <array>
#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>
#include <boost/pfr/core.hpp>
#include <charconv>
#include <concepts>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "inlet/pg/codec.hpp"

namespace inlet::pg {

/// One field of a raw result: bytes in binary format, NULL flag and OID, and the OID map
/// of user types its result came with (see result::types()).
struct field {
  const char* data = nullptr;
  int length = -1;  ///< -1 for NULL
  oid_t type = 0;
  const type_map* types = nullptr;
  bool is_null() const noexcept { return length < 0; }
  std::string_view bytes() const noexcept {
    return is_null() ? std::string_view{}
                     : std::string_view(data, static_cast<std::size_t>(length));
  }
  /// Decodes into T (checks the OID; NULL only into std::optional). User types find
  /// their OIDs in `types` (the connection's map for a result it handed out).
  template <pg_value T>
  std::error_code as(T& out) const {
    detail::type_scope scope(types);
    if (!value_traits<T>::accepts(type) && !is_null()) return make_error_code(errc::type_mismatch);
    return decode_value(data, length, out);
  }
};

namespace detail {
struct pgresult_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};

// ---- row shapes -------------------------------------------------------------------
template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};

template <class T>
concept described = boost::describe::has_describe_members<T>::value;

template <class T>
struct is_string_value : std::false_type {};
template <>
struct is_string_value<std::string> : std::true_type {};
template <>
struct is_string_value<std::string_view> : std::true_type {};
template <class T>
struct is_string_value<std::optional<T>> : is_string_value<T> {};

template <class Row, class = void>
struct row_traits;

template <pg_value T>
struct row_traits<T> {  // a single column
  static constexpr std::size_t size = 1;
  static constexpr bool by_name = false;
  template <std::size_t I>
  using type = T;
  template <std::size_t I>
  static T& get(T& r) noexcept {
    return r;
  }
};
template <class... Ts>
struct row_traits<std::tuple<Ts...>> {
  static constexpr std::size_t size = sizeof...(Ts);
  static constexpr bool by_name = false;
  template <std::size_t I>
  using type = std::tuple_element_t<I, std::tuple<Ts...>>;
  template <std::size_t I>
  static auto& get(std::tuple<Ts...>& r) noexcept {
    return std::get<I>(r);
  }
};
template <class T>
  requires(!pg_value<T> && !is_tuple<T>::value && described<T>)
struct row_traits<T> {
  using members = boost::describe::describe_members<T, boost::describe::mod_public>;
  static constexpr std::size_t size = boost::mp11::mp_size<members>::value;
  /// Fields are matched to columns by name (Boost 1.81's PFR has no names: plain
  /// aggregates stay positional, like tuples).
  static constexpr bool by_name = true;
  static constexpr std::array<std::string_view, size> names =
      []<template <class...> class L, class... M>(L<M...>) {
        return std::array<std::string_view, size>{std::string_view(M::name)...};
      }(members{});
  template <std::size_t I>
  using type =
      std::remove_cvref_t<decltype(std::declval<T&>().*boost::mp11::mp_at_c<members, I>::pointer)>;
  template <std::size_t I>
  static auto& get(T& r) noexcept {
    return r.*boost::mp11::mp_at_c<members, I>::pointer;
  }
};
template <class T>
  requires(!pg_value<T> && !is_tuple<T>::value && !described<T> && std::is_aggregate_v<T>)
struct row_traits<T> {
  static constexpr std::size_t size = boost::pfr::tuple_size_v<T>;
  static constexpr bool by_name = false;
  template <std::size_t I>
  using type = boost::pfr::tuple_element_t<I, T>;
  template <std::size_t I>
  static auto& get(T& r) noexcept {
    return boost::pfr::get<I>(r);
  }
};

std::error_code column_error(const PGresult* r, int col, oid_t got, oid_t want, diagnostics* d);
std::error_code count_error(const PGresult* r, std::size_t want, diagnostics* d);
std::error_code value_error(const PGresult* r, int row, int col, std::error_code ec,
                            diagnostics* d);
/// Matches field names to column names (exact, as the server spells them): cols[i] is
/// field i's column. Names every missing field and every extra column at once.
std::error_code match_columns(const PGresult* r, const std::string_view* names, std::size_t n,
                              int* cols, diagnostics* d);
}  // namespace detail

template <class T>
concept row_type = requires { detail::row_traits<T>::size; };

/// An owned query result (binary format). Move-only.
class result {
 public:
  result() = default;
  explicit result(PGresult* r) noexcept : r_(r) {}
  /// A result whose user-type columns decode with `types` (the connection's OID map).
  result(PGresult* r, std::shared_ptr<const type_map> types) noexcept
      : r_(r), types_(std::move(types)) {}

  explicit operator bool() const noexcept { return r_ != nullptr; }
  PGresult* native() const noexcept { return r_.get(); }
  /// The OID map user types decode with in read_row/read_all/check and field::as: the
  /// connection's, for a result a connection handed out (raw queries, batches); null
  /// for one made by hand (then a type_scope set by the caller, if any, applies).
  const type_map* types() const noexcept { return types_.get(); }
  void set_types(std::shared_ptr<const type_map> t) noexcept { types_ = std::move(t); }
  PGresult* release() noexcept { return r_.release(); }

  int rows() const noexcept { return r_ ? PQntuples(r_.get()) : 0; }
  int columns() const noexcept { return r_ ? PQnfields(r_.get()) : 0; }
  oid_t column_type(int c) const noexcept { return PQftype(r_.get(), c); }
  std::string_view column_name(int c) const noexcept { return PQfname(r_.get(), c); }
  /// Raw field view (no copy).
  field at(int row, int col) const noexcept {
    PGresult* r = r_.get();
    return {PQgetvalue(r, row, col), PQgetisnull(r, row, col) ? -1 : PQgetlength(r, row, col),
            PQftype(r, col), types_.get()};
  }
  /// Command tag ("INSERT 0 3") and the affected-row count of INSERT/UPDATE/DELETE/...
  std::string_view command_tag() const noexcept { return r_ ? PQcmdStatus(r_.get()) : ""; }
  std::uint64_t affected_rows() const noexcept {
    if (!r_) return 0;
    const char* s = PQcmdTuples(r_.get());
    std::uint64_t n = 0;
    std::from_chars(s, s + std::strlen(s), n);
    return n;
  }
  /// Server diagnostics when this result is an error result.
  diagnostics error_diagnostics() const;

  /// Checks column count and OIDs against Row (once per result).
  /// Checks the columns against Row (once per result): count and OIDs by position for
  /// tuples and plain aggregates; for described structs each field by its name (a
  /// missing field, an extra column or a wrong type is named in the diagnostics).
  template <row_type Row>
  std::error_code check(diagnostics* d = nullptr) const {
    detail::type_scope scope(types_.get());
    col_map<Row> cols;
    return check_map<Row>(cols, d);
  }
  /// Checks, then decodes row `row` into out (read_all checks once for all rows).
  template <row_type Row>
  std::error_code read_row(int row, Row& out, diagnostics* d = nullptr) const {
    detail::type_scope scope(types_.get());
    col_map<Row> cols;
    if (auto ec = check_map<Row>(cols, d)) return ec;
    std::array<bool, detail::row_traits<Row>::size> plan{};
    return read_planned(row, out, plan, cols, d);
  }
  /// Checks, then appends every row to a container (emplace_back/push_back) or output
  /// iterator. Rows are decoded in place in the container when it has emplace_back.
  template <class Row, class Out>
  std::error_code read_all(Out& out, diagnostics* d = nullptr) const {
    detail::type_scope scope(types_.get());
    col_map<Row> cols;
    if (auto ec = check_map<Row>(cols, d)) return ec;
    const int n = rows();
    const auto plan = plan_columns<Row>(cols);
    if constexpr (requires {
                    { out.emplace_back() } -> std::same_as<Row&>;
                    out.pop_back();
                  }) {
      if constexpr (requires {
                      out.reserve(std::size_t{});
                      out.size();
                    })
        out.reserve(out.size() + static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        auto& r = out.emplace_back();
        if (auto ec = read_planned(i, r, plan, cols, d)) {
          out.pop_back();
          return ec;
        }
      }
    } else {
      for (int i = 0; i < n; ++i) {
        Row r{};
        if (auto ec = read_planned(i, r, plan, cols, d)) return ec;
        if constexpr (requires { out.push_back(std::move(r)); })
          out.push_back(std::move(r));
        else
          *out++ = std::move(r);
      }
    }
    return detail::ok();
  }

 private:
  template <class Row>
  using col_map = std::array<int, detail::row_traits<Row>::size>;
  template <class Row>
  std::error_code check_map(col_map<Row>& cols, diagnostics* d) const {
    using tr = detail::row_traits<Row>;
    if constexpr (tr::by_name) {
      if (auto ec = detail::match_columns(r_.get(), tr::names.data(), tr::size, cols.data(), d))
        return ec;
    } else {
      if (static_cast<std::size_t>(columns()) != tr::size)
        return detail::count_error(r_.get(), tr::size, d);
      for (std::size_t i = 0; i < tr::size; ++i) cols[i] = static_cast<int>(i);
    }
    return check_columns<Row>(cols, d, std::make_index_sequence<tr::size>{});
  }
  // Per-result decisions, made once (after check<Row>()): which string columns may take
  // their length from strlen instead of a second libpq call. Their binary format is the
  // characters, which never contain a NUL, and libpq ends every value with a NUL; only
  // columns with a small maximum length qualify (name, varchar(n)/char(n) up to 256),
  // so strlen never walks a long value twice. "char" (one byte, may be 0) never does.
  template <class Row>
  using plan_t = std::array<bool, detail::row_traits<Row>::size>;
  template <class Row>
  plan_t<Row> plan_columns(const col_map<Row>& cols) const {
    plan_t<Row> p{};
    plan_fill<Row>(p, cols, std::make_index_sequence<detail::row_traits<Row>::size>{});
    return p;
  }
  template <class Row, std::size_t... I>
  void plan_fill(plan_t<Row>& p, const col_map<Row>& cols, std::index_sequence<I...>) const {
    ((p[I] = detail::is_string_value<typename detail::row_traits<Row>::template type<I>>::value &&
             short_text_column(cols[I])),
     ...);
  }
  bool short_text_column(int c) const noexcept {
    const oid_t t = PQftype(r_.get(), c);
    if (t == oid::name) return true;
    if (t != oid::varchar && t != oid::bpchar) return false;
    const int mod = PQfmod(r_.get(), c);  // n + 4 for varchar(n)/char(n), -1 for no limit
    return mod > 4 && mod - 4 <= 256;
  }
  template <class Row, std::size_t N>
  std::error_code read_planned(int row, Row& out, const std::array<bool, N>& plan,
                               const std::array<int, N>& cols, diagnostics* d) const {
    return read_planned_fields(row, out, plan, cols, d, std::make_index_sequence<N>{});
  }
  template <class Row, std::size_t N, std::size_t... I>
  std::error_code read_planned_fields(int row, Row& out, const std::array<bool, N>& plan,
                                      const std::array<int, N>& cols, diagnostics* d,
                                      std::index_sequence<I...>) const {
    PGresult* r = r_.get();
    std::error_code ec = detail::no_error;
    ((ec =
          read_field(r, row, cols[I], detail::row_traits<Row>::template get<I>(out), d, plan[I])) ||
     ...);
    return ec;
  }
  template <class Row, std::size_t... I>
  std::error_code check_columns(const col_map<Row>& cols, diagnostics* d,
                                std::index_sequence<I...>) const {
    std::error_code ec = detail::no_error;
    ((ec = check_one<typename detail::row_traits<Row>::template type<I>>(cols[I], d)) || ...);
    return ec;
  }
  template <class T>
  std::error_code check_one(int c, diagnostics* d) const {
    static_assert(pg_value<T>, "a field of the row type has no PostgreSQL mapping (see codec.hpp)");
    oid_t t = PQftype(r_.get(), c);
    if (value_traits<T>::accepts(t)) return detail::ok();
    return detail::column_error(r_.get(), c, t, value_traits<T>::type_oid(), d);
  }
  // Inlined into the row loop: two libpq accessor calls per field (one for short text
  // columns, see plan_columns), no other call on success.
  template <class T>
  [[gnu::always_inline]] static inline std::error_code read_field(PGresult* r, int row, int col,
                                                                  T& out, diagnostics* d,
                                                                  bool short_text) {
    const char* p;
    int len;
    if (short_text) {
      p = PQgetvalue(r, row, col);
      len = static_cast<int>(std::strlen(p));
    } else {
      len = PQgetlength(r, row, col);
      p = PQgetvalue(r, row, col);
    }
    if (len == 0 && PQgetisnull(r, row, col)) len = -1;  // NULLs have length 0: ask only then
    auto ec = decode_value(p, len, out);
    if (ec) [[unlikely]]
      return detail::value_error(r, row, col, ec, d);
    return ec;
  }

  std::unique_ptr<PGresult, detail::pgresult_deleter> r_;
  std::shared_ptr<const type_map> types_;  // null unless the connection has a map
};

}  // namespace inlet::pg
