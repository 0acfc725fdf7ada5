// Ranges of built-in types (int4range, int8range, numrange, daterange, tsrange,
// tstzrange): pg::range<T>, in binary format. Their OIDs are fixed, no OID map needed.
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

template <class T>
  requires requires { detail::range_oids<T>::o; }
struct type_traits<range<T>> {
  static constexpr oid_t type_oid = detail::range_oids<T>::o, array_oid = detail::range_oids<T>::a;
  static constexpr bool accepts(oid_t o) noexcept { return o == type_oid; }
  static void encode(const range<T>& v, std::string& out, std::error_code& ec) {
    if (v.empty) {
      out.push_back(static_cast<char>(detail::range_empty));
      return;
    }
    std::uint8_t f = 0;
    if (!v.lower)
      f |= detail::range_lb_inf;
    else if (v.lower_inc)
      f |= detail::range_lb_inc;
    if (!v.upper)
      f |= detail::range_ub_inf;
    else if (v.upper_inc)
      f |= detail::range_ub_inc;
    out.push_back(static_cast<char>(f));
    if (v.lower) detail::write_bound(*v.lower, out, ec);
    if (v.upper) detail::write_bound(*v.upper, out, ec);
  }
  static std::error_code decode(const char* p, int len, range<T>& out) {
    if (len < 1) return detail::bad();
    const char* end = p + len;
    const auto f = static_cast<std::uint8_t>(*p++);
    out = range<T>{};
    if (f & detail::range_empty) {
      out.empty = true;
      out.lower_inc = false;
      return p == end ? detail::ok() : detail::bad();
    }
    // An infinite bound is never inclusive (the server canonicalises the same way).
    out.lower_inc = (f & detail::range_lb_inc) && !(f & detail::range_lb_inf);
    out.upper_inc = (f & detail::range_ub_inc) && !(f & detail::range_ub_inf);
    if (!(f & detail::range_lb_inf))
      if (auto ec = detail::read_bound(p, end, out.lower)) return ec;
    if (!(f & detail::range_ub_inf))
      if (auto ec = detail::read_bound(p, end, out.upper)) return ec;
    return p == end ? detail::ok() : detail::bad();
  }
};

}  // namespace inlet::pg
