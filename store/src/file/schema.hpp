// The file store's tables, and opening a file: the checks that refuse a bad file before
// anything is written to it, then creation of the tables in a new file.
//
// Tables (P = the tenant prefix, "" or "<tenant>_"):
//   P inlet_meta      key/value: schema version
//   P inlet_messages  one row per message: seq (arrival order), id, created (ns), size,
//                     read, attachment and inline counts, tags (display, '\n'-joined),
//                     tags_f ("\nfolded\n" runs), mailboxes ('\n'-joined, normalised),
//                     meta (codec.hpp), the folded search fields f_* and search_text
//   P inlet_raw       seq -> codec, raw bytes (apart, so a scan never reads them)
//   P inlet_mailboxes (mailbox, seq): the per-recipient index
//
// Thread-safety: functions of one connection, called by one thread.
#pragma once

#include <string>

#include "file/sqlite.hpp"
#include "inlet/store/file_store.hpp"

namespace inlet::store::file {

inline constexpr int schema_version = 1;

/// Table names of one tenant.
struct table_names {
  std::string meta, messages, raw, mailboxes;
  std::string prefix;
  explicit table_names(const std::string& tenant_id);
};

/// The prefix of a tenant's tables: Mailpit's prefix for the same tenant ID, lower-cased
/// ("Team A" -> "team_a_"; "" without a tenant).
std::string tenant_prefix(const std::string& tenant_id);

struct opened_file {
  connection writer;
  /// Mailpit's tables of this tenant are in the file and were not imported yet.
  bool import_mailpit = false;
};

/// Checks the file at cfg.path without writing to it (header, size, quick_check, what
/// tables it holds), then opens it for writing and creates the tables when missing.
/// Throws file_store_error. The returned connection is the writer's, set up
/// (journal mode, synchronous=FULL, busy timeout).
opened_file open_store_file(const file_store_config& cfg, const table_names& t);

/// A connection for a reader thread (read-only, busy timeout, memory-mapped, the
/// functions below).
connection open_reader(const file_store_config& cfg);

/// Registers inlet_contains(haystack, needle): 1 when the bytes of needle occur in those
/// of haystack (a substring test by memmem; query.hpp compiles searches to it).
void add_functions(connection& c);

}  // namespace inlet::store::file
