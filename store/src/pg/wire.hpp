// Binary encoding of the PostgreSQL store's composite values: a message copy
// (mail.new_message_v2), addresses (mail.addr), attachments (mail.attach) and arrays
// of them, in PostgreSQL's binary send/receive format. inlet::pg maps only built-in
// types; the composite types here have OIDs that differ per database, so every
// encoder takes the OIDs of the shard it writes to (shard_types).
//
// Formats (all integers big-endian):
//   record: int32 ncolumns, then per column: int32 type OID, int32 length (-1 = NULL), bytes
//   array:  int32 ndim (0 for empty), int32 has_null, int32 element OID,
//           per dimension int32 size and int32 lower bound (1), then per element
//           int32 length (-1 = NULL) and bytes
//
// Decoding never reads outside its input and never throws on bad input: it returns
// false (the caller reports errc::unavailable with a message).
//
// Thread-safety: plain functions over caller-owned buffers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/store/search.hpp"
#include "inlet/store/types.hpp"

namespace inlet::store::pgstore {

using oid_t = std::uint32_t;

namespace oids {
inline constexpr oid_t bool_ = 16, bytea = 17, int8 = 20, int4 = 23, text = 25, timestamptz = 1184,
                       int4_array = 1007, text_array = 1009;
}

/// The OIDs of the store's own types in one shard's database (loaded at start).
struct shard_types {
  oid_t addr = 0, addr_array = 0, attach = 0, attach_array = 0, new_message = 0,
        new_message_array = 0;
  bool complete() const noexcept {
    return addr && addr_array && attach && attach_array && new_message && new_message_array;
  }
};

/// Microseconds since 1970 <-> PostgreSQL's timestamptz (microseconds since 2000).
inline constexpr std::int64_t pg_epoch_offset_us = 946'684'800'000'000;

/// The folded header fields a copy carries for searches (mail.message.fields), in order.
inline constexpr std::array<search::field, 7> fields_order = {
    search::field::to,       search::field::from,    search::field::cc,        search::field::bcc,
    search::field::reply_to, search::field::subject, search::field::message_id};

/// One copy of a message as a shard stores it: the message plus what is particular to
/// this shard (its recipients' mailboxes here, their buckets, whether it is the home copy).
struct copy_view {
  const stored_message* msg = nullptr;  ///< msg->created is the time the API shows
  std::int64_t received_us = 0;  ///< arrival, microseconds since 1970 (== what the ID carries)
  bool home = false;
  std::int32_t primary_bucket = 0;
  const std::vector<std::string>* mailboxes = nullptr;
  const std::vector<std::int32_t>* buckets = nullptr;
  bool read = false;
};

/// Appends one mail.new_message_v2 record (without the element length prefix).
void encode_copy(std::string& out, const shard_types& t, const copy_view& c);

/// Appends an array header for `n` elements of `elem` (ndim 1, or 0 when n == 0).
void encode_array_header(std::string& out, oid_t elem, std::size_t n);

/// Appends `v` as PostgreSQL text: valid UTF-8 as is, each invalid byte (and NUL) as
/// U+FFFD. Summary fields come from message headers, which may hold any bytes.
void append_text(std::string& out, std::string_view v);

/// Appends int32 length + bytes of one element.
void encode_element(std::string& out, std::string_view bytes);

// ---- decoding ---------------------------------------------------------------------
bool decode_addr(std::string_view in, address& out);
bool decode_addr_array(std::string_view in, address_list& out);
bool decode_addr_array(std::string_view in, std::vector<address>& out);
bool decode_attach_array(std::string_view in, std::vector<attachment_info>& out);
bool decode_text_array(std::string_view in, std::vector<std::string>& out);
bool decode_int4_array(std::string_view in, std::vector<std::int32_t>& out);

// Low-level pieces, shared with the tests.
void put_i32(std::string& out, std::int32_t v);
void put_i64(std::string& out, std::int64_t v);
std::int32_t get_i32(const char* p) noexcept;
std::int64_t get_i64(const char* p) noexcept;

}  // namespace inlet::store::pgstore
