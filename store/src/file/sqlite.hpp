// A thin RAII layer over the SQLite C API for the file store: a connection, prepared
// statements with typed binds and column reads, errors as exceptions (sqlite_error)
// that carry SQLite's extended result code and message.
//
// Thread-safety: a connection and its statements belong to one thread at a time (the
// file store gives each thread its own connection; SQLite is built serialised-safe).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace inlet::store::file {

class sqlite_error : public std::runtime_error {
 public:
  sqlite_error(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }
  /// The primary result code (SQLITE_BUSY, SQLITE_CORRUPT, ...).
  int primary() const noexcept { return code_ & 0xff; }

 private:
  int code_;
};

class statement;
class cached_statement;

class connection {
 public:
  connection() = default;
  /// Opens `path` with `flags` (SQLITE_OPEN_*); throws sqlite_error.
  connection(const std::string& path, int flags);
  ~connection();
  connection(connection&& o) noexcept : db_(o.db_), cache_(std::move(o.cache_)) { o.db_ = nullptr; }
  connection& operator=(connection&& o) noexcept;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  sqlite3* get() const noexcept { return db_; }
  explicit operator bool() const noexcept { return db_ != nullptr; }
  /// Runs one or more statements without results; throws sqlite_error.
  void exec(const std::string& sql);
  /// The first column of the first row as an integer (0 when there is no row).
  std::int64_t query_int(const std::string& sql);
  std::string query_text(const std::string& sql);
  std::int64_t changes() const noexcept { return sqlite3_changes64(db_); }
  [[noreturn]] void fail(int rc, std::string_view context) const;

  /// The statement for `sql`, prepared on first use (SQLITE_PREPARE_PERSISTENT) and kept
  /// for the connection's life: a reader runs the same few statements for every request,
  /// and parsing one costs more than running it. Reset (bindings cleared) when the
  /// returned handle ends. At most max_cached statements: past that the cache starts
  /// over (search SQL varies with the query). A statement in use is not handed out twice:
  /// a second user of the same SQL gets one of its own. Throws sqlite_error.
  cached_statement cached(const std::string& sql);
  static constexpr std::size_t max_cached = 64;
  struct cache_entry;  // a cached statement and whether a handle holds it

 private:
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, std::shared_ptr<cache_entry>> cache_;
};

class statement {
 public:
  statement() = default;
  statement(connection& c, std::string_view sql);
  /// With sqlite3_prepare_v3's flags (SQLITE_PREPARE_PERSISTENT).
  statement(connection& c, std::string_view sql, unsigned prepare_flags);
  ~statement();
  statement(statement&& o) noexcept : st_(o.st_), db_(o.db_) { o.st_ = nullptr; }
  statement& operator=(statement&& o) noexcept;
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  explicit operator bool() const noexcept { return st_ != nullptr; }
  /// Resets the statement and clears its bindings (for reuse).
  statement& reset();
  // Bind by 1-based index.
  statement& bind(int i, std::int64_t v);
  statement& bind_text(int i, std::string_view v);
  statement& bind_blob(int i, std::string_view v);
  statement& bind_null(int i);
  /// Steps once: true while a row is there, false when done; throws on error.
  bool step();
  /// Steps to completion (a statement without rows).
  void run();

  std::int64_t int64(int col) const noexcept { return sqlite3_column_int64(st_, col); }
  /// Text or blob bytes of a column, valid until the next step/reset.
  std::string_view bytes(int col) const noexcept;
  bool is_null(int col) const noexcept { return sqlite3_column_type(st_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* st_ = nullptr;
  sqlite3* db_ = nullptr;
};

struct connection::cache_entry {
  statement st;
  bool in_use = false;
};

/// A statement from connection::cached(): reset and handed back when this ends.
class cached_statement {
 public:
  cached_statement(std::shared_ptr<connection::cache_entry> e, std::unique_ptr<statement> own)
      : entry_(std::move(e)), own_(std::move(own)) {}
  ~cached_statement() {
    if (entry_) {
      entry_->st.reset();
      entry_->in_use = false;
    }
  }
  cached_statement(cached_statement&&) noexcept = default;
  cached_statement(const cached_statement&) = delete;
  cached_statement& operator=(const cached_statement&) = delete;
  cached_statement& operator=(cached_statement&&) = delete;

  statement& operator*() noexcept { return entry_ ? entry_->st : *own_; }
  statement* operator->() noexcept { return &**this; }

 private:
  std::shared_ptr<connection::cache_entry> entry_;
  std::unique_ptr<statement> own_;
};

}  // namespace inlet::store::file
