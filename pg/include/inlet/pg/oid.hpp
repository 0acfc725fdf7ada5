// Built-in PostgreSQL type OIDs (pg_type.dat). User-defined types and OID maps come
// with part 2; everything here is fixed by the server and needs no lookup.
#pragma once
#include <cstdint>

namespace inlet::pg {

using oid_t = std::uint32_t;

namespace oid {
inline constexpr oid_t unknown_oid = 0;
inline constexpr oid_t bool_ = 16, bytea = 17, char_ = 18, name = 19, int8 = 20, int2 = 21,
                       int4 = 23, text = 25, oid_ = 26, json = 114, xml = 142, float4 = 700,
                       float8 = 701, unknown = 705, cidr = 650, inet = 869, bpchar = 1042,
                       varchar = 1043, date = 1082, time = 1083, timestamp = 1114,
                       timestamptz = 1184, interval = 1186, numeric = 1700, uuid = 2950,
                       jsonb = 3802;
// Array types.
inline constexpr oid_t bool_array = 1000, bytea_array = 1001, char_array = 1002,
                       name_array = 1003, int2_array = 1005, int4_array = 1007,
                       text_array = 1009, varchar_array = 1015, bpchar_array = 1014,
                       int8_array = 1016, float4_array = 1021, float8_array = 1022,
                       inet_array = 1041, cidr_array = 651, date_array = 1182,
                       time_array = 1183, timestamp_array = 1115, timestamptz_array = 1185,
                       interval_array = 1187, numeric_array = 1231, uuid_array = 2951,
                       json_array = 199, jsonb_array = 3807;
}  // namespace oid

/// Human-readable name of a built-in type OID ("int4", "text[]"), or "oid <n>".
const char* type_name(oid_t o) noexcept;

}  // namespace inlet::pg
