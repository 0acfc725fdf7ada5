// Compile-time mapping between C++ types and PostgreSQL binary values.
//
//   type_traits<T>   one specialisation per scalar C++ type: its OID, the array OID,
//                    which server OIDs it accepts, encode into a buffer, decode from bytes.
//   value_traits<T>  the same for every supported value: scalars, std::optional<T>
//                    (NULL), std::vector<T> (one- and N-dimensional arrays, nested
//                    vectors must be rectangular), std::vector<std::optional<T>>.
//
// Decoding never throws and never reads outside [p, p+len): malformed input gives
// errc::invalid_value. Views (std::string_view, std::span<const std::byte>) decoded from
// a result point into that result and are invalidated with it.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "inlet/pg/detail/wire.hpp"
#include "inlet/pg/error.hpp"
#include "inlet/pg/oid.hpp"
#include "inlet/pg/types.hpp"

namespace inlet::pg {

/// Primary template: not a PostgreSQL type. Specialise to add a type with a fixed OID;
/// user-defined types (OIDs per database) go through oid_map.hpp and composite.hpp.
template <class T, class = void>
struct type_traits;

namespace detail {
inline std::error_code bad() noexcept {
  return make_error_code(errc::invalid_value);
}

template <class T, oid_t Oid, oid_t ArrOid>
struct int_traits {
  static constexpr oid_t type_oid = Oid, array_oid = ArrOid;
  static constexpr bool accepts(oid_t o) noexcept { return o == Oid; }
  static void encode(T v, std::string& out) { store_be<T>(out, v); }
  static std::error_code decode(const char* p, int len, T& out) noexcept {
    if (len != static_cast<int>(sizeof(T))) return bad();
    out = load_be<T>(p);
    return detail::ok();
  }
};

template <class F, class U, oid_t Oid, oid_t ArrOid>
struct float_traits {
  static constexpr oid_t type_oid = Oid, array_oid = ArrOid;
  static constexpr bool accepts(oid_t o) noexcept { return o == Oid; }
  static void encode(F v, std::string& out) { store_be<U>(out, std::bit_cast<U>(v)); }
  static std::error_code decode(const char* p, int len, F& out) noexcept {
    if (len != static_cast<int>(sizeof(F))) return bad();
    out = std::bit_cast<F>(load_be<U>(p));
    return detail::ok();
  }
};

constexpr bool is_text_oid(oid_t o) noexcept {
  return o == oid::text || o == oid::varchar || o == oid::name || o == oid::bpchar ||
         o == oid::char_ || o == oid::unknown;
}
constexpr bool is_text_array_oid(oid_t o) noexcept {
  return o == oid::text_array || o == oid::varchar_array || o == oid::name_array ||
         o == oid::bpchar_array || o == oid::char_array;
}

// Out-of-line codecs (src/codec.cpp).
void encode_numeric(std::string_view text, std::string& out, std::error_code& ec);
std::error_code decode_numeric(const char* p, int len, std::string& out);
void encode_inet(const inet& v, std::string& out);
std::error_code decode_inet(const char* p, int len, inet& out) noexcept;

inline constexpr std::int64_t pg_epoch_days = 10957;  // 2000-01-01 - 1970-01-01
inline constexpr std::int64_t pg_epoch_us = pg_epoch_days * 86400LL * 1000000LL;
}  // namespace detail

template <>
struct type_traits<bool> {
  static constexpr oid_t type_oid = oid::bool_, array_oid = oid::bool_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::bool_; }
  static void encode(bool v, std::string& out) { out.push_back(v ? 1 : 0); }
  static std::error_code decode(const char* p, int len, bool& out) noexcept {
    if (len != 1) return detail::bad();
    out = *p != 0;
    return detail::ok();
  }
};
template <>
struct type_traits<std::int16_t> : detail::int_traits<std::int16_t, oid::int2, oid::int2_array> {};
template <>
struct type_traits<std::int32_t> : detail::int_traits<std::int32_t, oid::int4, oid::int4_array> {};
template <>
struct type_traits<std::int64_t> : detail::int_traits<std::int64_t, oid::int8, oid::int8_array> {};
/// oid (and regtype-like uses): unsigned 32-bit.
template <>
struct type_traits<std::uint32_t> : detail::int_traits<std::uint32_t, oid::oid_, 1028> {};
template <>
struct type_traits<float>
    : detail::float_traits<float, std::uint32_t, oid::float4, oid::float4_array> {};
template <>
struct type_traits<double>
    : detail::float_traits<double, std::uint64_t, oid::float8, oid::float8_array> {};

/// text, varchar, name, bpchar, "char": std::string owns, std::string_view views.
template <>
struct type_traits<std::string> {
  static constexpr oid_t type_oid = oid::text, array_oid = oid::text_array;
  static constexpr bool accepts(oid_t o) noexcept { return detail::is_text_oid(o); }
  static constexpr bool accepts_array(oid_t o) noexcept { return detail::is_text_array_oid(o); }
  static void encode(std::string_view v, std::string& out) { out.append(v); }
  static std::error_code decode(const char* p, int len, std::string& out) {
    // Into a fresh (empty) string, append: one copy into the inline buffer (callgrind:
    // ~33 instructions for a short value), where constructing a temporary and moving it
    // copies twice (~64) and assign() goes through the general _M_replace (~51).
    if (out.empty())
      out.append(p, static_cast<std::size_t>(len));
    else
      out.assign(p, static_cast<std::size_t>(len));
    return detail::ok();
  }
};
template <>
struct type_traits<std::string_view> {
  static constexpr oid_t type_oid = oid::text, array_oid = oid::text_array;
  static constexpr bool accepts(oid_t o) noexcept { return detail::is_text_oid(o); }
  static constexpr bool accepts_array(oid_t o) noexcept { return detail::is_text_array_oid(o); }
  static void encode(std::string_view v, std::string& out) { out.append(v); }
  static std::error_code decode(const char* p, int len, std::string_view& out) noexcept {
    out = std::string_view(p, static_cast<std::size_t>(len));
    return detail::ok();
  }
};
/// Parameters only: string literals and C strings are sent as text.
template <>
struct type_traits<const char*> {
  static constexpr oid_t type_oid = oid::text, array_oid = oid::text_array;
  static constexpr bool accepts(oid_t) noexcept { return false; }
  static void encode(const char* v, std::string& out) { out.append(v); }
};

/// bytea: std::vector<std::byte> owns, std::span<const std::byte> views.
template <>
struct type_traits<std::vector<std::byte>> {
  static constexpr oid_t type_oid = oid::bytea, array_oid = oid::bytea_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::bytea; }
  static void encode(const std::vector<std::byte>& v, std::string& out) {
    out.append(reinterpret_cast<const char*>(v.data()), v.size());
  }
  static std::error_code decode(const char* p, int len, std::vector<std::byte>& out) {
    auto b = reinterpret_cast<const std::byte*>(p);
    out.assign(b, b + len);
    return detail::ok();
  }
};
template <>
struct type_traits<std::span<const std::byte>> {
  static constexpr oid_t type_oid = oid::bytea, array_oid = oid::bytea_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::bytea; }
  static void encode(std::span<const std::byte> v, std::string& out) {
    out.append(reinterpret_cast<const char*>(v.data()), v.size());
  }
  static std::error_code decode(const char* p, int len, std::span<const std::byte>& out) noexcept {
    out = {reinterpret_cast<const std::byte*>(p), static_cast<std::size_t>(len)};
    return detail::ok();
  }
};

template <>
struct type_traits<uuid> {
  static constexpr oid_t type_oid = oid::uuid, array_oid = oid::uuid_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::uuid; }
  static void encode(const uuid& v, std::string& out) {
    out.append(reinterpret_cast<const char*>(v.bytes.data()), 16);
  }
  static std::error_code decode(const char* p, int len, uuid& out) noexcept {
    if (len != 16) return detail::bad();
    std::memcpy(out.bytes.data(), p, 16);
    return detail::ok();
  }
};

template <>
struct type_traits<numeric> {
  static constexpr oid_t type_oid = oid::numeric, array_oid = oid::numeric_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::numeric; }
  static void encode(const numeric& v, std::string& out, std::error_code& ec) {
    detail::encode_numeric(v.text, out, ec);
  }
  static std::error_code decode(const char* p, int len, numeric& out) {
    return detail::decode_numeric(p, len, out.text);
  }
};

template <>
struct type_traits<json> {
  static constexpr oid_t type_oid = oid::json, array_oid = oid::json_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::json; }
  static void encode(const json& v, std::string& out) { out.append(v.text); }
  static std::error_code decode(const char* p, int len, json& out) {
    out.text.assign(p, static_cast<std::size_t>(len));
    return detail::ok();
  }
};
template <>
struct type_traits<jsonb> {
  static constexpr oid_t type_oid = oid::jsonb, array_oid = oid::jsonb_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::jsonb; }
  static void encode(const jsonb& v, std::string& out) {
    out.push_back(1);  // jsonb binary format version
    out.append(v.text);
  }
  static std::error_code decode(const char* p, int len, jsonb& out) {
    if (len < 1 || p[0] != 1) return detail::bad();
    out.text.assign(p + 1, static_cast<std::size_t>(len - 1));
    return detail::ok();
  }
};

template <>
struct type_traits<inet> {
  static constexpr oid_t type_oid = oid::inet, array_oid = oid::inet_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::inet || o == oid::cidr; }
  static constexpr bool accepts_array(oid_t o) noexcept {
    return o == oid::inet_array || o == oid::cidr_array;
  }
  static void encode(const inet& v, std::string& out) { detail::encode_inet(v, out); }
  static std::error_code decode(const char* p, int len, inet& out) noexcept {
    return detail::decode_inet(p, len, out);
  }
};

/// date: days since 1970 (sys_days); +/-infinity <-> sys_days::max()/min().
template <>
struct type_traits<date> {
  static constexpr oid_t type_oid = oid::date, array_oid = oid::date_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::date; }
  static void encode(const date& v, std::string& out) {
    std::int64_t d = v.time_since_epoch().count();
    std::int32_t w;
    if (v == date::max())
      w = std::numeric_limits<std::int32_t>::max();
    else if (v == date::min())
      w = std::numeric_limits<std::int32_t>::min();
    else
      w = static_cast<std::int32_t>(d - detail::pg_epoch_days);
    detail::store_be<std::int32_t>(out, w);
  }
  static std::error_code decode(const char* p, int len, date& out) noexcept {
    if (len != 4) return detail::bad();
    auto w = detail::load_be<std::int32_t>(p);
    if (w == std::numeric_limits<std::int32_t>::max())
      out = date::max();
    else if (w == std::numeric_limits<std::int32_t>::min())
      out = date::min();
    else {
      std::int64_t d = std::int64_t{w} + detail::pg_epoch_days;
      using rep = date::duration::rep;
      if (d >= std::numeric_limits<rep>::max() || d <= std::numeric_limits<rep>::min())
        return detail::bad();
      out = date{date::duration{static_cast<rep>(d)}};
    }
    return detail::ok();
  }
};

namespace detail {
template <class TP, oid_t Oid, oid_t ArrOid>
struct ts_traits {
  static constexpr oid_t type_oid = Oid, array_oid = ArrOid;
  static constexpr bool accepts(oid_t o) noexcept { return o == Oid; }
  static void encode(const TP& v, std::string& out) {
    std::int64_t w;
    if (v == TP::max())
      w = std::numeric_limits<std::int64_t>::max();
    else if (v == TP::min())
      w = std::numeric_limits<std::int64_t>::min();
    else
      w = v.time_since_epoch().count() - pg_epoch_us;
    store_be<std::int64_t>(out, w);
  }
  static std::error_code decode(const char* p, int len, TP& out) noexcept {
    if (len != 8) return bad();
    auto w = load_be<std::int64_t>(p);
    if (w == std::numeric_limits<std::int64_t>::max())
      out = TP::max();
    else if (w == std::numeric_limits<std::int64_t>::min())
      out = TP::min();
    else {
      std::int64_t us;
      if (__builtin_add_overflow(w, pg_epoch_us, &us)) return bad();
      out = TP{std::chrono::microseconds{us}};
    }
    return detail::ok();
  }
};
}  // namespace detail

template <>
struct type_traits<timestamp> : detail::ts_traits<timestamp, oid::timestamp, oid::timestamp_array> {
};
template <>
struct type_traits<timestamptz>
    : detail::ts_traits<timestamptz, oid::timestamptz, oid::timestamptz_array> {};

template <>
struct type_traits<time_of_day> {
  static constexpr oid_t type_oid = oid::time, array_oid = oid::time_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::time; }
  static void encode(const time_of_day& v, std::string& out) {
    detail::store_be<std::int64_t>(out, v.since_midnight.count());
  }
  static std::error_code decode(const char* p, int len, time_of_day& out) noexcept {
    if (len != 8) return detail::bad();
    out.since_midnight = std::chrono::microseconds{detail::load_be<std::int64_t>(p)};
    return detail::ok();
  }
};

template <>
struct type_traits<interval> {
  static constexpr oid_t type_oid = oid::interval, array_oid = oid::interval_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::interval; }
  static void encode(const interval& v, std::string& out) {
    detail::store_be<std::int64_t>(out, v.microseconds);
    detail::store_be<std::int32_t>(out, v.days);
    detail::store_be<std::int32_t>(out, v.months);
  }
  static std::error_code decode(const char* p, int len, interval& out) noexcept {
    if (len != 16) return detail::bad();
    out.microseconds = detail::load_be<std::int64_t>(p);
    out.days = detail::load_be<std::int32_t>(p + 8);
    out.months = detail::load_be<std::int32_t>(p + 12);
    return detail::ok();
  }
};

}  // namespace inlet::pg

// clang-format off: the order matters (value_traits before the user-type codecs)
#include "inlet/pg/detail/value_traits.hpp"
#include "inlet/pg/composite.hpp"
#include "inlet/pg/hstore.hpp"
#include "inlet/pg/range.hpp"
// clang-format on
