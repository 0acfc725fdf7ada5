// Spam scores: spamd's SPAMC/1.5 REPORT reply and rspamd's /checkv2 JSON, read without
// sockets into Mailpit's SpamAssassinResponse and RspamdResponse; and the two blocking
// clients that ask the services (spam_check.cpp for the parts without I/O,
// spam_client.cpp for the sockets and libcurl), run on the api's thread pool.
//
// Design note: spamd's reply is read by a push parser (bytes in any fragments, then
// finish() at the end of the stream) so the socket loop only moves bytes and every
// fragment split is testable. A rule's description that spamd wraps onto lines indented
// by 28 spaces is joined back with a space, as Mailpit joins it; the parser holds the
// pending partial line only, never the whole reply.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "inlet/http/api.hpp"

namespace inlet::http::detail {

struct spam_rule {
  double score = 0;
  std::string name;
  std::string description;
};

/// Mailpit's SpamAssassinResponse (a zero `Rules` with `error` set is JSON null, as
/// Mailpit's nil slice), and RspamdResponse (with threshold and action).
struct spam_result {
  bool is_spam = false;
  std::string error;
  double score = 0;
  double threshold = 0;  ///< rspamd only
  std::string action;    ///< rspamd only
  bool has_rules = false;
  std::vector<spam_rule> rules;
};

/// spamd's reply to REPORT: "SPAMD/1.1 0 EX_OK", headers (Spam: True ; 1003.3 / 5.0),
/// an empty line, the report text whose table after "Content analysis details" lists
/// the rules that fired.
class spamd_reply_parser {
 public:
  explicit spamd_reply_parser(std::size_t max_bytes = 1u << 20, std::size_t max_rules = 1000);

  /// Takes the next bytes of the reply; false once the reply is malformed or longer than
  /// max_bytes (error() says why; later calls do nothing).
  bool feed(std::string_view bytes);
  /// The end of the stream: completes the last line. The result then is final.
  void finish();

  /// Mailpit's result: spam when the score reaches 5.0, the score and each rule's score
  /// rounded down to one decimal; an error when the reply was bad or spamd refused.
  spam_result result() const;
  const std::string& error() const { return error_; }

  int code() const { return code_; }  ///< spamd's response code; -1 before the status line
  bool has_score() const { return has_score_; }
  double score() const { return score_; }
  double threshold() const { return threshold_; }

 private:
  enum class state : unsigned char { status, headers, body, failed };
  void line(std::string_view l);
  void body_line(std::string_view l);
  void fail(std::string why);

  std::size_t max_bytes_, max_rules_;
  std::size_t seen_ = 0;
  state state_ = state::status;
  std::string partial_;  // the line not yet ended
  bool in_rules_ = false;
  bool last_was_rule_ = false;  // a continuation line extends the last rule
  int code_ = -1;
  std::string message_;
  bool has_score_ = false;
  double score_ = 0, threshold_ = 0;
  std::vector<spam_rule> rules_;
  std::string error_;
};

/// Mailpit's spamd score rounding: down to one decimal.
double round_down_1(double v);
/// Mailpit's rspamd rounding: to two decimals.
double round_2(double v);

/// rspamd's /checkv2 answer (its HTTP status and body) as Mailpit reads it.
spam_result read_rspamd_reply(long status, std::string_view body);

/// Mailpit's JSON for the two: numbers as Go writes them (1003.3, 1000, -0.1).
std::string spamassassin_json(const spam_result& r);
std::string rspamd_json(const spam_result& r);

/// The blocking checks (spam_client.cpp); a failure to reach the service is the result's
/// error, as Mailpit answers it (200 with Error set).
spam_result spamassassin_check(const spam_check_config& cfg, const std::string& raw);
spam_result rspamd_check(const spam_check_config& cfg, const std::string& raw);

}  // namespace inlet::http::detail
