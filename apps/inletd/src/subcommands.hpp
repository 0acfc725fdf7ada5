// Mailpit's subcommands, for the scripts, containers and PHP setups that call them:
//   inletd sendmail [flags] [recipients] < message   (also when started as `sendmail`)
//   inletd readyz [--listen HOST:PORT] [--webroot P] [--https] [--wait] [--timeout 30s]
//   inletd ingest [-S HOST:PORT] [-r DAYS] [--max-message-size MB] FILE|DIR ...
//   inletd dump --http URL DIR | inletd dump --database FILE [--tenant-id T] DIR
//   inletd reindex [--tenant-id T] FILE
//   inletd version
// Each talks to a running server the way a client would (SMTP, HTTP), or (dump
// --database, reindex) opens a database file through the file store.
#pragma once

#include <optional>

namespace inletd {

/// When argv names a subcommand (or argv[0] is `sendmail`), runs it and returns its exit
/// status; nullopt for the server itself.
std::optional<int> run_subcommand(int argc, char** argv);

}  // namespace inletd
