// The delivery pipeline of inletd: what happens to a message between the end of its
// data and the SMTP reply. parse (mime) -> filter -> store; the reply is sent from the
// store's completion, so "250" means the store holds the message.
//
// Thread-safety: deliver() is called concurrently from every SMTP I/O thread; the
// pipeline holds no per-message state of its own, counters are relaxed atomics, the
// filter is read through an atomically swapped snapshot.
#pragma once

#include <atomic>
#include <cstdint>
#include <inlet/http/api.hpp>
#include <inlet/smtp/message.hpp>
#include <inlet/store/store.hpp>
#include <memory>
#include <string>

#include "message_view.hpp"

namespace inletd {

class filter_stage;  // defined in filter_stage.hpp
class heavy_work;    // defined in heavy_work.hpp

struct pipeline_counters {
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> stored{0};
  std::atomic<std::uint64_t> store_errors{0};
  std::atomic<std::uint64_t> filter_tagged{0};
  std::atomic<std::uint64_t> filter_rejected{0};
  std::atomic<std::uint64_t> bytes{0};
};

/// How received messages are tagged (Mailpit's automatic tags and tag filters).
struct pipeline_options {
  tag_options tags;
  tag_rules rules;
  /// Messages of at least this many bytes are parsed and stored on heavy_work's
  /// threads, not on the SMTP I/O thread that received them (0: never).
  std::size_t heavy_bytes = 256 * 1024;
};

class pipeline {
 public:
  /// `store` null = sink: parse and filter, then accept and discard.
  pipeline(inlet::store::store* store, filter_stage* filter, pipeline_options opts = {});
  ~pipeline();

  void deliver(inlet::smtp::received_message&& m, inlet::smtp::delivery_callback done);

  /// POST /api/v1/send: stores `msg` as if it had been received (parse, summary, tags,
  /// filter, store); `done` gets the stored ID. Errors: store::errc::unavailable for the
  /// sink, a filter rejection as store::errc::invalid_argument, the store's own.
  void submit(inlet::http::submission msg, std::function<void(std::error_code, std::string)> done);

  const pipeline_counters& counters() const noexcept { return counters_; }

 private:
  // Tags from the message itself and from the rules, then the filter's verdict.
  void tag(const inlet::mime::parsed_message& parse, inlet::store::new_message& msg) const;
  // deliver()'s work, on the calling thread.
  void deliver_now(inlet::smtp::received_message&& m, inlet::smtp::delivery_callback done);

  inlet::store::store* store_;
  filter_stage* filter_;
  pipeline_options opts_;
  pipeline_counters counters_;
  std::unique_ptr<heavy_work> heavy_;  // last: its jobs use the members above
};

/// Fills `out`, the envelope as the store keeps it, moving the strings out of `e` (in
/// place: a recipient list with inline room costs a copy per move).
void to_store_envelope(inlet::smtp::envelope& e, inlet::store::envelope& out);

}  // namespace inletd
