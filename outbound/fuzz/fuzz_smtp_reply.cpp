// Server replies, as any server could send them, into the SMTP client session: the reply
// parser (line limits, multiline, enhanced codes) and every state reached from it. The
// first byte picks how the input is cut into reads and which options the session has.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "inlet/outbound/smtp_client_session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned mode = data[0];
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);

  inlet::outbound::smtp_reply_parser parser;
  std::string_view rest = in;
  inlet::outbound::smtp_reply r;
  while (!rest.empty() &&
         parser.parse(rest, r) == inlet::outbound::smtp_reply_parser::status::reply) {
    (void)r.first_line();
  }

  inlet::outbound::smtp_client_options opts;
  opts.require_starttls = mode & 1;
  if (mode & 2) {
    opts.username = "user";
    opts.password = "secret";
    static const char* mechs[] = {"none", "plain", "login", "cram-md5"};
    opts.auth = mechs[(mode >> 2) & 3];
  }
  inlet::outbound::smtp_client_session s(opts);
  const std::string body = "Subject: x\r\n\r\n.line\nend";
  for (std::uint64_t id = 0; id < 3; ++id)
    s.submit({id, "a@example.org", {"b@example.org", "c@example.org"}, &body, (mode & 16) != 0});
  s.quit();
  const std::size_t step = 1 + (mode >> 5);
  std::size_t results = 0;
  while (!in.empty()) {
    const std::size_t n = in.size() < step ? in.size() : step;
    s.receive(in.substr(0, n));
    in.remove_prefix(n);
    s.clear_output();
    if (s.wants_tls()) s.tls_started();
    results += s.take_results().size();
  }
  s.connection_lost("end of input");
  results += s.take_results().size();
  if (results != 3) __builtin_trap();  // every message gets exactly one result
  return 0;
}
