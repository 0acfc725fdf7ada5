// Big-endian integer helpers for the binary wire format. Internal.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace inlet::pg::detail {

template <class T>
inline T load_be(const char* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(static_cast<std::uint16_t>(v)));
  else if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(static_cast<std::uint32_t>(v)));
  else if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(static_cast<std::uint64_t>(v)));
  else return v;
}

template <class T>
inline void store_be(std::string& out, T v) {
  if constexpr (sizeof(T) == 2) v = static_cast<T>(__builtin_bswap16(static_cast<std::uint16_t>(v)));
  else if constexpr (sizeof(T) == 4) v = static_cast<T>(__builtin_bswap32(static_cast<std::uint32_t>(v)));
  else if constexpr (sizeof(T) == 8) v = static_cast<T>(__builtin_bswap64(static_cast<std::uint64_t>(v)));
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof b);
}

/// Overwrites 4 bytes at `pos` (for length prefixes written before the value).
inline void patch_be32(std::string& out, std::size_t pos, std::int32_t v) {
  auto u = __builtin_bswap32(static_cast<std::uint32_t>(v));
  std::memcpy(out.data() + pos, &u, 4);
}

}  // namespace inlet::pg::detail
