// The group-commit writer's pipelined transactions: one shard behind delay_proxy (5 ms
// each way, so the writer pipelines batches on its connections), a batch that fails
// among others in flight, and a writer connection killed with batches in flight.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "inlet/store/pg_store.hpp"
#include "pg_test_env.hpp"

extern char** environ;

using namespace std::chrono_literals;
namespace st = inlet::store;

namespace {

// delay_proxy (tests/support) in front of shard 0, stopped by its PID.
class delay_proxy {
 public:
  delay_proxy(const std::string& binary, const std::string& target, int delay_ms) {
    int fds[2];
    if (pipe(fds) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    std::string ms = std::to_string(delay_ms);
    std::vector<char*> argv = {const_cast<char*>(binary.c_str()),
                               const_cast<char*>("--target"),
                               const_cast<char*>(target.c_str()),
                               const_cast<char*>("--delay-ms"),
                               ms.data(),
                               nullptr};
    if (posix_spawn(&pid_, binary.c_str(), &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (FILE* f = fdopen(fds[0], "r")) {
      char line[32] = {};
      if (pid_ > 0 && std::fgets(line, sizeof line, f)) port_ = std::atoi(line);
      std::fclose(f);
    } else {
      close(fds[0]);
    }
  }
  ~delay_proxy() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  delay_proxy(const delay_proxy&) = delete;
  delay_proxy& operator=(const delay_proxy&) = delete;
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// Puts with at most `window` outstanding; records each put's outcome by its index.
struct put_log {
  std::mutex mu;
  std::condition_variable cv;
  std::size_t outstanding = 0, done = 0;
  std::map<std::size_t, std::string> ok;  // index -> message ID
  std::set<std::size_t> failed;
};

void put_all(st::pg_store& s, put_log& log, std::size_t total, std::size_t window,
             const std::function<st::new_message(std::size_t)>& make) {
  for (std::size_t i = 0; i < total; ++i) {
    {
      std::unique_lock lk(log.mu);
      log.cv.wait(lk, [&] { return log.outstanding < window; });
      ++log.outstanding;
    }
    s.put(make(i), [&log, i](std::error_code ec, st::message_ptr m) {
      std::lock_guard lk(log.mu);
      if (ec)
        log.failed.insert(i);
      else
        log.ok[i] = m->id.str();
      --log.outstanding;
      ++log.done;
      log.cv.notify_all();
    });
  }
  std::unique_lock lk(log.mu);
  ASSERT_TRUE(log.cv.wait_for(lk, 60s, [&] { return log.outstanding == 0; }))
      << log.outstanding << " puts never answered";
}

std::set<std::string> stored_ids() {
  auto c = pgtest::connect(0);
  std::vector<std::string> ids;
  c.query(inlet::pg::sql("SELECT id FROM mail.message"), inlet::pg::into(ids));
  return {ids.begin(), ids.end()};
}

class PgPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_SHARDS(1u);
    auto binary = pgtest::env("INLET_DELAY_PROXY");
    if (binary.empty()) GTEST_SKIP() << "INLET_DELAY_PROXY not set (run via ctest)";
    {
      auto c = pgtest::connect(0);
      c.execute("SET client_min_messages = warning");
      c.execute("DROP SCHEMA IF EXISTS mail CASCADE");
    }
    auto port = pgtest::env("INLET_PG_SHARD0_PORT");
    proxy_ = std::make_unique<delay_proxy>(binary, "127.0.0.1:" + port, 5);
    ASSERT_GT(proxy_->port(), 0) << "delay_proxy did not start";
    cfg_ = pgtest::config(1);
    auto& dsn = cfg_.shards[0];
    auto at = dsn.find(":" + port + "/");
    ASSERT_NE(at, std::string::npos) << dsn;
    dsn.replace(at + 1, port.size(), std::to_string(proxy_->port()));
    // Two connections, so that batches queue up behind each other on them.
    cfg_.writer_connections = 2;
    cfg_.writer_pipeline = 4;
    cfg_.put_timeout = 20s;
  }
  std::unique_ptr<delay_proxy> proxy_;
  st::pg_store_config cfg_;
};

st::pg_shard_stats stats_of(const st::pg_store& s) {
  auto sh = s.shard_stats().at(0);
  std::printf("shard 0: %llu batches (%llu pipelined), %llu copies, %llu batch errors\n",
              static_cast<unsigned long long>(sh.batches),
              static_cast<unsigned long long>(sh.batches_pipelined),
              static_cast<unsigned long long>(sh.batch_messages),
              static_cast<unsigned long long>(sh.batch_errors));
  return sh;
}

}  // namespace

TEST_F(PgPipeline, AFailingBatchAmongPipelinedOnesFailsOnlyItsOwnPuts) {
  st::pg_store s(cfg_);
  ASSERT_TRUE(s.wait_ready(30s)) << s.health().detail;
  EXPECT_GE(stats_of(s).writer_rtt_us, 10'000u) << "the writer measures the proxy's round trip";
  // A statement error for one message in some batches: the batch's transaction aborts
  // at its own Sync while the batches pipelined before and after it commit.
  {
    auto c = pgtest::connect(0);
    c.execute(
        "CREATE FUNCTION public.fail_poison() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN IF NEW.subject = 'poison' THEN RAISE EXCEPTION 'injected'; END IF; "
        "RETURN NEW; END $$");
    c.execute(
        "CREATE TRIGGER fail_poison AFTER INSERT ON mail.message FOR EACH ROW "
        "EXECUTE FUNCTION public.fail_poison()");
  }
  constexpr std::size_t total = 1000, every = 97;
  put_log log;
  put_all(s, log, total, 128, [&](std::size_t i) {
    return pgtest::message({"user" + std::to_string(i % 50) + "@example.com"},
                           i % every == 7 ? "poison" : "mail " + std::to_string(i));
  });
  std::set<std::size_t> poison;
  for (std::size_t i = 0; i < total; ++i)
    if (i % every == 7) poison.insert(i);
  EXPECT_EQ(log.failed, poison) << "exactly the poisoned puts fail";
  EXPECT_EQ(log.ok.size(), total - poison.size());
  auto ids = stored_ids();
  EXPECT_EQ(ids.size(), log.ok.size()) << "nothing stored but the acknowledged puts";
  for (auto& [i, id] : log.ok) EXPECT_TRUE(ids.count(id)) << "acknowledged put " << i << " lost";
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.message WHERE subject = 'poison'"), 0);
  auto sh = stats_of(s);
  EXPECT_GT(sh.batches_pipelined, 0u) << "batches were sent behind others in flight";
  EXPECT_GE(sh.batch_errors, poison.size()) << "each poisoned batch failed on its own";
}

TEST_F(PgPipeline, AWriterConnectionKilledWithBatchesInFlightLosesAndDoublesNothing) {
  st::pg_store s(cfg_);
  ASSERT_TRUE(s.wait_ready(30s)) << s.health().detail;
  constexpr std::size_t total = 6000;
  const std::string body(4000, 'x');
  put_log log;
  std::atomic<bool> stop{false};
  std::atomic<int> killed{0};
  // Once batches are being pipelined, terminates one writer backend a few times over
  // the run (the store reconnects it in between).
  std::thread killer([&] {
    auto c = pgtest::connect(0);
    while (!stop.load() && killed.load() < 3) {
      // Apart by more than the reconnect delay: one connection is killed at a time.
      std::this_thread::sleep_for(300ms);
      if (stats_of(s).batches_pipelined == 0) continue;
      std::vector<std::int32_t> hit;
      c.query(inlet::pg::sql("SELECT pg_terminate_backend(pid)::int FROM pg_stat_activity WHERE "
                             "application_name = 'inletd' AND query LIKE '%mail.put_v2%' AND "
                             "pid <> pg_backend_pid() LIMIT 1"),
              inlet::pg::into(hit));
      if (!hit.empty() && hit.front() == 1) killed.fetch_add(1);
    }
  });
  put_all(s, log, total, 128, [&](std::size_t i) {
    return pgtest::message({"user" + std::to_string(i % 50) + "@example.com"},
                           "mail " + std::to_string(i), body);
  });
  stop.store(true);
  killer.join();
  EXPECT_GE(killed.load(), 1) << "a writer backend was terminated under load";
  // Batches lost with their connection go back to the queue and are sent again (their
  // commit may have happened: a stored copy is skipped), so every put succeeds once.
  EXPECT_TRUE(log.failed.empty()) << log.failed.size() << " puts failed";
  EXPECT_EQ(log.ok.size(), total);
  auto ids = stored_ids();
  EXPECT_EQ(pgtest::count(0, "SELECT count(*) FROM mail.message"),
            static_cast<std::int64_t>(ids.size()))
      << "no message stored twice";
  EXPECT_EQ(ids.size(), total) << "nothing stored but the acknowledged puts";
  for (auto& [i, id] : log.ok) EXPECT_TRUE(ids.count(id)) << "acknowledged put " << i << " lost";
  auto sh = stats_of(s);
  EXPECT_GT(sh.batches_pipelined, 0u);
  EXPECT_GE(sh.batch_errors, 1u) << "batches in flight on the killed connection failed";
}
