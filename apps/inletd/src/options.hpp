// inletd's configuration: every flag, parsed with CLI11 into one plain struct.
// docs/configuration.md lists the flags; keep the two in step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inletd {

struct host_port {
  std::string host;
  std::uint16_t port = 0;
};

struct options {
  host_port smtp{"127.0.0.1", 1025};
  host_port http{"127.0.0.1", 8025};
  std::optional<host_port> lmtp;
  std::string store = "memory";  ///< "memory", "sink", or a postgresql:// URI
  std::size_t max_messages = 10000;
  std::size_t max_store_bytes = std::size_t{1} << 30;
  std::uint64_t max_message_size = 32u << 20;
  std::size_t max_recipients = 100;
  std::string hostname = "localhost";
  std::vector<std::string> domains;
  std::string io_model = "coro";
  unsigned threads = 0;
  unsigned reads_per_event = 1;
  unsigned accepts_per_event = 1;
  std::string receive_buffer = "segment";  ///< "segment" (zero-copy) or "flat" (copying baseline)
  std::string parse = "after";  ///< "after" (parse the complete message) or "streaming" (while receiving)
  std::size_t max_connections = 10000;
  std::size_t max_connections_per_ip = 1000;
  std::size_t max_connections_per_subnet = 2500;  ///< 0 = no limit
  unsigned subnet_prefix_v4 = 24;
  unsigned subnet_prefix_v6 = 64;
  unsigned pressure_at = 75;  ///< percent of max_connections; 0 = never
  std::size_t pressure_per_ip = 50;
  std::size_t pressure_per_subnet = 200;
  unsigned pressure_timeout_seconds = 10;
  std::size_t min_data_rate = 500;  ///< body octets/s; 0 = off
  bool no_evict = false;
  bool no_release_memory = false;
  std::size_t max_command_line = 512;
  std::size_t max_line_length = 1000;  ///< body text line limit incl. CRLF; 0 = off
  unsigned shutdown_grace_seconds = 30;
  unsigned timeout_seconds = 300;
  std::string tls_cert;
  std::string tls_key;
  std::string filter_terms;
  std::string filter_action = "tag";
  double filter_threshold = 1.0;
  bool quiet = false;
};

/// Parses HOST:PORT or [V6]:PORT. Returns false on a malformed value.
bool parse_host_port(const std::string& text, host_port& out);

/// Parses argv. On --help or an error, prints to stdout/stderr and returns the exit
/// code to use; otherwise returns nullopt and fills `out`.
std::optional<int> parse_options(int argc, char** argv, options& out);

}  // namespace inletd
