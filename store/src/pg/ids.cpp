#include "ids.hpp"

#include <random>

#include "inlet/store/types.hpp"

namespace inlet::store::pgstore {
namespace {

constexpr char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

int digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  if (c >= 'a' && c <= 'z') return c - 'a' + 36;
  return -1;
}

// Writes v as `width` base62 digits at out[0..width).
void put_base62(char* out, std::uint64_t v, int width) noexcept {
  for (int i = width; i-- > 0;) {
    out[i] = alphabet[v % 62];
    v /= 62;
  }
}

}  // namespace

std::uint32_t bucket_of(std::string_view mailbox, std::uint32_t buckets) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : mailbox) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<std::uint32_t>(h % buckets);
}

std::string make_id(std::int64_t received_us, std::uint32_t bucket) {
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  std::string id(id_length, '0');
  put_base62(id.data(), static_cast<std::uint64_t>(received_us), 9);
  put_base62(id.data() + 9, bucket, 2);
  put_base62(id.data() + 11, gen(), 11);
  return id;
}

std::optional<id_parts> parse_id(std::string_view id) noexcept {
  if (id.size() != id_length) return std::nullopt;
  std::uint64_t t = 0, b = 0;
  for (std::size_t i = 0; i < id.size(); ++i) {
    int d = digit(id[i]);
    if (d < 0) return std::nullopt;
    if (i < 9)
      t = t * 62 + static_cast<std::uint64_t>(d);
    else if (i < 11)
      b = b * 62 + static_cast<std::uint64_t>(d);
  }
  if (t > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  return id_parts{static_cast<std::int64_t>(t), static_cast<std::uint32_t>(b)};
}

}  // namespace inlet::store::pgstore
