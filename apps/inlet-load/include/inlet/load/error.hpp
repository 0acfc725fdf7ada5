#pragma once
// Error codes of inlet-load's pure parts (reply parsing, corpus loading, /proc parsing).
#include <string>
#include <system_error>

namespace inlet::load {

enum class errc {
  malformed_reply = 1,  // a reply line that is not "ddd", "ddd " or "ddd-"
  reply_too_long,       // a reply line longer than reply_parser::max_line
  inconsistent_code,    // a multi-line reply whose lines carry different codes
  unexpected_reply,     // a reply when the session expected none
  empty_corpus,         // no message could be loaded
  bad_proc_file,        // /proc/<pid>/stat or status not in the expected shape
  tls_failed,           // the TLS handshake or a record failed (detail: tls_channel::last_error)
  tls_closed,           // the server closed the TLS session (close_notify)
};

const std::error_category& load_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), load_category()};
}

}  // namespace inlet::load

template <>
struct std::is_error_code_enum<inlet::load::errc> : std::true_type {};
