#include "inlet/store/pg_store.hpp"

#include <thread>

#include "engine.hpp"

namespace inlet::store {

const std::vector<std::uint64_t>& batch_latency_bounds_us() {
  return pgstore::latency_bounds();
}

namespace {
pg_store_config checked(pg_store_config cfg) {
  if (cfg.expect_shards != 0 && cfg.expect_shards != cfg.shards.size())
    throw std::invalid_argument("expected " + std::to_string(cfg.expect_shards) +
                                " shards, the shard list names " +
                                std::to_string(cfg.shards.size()));
  return cfg;
}
}  // namespace

pg_store::pg_store(pg_store_config cfg)
    : engine_(std::make_shared<pgstore::engine>(checked(std::move(cfg)))) {
  engine_->start();
}

std::string pg_store::configuration_error() const { return engine_->configuration_error(); }

pg_store::~pg_store() {
  engine_->stop();
}

void pg_store::put(new_message msg, put_handler done) {
  engine_->put(std::move(msg), std::move(done));
}

store_stats pg_store::stats() const {
  return engine_->stats();
}
store_health pg_store::health() const {
  return engine_->health();
}
bool pg_store::accepts_mailbox(std::string_view mailbox) const {
  return engine_->accepts_mailbox(mailbox);
}
std::uint64_t pg_store::subscribe(event_observer observer) {
  return engine_->subscribe(std::move(observer));
}
void pg_store::unsubscribe(std::uint64_t handle) {
  engine_->unsubscribe(handle);
}

bool pg_store::wait_ready(std::chrono::milliseconds timeout) const {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!engine_->all_up()) {
    if (std::chrono::steady_clock::now() >= until || !engine_->configuration_error().empty())
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::vector<pg_shard_stats> pg_store::shard_stats() const {
  std::vector<pg_shard_stats> out;
  auto map = engine_->map();
  for (unsigned i = 0; i < engine_->shard_count(); ++i) {
    auto& s = engine_->at(i);
    const auto& c = s.counters();
    pg_shard_stats st;
    st.index = i;
    st.endpoint = s.endpoint();
    st.up = s.up();
    st.detail = s.detail();
    for (auto o : map->owner) st.buckets_owned += o == static_cast<int>(i) ? 1 : 0;
    st.batches = c.batches.load();
    st.batch_messages = c.batch_messages.load();
    st.batch_errors = c.batch_errors.load();
    st.refused = c.refused.load();
    st.puts_ok = c.copies_ok.load();
    st.puts_failed = c.copies_failed.load();
    st.reads = c.reads.load();
    st.read_errors = c.read_errors.load();
    st.read_retries = c.read_retries.load();
    for (auto& h : c.size_hist) st.batch_size_hist.push_back(h.load());
    for (auto& h : c.latency_hist) st.batch_latency_hist.push_back(h.load());
    st.batch_latency_sum_us = c.latency_sum_us.load();
    st.copy_route_sum_us = c.route_sum_us.load();
    st.copy_queue_sum_us = c.queue_sum_us.load();
    st.copy_commit_sum_us = c.commit_sum_us.load();
    st.batches_pipelined = c.pipelined.load();
    st.writer_rtt_us = c.writer_rtt_us.load();
    st.queued = s.queued();
    out.push_back(std::move(st));
  }
  return out;
}

void pg_store::append_metrics(std::string& out) const {
  auto all = shard_stats();
  auto line = [&](const char* name, unsigned shard, std::string_view extra, std::uint64_t v) {
    out += name;
    out += "{shard=\"" + std::to_string(shard) + "\"";
    if (!extra.empty()) {
      out += ",";
      out += extra;
    }
    out += "} " + std::to_string(v) + "\n";
  };
  out += "# TYPE inlet_pg_shard_up gauge\n";
  for (auto& s : all) line("inlet_pg_shard_up", s.index, {}, s.up ? 1 : 0);
  out += "# TYPE inlet_pg_shard_buckets gauge\n";
  for (auto& s : all) line("inlet_pg_shard_buckets", s.index, {}, s.buckets_owned);
  out += "# TYPE inlet_pg_shard_queued gauge\n";
  for (auto& s : all) line("inlet_pg_shard_queued", s.index, {}, s.queued);
  out += "# TYPE inlet_pg_batches_total counter\n";
  for (auto& s : all) line("inlet_pg_batches_total", s.index, {}, s.batches);
  out += "# TYPE inlet_pg_batch_errors_total counter\n";
  for (auto& s : all) line("inlet_pg_batch_errors_total", s.index, {}, s.batch_errors);
  out += "# TYPE inlet_pg_batches_pipelined_total counter\n";
  for (auto& s : all) line("inlet_pg_batches_pipelined_total", s.index, {}, s.batches_pipelined);
  out += "# TYPE inlet_pg_copies_total counter\n";
  for (auto& s : all) {
    line("inlet_pg_copies_total", s.index, "result=\"ok\"", s.puts_ok);
    line("inlet_pg_copies_total", s.index, "result=\"failed\"", s.puts_failed);
    line("inlet_pg_copies_total", s.index, "result=\"refused\"", s.refused);
  }
  // Failed puts to several shards whose committed copies were deleted (or stayed).
  out += "# TYPE inlet_pg_failed_put_cleanups_total counter\n";
  out += "inlet_pg_failed_put_cleanups_total{result=\"removed\"} " +
         std::to_string(engine_->orphans_removed.load()) + "\n";
  out += "inlet_pg_failed_put_cleanups_total{result=\"left\"} " +
         std::to_string(engine_->orphans_left.load()) + "\n";
  out += "# HELP inlet_pg_list_cursor_pages_total Listing pages read on from the previous "
         "page's last ID instead of by offset.\n";
  out += "# TYPE inlet_pg_list_cursor_pages_total counter\n";
  out += "inlet_pg_list_cursor_pages_total " + std::to_string(engine_->cursor_pages.load()) + "\n";
  out += "# HELP inlet_pg_list_rereads_total Global listings read again because a bucket "
         "move's switch was seen on one shard and not yet on another.\n";
  out += "# TYPE inlet_pg_list_rereads_total counter\n";
  out += "inlet_pg_list_rereads_total " + std::to_string(engine_->inconsistent_reads.load()) +
         "\n";
  out += "# TYPE inlet_pg_reads_total counter\n";
  for (auto& s : all) {
    line("inlet_pg_reads_total", s.index, "result=\"ok\"", s.reads);
    line("inlet_pg_reads_total", s.index, "result=\"error\"", s.read_errors);
  }
  out += "# HELP inlet_pg_read_retries_total Reads sent again after their connection was lost.\n";
  out += "# TYPE inlet_pg_read_retries_total counter\n";
  for (auto& s : all) line("inlet_pg_read_retries_total", s.index, "", s.read_retries);
  out += "# TYPE inlet_pg_batch_size histogram\n";
  for (auto& s : all) {
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < s.batch_size_hist.size(); ++i) {
      cum += s.batch_size_hist[i];
      std::string le =
          i + 1 == s.batch_size_hist.size() ? "+Inf" : std::to_string((std::uint64_t{2} << i) - 1);
      line("inlet_pg_batch_size_bucket", s.index, "le=\"" + le + "\"", cum);
    }
    line("inlet_pg_batch_size_sum", s.index, {}, s.batch_messages);
    line("inlet_pg_batch_size_count", s.index, {}, s.batches + s.batch_errors);
  }
  out += "# TYPE inlet_pg_batch_seconds histogram\n";
  const auto& bounds = batch_latency_bounds_us();
  for (auto& s : all) {
    std::uint64_t cum = 0, count = 0;
    for (std::size_t i = 0; i < s.batch_latency_hist.size(); ++i) {
      cum += s.batch_latency_hist[i];
      count += s.batch_latency_hist[i];
      std::string le =
          i + 1 == bounds.size() ? "+Inf" : std::to_string(static_cast<double>(bounds[i]) / 1e6);
      line("inlet_pg_batch_seconds_bucket", s.index, "le=\"" + le + "\"", cum);
    }
    out += "inlet_pg_batch_seconds_sum{shard=\"" + std::to_string(s.index) + "\"} " +
           std::to_string(static_cast<double>(s.batch_latency_sum_us) / 1e6) + "\n";
    line("inlet_pg_batch_seconds_count", s.index, {}, count);
  }
}

void pg_store::do_list(list_request req, handler<void(std::error_code, page)> h) {
  engine_->list(std::move(req), std::move(h));
}
void pg_store::do_get(std::string id, handler<void(std::error_code, message_ptr)> h) {
  engine_->get(std::move(id), std::move(h));
}
void pg_store::do_remove(selection which, handler<void(std::error_code, std::size_t)> h) {
  engine_->remove(std::move(which), std::move(h));
}
void pg_store::do_set_read(selection which, bool read,
                           handler<void(std::error_code, std::size_t)> h) {
  engine_->set_read(std::move(which), read, std::move(h));
}
void pg_store::do_set_tags(selection which, std::vector<std::string> tags,
                           handler<void(std::error_code, std::size_t)> h) {
  engine_->set_tags(std::move(which), std::move(tags), std::move(h));
}
void pg_store::do_list_tags(handler<void(std::error_code, std::vector<std::string>)> h) {
  engine_->list_tags(std::move(h));
}
void pg_store::do_rename_tag(std::string from, std::string to,
                             handler<void(std::error_code, std::size_t)> h) {
  engine_->rename_tag(std::move(from), std::move(to), std::move(h));
}
void pg_store::do_delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) {
  engine_->delete_tag(std::move(tag), std::move(h));
}

}  // namespace inlet::store
