// Ranges of built-in types (int4range, int8range, numrange, daterange, tsrange,
// tstzrange): pg::range<T>, in binary format. Their OIDs are fixed, no OID map needed.
// User-defined range types are named on the C++ side and looked up in the OID map:
//
//   struct floatrange : pg::range<double> {       // CREATE TYPE floatrange AS RANGE (subtype =
//   float8)
//     static constexpr std::string_view pg_type_name = "floatrange";
//   };
//   auto types = pg::register_types<floatrange>();
//
// Wire: one flags byte, then the lower and the upper bound when present, each as
// int32 length + the subtype's binary value. Included by codec.hpp.
#pragma once
#include <cstdint>
#include <optional>

namespace inlet::pg {

/// A range. An absent bound (nullopt) is infinite; `empty` is the empty range.
template <class T>
struct range {
  std::optional<T> lower, upper;
  bool lower_inc = true;   ///< '[' (else '(')
  bool upper_inc = false;  ///< ']' (else ')')
  bool empty = false;
  friend bool operator==(const range&, const range&) = default;
};

namespace oid {
inline constexpr oid_t int4range = 3904, int4range_array = 3905, numrange = 3906,
                       numrange_array = 3907, tsrange = 3908, tsrange_array = 3909,
                       tstzrange = 3910, tstzrange_array = 3911, daterange = 3912,
                       daterange_array = 3913, int8range = 3926, int8range_array = 3927;
}  // namespace oid

namespace detail {
template <class T>
struct range_oids;
template <>
struct range_oids<std::int32_t> {
  static constexpr oid_t o = oid::int4range, a = oid::int4range_array;
};
template <>
struct range_oids<std::int64_t> {
  static constexpr oid_t o = oid::int8range, a = oid::int8range_array;
};
template <>
struct range_oids<numeric> {
  static constexpr oid_t o = oid::numrange, a = oid::numrange_array;
};
template <>
struct range_oids<date> {
  static constexpr oid_t o = oid::daterange, a = oid::daterange_array;
};
template <>
struct range_oids<timestamp> {
  static constexpr oid_t o = oid::tsrange, a = oid::tsrange_array;
};
template <>
struct range_oids<timestamptz> {
  static constexpr oid_t o = oid::tstzrange, a = oid::tstzrange_array;
};

// Flag bits of the binary range format (rangetypes.h).
inline constexpr std::uint8_t range_empty = 0x01, range_lb_inc = 0x02, range_ub_inc = 0x04,
                              range_lb_inf = 0x08, range_ub_inf = 0x10;

template <class T>
std::error_code read_bound(const char*& p, const char* end, std::optional<T>& out) {
  if (end - p < 4) return bad();
  const auto len = load_be<std::int32_t>(p);
  p += 4;
  if (len < 0 || len > end - p) return bad();
  if (auto ec = type_traits<T>::decode(p, len, out.emplace())) return ec;
  p += len;
  return ok();
}
template <class T>
void write_bound(const T& v, std::string& out, std::error_code& ec) {
  const std::size_t at = out.size();
  store_be<std::int32_t>(out, 0);
  encode_scalar<T>(v, out, ec);
  patch_be32(out, at, static_cast<std::int32_t>(out.size() - at - 4));
}
}  // namespace detail

namespace detail {
template <class T>
void encode_range(const range<T>& v, std::string& out, std::error_code& ec) {
  if (v.empty) {
    out.push_back(static_cast<char>(range_empty));
    return;
  }
  std::uint8_t f = 0;
  if (!v.lower)
    f |= range_lb_inf;
  else if (v.lower_inc)
    f |= range_lb_inc;
  if (!v.upper)
    f |= range_ub_inf;
  else if (v.upper_inc)
    f |= range_ub_inc;
  out.push_back(static_cast<char>(f));
  if (v.lower) write_bound(*v.lower, out, ec);
  if (v.upper) write_bound(*v.upper, out, ec);
}
template <class T>
std::error_code decode_range(const char* p, int len, range<T>& out) {
  if (len < 1) return bad();
  const char* end = p + len;
  const auto f = static_cast<std::uint8_t>(*p++);
  out = range<T>{};
  if (f & range_empty) {
    out.empty = true;
    out.lower_inc = false;
    return p == end ? ok() : bad();
  }
  // An infinite bound is never inclusive (the server canonicalises the same way).
  out.lower_inc = (f & range_lb_inc) && !(f & range_lb_inf);
  out.upper_inc = (f & range_ub_inc) && !(f & range_ub_inf);
  if (!(f & range_lb_inf))
    if (auto ec = read_bound(p, end, out.lower)) return ec;
  if (!(f & range_ub_inf))
    if (auto ec = read_bound(p, end, out.upper)) return ec;
  return p == end ? ok() : bad();
}
template <class S>
S range_subtype(const range<S>*);
}  // namespace detail

template <class T>
  requires requires { detail::range_oids<T>::o; }
struct type_traits<range<T>> {
  static constexpr oid_t type_oid = detail::range_oids<T>::o, array_oid = detail::range_oids<T>::a;
  static constexpr bool accepts(oid_t o) noexcept { return o == type_oid; }
  static void encode(const range<T>& v, std::string& out, std::error_code& ec) {
    detail::encode_range(v, out, ec);
  }
  static std::error_code decode(const char* p, int len, range<T>& out) {
    return detail::decode_range(p, len, out);
  }
};

/// A user-defined range type: the range codec over its subtype, its OIDs from the map.
template <class T>
  requires detail::user_range_type<T>
struct value_traits<T> {
  using subtype = decltype(detail::range_subtype(static_cast<const T*>(nullptr)));
  using base_t = range<subtype>;
  using scalar = T;
  static_assert(
      requires { type_traits<subtype>::type_oid; },
      "a user-defined range's subtype needs a built-in codec (type_traits<subtype>)");
  static oid_t type_oid() noexcept { return detail::user_oid<T>(); }
  static oid_t array_oid() noexcept { return detail::user_array_oid<T>(); }
  static bool accepts(oid_t o) noexcept { return o != 0 && o == type_oid(); }
  static bool encode(const T& v, std::string& out, std::error_code& ec) {
    detail::encode_range(static_cast<const base_t&>(v), out, ec);
    return true;
  }
  static std::error_code decode(const char* p, int len, T& out) {
    if (len < 0) return make_error_code(errc::unexpected_null);
    return detail::decode_range(p, len, static_cast<base_t&>(out));
  }
};

}  // namespace inlet::pg
