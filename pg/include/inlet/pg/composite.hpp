// Codecs of user-defined types (binary format), on top of the OID map (oid_map.hpp):
//
//   composite  a struct with a pg_type_name: fields in declaration order (Boost.Describe
//              members when described, else Boost.PFR), nested composites, arrays of
//              composites (std::vector<attach>), NULL fields as std::optional.
//              Wire: int32 nfields, then per field int32 oid, int32 length (-1 NULL), bytes.
//   enum       an enum class described with BOOST_DESCRIBE_ENUM: sent and read by label.
//   domain     a struct deriving from pg::domain<Base>: the base type's codec, sent with
//              the domain's OID (so the server checks its constraints); read from either.
//
// Decoding never reads outside [p, p+len) and checks every field's OID.
// Included by codec.hpp.
#pragma once
#include <boost/describe/enumerators.hpp>
#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>
#include <boost/pfr/core.hpp>
#include <string_view>
#include <type_traits>

#include "inlet/pg/oid_map.hpp"

namespace inlet::pg {

/// A domain over Base: derive `struct email : pg::domain<std::string> { static constexpr
/// std::string_view pg_type_name = "mail.email"; };`.
template <class Base>
struct domain {
  Base value{};
  friend bool operator==(const domain&, const domain&) = default;
};

template <class T>
struct range;  // range.hpp

namespace oid {
inline constexpr oid_t record = 2249, record_array = 2287;
}

namespace detail {
template <class T>
concept described_struct = boost::describe::has_describe_members<T>::value;
template <class T>
concept described_enum = std::is_enum_v<T> && boost::describe::has_describe_enumerators<T>::value;

template <class B>
void derives_domain(const domain<B>*);
template <class T>
concept domain_type = user_type<T> && requires(const T* t) { derives_domain(t); };
template <class T>
concept enum_type = user_type<T> && std::is_enum_v<T>;
template <class S>
void derives_range(const range<S>*);
/// A user-defined range type (CREATE TYPE floatrange AS RANGE (subtype = float8)): a
/// struct deriving from pg::range<S> with a pg_type_name (range.hpp).
template <class T>
concept user_range_type = user_type<T> && requires(const T* t) { derives_range(t); };
template <class T>
concept composite_type = user_type<T> && std::is_class_v<T> && !domain_type<T> &&
                         !user_range_type<T> && (described_struct<T> || std::is_aggregate_v<T>);

// Fields of a composite, in declaration order.
template <class T, bool = described_struct<T>>
struct struct_fields {  // Describe
  using members = boost::describe::describe_members<T, boost::describe::mod_public>;
  static constexpr std::size_t size = boost::mp11::mp_size<members>::value;
  template <std::size_t I>
  static auto& get(T& r) noexcept {
    return r.*boost::mp11::mp_at_c<members, I>::pointer;
  }
  template <std::size_t I>
  static const auto& get(const T& r) noexcept {
    return r.*boost::mp11::mp_at_c<members, I>::pointer;
  }
};
template <class T>
struct struct_fields<T, false> {  // PFR
  static constexpr std::size_t size = boost::pfr::tuple_size_v<T>;
  template <std::size_t I>
  static auto& get(T& r) noexcept {
    return boost::pfr::get<I>(r);
  }
  template <std::size_t I>
  static const auto& get(const T& r) noexcept {
    return boost::pfr::get<I>(r);
  }
};

// One field of a composite in: oid, length, value. Advances p. Inlined into the
// composite's decode, so the field loop has no call per field.
template <class F>
[[gnu::always_inline]] inline std::error_code read_composite_field(const char*& p, const char* end,
                                                                   F& out) {
  if (end - p < 8) return make_error_code(errc::invalid_value);
  const auto o = static_cast<oid_t>(load_be<std::int32_t>(p));
  const auto len = load_be<std::int32_t>(p + 4);
  p += 8;
  if (len > end - p) return make_error_code(errc::invalid_value);
  if (len >= 0 && !value_traits<F>::accepts(o)) return make_error_code(errc::type_mismatch);
  if (auto ec = value_traits<F>::decode(p, len, out)) return ec;
  if (len > 0) p += len;
  return ok();
}
template <class F>
void write_composite_field(const F& v, std::string& out, std::error_code& ec) {
  store_be<std::int32_t>(out, static_cast<std::int32_t>(value_traits<F>::type_oid()));
  const std::size_t at = out.size();
  store_be<std::int32_t>(out, 0);
  if (!value_traits<F>::encode(v, out, ec))
    patch_be32(out, at, -1);
  else
    patch_be32(out, at, static_cast<std::int32_t>(out.size() - at - 4));
}
}  // namespace detail

/// A composite type.
template <class T>
  requires detail::composite_type<T>
struct value_traits<T> {
  using scalar = T;
  using fields = detail::struct_fields<T>;
  static oid_t type_oid() noexcept { return detail::user_oid<T>(); }
  static oid_t array_oid() noexcept { return detail::user_array_oid<T>(); }
  /// Its own OID, or an anonymous record (ROW(...)): fields are checked one by one.
  static bool accepts(oid_t o) noexcept { return o == oid::record || (o != 0 && o == type_oid()); }

  static bool encode(const T& v, std::string& out, std::error_code& ec) {
    detail::store_be<std::int32_t>(out, static_cast<std::int32_t>(fields::size));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (detail::write_composite_field(fields::template get<I>(v), out, ec), ...);
    }(std::make_index_sequence<fields::size>{});
    return true;
  }
  static std::error_code decode(const char* p, int len, T& out) {
    if (len < 0) return make_error_code(errc::unexpected_null);
    if (len < 4) return make_error_code(errc::invalid_value);
    const char* end = p + len;
    if (detail::load_be<std::int32_t>(p) != static_cast<std::int32_t>(fields::size))
      return make_error_code(errc::type_mismatch);
    p += 4;
    std::error_code ec = detail::no_error;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((ec = detail::read_composite_field(p, end, fields::template get<I>(out))) || ...);
    }(std::make_index_sequence<fields::size>{});
    if (ec) return ec;
    return p == end ? detail::ok() : make_error_code(errc::invalid_value);
  }
};

/// An enum, by label (its Boost.Describe enumerator names).
template <class T>
  requires detail::enum_type<T>
struct value_traits<T> {
  static_assert(detail::described_enum<T>,
                "a PostgreSQL enum needs BOOST_DESCRIBE_ENUM for its labels");
  using scalar = T;
  static oid_t type_oid() noexcept { return detail::user_oid<T>(); }
  static oid_t array_oid() noexcept { return detail::user_array_oid<T>(); }
  static bool accepts(oid_t o) noexcept { return o != 0 && o == type_oid(); }
  static bool encode(const T& v, std::string& out, std::error_code& ec) {
    bool found = false;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
      if (!found && d.value == v) {
        out.append(d.name);
        found = true;
      }
    });
    if (!found) ec = make_error_code(errc::invalid_value);
    return true;
  }
  static std::error_code decode(const char* p, int len, T& out) {
    if (len < 0) return make_error_code(errc::unexpected_null);
    const std::string_view label(p, static_cast<std::size_t>(len));
    bool found = false;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
      if (!found && label == d.name) {
        out = d.value;
        found = true;
      }
    });
    return found ? detail::ok() : make_error_code(errc::invalid_value);
  }
};

/// A domain: its base type's codec, its own OID as a parameter.
template <class T>
  requires detail::domain_type<T>
struct value_traits<T> {
  using base_t = decltype(std::declval<T&>().value);
  using scalar = T;
  static oid_t type_oid() noexcept { return detail::user_oid<T>(); }
  static oid_t array_oid() noexcept { return detail::user_array_oid<T>(); }
  /// Result columns of a domain type carry the base type's OID.
  static bool accepts(oid_t o) noexcept {
    return value_traits<base_t>::accepts(o) || (o != 0 && o == type_oid());
  }
  static bool encode(const T& v, std::string& out, std::error_code& ec) {
    return value_traits<base_t>::encode(v.value, out, ec);
  }
  static std::error_code decode(const char* p, int len, T& out) {
    return value_traits<base_t>::decode(p, len, out.value);
  }
};

}  // namespace inlet::pg
