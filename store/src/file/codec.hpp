// How the file store lays a message's envelope and summary into one column, and its raw
// bytes into another (zstd, or as they are).
//
// Meta: a version byte, then fields in a fixed order; strings as a varint length and
// the bytes, counts and integers as varints, the Date: header as a flag and a signed
// nanosecond count. summary.search_text is not part of it (its own column).
// Raw: a codec number beside the bytes (0 = as is, 1 = one zstd frame), so a file
// written at one --compression level reads at any other.
//
// Thread-safety: pure functions (zstd contexts are per thread).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "inlet/store/types.hpp"

namespace inlet::store::file {

std::string encode_meta(const envelope& e, const summary& s);
/// False when the bytes do not decode (a damaged row): e and s are then unspecified.
bool decode_meta(std::string_view in, envelope& e, summary& s);
/// The envelope's addresses only, as views into `in` (a search reads them from every
/// row without decoding the rest): false when the bytes do not decode.
bool decode_meta_addresses(std::string_view in, std::string_view& mail_from,
                           std::vector<std::string_view>& rcpt_to);

enum class raw_codec : int { none = 0, zstd = 1 };

/// The zstd level of a Mailpit compression level: 1 fastest (zstd 1), 2 default (3),
/// 3 best (11), as Mailpit's encoder levels of the same names.
int zstd_level(int compression);
/// Compresses with zstd at `level` (> 0).
std::string compress(std::string_view raw, int level);
/// False when the frame does not decode or is larger than `max_size`.
bool decompress(std::string_view frame, std::string& out, std::size_t max_size);

}  // namespace inlet::store::file
