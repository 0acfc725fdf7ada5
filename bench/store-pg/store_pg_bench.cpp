// store_pg_bench: the PostgreSQL store's write path, closed loop: `--inflight` puts
// outstanding at all times for `--seconds`, messages of `--size` bytes to `--mailboxes`
// mailboxes. Reports messages/s, put latency (call to acknowledgement) percentiles, the
// batch-size distribution, WAL bytes and CPU (client and servers) per message.
//
//   store_pg_bench --store URI [--store URI ...] [--pgdata DIR ...] [--seconds 10]
//                  [--inflight 256] [--size 9000] [--writers 4] [--compression lz4]
//                  [--fresh] [--json FILE] [--label NAME]
//
// --pgdata names each shard's data directory (same order) so the server CPU can be read
// from /proc; --fresh drops the store's schema first. Bounded by --seconds.
#include <CLI/CLI.hpp>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <semaphore>
#include <thread>

#include "common.hpp"
#include "inlet/pg/connection.hpp"
#include "inlet/store/pg_store.hpp"

namespace st = inlet::store;
namespace pg = inlet::pg;
using clock_type = std::chrono::steady_clock;

namespace {

struct sync_conn {
  boost::asio::io_context io;
  pg::connection c{io.get_executor()};
  explicit sync_conn(const std::string& dsn) { c.connect(dsn); }
};

std::string wal_lsn(const std::string& dsn) {
  sync_conn s(dsn);
  auto r = s.c.query("SELECT pg_current_wal_lsn()::text");
  return std::string(r.at(0, 0).bytes());
}

double wal_diff(const std::string& dsn, const std::string& from) {
  sync_conn s(dsn);
  std::vector<double> v;
  s.c.query(pg::sql("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::text::pg_lsn)::float8", from),
            pg::into(v));
  return v.empty() ? 0 : v.front();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"store_pg_bench: the PostgreSQL store's write path under a closed loop"};
  std::vector<std::string> shards, pgdata;
  double seconds = 10;
  std::size_t inflight = 256, size = 9000, mailboxes = 10000, writers = 4, max_batch = 256,
              pipeline = st::pg_store_config{}.writer_pipeline;
  unsigned wait_us = 0;
  std::string compression = "lz4", json, label = "store";
  bool fresh = false, events = true;
  app.add_option("--store", shards, "shard URI (repeat)")->required();
  app.add_option("--pgdata", pgdata, "data directory of each shard (for its CPU)");
  app.add_option("--seconds", seconds, "measured time");
  app.add_option("--inflight", inflight, "puts outstanding");
  app.add_option("--size", size, "message body bytes");
  app.add_option("--mailboxes", mailboxes, "distinct recipient mailboxes");
  app.add_option("--writers", writers, "writer connections per shard");
  app.add_option("--max-batch", max_batch, "messages per transaction at most");
  app.add_option("--pipeline", pipeline, "transactions in flight per writer connection at most");
  app.add_option("--wait-us", wait_us, "linger for fuller batches (max_batch_wait)");
  app.add_option("--compression", compression, "raw column: lz4, pglz or none")
      ->check(CLI::IsMember({"lz4", "pglz", "none"}));
  app.add_option("--events", events, "NOTIFY other instances (1) or not (0)");
  app.add_flag("--fresh", fresh, "drop the store's schema first");
  app.add_option("--json", json, "append the result as one JSON line");
  app.add_option("--label", label, "name of this run in the output");
  CLI11_PARSE(app, argc, argv);

  if (fresh) {
    for (auto& d : shards) {
      sync_conn s(d);
      s.c.execute("SET client_min_messages = warning");
      s.c.execute("DROP SCHEMA IF EXISTS mail CASCADE");
    }
  }
  st::pg_store_config cfg;
  cfg.shards = shards;
  cfg.writer_connections = writers;
  cfg.max_batch_messages = max_batch;
  cfg.writer_pipeline = pipeline;
  cfg.max_batch_wait = std::chrono::microseconds(wait_us);
  cfg.events = events;
  cfg.put_timeout = std::chrono::milliseconds(30000);
  st::pg_store store(cfg);
  if (!store.wait_ready(std::chrono::seconds(30))) {
    std::fprintf(stderr, "store_pg_bench: not ready: %s\n", store.health().detail.c_str());
    return 1;
  }
  if (compression != "lz4") {
    for (auto& d : shards) {
      sync_conn s(d);
      if (compression == "none")
        s.c.execute("ALTER TABLE mail.message ALTER COLUMN raw SET STORAGE EXTERNAL");
      else
        s.c.execute("ALTER TABLE mail.message ALTER COLUMN raw SET COMPRESSION pglz");
    }
  }

  auto texts = bench::bodies(size, 64, 42);
  std::vector<std::string> boxes;
  for (std::size_t i = 0; i < mailboxes; ++i)
    boxes.push_back("user" + std::to_string(i) + "@example.com");

  std::counting_semaphore<1 << 20> slots(static_cast<std::ptrdiff_t>(inflight));
  std::atomic<std::uint64_t> ok{0}, failed{0};
  std::mutex lat_mu;
  std::vector<double> lat_us;
  std::atomic<bool> measuring{false};
  std::uint64_t n = 0;
  auto issue = [&] {
    slots.acquire();
    auto t0 = clock_type::now();
    auto m = bench::message(boxes[n % boxes.size()], texts[n % texts.size()], n);
    ++n;
    store.put(std::move(m), [&, t0](std::error_code ec, st::message_ptr) {
      if (measuring.load(std::memory_order_relaxed)) {
        if (ec)
          failed.fetch_add(1, std::memory_order_relaxed);
        else
          ok.fetch_add(1, std::memory_order_relaxed);
        double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
        std::lock_guard lk(lat_mu);
        lat_us.push_back(us);
      }
      slots.release();
    });
  };
  // Warm-up: one second, not counted.
  for (auto until = clock_type::now() + std::chrono::seconds(1); clock_type::now() < until;)
    issue();

  std::vector<std::string> lsn;
  for (auto& d : shards) lsn.push_back(wal_lsn(d));
  std::vector<double> cpu0;
  for (auto& d : pgdata) cpu0.push_back(bench::cluster_cpu_seconds(d));
  double self0 = bench::self_cpu_seconds();
  auto before = store.shard_stats();
  measuring.store(true);
  auto t0 = clock_type::now();
  auto until =
      t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  while (clock_type::now() < until) issue();
  // Drain: wait for every outstanding put.
  for (std::size_t i = 0; i < inflight; ++i) slots.acquire();
  double elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  measuring.store(false);
  double self_cpu = bench::self_cpu_seconds() - self0;
  double server_cpu = 0;
  for (std::size_t i = 0; i < pgdata.size(); ++i)
    server_cpu += bench::cluster_cpu_seconds(pgdata[i]) - cpu0[i];
  double wal = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) wal += wal_diff(shards[i], lsn[i]);
  auto after = store.shard_stats();
  std::vector<std::uint64_t> hist(after.front().batch_size_hist.size());
  std::uint64_t batches = 0, batch_msgs = 0, pipelined = 0, rtt_us = 0;
  // Where a put's time went (means per copy): route and encode, queue, round trip and
  // commit; the rest of the put's latency is the acknowledgement's way back.
  std::uint64_t route_us = 0, queue_us = 0, commit_us = 0;
  for (std::size_t s = 0; s < after.size(); ++s) {
    pipelined += after[s].batches_pipelined - before[s].batches_pipelined;
    route_us += after[s].copy_route_sum_us - before[s].copy_route_sum_us;
    queue_us += after[s].copy_queue_sum_us - before[s].copy_queue_sum_us;
    commit_us += after[s].copy_commit_sum_us - before[s].copy_commit_sum_us;
    rtt_us = std::max(rtt_us, after[s].writer_rtt_us);
    for (std::size_t i = 0; i < hist.size(); ++i)
      hist[i] += after[s].batch_size_hist[i] - before[s].batch_size_hist[i];
    batches += after[s].batches - before[s].batches;
    batch_msgs += after[s].batch_messages - before[s].batch_messages;
  }
  double msgs = static_cast<double>(ok.load());
  double rate = msgs / elapsed;
  double mean_put_us = 0;
  for (double x : lat_us) mean_put_us += x;
  if (!lat_us.empty()) mean_put_us /= static_cast<double>(lat_us.size());
  auto per_copy = [&](std::uint64_t sum) {
    return batch_msgs ? static_cast<double>(sum) / static_cast<double>(batch_msgs) / 1000 : 0.0;
  };
  double p50 = bench::percentile(lat_us, 0.5), p99 = bench::percentile(lat_us, 0.99),
         pmax = bench::percentile(lat_us, 1.0);
  std::printf(
      "%-12s shards %zu  %8.0f msg/s  failed %llu  put p50 %.2f ms p99 %.2f ms max %.2f ms  "
      "batch mean %.1f  WAL %.0f B/msg  CPU/msg client %.1f us server %.1f us\n",
      label.c_str(), shards.size(), rate, static_cast<unsigned long long>(failed.load()),
      p50 / 1000, p99 / 1000, pmax / 1000,
      batches ? static_cast<double>(batch_msgs) / static_cast<double>(batches) : 0.0,
      msgs > 0 ? wal / msgs : 0.0, msgs > 0 ? self_cpu / msgs * 1e6 : 0.0,
      msgs > 0 ? server_cpu / msgs * 1e6 : 0.0);
  std::string hs;
  for (std::size_t i = 0; i < hist.size(); ++i) hs += (i ? "," : "") + std::to_string(hist[i]);
  std::printf("  batch sizes (1, 2-3, 4-7, ..., >=256): %s\n", hs.c_str());
  std::printf(
      "  put mean %.2f ms = route %.2f + queue %.2f + round trip and commit %.2f (+ rest); "
      "batches pipelined %llu of %llu; writer round trip (min) %.2f ms\n",
      mean_put_us / 1000, per_copy(route_us), per_copy(queue_us), per_copy(commit_us),
      static_cast<unsigned long long>(pipelined), static_cast<unsigned long long>(batches),
      static_cast<double>(rtt_us) / 1000);
  if (!json.empty()) {
    std::ofstream out(json, std::ios::app);
    out << "{\"label\": \"" << label << "\", \"shards\": " << shards.size()
        << ", \"compression\": \"" << compression << "\", \"inflight\": " << inflight
        << ", \"size\": " << size << ", \"writers\": " << writers << ", \"seconds\": " << elapsed
        << ", \"messages\": " << ok.load() << ", \"failed\": " << failed.load()
        << ", \"msgs_per_s\": " << rate << ", \"put_p50_us\": " << p50
        << ", \"put_p99_us\": " << p99 << ", \"put_max_us\": " << pmax
        << ", \"put_mean_us\": " << mean_put_us << ", \"pipeline\": " << pipeline
        << ", \"route_ms\": " << per_copy(route_us) << ", \"queue_ms\": " << per_copy(queue_us)
        << ", \"commit_ms\": " << per_copy(commit_us) << ", \"batches_pipelined\": " << pipelined
        << ", \"writer_rtt_ms\": " << static_cast<double>(rtt_us) / 1000
        << ", \"batches\": " << batches << ", \"batch_messages\": " << batch_msgs
        << ", \"batch_size_hist\": [" << hs << "], \"wal_bytes\": " << wal
        << ", \"wal_bytes_per_msg\": " << (msgs > 0 ? wal / msgs : 0)
        << ", \"client_cpu_s\": " << self_cpu << ", \"server_cpu_s\": " << server_cpu << "}\n";
  }
  return failed.load() == 0 ? 0 : 1;
}
