#include "pg_options.hpp"

#include <fstream>

namespace inletd {

namespace {

bool is_uri(const std::string& s) {
  return s.starts_with("postgresql://") || s.starts_with("postgres://");
}

}  // namespace

bool wants_pg_store(const options& o) {
  return o.store == "postgresql" || is_uri(o.store);
}

bool pg_store_config_from(const options& o, inlet::store::pg_store_config& out,
                          std::string& error) {
  out.shards.clear();
  if (is_uri(o.store)) out.shards.push_back(o.store);
  out.shards.insert(out.shards.end(), o.shards.begin(), o.shards.end());
  if (!o.shards_file.empty()) {
    std::ifstream in(o.shards_file);
    if (!in) {
      error = "cannot read --shards-file " + o.shards_file;
      return false;
    }
    for (std::string line; std::getline(in, line);) {
      auto b = line.find_first_not_of(" \t");
      if (b == std::string::npos || line[b] == '#') continue;
      auto e = line.find_last_not_of(" \t\r");
      out.shards.push_back(line.substr(b, e - b + 1));
    }
  }
  if (out.shards.empty()) {
    error = "--store postgresql needs shards: --shard URI (repeat) or --shards-file FILE";
    return false;
  }
  out.buckets = o.buckets;
  out.expect_shards = o.expect_shards;
  if (o.retention_seconds > 0) out.retention = std::chrono::seconds(o.retention_seconds);
  out.mailbox_cap = o.mailbox_cap;
  out.writer_connections = o.pg_writers;
  out.max_batch_messages = o.pg_max_batch;
  out.max_batch_wait = std::chrono::microseconds(o.pg_batch_wait_us);
  return true;
}

}  // namespace inletd
