#include "file/schema.hpp"

#include "file/mailpit.hpp"
#include "file/query.hpp"

#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace inlet::store::file {
namespace {

[[noreturn]] void refuse(errc code, const std::string& path, const std::string& why) {
  throw file_store_error(make_error_code(code), path + ": " + why);
}

std::uint32_t be16(const unsigned char* p) { return (std::uint32_t{p[0]} << 8) | p[1]; }
std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

bool file_size(const std::string& path, long long& size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  size = static_cast<long long>(st.st_size);
  return true;
}

// The header of a file that exists and is not empty: SQLite's magic, a page size it can
// have, and (without a WAL that may hold the rest) no fewer bytes than it says it has.
void check_header(const std::string& path, long long size) {
  if (size < 100)
    refuse(errc::corrupt, path,
           "only " + std::to_string(size) + " bytes: truncated, or not a SQLite database");
  std::array<unsigned char, 100> h{};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(h.data()), h.size()))
    refuse(errc::unavailable, path, std::string("cannot read: ") + std::strerror(errno));
  static constexpr char magic[] = "SQLite format 3";  // and its NUL: 16 bytes
  if (std::memcmp(h.data(), magic, sizeof magic) != 0)
    refuse(errc::foreign_file, path, "not a SQLite database (no SQLite header); left as it is");
  std::uint32_t page = be16(h.data() + 16);
  if (page == 1) page = 65536;
  if (page < 512 || page > 65536 || (page & (page - 1)) != 0)
    refuse(errc::corrupt, path, "damaged SQLite header (page size " + std::to_string(page) + ")");
  const std::uint32_t pages = be32(h.data() + 28);
  const bool pages_valid = be32(h.data() + 24) == be32(h.data() + 92) && pages != 0;
  long long wal = 0;
  const bool has_wal = file_size(path + "-wal", wal) && wal > 0;
  if (pages_valid && !has_wal && size < static_cast<long long>(pages) * page)
    refuse(errc::corrupt, path,
           "truncated: " + std::to_string(size) + " bytes, the header says " +
               std::to_string(static_cast<long long>(pages) * page));
}

errc code_of(const sqlite_error& e) {
  switch (e.primary()) {
    case SQLITE_NOTADB:
      return errc::foreign_file;
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      return errc::corrupt;
    default:
      return errc::unavailable;
  }
}

void create_tables(connection& c, const table_names& t) {
  c.exec("CREATE TABLE IF NOT EXISTS " + t.meta + "(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  c.exec("CREATE TABLE IF NOT EXISTS " + t.messages +
         "(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
         " created INTEGER NOT NULL, size INTEGER NOT NULL, read INTEGER NOT NULL,"
         " attachments INTEGER NOT NULL, inline_parts INTEGER NOT NULL,"
         " tags TEXT NOT NULL, tags_f BLOB NOT NULL, mailboxes TEXT NOT NULL,"
         " meta BLOB NOT NULL, f_to BLOB NOT NULL, f_from BLOB NOT NULL, f_cc BLOB NOT NULL,"
         " f_bcc BLOB NOT NULL, f_reply_to BLOB NOT NULL, f_subject BLOB NOT NULL,"
         " f_message_id BLOB NOT NULL, search_text BLOB NOT NULL)");
  c.exec("CREATE INDEX IF NOT EXISTS " + t.prefix + "inlet_messages_created ON " + t.messages +
         "(created)");
  // (read, seq): the counts of a listing (total, unread, before a key) from this small
  // index instead of the table's wide rows.
  c.exec("CREATE INDEX IF NOT EXISTS " + t.prefix + "inlet_messages_read ON " + t.messages +
         "(read)");
  c.exec("CREATE TABLE IF NOT EXISTS " + t.raw +
         "(seq INTEGER PRIMARY KEY, codec INTEGER NOT NULL, data BLOB NOT NULL)");
  c.exec("CREATE TABLE IF NOT EXISTS " + t.mailboxes +
         "(mailbox TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY(mailbox, seq)) WITHOUT ROWID");
  c.exec("INSERT OR IGNORE INTO " + t.meta + "(key, value) VALUES('schema_version', '" +
         std::to_string(schema_version) + "')");
}

}  // namespace

std::string tenant_prefix(const std::string& tenant_id) {
  std::string out = mailpit_prefix(tenant_id);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

table_names::table_names(const std::string& tenant_id) : prefix(tenant_prefix(tenant_id)) {
  meta = prefix + "inlet_meta";
  messages = prefix + "inlet_messages";
  raw = prefix + "inlet_raw";
  mailboxes = prefix + "inlet_mailboxes";
}

opened_file open_store_file(const file_store_config& cfg, const table_names& t) {
  const std::string& path = cfg.path;
  if (path.empty()) refuse(errc::unavailable, "(none)", "no database file given");
  long long size = 0;
  const bool exists = file_size(path, size);
  if (exists && size > 0) check_header(path, size);
  connection c;
  try {
    c = connection(path, SQLITE_OPEN_READWRITE | (exists ? 0 : SQLITE_OPEN_CREATE) |
                             SQLITE_OPEN_NOMUTEX);
  } catch (const sqlite_error& e) {
    refuse(errc::unavailable, path, std::string("cannot open: ") + e.what());
  }
  sqlite3_busy_timeout(c.get(), 10'000);
  // Read-only checks first: a file refused here has not been written to.
  std::vector<std::string> tables;
  try {
    if (exists && size > 0 && cfg.check_on_open) {
      statement qc(c, "PRAGMA quick_check(5)");
      std::string problems;
      while (qc.step()) {
        std::string line(qc.bytes(0));
        if (line == "ok") continue;
        if (!problems.empty()) problems += "; ";
        problems += line;
      }
      if (!problems.empty()) refuse(errc::corrupt, path, "damaged database: " + problems);
    }
    statement st(c, "SELECT name FROM sqlite_master WHERE type='table'");
    while (st.step()) tables.emplace_back(st.bytes(0));
  } catch (const sqlite_error& e) {
    refuse(code_of(e), path, std::string("cannot be read as a database: ") + e.what());
  }
  bool ours = false, any_inlet = false, any_mailpit = false;
  std::string others;
  auto lower = [](std::string s) {
    for (auto& c : s)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
  };
  auto ends_with = [](const std::string& s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const auto& raw_name : tables) {
    const auto name = lower(raw_name);
    if (name == t.messages) ours = true;
    if (ends_with(name, "inlet_meta")) any_inlet = true;
    if (ends_with(name, "mailbox_data")) any_mailpit = true;  // Mailpit's, of some tenant
    if (name.rfind("sqlite_", 0) != 0 && others.size() < 200)
      others += (others.empty() ? "" : ", ") + raw_name;
  }
  bool mailpit = false;
  try {
    mailpit = has_mailpit_tables(c, mailpit_prefix(cfg.tenant_id));
  } catch (const sqlite_error& e) {
    refuse(code_of(e), path, std::string("cannot be read as a database: ") + e.what());
  }
  if (!ours && !any_inlet && !any_mailpit && !others.empty())
    refuse(errc::foreign_file, path,
           "a SQLite database of another application (tables: " + others +
               "); left as it is");
  try {
    if (ours) {
      const auto v = c.query_int("SELECT value FROM " + t.meta + " WHERE key='schema_version'");
      if (v > schema_version)
        refuse(errc::foreign_file, path,
               "written by a newer inlet (schema " + std::to_string(v) + ")");
    }
    if (tables.empty())  // only takes effect before the first table exists
      c.exec(cfg.auto_vacuum ? "PRAGMA auto_vacuum=INCREMENTAL" : "PRAGMA auto_vacuum=NONE");
    const std::string mode = c.query_text(cfg.wal ? "PRAGMA journal_mode=WAL"
                                                  : "PRAGMA journal_mode=DELETE");
    if (cfg.wal && mode != "wal")
      refuse(errc::unavailable, path, "WAL journal not available here (" + mode +
                                          "); run with --disable-wal");
    c.exec("PRAGMA synchronous=FULL");
    c.exec("PRAGMA foreign_keys=OFF");
    c.exec("BEGIN IMMEDIATE");
    create_tables(c, t);
    c.exec("COMMIT");
  } catch (const sqlite_error& e) {
    refuse(code_of(e), path, std::string("cannot set up the store: ") + e.what());
  }
  add_functions(c);
  opened_file out;
  if (mailpit) {
    statement st(c, "SELECT 1 FROM " + t.meta + " WHERE key='mailpit_imported'");
    out.import_mailpit = !st.step();
  }
  out.writer = std::move(c);
  return out;
}

namespace {
// contains(haystack, needle) over bytes: 1 when needle occurs in haystack. glibc's memmem
// (two-way, vectorised) where SQLite's instr compares at every position.
void contains_fn(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const void* hay = sqlite3_value_blob(argv[0]);
  const int hay_n = sqlite3_value_bytes(argv[0]);
  const void* needle = sqlite3_value_blob(argv[1]);
  const int needle_n = sqlite3_value_bytes(argv[1]);
  if (needle_n == 0) return sqlite3_result_int(ctx, 1);
  if (!hay || hay_n < needle_n) return sqlite3_result_int(ctx, 0);
  sqlite3_result_int(ctx, ::memmem(hay, static_cast<std::size_t>(hay_n), needle,
                                   static_cast<std::size_t>(needle_n)) != nullptr);
}
}  // namespace

void add_functions(connection& c) {
  const int rc = sqlite3_create_function_v2(
      c.get(), "inlet_contains", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
      nullptr, &contains_fn, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) c.fail(rc, "inlet_contains");
  add_query_functions(c);
}

connection open_reader(const file_store_config& cfg) {
  connection c(cfg.path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
  sqlite3_busy_timeout(c.get(), 10'000);
  // A search scans every row's search text: mapped, the pages are read without a copy.
  c.exec("PRAGMA mmap_size=2147418112");
  c.exec("PRAGMA cache_size=-32768");
  add_functions(c);
  return c;
}

}  // namespace inlet::store::file
