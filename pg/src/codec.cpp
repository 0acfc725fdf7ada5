// Out-of-line codecs: numeric (exact decimal text <-> base-10000 digits), inet/cidr,
// uuid text, and type names for diagnostics.
#include <arpa/inet.h>

#include <cstdio>

#include "inlet/pg/codec.hpp"

namespace inlet::pg {

namespace {
constexpr std::uint16_t num_pos = 0x0000, num_neg = 0x4000, num_nan = 0xC000,
                        num_pinf = 0xD000, num_ninf = 0xF000;

void append_group(std::string& s, int d, bool pad) {
  char b[8];
  int n = std::snprintf(b, sizeof b, pad ? "%04d" : "%d", d);
  s.append(b, static_cast<std::size_t>(n));
}
}  // namespace

namespace detail {

std::error_code decode_numeric(const char* p, int len, std::string& out) {
  if (len < 8) return bad();
  auto ndigits = load_be<std::int16_t>(p);
  auto weight = load_be<std::int16_t>(p + 2);
  auto sign = load_be<std::uint16_t>(p + 4);
  auto dscale = load_be<std::int16_t>(p + 6);
  if (ndigits < 0 || dscale < 0 || len != 8 + 2 * ndigits) return bad();
  out.clear();
  switch (sign) {
    case num_nan: out = "NaN"; return {};
    case num_pinf: out = "Infinity"; return {};
    case num_ninf: out = "-Infinity"; return {};
    case num_pos: break;
    case num_neg: out.push_back('-'); break;
    default: return bad();
  }
  auto digit = [&](int i) -> int {
    if (i < 0 || i >= ndigits) return 0;
    return load_be<std::int16_t>(p + 8 + 2 * i);
  };
  for (int i = 0; i < ndigits; ++i)
    if (digit(i) < 0 || digit(i) > 9999) return bad();
  if (weight >= 0) {
    std::size_t start = out.size();
    for (int i = 0; i <= weight; ++i) append_group(out, digit(i), i != 0);
    // Canonical text even for non-canonical input (leading zero groups).
    std::size_t z = start;
    while (z + 1 < out.size() && out[z] == '0') ++z;
    out.erase(start, z - start);
  } else {
    out.push_back('0');
  }
  if (dscale > 0) {
    out.push_back('.');
    std::size_t start = out.size();
    for (int i = weight + 1; out.size() - start < static_cast<std::size_t>(dscale); ++i)
      append_group(out, digit(i), true);
    out.resize(start + static_cast<std::size_t>(dscale));
  }
  if (out[0] == '-' && out.find_first_not_of("0.", 1) == std::string::npos) out.erase(0, 1);  // no "-0"
  return {};
}

void encode_numeric(std::string_view t, std::string& out, std::error_code& ec) {
  if (t == "NaN") {
    for (auto v : {0, 0}) store_be<std::int16_t>(out, static_cast<std::int16_t>(v));
    store_be<std::uint16_t>(out, num_nan);
    store_be<std::int16_t>(out, 0);
    return;
  }
  if (t == "Infinity" || t == "-Infinity") {
    store_be<std::int16_t>(out, 0);
    store_be<std::int16_t>(out, 0);
    store_be<std::uint16_t>(out, t[0] == '-' ? num_ninf : num_pinf);
    store_be<std::int16_t>(out, 0);
    return;
  }
  bool neg = false;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  auto dot = t.find('.');
  std::string_view ip = t.substr(0, dot), fp = dot == t.npos ? std::string_view{} : t.substr(dot + 1);
  auto all_digits = [](std::string_view s) {
    for (char c : s)
      if (c < '0' || c > '9') return false;
    return true;
  };
  if ((ip.empty() && fp.empty()) || !all_digits(ip) || !all_digits(fp) || fp.size() > 16383 ||
      ip.size() > 131072) {
    ec = make_error_code(errc::invalid_value);
    return;
  }
  std::vector<std::int16_t> g;
  std::size_t ig = (ip.size() + 3) / 4;
  int weight = static_cast<int>(ig) - 1;
  std::size_t lead = ig * 4 - ip.size();  // zeros padded on the left
  auto at_int = [&](std::size_t k) { return k < lead ? 0 : ip[k - lead] - '0'; };
  for (std::size_t i = 0; i < ig; ++i) {
    int d = 0;
    for (std::size_t k = 0; k < 4; ++k) d = d * 10 + at_int(i * 4 + k);
    g.push_back(static_cast<std::int16_t>(d));
  }
  for (std::size_t i = 0; i < fp.size(); i += 4) {
    int d = 0;
    for (std::size_t k = 0; k < 4; ++k) d = d * 10 + (i + k < fp.size() ? fp[i + k] - '0' : 0);
    g.push_back(static_cast<std::int16_t>(d));
  }
  std::size_t first = 0;
  while (first < g.size() && g[first] == 0) ++first, --weight;
  std::size_t last = g.size();
  while (last > first && g[last - 1] == 0) --last;
  if (first == last) {
    weight = 0;
    neg = false;
  }
  store_be<std::int16_t>(out, static_cast<std::int16_t>(last - first));
  store_be<std::int16_t>(out, static_cast<std::int16_t>(weight));
  store_be<std::uint16_t>(out, neg ? num_neg : num_pos);
  store_be<std::int16_t>(out, static_cast<std::int16_t>(fp.size()));
  for (std::size_t i = first; i < last; ++i) store_be<std::int16_t>(out, g[i]);
}

void encode_inet(const inet& v, std::string& out) {
  bool v4 = v.family == inet::family_t::v4;
  out.push_back(static_cast<char>(v4 ? 2 : 3));
  out.push_back(static_cast<char>(v.bits));
  out.push_back(static_cast<char>(v.is_cidr ? 1 : 0));
  out.push_back(static_cast<char>(v4 ? 4 : 16));
  out.append(reinterpret_cast<const char*>(v.addr.data()), v4 ? 4 : 16);
}

std::error_code decode_inet(const char* p, int len, inet& out) noexcept {
  if (len < 4) return bad();
  auto fam = static_cast<std::uint8_t>(p[0]);
  auto bits = static_cast<std::uint8_t>(p[1]);
  auto nb = static_cast<std::uint8_t>(p[3]);
  if (fam == 2) {
    if (nb != 4 || bits > 32 || len != 8) return bad();
    out.family = inet::family_t::v4;
  } else if (fam == 3) {
    if (nb != 16 || bits > 128 || len != 20) return bad();
    out.family = inet::family_t::v6;
  } else {
    return bad();
  }
  out.bits = bits;
  out.is_cidr = p[2] != 0;
  out.addr = {};
  std::memcpy(out.addr.data(), p + 4, nb);
  return {};
}

}  // namespace detail

std::string uuid::to_string() const {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(hex[bytes[i] >> 4]);
    s.push_back(hex[bytes[i] & 15]);
  }
  return s;
}

std::optional<uuid> uuid::parse(std::string_view s) noexcept {
  uuid u;
  std::size_t n = 0;
  int half = -1;
  for (char c : s) {
    if (c == '-') continue;
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (v < 0 || n >= 16) return std::nullopt;
    if (half < 0) {
      half = v;
    } else {
      u.bytes[n++] = static_cast<std::uint8_t>(half * 16 + v);
      half = -1;
    }
  }
  if (n != 16 || half >= 0) return std::nullopt;
  return u;
}

std::string inet::to_string() const {
  char buf[64];
  if (!inet_ntop(family == family_t::v4 ? AF_INET : AF_INET6, addr.data(), buf, sizeof buf))
    return "?";
  return std::string(buf) + "/" + std::to_string(bits);
}

const char* type_name(oid_t o) noexcept {
  switch (o) {
    case oid::bool_: return "bool";
    case oid::bytea: return "bytea";
    case oid::char_: return "char";
    case oid::name: return "name";
    case oid::int8: return "int8";
    case oid::int2: return "int2";
    case oid::int4: return "int4";
    case oid::text: return "text";
    case oid::oid_: return "oid";
    case oid::json: return "json";
    case oid::float4: return "float4";
    case oid::float8: return "float8";
    case oid::unknown: return "unknown";
    case oid::cidr: return "cidr";
    case oid::inet: return "inet";
    case oid::bpchar: return "bpchar";
    case oid::varchar: return "varchar";
    case oid::date: return "date";
    case oid::time: return "time";
    case oid::timestamp: return "timestamp";
    case oid::timestamptz: return "timestamptz";
    case oid::interval: return "interval";
    case oid::numeric: return "numeric";
    case oid::uuid: return "uuid";
    case oid::jsonb: return "jsonb";
    case oid::bool_array: return "bool[]";
    case oid::bytea_array: return "bytea[]";
    case oid::int2_array: return "int2[]";
    case oid::int4_array: return "int4[]";
    case oid::int8_array: return "int8[]";
    case oid::text_array: return "text[]";
    case oid::varchar_array: return "varchar[]";
    case oid::float4_array: return "float4[]";
    case oid::float8_array: return "float8[]";
    case oid::numeric_array: return "numeric[]";
    case oid::uuid_array: return "uuid[]";
    case oid::timestamptz_array: return "timestamptz[]";
    case oid::timestamp_array: return "timestamp[]";
    case oid::date_array: return "date[]";
    case oid::jsonb_array: return "jsonb[]";
    case oid::json_array: return "json[]";
    case oid::inet_array: return "inet[]";
    case oid::interval_array: return "interval[]";
    default: return "other";
  }
}

}  // namespace inlet::pg
