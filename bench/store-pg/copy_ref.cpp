// store_pg_copy_ref: the limit for the store's write path. A bare libpq loop that writes
// the same rows as the store (mail.message and mail.inbox, same tables, indexes and
// binary values) with binary COPY, one transaction per batch of `--batch` messages on
// `--conns` connections per shard: the store's commit cadence without its own work
// (routing, ownership check, tally, notification, acknowledgements).
//
//   store_pg_copy_ref --store URI [--store URI ...] [--pgdata DIR ...] --batch N
//                     [--conns 4] [--seconds 10] [--size 9000] [--json FILE] [--label NAME]
//
// The schema must exist (run store_pg_bench first). Bounded by --seconds.
#include <libpq-fe.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "common.hpp"
#include "ids.hpp"
#include "wire.hpp"

namespace pgs = inlet::store::pgstore;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr const char* message_columns =
    "id, received, created, home, primary_bucket, mailboxes, buckets, helo, mail_from, rcpt_to, "
    "remote, "
    "protocol, "
    "auth_user, from_addr, to_addrs, cc_addrs, bcc_addrs, reply_to_addrs, subject, sent, "
    "message_id, snippet, "
    "attachments, inline_parts, search_text, fields, size, tags, read, raw, totals";

bool ok(PGconn* c, PGresult* r, ExecStatusType want) {
  bool good = PQresultStatus(r) == want;
  if (!good) std::fprintf(stderr, "copy_ref: %s", PQerrorMessage(c));
  PQclear(r);
  return good;
}

// A record (int32 ncols, then OID, length, bytes per column) as a COPY tuple (int16
// ncols, then length, bytes per column).
void record_to_tuple(std::string_view rec, std::string& out) {
  const char* p = rec.data();
  std::int32_t n = pgs::get_i32(p);
  p += 4;
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  for (std::int32_t i = 0; i < n; ++i) {
    std::int32_t len = pgs::get_i32(p + 4);
    out.append(p + 4, 4);
    p += 8;
    if (len > 0) {
      out.append(p, static_cast<std::size_t>(len));
      p += len;
    }
  }
}

void field(std::string& out, std::string_view v) {
  pgs::put_i32(out, static_cast<std::int32_t>(v.size()));
  out.append(v);
}

struct shard_info {
  std::string dsn;
  pgs::shard_types types;
  std::vector<std::string> boxes;  // mailboxes whose bucket this shard owns
  std::uint32_t buckets = 1024;
};

bool load(shard_info& s, std::size_t shard_index, std::size_t mailboxes) {
  PGconn* c = PQconnectdb(s.dsn.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::fprintf(stderr, "copy_ref: %s", PQerrorMessage(c));
    PQfinish(c);
    return false;
  }
  PGresult* r =
      PQexec(c,
             "SELECT typname, oid, typarray FROM pg_type WHERE typnamespace = 'mail'::regnamespace "
             "AND typname IN ('addr', 'attach', 'new_message_v2')");
  for (int i = 0; i < PQntuples(r); ++i) {
    std::string name = PQgetvalue(r, i, 0);
    auto oid = static_cast<pgs::oid_t>(std::stoul(PQgetvalue(r, i, 1)));
    auto arr = static_cast<pgs::oid_t>(std::stoul(PQgetvalue(r, i, 2)));
    if (name == "addr")
      s.types.addr = oid, s.types.addr_array = arr;
    else if (name == "attach")
      s.types.attach = oid, s.types.attach_array = arr;
    else if (name == "new_message_v2")
      s.types.new_message = oid, s.types.new_message_array = arr;
  }
  PQclear(r);
  r = PQexec(c, "SELECT bucket FROM mail.bucket WHERE state = 'owned'");
  std::vector<bool> owned(4096);
  for (int i = 0; i < PQntuples(r); ++i)
    owned[static_cast<std::size_t>(std::stoi(PQgetvalue(r, i, 0)))] = true;
  PQclear(r);
  r = PQexec(c, "SELECT value FROM mail.meta WHERE key = 'buckets'");
  std::uint32_t buckets =
      PQntuples(r) ? static_cast<std::uint32_t>(std::stoul(PQgetvalue(r, 0, 0))) : 1024;
  PQclear(r);
  PQfinish(c);
  s.buckets = buckets;
  for (std::size_t i = 0; i < mailboxes * 4 && s.boxes.size() < mailboxes; ++i) {
    std::string m = "user" + std::to_string(i) + "@example.com";
    if (owned[pgs::bucket_of(m, buckets)]) s.boxes.push_back(m);
  }
  (void)shard_index;
  return s.types.complete() && !s.boxes.empty();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"store_pg_copy_ref: a bare binary-COPY loop writing the store's rows"};
  std::vector<std::string> dsns, pgdata;
  double seconds = 10;
  std::size_t batch = 16, conns = 4, size = 9000, mailboxes = 10000;
  std::string json, label = "copy";
  app.add_option("--store", dsns, "shard URI (repeat)")->required();
  app.add_option("--pgdata", pgdata, "data directory of each shard (for its CPU)");
  app.add_option("--seconds", seconds, "measured time");
  app.add_option("--batch", batch, "messages per transaction")->required();
  app.add_option("--conns", conns, "connections per shard");
  app.add_option("--size", size, "message body bytes");
  app.add_option("--mailboxes", mailboxes, "distinct recipient mailboxes");
  app.add_option("--json", json, "append the result as one JSON line");
  app.add_option("--label", label, "name of this run in the output");
  CLI11_PARSE(app, argc, argv);
  if (batch == 0) batch = 1;

  std::vector<shard_info> shards(dsns.size());
  for (std::size_t i = 0; i < dsns.size(); ++i) {
    shards[i].dsn = dsns[i];
    if (!load(shards[i], i, mailboxes / dsns.size() + 1)) return 1;
  }
  auto texts = bench::bodies(size, 64, 42);
  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<std::uint64_t> written{0};
  std::mutex lat_mu;
  std::vector<double> commit_us;
  std::atomic<int> errors{0};

  auto worker = [&](shard_info& sh, std::size_t seed) {
    PGconn* c = PQconnectdb(sh.dsn.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      errors.fetch_add(1);
      PQfinish(c);
      return;
    }
    std::string msg_copy =
        std::string("COPY mail.message (") + message_columns + ") FROM STDIN (FORMAT binary)";
    std::string data, inbox, rec;
    std::uint64_t n = seed * 1'000'000'000ull;
    static const char header[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";
    while (!stop.load()) {
      data.assign(header, 19);
      inbox.assign(header, 19);
      for (std::size_t k = 0; k < batch; ++k, ++n) {
        const std::string& box = sh.boxes[n % sh.boxes.size()];
        auto nm = bench::message(box, texts[n % texts.size()], n);
        inlet::store::stored_message m;
        auto now = std::chrono::system_clock::now();
        std::int64_t us =
            std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
        auto b = static_cast<std::int32_t>(pgs::bucket_of(box, sh.buckets));
        m.id = inlet::store::message_id(pgs::make_id(us, static_cast<std::uint32_t>(b)));
        m.envelope = std::move(nm.envelope);
        m.summary = std::move(nm.summary);
        m.raw = std::move(nm.raw);
        m.size = m.raw.size();
        m.created = now;
        std::vector<std::string> boxes{box};
        std::vector<std::int32_t> bks{b};
        pgs::copy_view v{&m, us, true, b, &boxes, &bks, false};
        rec.clear();
        pgs::encode_copy(rec, sh.types, v);
        record_to_tuple(rec, data);
        // inbox (bucket, mailbox, id, received)
        inbox.push_back(0);
        inbox.push_back(4);
        pgs::put_i32(inbox, 4);
        pgs::put_i32(inbox, b);
        field(inbox, box);
        field(inbox, m.id);
        pgs::put_i32(inbox, 8);
        pgs::put_i64(inbox, us - pgs::pg_epoch_offset_us);
      }
      data.append("\xff\xff", 2);
      inbox.append("\xff\xff", 2);
      auto t0 = clock_type::now();
      bool good =
          ok(c, PQexec(c, "BEGIN"), PGRES_COMMAND_OK) &&
          ok(c, PQexec(c, msg_copy.c_str()), PGRES_COPY_IN) &&
          PQputCopyData(c, data.data(), static_cast<int>(data.size())) == 1 &&
          PQputCopyEnd(c, nullptr) == 1 && ok(c, PQgetResult(c), PGRES_COMMAND_OK) &&
          ok(c,
             PQexec(c,
                    "COPY mail.inbox (bucket, mailbox, id, received) FROM STDIN (FORMAT binary)"),
             PGRES_COPY_IN) &&
          PQputCopyData(c, inbox.data(), static_cast<int>(inbox.size())) == 1 &&
          PQputCopyEnd(c, nullptr) == 1 && ok(c, PQgetResult(c), PGRES_COMMAND_OK) &&
          ok(c, PQexec(c, "COMMIT"), PGRES_COMMAND_OK);
      while (PGresult* r = PQgetResult(c)) PQclear(r);
      if (!good) {
        errors.fetch_add(1);
        PQexec(c, "ROLLBACK");
        continue;
      }
      if (measuring.load()) {
        written.fetch_add(batch);
        double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
        std::lock_guard lk(lat_mu);
        commit_us.push_back(us);
      }
    }
    PQfinish(c);
  };

  std::vector<std::thread> threads;
  for (std::size_t s = 0; s < shards.size(); ++s)
    for (std::size_t k = 0; k < conns; ++k)
      threads.emplace_back(worker, std::ref(shards[s]), s * conns + k + 1);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // warm-up
  std::vector<double> cpu0;
  for (auto& d : pgdata) cpu0.push_back(bench::cluster_cpu_seconds(d));
  double self0 = bench::self_cpu_seconds();
  measuring.store(true);
  auto t0 = clock_type::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring.store(false);
  double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  double self_cpu = bench::self_cpu_seconds() - self0;
  double server_cpu = 0;
  for (std::size_t i = 0; i < pgdata.size(); ++i)
    server_cpu += bench::cluster_cpu_seconds(pgdata[i]) - cpu0[i];
  stop.store(true);
  for (auto& t : threads) t.join();
  double msgs = static_cast<double>(written.load());
  double rate = msgs / elapsed;
  double p50 = bench::percentile(commit_us, 0.5), p99 = bench::percentile(commit_us, 0.99);
  std::printf(
      "%-12s shards %zu  %8.0f msg/s  batch %zu x %zu conns  commit p50 %.2f ms p99 %.2f ms  "
      "CPU/msg client %.1f us server %.1f us  errors %d\n",
      label.c_str(), shards.size(), rate, batch, conns, p50 / 1000, p99 / 1000,
      msgs > 0 ? self_cpu / msgs * 1e6 : 0.0, msgs > 0 ? server_cpu / msgs * 1e6 : 0.0,
      errors.load());
  if (!json.empty()) {
    std::ofstream out(json, std::ios::app);
    out << "{\"label\": \"" << label << "\", \"shards\": " << shards.size()
        << ", \"batch\": " << batch << ", \"conns\": " << conns << ", \"size\": " << size
        << ", \"seconds\": " << elapsed << ", \"messages\": " << written.load()
        << ", \"msgs_per_s\": " << rate << ", \"commit_p50_us\": " << p50
        << ", \"commit_p99_us\": " << p99 << ", \"client_cpu_s\": " << self_cpu
        << ", \"server_cpu_s\": " << server_cpu << ", \"errors\": " << errors.load() << "}\n";
  }
  return errors.load() == 0 ? 0 : 1;
}
