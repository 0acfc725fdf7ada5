// C++ value types for PostgreSQL types that have no exact standard equivalent.
// The full mapping (C++ type <-> OID) is in codec.hpp; the table is in docs/pg.md.
#pragma once
#include <array>
#include <chrono>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace inlet::pg {

/// uuid: 16 bytes in network order.
struct uuid {
  std::array<std::uint8_t, 16> bytes{};
  auto operator<=>(const uuid&) const = default;
  std::string to_string() const;  ///< "8-4-4-4-12" lower-case hex
  static std::optional<uuid> parse(std::string_view s) noexcept;
};

/// interval: kept as PostgreSQL keeps it (months and days do not have a fixed length).
struct interval {
  std::int64_t microseconds = 0;
  std::int32_t days = 0;
  std::int32_t months = 0;
  auto operator<=>(const interval&) const = default;
};

/// numeric, exact: the decimal text as PostgreSQL prints it ("-12.3400", "NaN",
/// "Infinity", "-Infinity"). Sent and received in binary; converted without rounding.
struct numeric {
  std::string text;
  auto operator<=>(const numeric&) const = default;
};

/// json and jsonb: the document text (sent and received in binary, no re-parse).
struct json {
  std::string text;
  auto operator<=>(const json&) const = default;
};
struct jsonb {
  std::string text;
  auto operator<=>(const jsonb&) const = default;
};

/// inet and cidr: an IPv4 or IPv6 address with a prefix length.
struct inet {
  enum class family_t : std::uint8_t { v4 = 2, v6 = 3 };
  family_t family = family_t::v4;
  std::uint8_t bits = 32;  ///< prefix length
  bool is_cidr = false;    ///< true when read from / to be sent as cidr
  std::array<std::uint8_t, 16> addr{};  ///< first 4 bytes used for v4
  auto operator<=>(const inet&) const = default;
  std::string to_string() const;  ///< "10.0.0.1/8", "::1/128"
};

/// date, timestamp, timestamptz, time. +/-infinity map to time_point::max()/min().
using date = std::chrono::sys_days;
using timestamp = std::chrono::local_time<std::chrono::microseconds>;
using timestamptz = std::chrono::sys_time<std::chrono::microseconds>;
/// time of day (without time zone), microseconds since midnight.
struct time_of_day {
  std::chrono::microseconds since_midnight{0};
  auto operator<=>(const time_of_day&) const = default;
};

}  // namespace inlet::pg
