// A message that did not come over SMTP (the send API, sendmail, the ingest command),
// as handed to mail::ingest::submit.
#pragma once

#include <functional>
#include <inlet/store/types.hpp>
#include <string>
#include <system_error>
#include <vector>

namespace inlet::mail {

/// The bytes, the envelope to record, the tags asked for (the send API's Tags).
struct submission {
  inlet::store::envelope envelope;
  std::string raw;
  std::vector<std::string> tags;
};

/// Completion of a submission: the stored ID, or an error (store::errc::unavailable with
/// no store, store::errc::invalid_argument when the content filter rejects, the store's
/// own).
using submit_callback = std::function<void(std::error_code, std::string id)>;

}  // namespace inlet::mail
