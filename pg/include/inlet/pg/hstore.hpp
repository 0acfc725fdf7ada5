// hstore (the extension type): a map of text keys to nullable text values, in binary
// format. Its OID is per database: register pg::hstore in the OID map.
//
// Wire: int32 count, then per pair int32 key length, key, int32 value length (-1 NULL),
// value. Included by codec.hpp.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "inlet/pg/oid_map.hpp"

namespace inlet::pg {

/// hstore: keys are unique (the server sends them sorted); a NULL value is nullopt.
struct hstore {
  std::map<std::string, std::optional<std::string>, std::less<>> items;
  static constexpr std::string_view pg_type_name = "hstore";
  friend bool operator==(const hstore&, const hstore&) = default;
};

template <>
struct value_traits<hstore> {
  using scalar = hstore;
  static oid_t type_oid() noexcept { return detail::user_oid<hstore>(); }
  static oid_t array_oid() noexcept { return detail::user_array_oid<hstore>(); }
  static bool accepts(oid_t o) noexcept { return o != 0 && o == type_oid(); }
  static bool encode(const hstore& v, std::string& out, std::error_code&) {
    detail::store_be<std::int32_t>(out, static_cast<std::int32_t>(v.items.size()));
    for (const auto& [k, val] : v.items) {
      detail::store_be<std::int32_t>(out, static_cast<std::int32_t>(k.size()));
      out.append(k);
      if (!val) {
        detail::store_be<std::int32_t>(out, -1);
        continue;
      }
      detail::store_be<std::int32_t>(out, static_cast<std::int32_t>(val->size()));
      out.append(*val);
    }
    return true;
  }
  static std::error_code decode(const char* p, int len, hstore& out) {
    if (len < 0) return make_error_code(errc::unexpected_null);
    if (len < 4) return detail::bad();
    const char* end = p + len;
    const auto n = detail::load_be<std::int32_t>(p);
    p += 4;
    if (n < 0 || n > (end - p) / 8) return detail::bad();  // each pair needs >= 8 bytes
    out.items.clear();
    for (std::int32_t i = 0; i < n; ++i) {
      if (end - p < 4) return detail::bad();
      const auto kl = detail::load_be<std::int32_t>(p);
      p += 4;
      if (kl < 0 || kl > end - p) return detail::bad();
      std::string key(p, static_cast<std::size_t>(kl));
      p += kl;
      if (end - p < 4) return detail::bad();
      const auto vl = detail::load_be<std::int32_t>(p);
      p += 4;
      if (vl > end - p) return detail::bad();
      std::optional<std::string> val;
      if (vl >= 0) {
        val.emplace(p, static_cast<std::size_t>(vl));
        p += vl;
      }
      out.items.insert_or_assign(std::move(key), std::move(val));
    }
    return p == end ? detail::ok() : detail::bad();
  }
};

}  // namespace inlet::pg
