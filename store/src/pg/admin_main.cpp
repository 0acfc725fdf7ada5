// inlet-pg-admin: status of a PostgreSQL store cluster, and bucket moves while inletd runs.
//
//   inlet-pg-admin --store URI0 --store URI1 ... status
//   inlet-pg-admin --store ... move BUCKET SHARD
//   inlet-pg-admin --store ... rebalance [--dry-run]
//
// The --store list is the one inletd gets (same order). docs/store-pg.md, "Adding a shard".
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "ids.hpp"
#include "inlet/store/pg_admin.hpp"
#include "inlet/store/store.hpp"

namespace adm = inlet::store::pg_admin;

namespace {

std::vector<std::string> read_shards_file(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    auto e = line.find_last_not_of(" \t\r");
    out.push_back(line.substr(b, e - b + 1));
  }
  return out;
}

int print_status(const std::vector<std::string>& shards) {
  int rc = 0;
  for (auto& s : adm::status(shards)) {
    if (!s.reachable || !s.error.empty()) {
      std::printf("shard %u  %-24s  %s\n", s.index, s.endpoint.c_str(), s.error.c_str());
      rc = 1;
      continue;
    }
    std::printf("shard %u  %-24s  schema v%d  buckets %zu owned", s.index, s.endpoint.c_str(),
                s.schema_version, s.owned.size());
    if (!s.frozen.empty()) std::printf(", %zu frozen", s.frozen.size());
    if (!s.incoming.empty()) std::printf(", %zu incoming", s.incoming.size());
    if (!s.gone.empty()) std::printf(", %zu gone", s.gone.size());
    if (!s.copying.empty()) std::printf(", %zu being copied", s.copying.size());
    std::printf("  messages %lld (copies %lld)\n", static_cast<long long>(s.messages),
                static_cast<long long>(s.copies));
    if (s.shard_index != static_cast<int>(s.index)) {
      std::printf("  this database says it is shard %d\n", s.shard_index);
      rc = 1;
    }
  }
  return rc;
}

int move(const std::vector<std::string>& shards, std::uint32_t bucket, unsigned to) {
  adm::move_result r;
  std::string msg;
  if (auto ec = adm::move_bucket(shards, bucket, to, r, msg)) {
    std::fprintf(stderr, "inlet-pg-admin: moving bucket %u to shard %u: %s (run again to resume)\n",
                 bucket, to, msg.empty() ? ec.message().c_str() : msg.c_str());
    return 1;
  }
  if (r.already_there)
    std::printf("bucket %u is on shard %u\n", bucket, to);
  else
    std::printf("bucket %u: shard %u -> %u, %llu copies moved, %llu changes caught up, %llu "
                "removed from the old shard, writes held %.1f ms\n",
                bucket, r.from, r.to, static_cast<unsigned long long>(r.copied),
                static_cast<unsigned long long>(r.caught_up),
                static_cast<unsigned long long>(r.released), r.frozen_ms);
  return 0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"inlet-pg-admin: status and bucket moves of an inlet PostgreSQL store cluster"};
  std::vector<std::string> shards;
  std::string shards_file;
  app.add_option("--store", shards, "shard URI, in shard order (repeat; as given to inletd)");
  app.add_option("--shards-file", shards_file, "file with one shard URI per line")
      ->check(CLI::ExistingFile);
  app.require_subcommand(1);
  auto* st = app.add_subcommand("status", "each shard: identity, buckets, messages");
  std::uint32_t bucket = 0;
  unsigned to = 0;
  auto* mv = app.add_subcommand("move", "move one bucket to a shard");
  mv->add_option("bucket", bucket, "bucket number")->required();
  mv->add_option("shard", to, "target shard index")->required();
  std::vector<std::string> addresses;
  auto* wh = app.add_subcommand("where", "the bucket and shard of each mailbox address");
  wh->add_option("address", addresses, "mailbox addresses")->required();
  bool dry = false;
  auto* rb = app.add_subcommand("rebalance", "move buckets until every shard has an equal share");
  rb->add_flag("--dry-run", dry, "print the moves only");
  std::size_t group = 32;
  rb->add_option("--group", group,
                 "at most this many buckets between the same two shards change state in one "
                 "transaction (default 32; fewer while a switch holds writes past ~80 ms)")
      ->check(CLI::Range(1, 1024));
  CLI11_PARSE(app, argc, argv);
  if (!shards_file.empty())
    for (auto& s : read_shards_file(shards_file)) shards.push_back(s);
  if (shards.empty()) {
    std::fprintf(stderr, "inlet-pg-admin: give the shards with --store (or --shards-file)\n");
    return 2;
  }
  if (st->parsed()) return print_status(shards);
  if (mv->parsed()) return move(shards, bucket, to);
  if (wh->parsed()) {
    auto st = adm::status(shards);
    std::uint32_t buckets = 0;
    for (auto& s : st) buckets = std::max(buckets, s.buckets);
    if (buckets == 0) {
      std::fprintf(stderr, "inlet-pg-admin: no reachable shard is set up\n");
      return 1;
    }
    for (auto& a : addresses) {
      auto mailbox = inlet::store::normalize_mailbox(a);
      auto b = static_cast<std::int32_t>(inlet::store::pgstore::bucket_of(mailbox, buckets));
      int owner = -1;
      for (auto& s : st)
        if (std::find(s.owned.begin(), s.owned.end(), b) != s.owned.end() ||
            std::find(s.frozen.begin(), s.frozen.end(), b) != s.frozen.end())
          owner = static_cast<int>(s.index);
      std::printf("%s bucket %d shard %d\n", mailbox.c_str(), b, owner);
    }
    return 0;
  }
  auto plan = adm::plan_rebalance(adm::status(shards));
  std::printf("%zu moves\n", plan.size());
  if (dry) {
    for (auto [b, t] : plan) std::printf("move %u -> shard %u\n", b, t);
    return 0;
  }
  if (plan.empty()) return 0;
  adm::move_result r;
  std::string msg;
  auto started = std::chrono::steady_clock::now();
  if (auto ec = adm::move_buckets(shards, plan, group, r, msg, [&](std::size_t done) {
        std::printf("%zu/%zu buckets moved\n", done, plan.size());
        std::fflush(stdout);
      })) {
    std::fprintf(stderr, "inlet-pg-admin: rebalance: %s (run again to resume)\n", msg.c_str());
    return 1;
  }
  std::printf("rebalanced in %.2f s: %llu copies moved, %llu changes caught up, %llu removed "
              "from the old shards, writes held at most %.1f ms (%llu switches, median %.1f ms)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
              static_cast<unsigned long long>(r.copied),
              static_cast<unsigned long long>(r.caught_up),
              static_cast<unsigned long long>(r.released), r.frozen_ms,
              static_cast<unsigned long long>(r.switches), median(r.held_ms));
  return 0;
}
