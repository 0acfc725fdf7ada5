// Helpers of the PostgreSQL store's tests: the shards' DSNs from the environment
// (store/test/with-pg-shards.sh), messages to store, waiting for asynchronous results,
// stopping and starting a shard's server.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "inlet/pg/connection.hpp"
#include "inlet/store/pg_store.hpp"

namespace pgtest {

inline std::vector<std::string> shard_dsns() {
  std::vector<std::string> out;
  const char* v = std::getenv("INLET_PG_SHARDS");
  if (!v) return out;
  std::istringstream in(v);
  for (std::string s; in >> s;) out.push_back(s);
  return out;
}

#define REQUIRE_SHARDS(n)                                                                  \
  do {                                                                                     \
    if (pgtest::shard_dsns().size() < (n))                                                 \
      GTEST_SKIP() << "INLET_PG_SHARDS with " << (n) << " shards not set (run via ctest)"; \
  } while (0)

inline std::string env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? v : "";
}

/// pg_ctl on shard i's cluster: "stop -m immediate", "start", ...
inline int pg_ctl(unsigned i, const std::string& args) {
  std::string data = env("INLET_PG_SHARD" + std::to_string(i) + "_DATA");
  std::string port = env("INLET_PG_SHARD" + std::to_string(i) + "_PORT");
  std::string bin = env("INLET_PG_BIN");
  std::string dir = data.substr(0, data.rfind('/'));
  std::string cmd = bin + "/pg_ctl -D " + data + " -l " + dir + "/pg.log -w -t 30 " + args;
  if (args.rfind("start", 0) == 0 || args.rfind("restart", 0) == 0) {
    cmd += " -o \"-c listen_addresses=127.0.0.1 -p " + port + " -k " + dir +
           " -c fsync=" + (env("INLET_PG_FSYNC").empty() ? "off" : env("INLET_PG_FSYNC")) +
           " -c max_connections=200 " + env("INLET_PG_OPTS") + "\"";
  }
  if (getuid() == 0) cmd = "runuser -u postgres -- " + cmd;
  return std::system((cmd + " >/dev/null 2>&1").c_str());
}

inline inlet::store::pg_store_config config(std::size_t shards) {
  inlet::store::pg_store_config c;
  auto all = shard_dsns();
  c.shards.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(shards));
  c.buckets = 64;
  c.reconnect_delay = std::chrono::milliseconds(100);
  c.map_refresh = std::chrono::milliseconds(200);
  c.put_timeout = std::chrono::milliseconds(5000);
  c.read_timeout = std::chrono::milliseconds(3000);
  return c;
}

inline inlet::store::new_message message(std::vector<std::string> rcpt, std::string subject,
                                         std::string body = "Hello.\r\n") {
  inlet::store::new_message m;
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to.assign(rcpt.begin(), rcpt.end());
  m.envelope.remote = "127.0.0.1:40000";
  m.envelope.protocol = "ESMTP";
  m.summary.from = {"Sender", "sender@example.org"};
  for (auto& r : m.envelope.rcpt_to) m.summary.to.push_back({"", r});
  m.summary.subject = subject;
  m.summary.search_text = subject + " " + body;
  for (auto& c : m.summary.search_text)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  m.raw = "From: Sender <sender@example.org>\r\nSubject: " + subject + "\r\n\r\n" + body;
  return m;
}

/// Runs an async store operation with a callback and waits for it.
template <class T, class Start>
std::pair<std::error_code, T> wait(Start start) {
  std::promise<std::pair<std::error_code, T>> p;
  auto f = p.get_future();
  start([&p](std::error_code ec, T v) { p.set_value({ec, std::move(v)}); });
  if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    ADD_FAILURE() << "operation did not complete in 60 s";
    std::abort();
  }
  return f.get();
}

inline inlet::store::message_ptr put(inlet::store::store& s, inlet::store::new_message m,
                                     std::error_code& ec) {
  return s.put_sync(std::move(m), ec);
}

/// A synchronous connection to shard i (for checks behind the store's back).
inline inlet::pg::connection connect(unsigned i) {
  static boost::asio::io_context io;  // the synchronous forms never run it
  inlet::pg::connection c(io.get_executor());
  c.connect(shard_dsns().at(i));
  return c;
}

inline std::int64_t count(unsigned shard, const std::string& sql) {
  auto c = connect(shard);
  auto r = c.query(sql);
  std::int64_t n = -1;
  if (r.rows() == 1) r.at(0, 0).as(n);
  return n;
}

}  // namespace pgtest
