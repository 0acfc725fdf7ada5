// A query: SQL text with $1..$n placeholders plus its parameter values, bound in binary.
// No SQL text is ever built from values.
//
//   auto q = pg::sql("SELECT $1::int4 + $2", 1, std::int32_t{2});
//
// The SQL text is viewed, not copied: it must outlive the operation (string literals do).
// Parameter values are stored by value (pass std::string_view / std::span to avoid copies;
// then those must outlive the operation).
#pragma once
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "inlet/pg/codec.hpp"

namespace inlet::pg {

namespace detail {
/// Parameter arrays in the shape libpq wants; reused per connection (no per-query
/// allocation once warm).
struct param_buffer {
  const type_map* user_types = nullptr;  // the connection's OID map (user types), or null
  bool unmapped = false;                 // a user type was added with OID 0 (no map had it)
  std::string data;
  std::vector<oid_t> types;
  std::vector<std::ptrdiff_t> offsets;  // -1 for NULL
  std::vector<const char*> values;
  std::vector<int> lengths, formats;

  void clear() {
    data.clear();
    types.clear();
    offsets.clear();
  }
  template <class T>
  void add(const T& v, std::error_code& ec) {
    const oid_t t = value_traits<T>::type_oid();
    if constexpr (user_type<typename value_traits<T>::scalar>)
      if (t == 0) unmapped = true;
    types.push_back(t);
    std::size_t at = data.size();
    if (encode_value(v, data, ec))
      offsets.push_back(static_cast<std::ptrdiff_t>(at));
    else
      offsets.push_back(-1);
  }
  /// Builds the pointer arrays once every value is in `data`.
  void finish() {
    std::size_t n = offsets.size();
    if (n == 0) {  // no parameters: nothing to point at
      values.clear();
      lengths.clear();
      formats.clear();
      return;
    }
    values.resize(n);
    lengths.resize(n);
    formats.assign(n, 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (offsets[i] < 0) {
        values[i] = nullptr;
        lengths[i] = 0;
        continue;
      }
      values[i] = data.data() + offsets[i];
      auto end = i + 1 < n ? next_offset(i + 1) : static_cast<std::ptrdiff_t>(data.size());
      lengths[i] = static_cast<int>(end - offsets[i]);
    }
  }

 private:
  std::ptrdiff_t next_offset(std::size_t i) const {
    for (; i < offsets.size(); ++i)
      if (offsets[i] >= 0) return offsets[i];
    return static_cast<std::ptrdiff_t>(data.size());
  }
};
}  // namespace detail

template <class... Args>
class query {
 public:
  static_assert((pg_value<Args> && ...), "every parameter must be a PostgreSQL value type");
  static constexpr std::size_t size = sizeof...(Args);

  explicit query(std::string_view text, Args... args) : text_(text), args_(std::move(args)...) {}
  std::string_view text() const noexcept { return text_; }
  void bind(detail::param_buffer& pb, std::error_code& ec) const {
    detail::type_scope scope(pb.user_types);
    std::apply([&](const auto&... a) { (pb.add(a, ec), ...); }, args_);
  }

 private:
  std::string_view text_;
  std::tuple<Args...> args_;
};

/// Makes a query; parameter types decay (string literals become const char*, sent as text).
template <class... A>
query<std::decay_t<A>...> sql(std::string_view text, A&&... a) {
  return query<std::decay_t<A>...>(text, std::forward<A>(a)...);
}

template <class T>
struct is_query : std::false_type {};
template <class... A>
struct is_query<query<A...>> : std::true_type {};

/// Where typed rows go: a container (push_back) or an output iterator.
template <class Row, class Out>
struct into_t {
  using row_type = Row;
  Out* out;
};
/// pg::into(vec) deduces the row type from vec's value_type.
template <class C>
into_t<typename C::value_type, C> into(C& c) {
  return {&c};
}
/// pg::into<Row>(it) for an output iterator.
template <class Row, class It>
into_t<Row, It> into(It& it) {
  return {&it};
}

}  // namespace inlet::pg
