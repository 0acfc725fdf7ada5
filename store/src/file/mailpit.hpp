// Reading a Mailpit database (Mailpit 1.2x-1.33, as its internal/storage schemas make
// it) for a one-time import: every message with its ID, received time, read flag, tags,
// Mailpit's summary columns and raw bytes (decompressed when Mailpit compressed them).
//
// Tables, P = Mailpit's tenant prefix: P mailbox (Created ms, ID, MessageID, Subject,
// Metadata JSON of From/To/Cc/Bcc/ReplyTo, Size, Inline, Attachments, Read, Snippet,
// SearchText), P mailbox_data (ID, Email, Compressed: absent before 1.21, when every row
// was zstd), P tags + P message_tags (since 1.10; a JSON Tags column before).
//
// Thread-safety: functions of one connection, called by one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "file/sqlite.hpp"
#include "inlet/store/types.hpp"

namespace inlet::store::file {

struct mailpit_message {
  std::string id;
  time_point created;
  bool read = false;
  std::vector<std::string> tags;
  summary from_columns;     ///< addresses, subject, Message-ID, snippet, inline count
  std::uint32_t attachments = 0;  ///< Mailpit's attachment count
  std::string search_text;  ///< Mailpit's own search text (lower-cased words)
  std::string raw;          ///< decompressed
  std::string zstd_frame;   ///< the stored frame when Mailpit compressed it (kept as is)
};

/// Mailpit's table prefix for a tenant ID, as Mailpit derives it.
std::string mailpit_prefix(const std::string& tenant_id);

/// True when the file holds Mailpit's message tables for this prefix.
bool has_mailpit_tables(connection& c, const std::string& prefix);

/// Calls `each` for every message, oldest first. Throws sqlite_error (SQLITE_CORRUPT for
/// a raw message that does not decompress).
void read_mailpit(connection& c, const std::string& prefix,
                  const std::function<void(mailpit_message&&)>& each);

}  // namespace inlet::store::file
