// Message IDs and mailbox buckets of the PostgreSQL store.
//
// A mailbox (normalised address) maps to one of `buckets` buckets by a stable hash
// (FNV-1a 64 of its bytes, then the murmur3 64-bit finaliser, modulo the bucket count);
// the hash is part of the on-disk format: changing it would put mailboxes on the wrong
// shards. Buckets map to shards through the bucket map kept in PostgreSQL.
//
// An ID is 22 base62 characters ([0-9A-Za-z], ASCII order = numeric order):
//   9 characters  receive time, microseconds since 1970 (covers until year 2398)
//   2 characters  the message's primary bucket (the first recipient's), < 3844
//  11 characters  64 random bits
// so IDs sort by receive time (a listing's keyset order is the ID), a lookup by ID goes
// to one shard (the primary bucket's) and one partition (the receive time).
//
// Thread-safety: pure functions; make_id uses a per-thread generator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace inlet::store::pgstore {

inline constexpr std::uint32_t max_buckets = 62 * 62;

/// The bucket of a normalised mailbox.
std::uint32_t bucket_of(std::string_view mailbox, std::uint32_t buckets) noexcept;

/// A new ID for a message received at `received_us` (microseconds since 1970) whose
/// primary bucket is `bucket`.
std::string make_id(std::int64_t received_us, std::uint32_t bucket);

struct id_parts {
  std::int64_t received_us = 0;
  std::uint32_t bucket = 0;
};

/// Splits an ID; nullopt when it is not one of ours (wrong length or characters).
std::optional<id_parts> parse_id(std::string_view id) noexcept;

}  // namespace inlet::store::pgstore
