// Shared pieces of the store-pg benchmark programs: messages like the ones inletd
// stores, CPU of a PostgreSQL cluster's processes, WAL position, percentiles.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "inlet/store/types.hpp"

namespace bench {

/// Text of about `size` bytes that compresses like prose (random words), or the bytes
/// of corpus files when a directory of messages is given.
inline std::vector<std::string> bodies(std::size_t size, std::size_t count, std::uint64_t seed) {
  static const char* words[] = {
      "the",      "mail",     "server",   "message",  "inbox",    "delivery", "report",
      "invoice",  "meeting",  "tomorrow", "please",   "attached", "thanks",   "regards",
      "quarter",  "results",  "customer", "account",  "update",   "security", "order",
      "shipping", "tracking", "number",   "password", "reset",    "link",     "click",
      "here",     "today",    "offer",    "free",     "price",    "team",     "project"};
  std::mt19937_64 gen(seed);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) {
    std::string b;
    std::size_t col = 0;
    while (b.size() < size) {
      const char* w = words[gen() % (sizeof words / sizeof words[0])];
      b += w;
      col += std::char_traits<char>::length(w) + 1;
      if (col > 70) {
        b += "\r\n";
        col = 0;
      } else {
        b += ' ';
      }
    }
    b.resize(size);
    out.push_back(std::move(b));
  }
  return out;
}

inline inlet::store::new_message message(const std::string& rcpt, const std::string& body,
                                         std::uint64_t n) {
  inlet::store::new_message m;
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to = {rcpt};
  m.envelope.remote = "127.0.0.1:40000";
  m.envelope.protocol = "ESMTP";
  m.summary.from = {"Sender", "sender@example.org"};
  m.summary.to = {{"", rcpt}};
  m.summary.subject = "Message " + std::to_string(n);
  m.summary.message_id = std::to_string(n) + "@bench.example";
  m.summary.snippet = body.substr(0, 100);
  m.summary.search_text = body.substr(0, 2000);
  m.raw = "From: Sender <sender@example.org>\r\nTo: " + rcpt + "\r\nSubject: Message " +
          std::to_string(n) + "\r\nMessage-ID: <" + std::to_string(n) + "@bench.example>\r\n\r\n" +
          body;
  return m;
}

/// CPU seconds (user + system) of a PostgreSQL cluster: the postmaster named in
/// DATA/postmaster.pid and every process whose parent it is (backends, WAL writer,
/// checkpointer, ...), as /proc reports them now.
inline double cluster_cpu_seconds(const std::string& data_dir) {
  std::ifstream pidf(data_dir + "/postmaster.pid");
  long postmaster = 0;
  if (!(pidf >> postmaster)) return 0;
  static const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (auto* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end || pid <= 0) continue;
    std::ifstream st("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(st, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream in(line.substr(close + 2));
    std::string state;
    long ppid = 0;
    in >> state >> ppid;
    if (pid != postmaster && ppid != postmaster) continue;
    std::string skip;
    for (int i = 0; i < 9; ++i) in >> skip;  // pgrp .. cmajflt
    unsigned long utime = 0, stime = 0;
    in >> utime >> stime;
    total += static_cast<double>(utime + stime) / tick;
  }
  closedir(d);
  return total;
}

inline double self_cpu_seconds() {
  std::ifstream st("/proc/self/stat");
  std::string line;
  std::getline(st, line);
  auto close = line.rfind(')');
  std::istringstream in(line.substr(close + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) in >> skip;
  unsigned long utime = 0, stime = 0;
  in >> utime >> stime;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  return v[i];
}

}  // namespace bench
