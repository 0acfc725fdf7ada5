// Parameters that inlet::pg sends as they are: bytes already in PostgreSQL's binary
// format for a type whose OID differs per database (the store's composites). They are
// sent with OID 0, so the server takes the type from a cast in the SQL text
// (`$1::mail.new_message_v2[]`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "inlet/pg/codec.hpp"
#include "wire.hpp"

namespace inlet::store::pgstore {

/// One value, encoded by the caller.
struct raw_param {
  std::string bytes;
};

/// An array whose elements were encoded one by one (views: they must outlive the
/// request, which binds them when it is sent).
struct array_param {
  oid_t element = 0;
  std::vector<std::string_view> elements;
};

}  // namespace inlet::store::pgstore

template <>
struct inlet::pg::type_traits<inlet::store::pgstore::raw_param> {
  static constexpr oid_t type_oid = 0, array_oid = 0;
  static constexpr bool accepts(oid_t) noexcept { return false; }
  static void encode(const inlet::store::pgstore::raw_param& v, std::string& out) {
    out.append(v.bytes);
  }
};

template <>
struct inlet::pg::type_traits<inlet::store::pgstore::array_param> {
  static constexpr oid_t type_oid = 0, array_oid = 0;
  static constexpr bool accepts(oid_t) noexcept { return false; }
  static void encode(const inlet::store::pgstore::array_param& v, std::string& out) {
    std::size_t n = 20;
    for (auto e : v.elements) n += e.size() + 4;
    out.reserve(out.size() + n);
    inlet::store::pgstore::encode_array_header(out, v.element, v.elements.size());
    for (auto e : v.elements) inlet::store::pgstore::encode_element(out, e);
  }
};
