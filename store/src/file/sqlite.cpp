#include "file/sqlite.hpp"

namespace inlet::store::file {

connection::connection(const std::string& path, int flags) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw sqlite_error(rc, path + ": " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
}

connection::~connection() {
  cache_.clear();  // finalized before the close
  if (db_) sqlite3_close_v2(db_);
}

connection& connection::operator=(connection&& o) noexcept {
  if (this != &o) {
    cache_.clear();
    if (db_) sqlite3_close_v2(db_);
    db_ = o.db_;
    cache_ = std::move(o.cache_);
    o.db_ = nullptr;
  }
  return *this;
}

cached_statement connection::cached(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    // Entries in use stay alive through their handles when the map starts over.
    if (cache_.size() >= max_cached) cache_.clear();
    auto e = std::make_shared<cache_entry>();
    e->st = statement(*this, sql, SQLITE_PREPARE_PERSISTENT);
    it = cache_.emplace(sql, std::move(e)).first;
  }
  if (it->second->in_use)
    return cached_statement(nullptr, std::make_unique<statement>(*this, sql));
  it->second->in_use = true;
  return cached_statement(it->second, nullptr);
}

void connection::fail(int rc, std::string_view context) const {
  std::string msg(context);
  msg += ": ";
  msg += db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  throw sqlite_error(rc, msg);
}

void connection::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw sqlite_error(sqlite3_extended_errcode(db_), msg);
  }
}

std::int64_t connection::query_int(const std::string& sql) {
  statement st(*this, sql);
  return st.step() ? st.int64(0) : 0;
}

std::string connection::query_text(const std::string& sql) {
  statement st(*this, sql);
  return st.step() ? std::string(st.bytes(0)) : std::string();
}

statement::statement(connection& c, std::string_view sql) : statement(c, sql, 0) {}

statement::statement(connection& c, std::string_view sql, unsigned prepare_flags) : db_(c.get()) {
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), prepare_flags,
                                    &st_, nullptr);
  if (rc != SQLITE_OK) c.fail(rc, "prepare");
}

statement::~statement() {
  if (st_) sqlite3_finalize(st_);
}

statement& statement::operator=(statement&& o) noexcept {
  if (this != &o) {
    if (st_) sqlite3_finalize(st_);
    st_ = o.st_;
    db_ = o.db_;
    o.st_ = nullptr;
  }
  return *this;
}

namespace {
[[noreturn]] void throw_rc(sqlite3* db, int rc, const char* what) {
  throw sqlite_error(sqlite3_extended_errcode(db) ? sqlite3_extended_errcode(db) : rc,
                     std::string(what) + ": " + sqlite3_errmsg(db));
}
}  // namespace

statement& statement::reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
  return *this;
}

statement& statement::bind(int i, std::int64_t v) {
  const int rc = sqlite3_bind_int64(st_, i, v);
  if (rc != SQLITE_OK) throw_rc(db_, rc, "bind");
  return *this;
}

statement& statement::bind_text(int i, std::string_view v) {
  const int rc = sqlite3_bind_text64(st_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) throw_rc(db_, rc, "bind");
  return *this;
}

statement& statement::bind_blob(int i, std::string_view v) {
  // A zero-length blob, not NULL, for an empty value.
  const int rc = v.empty() ? sqlite3_bind_zeroblob(st_, i, 0)
                           : sqlite3_bind_blob64(st_, i, v.data(), v.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) throw_rc(db_, rc, "bind");
  return *this;
}

statement& statement::bind_null(int i) {
  const int rc = sqlite3_bind_null(st_, i);
  if (rc != SQLITE_OK) throw_rc(db_, rc, "bind");
  return *this;
}

bool statement::step() {
  const int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const int ext = sqlite3_extended_errcode(db_);
  std::string msg = sqlite3_errmsg(db_);
  sqlite3_reset(st_);
  throw sqlite_error(ext ? ext : rc, msg);
}

void statement::run() {
  while (step()) {
  }
}

std::string_view statement::bytes(int col) const noexcept {
  const void* p = sqlite3_column_blob(st_, col);
  const int n = sqlite3_column_bytes(st_, col);
  if (!p || n <= 0) return {};
  return {static_cast<const char*>(p), static_cast<std::size_t>(n)};
}

}  // namespace inlet::store::file
