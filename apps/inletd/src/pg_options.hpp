// inletd's flags for the PostgreSQL store, turned into the store's configuration.
#pragma once

#include <inlet/store/pg_store.hpp>
#include <string>

#include "options.hpp"

namespace inletd {

/// True when the flags select the PostgreSQL store (--store postgresql or a URI).
bool wants_pg_store(const options& o);

/// The store's configuration: shards from --store's URI, then --shard, then
/// --shards-file (blank lines and # comments skipped). False with `error` set when no
/// shard is given or the file cannot be read.
bool pg_store_config_from(const options& o, inlet::store::pg_store_config& out, std::string& error);

}  // namespace inletd
