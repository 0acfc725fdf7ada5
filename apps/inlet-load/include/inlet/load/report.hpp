#pragma once
// Turning a run into a human table and a JSON document (schema "inlet-load/1", see
// docs/load.md). Pure functions; no I/O.
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "inlet/load/message.hpp"
#include "inlet/load/proc.hpp"
#include "inlet/load/runner.hpp"

namespace inlet::load {

struct report {
  const run_config* cfg = nullptr;
  corpus_stats corpus;
  std::string corpus_source;  // "synthetic", "dir:<path>", "mbox:<path>"
  const run_result* result = nullptr;
  std::optional<proc_summary> server, client;
  int server_pid = 0;
};

boost::json::object to_json(const report& r);
std::string to_text(const report& r);
std::string progress_line(double seconds, std::uint64_t ok, std::uint64_t failed,
                          std::uint64_t bytes, std::uint64_t connections, double rate_now);

}  // namespace inlet::load
