#pragma once
// Incremental SMTP reply parser (sans-io): consume() takes whatever bytes arrived, in any
// fragmentation, and calls back once per complete reply (multi-line replies joined).
//
// Thread-safety: none; one parser per connection.
// View invalidation: reply::text points into the parser and is valid only during the
// callback.
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

#include "inlet/load/error.hpp"

namespace inlet::load {

struct reply {
  int code = 0;           // 100..599
  std::string_view text;  // the text of every line after "ddd-"/"ddd ", joined with '\n'
  bool positive() const noexcept { return code >= 200 && code < 400; }
};

class reply_parser {
 public:
  static constexpr std::size_t max_line = 4096;

  // Feeds bytes. Calls on_reply(const reply&) for every reply completed by them. Returns the
  // first error; afterwards the parser stays failed and ignores input.
  template <class OnReply>
  std::error_code consume(std::string_view data, OnReply&& on_reply);

  bool failed() const noexcept { return static_cast<bool>(error_); }
  // True between the first byte of a reply and its last line.
  bool mid_reply() const noexcept { return !partial_.empty() || code_ != 0; }

 private:
  // Returns true and fills r when `line` (without CRLF) completes a reply.
  bool on_line(std::string_view line, reply& r);

  std::string partial_;  // an incomplete line carried to the next consume()
  std::string text_;     // text of the reply being assembled
  int code_ = 0;         // code of the reply being assembled, 0 between replies
  std::error_code error_;
};

template <class OnReply>
std::error_code reply_parser::consume(std::string_view data, OnReply&& on_reply) {
  while (!error_ && !data.empty()) {
    const std::size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      if (partial_.size() + data.size() > max_line) error_ = errc::reply_too_long;
      else partial_.append(data);
      break;
    }
    std::string_view line = data.substr(0, nl);
    data.remove_prefix(nl + 1);
    if (!partial_.empty()) {
      if (partial_.size() + line.size() > max_line) {
        error_ = errc::reply_too_long;
        break;
      }
      partial_.append(line);
      line = partial_;
    } else if (line.size() > max_line) {
      error_ = errc::reply_too_long;
      break;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    reply r;
    const bool done = on_line(line, r);
    if (done) on_reply(static_cast<const reply&>(r));
    partial_.clear();
  }
  return error_;
}

}  // namespace inlet::load
