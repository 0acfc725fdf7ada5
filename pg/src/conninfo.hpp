// A connection string (libpq URI or key=value) taken apart into its options and its
// hosts, so that each host can be connected to on its own (own deadline, own pool).
// Internal.
#pragma once
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace inlet::pg::detail {

struct conninfo {
  struct host {
    std::string host, hostaddr, port;  // empty: libpq's default
    /// "host:port" for messages.
    std::string label() const;
  };
  std::vector<std::pair<std::string, std::string>>
      params;                        // every set option but host/hostaddr/port/target_session_attrs
  std::vector<host> hosts;           // at least one
  std::string target_session_attrs;  // empty: any
  std::chrono::milliseconds connect_timeout{0};  // the DSN's, 0 if none

  /// Parses with PQconninfoParse (libpq's own rules for URIs, quoting, lists); false and
  /// `err` on a malformed string or mismatched host/port lists.
  static bool parse(const std::string& dsn, conninfo& out, std::string& err);
  /// A key=value string for one host (values quoted), optionally with another
  /// target_session_attrs; the other options kept.
  std::string single_host(std::size_t i, const std::string& target = {}) const;
  /// NUL-terminated keyword/value arrays for PQconnectStartParams, one host.
  struct arrays {
    std::vector<std::string> storage;
    std::vector<const char*> keys, values;
  };
  arrays for_host(std::size_t i, const std::string& target) const;
};

}  // namespace inlet::pg::detail
