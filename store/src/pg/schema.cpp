#include "schema.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cctype>
#include <exception>

namespace inlet::store::pgstore {

std::vector<std::string_view> split_sql(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0, i = 0;
  bool has_code = false;
  auto flush = [&](std::size_t end) {
    if (has_code) out.push_back(s.substr(start, end - start));
    start = end + 1;
    has_code = false;
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '-' && i + 1 < s.size() && s[i + 1] == '-') {
      auto nl = s.find('\n', i);
      i = nl == std::string_view::npos ? s.size() : nl + 1;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      auto close = s.find("*/", i + 2);
      i = close == std::string_view::npos ? s.size() : close + 2;
      continue;
    }
    if (c == '\'' || c == '"') {
      has_code = true;
      std::size_t j = i + 1;
      while (j < s.size()) {
        if (s[j] == c) {
          if (j + 1 < s.size() && s[j + 1] == c) {  // doubled quote inside
            j += 2;
            continue;
          }
          break;
        }
        ++j;
      }
      i = j + 1;
      continue;
    }
    if (c == '$') {
      // $tag$ ... $tag$ (tag: letters, digits, underscores; may be empty)
      std::size_t j = i + 1;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j < s.size() && s[j] == '$' &&
          (j == i + 1 || !std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
        std::string_view tag = s.substr(i, j - i + 1);
        auto close = s.find(tag, j + 1);
        has_code = true;
        i = close == std::string_view::npos ? s.size() : close + tag.size();
        continue;
      }
    }
    if (c == ';') {
      flush(i);
      ++i;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) has_code = true;
    ++i;
  }
  if (has_code) out.push_back(s.substr(start));
  return out;
}

namespace {

namespace asio = boost::asio;

// Runs one statement, ignoring its outcome (cleanup after a failure).
asio::awaitable<void> try_execute(pg::connection& conn, std::string_view text) {
  co_await conn.async_execute(text, asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<int> apply_pending(pg::connection& conn) {
  co_await conn.async_execute("CREATE SCHEMA IF NOT EXISTS mail");
  co_await conn.async_execute(
      "CREATE TABLE IF NOT EXISTS mail.migration (version int PRIMARY KEY, name text NOT NULL, "
      "applied timestamptz NOT NULL DEFAULT now())");
  std::vector<std::int32_t> have;
  co_await conn.async_query(pg::sql("SELECT coalesce(max(version), 0) FROM mail.migration"),
                            pg::into(have));
  int version = have.empty() ? 0 : have.front();
  for (const auto& m : migrations()) {
    if (m.version <= version) continue;
    co_await conn.async_execute("BEGIN");
    std::exception_ptr failed;
    try {
      for (auto stmt : split_sql(m.sql)) co_await conn.async_execute(stmt);
      auto record = pg::sql("INSERT INTO mail.migration (version, name) VALUES ($1, $2)",
                            std::int32_t{m.version}, std::string(m.name));
      co_await conn.async_execute(std::move(record));
      co_await conn.async_execute("COMMIT");
    } catch (...) {
      failed = std::current_exception();
    }
    if (failed) {
      // The server also rolls back when the session ends; this is for a live session.
      co_await try_execute(conn, "ROLLBACK");
      std::rethrow_exception(failed);
    }
    version = m.version;
  }
  co_return version;
}

}  // namespace

asio::awaitable<int> migrate(pg::connection& conn) {
  auto lock = pg::sql("SELECT pg_advisory_lock($1, $2)", lock_class, lock_migrate);
  co_await conn.async_execute(std::move(lock));
  std::exception_ptr failed;
  int version = 0;
  try {
    version = co_await apply_pending(conn);
  } catch (...) {
    failed = std::current_exception();
  }
  co_await try_execute(conn, "SELECT pg_advisory_unlock_all()");
  if (failed) std::rethrow_exception(failed);
  co_return version;
}

namespace {

// Partitioned indexes of the store not valid yet, and their partitions without an
// attached index: the index's name, the partition, and what follows USING in its
// definition (method, columns, predicate).
const char* const missing_sql =
      "SELECT pi.relname::text, c.relname::text, "
      "substr(pg_get_indexdef(x.indexrelid), strpos(pg_get_indexdef(x.indexrelid), ' USING ') + 7) "
      "FROM pg_index x JOIN pg_class pi ON pi.oid = x.indexrelid "
      "JOIN pg_inherits h ON h.inhparent = x.indrelid JOIN pg_class c ON c.oid = h.inhrelid "
      "WHERE pi.relnamespace = 'mail'::regnamespace AND pi.relkind = 'I' AND NOT x.indisvalid "
      "AND NOT EXISTS (SELECT 1 FROM pg_inherits a JOIN pg_index ai ON ai.indexrelid = a.inhrelid "
      "WHERE a.inhparent = x.indexrelid AND ai.indrelid = c.oid) ORDER BY 2";

}  // namespace

asio::awaitable<bool> deferred_indexes_missing(pg::connection& conn) {
  std::vector<std::tuple<std::string, std::string, std::string>> todo;
  co_await conn.async_query(pg::sql(missing_sql), pg::into(todo));
  co_return !todo.empty();
}

namespace {

// The steps are coroutines of their own: one coroutine with all of them trips a false
// -Wmismatched-new-delete in g++ (Asio's coroutine frames have their own new/delete).

// One partition: its index built concurrently (an earlier attempt's invalid leftover
// dropped first), then attached. Whether it built one.
asio::awaitable<bool> build_on_partition(pg::connection& conn, const std::string& index,
                                         const std::string& part, const std::string& spec) {
  // "message_primary_bucket" on "message_20261129" is "message_20261129_primary_bucket".
  auto table = index.substr(0, index.find('_'));
  std::string name = part + index.substr(table.size());
  std::vector<bool> valid;
  co_await conn.async_query(
      pg::sql("SELECT x.indisvalid FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
              "WHERE i.relnamespace = 'mail'::regnamespace AND i.relname = $1",
              name),
      pg::into(valid));
  const bool build = valid.empty() || !valid.front();
  if (!valid.empty() && !valid.front())  // a build interrupted: its invalid index
    co_await conn.async_execute("DROP INDEX CONCURRENTLY IF EXISTS mail.\"" + name + "\"");
  if (build)
    co_await conn.async_execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS \"" + name +
                                "\" ON mail.\"" + part + "\" USING " + spec);
  co_await conn.async_execute("ALTER INDEX mail.\"" + index + "\" ATTACH PARTITION mail.\"" +
                              name + "\"");
  co_return build;
}

// Every partition that lacks an index, under the build lock.
asio::awaitable<int> build_missing(pg::connection& conn) {
  // The build waits for writers' transactions to end, which may take longer than the
  // session's lock_timeout allows.
  co_await conn.async_execute("SET lock_timeout = 0");
  // Read again under the lock: another session may have built some.
  std::vector<std::tuple<std::string, std::string, std::string>> todo;
  co_await conn.async_query(pg::sql(missing_sql), pg::into(todo));
  int built = 0;
  for (auto& [index, part, spec] : todo)
    if (co_await build_on_partition(conn, index, part, spec)) ++built;
  co_return built;
}

}  // namespace

asio::awaitable<int> build_deferred_indexes(pg::connection& conn) {
  if (!co_await deferred_indexes_missing(conn)) co_return 0;
  std::vector<bool> got;
  co_await conn.async_query(
      pg::sql("SELECT pg_try_advisory_lock($1, $2)", lock_class, lock_index_build), pg::into(got));
  if (got.empty() || !got.front()) co_return -1;
  std::exception_ptr failed;
  int built = 0;
  try {
    built = co_await build_missing(conn);
  } catch (...) {
    failed = std::current_exception();
  }
  co_await try_execute(conn, "RESET lock_timeout");
  co_await try_execute(conn, "SELECT pg_advisory_unlock(" + std::to_string(lock_class) + ", " +
                                 std::to_string(lock_index_build) + ")");
  if (failed) std::rethrow_exception(failed);
  co_return built;
}

}  // namespace inlet::store::pgstore
