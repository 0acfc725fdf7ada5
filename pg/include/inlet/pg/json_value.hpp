// jsonb and json columns into Boost.JSON values (parsed on decode, serialized on
// encode; sent as jsonb). For the text without a parse, use pg::jsonb / pg::json.
// Needs Boost::json (inlet::pg links it).
#pragma once
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "inlet/pg/codec.hpp"

namespace inlet::pg {

template <>
struct type_traits<boost::json::value> {
  static constexpr oid_t type_oid = oid::jsonb, array_oid = oid::jsonb_array;
  static constexpr bool accepts(oid_t o) noexcept { return o == oid::jsonb || o == oid::json; }
  static constexpr bool accepts_array(oid_t o) noexcept {
    return o == oid::jsonb_array || o == oid::json_array;
  }
  static void encode(const boost::json::value& v, std::string& out) {
    out.push_back(1);  // jsonb binary format version
    out.append(boost::json::serialize(v));
  }
  /// jsonb starts with its format version (1); json is the bare text. Either is told
  /// apart by the first byte: JSON text never starts with 0x01.
  static std::error_code decode(const char* p, int len, boost::json::value& out) {
    std::string_view s(p, static_cast<std::size_t>(len));
    if (!s.empty() && s[0] == 1) s.remove_prefix(1);
    std::error_code ec;
    out = boost::json::parse(s, ec);
    return ec ? make_error_code(errc::invalid_value) : detail::ok();
  }
};

}  // namespace inlet::pg
