// libFuzzer target: arbitrary bytes through the session, with the input cut
// into fragments by the first byte, delivery answered in turn accepted and
// rejected. Checks the driver contract: consumption never exceeds the input,
// body pieces point into the input, the session always makes progress.
#include <inlet/smtp/server_session.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  inlet::smtp::session_config cfg;
  cfg.max_command_line = 64 + data[0] % 64;
  cfg.max_message_size = 256;
  cfg.max_recipients = 3;
  cfg.starttls = data[0] & 1;
  cfg.lmtp = data[0] & 2;
  cfg.reject_bare_lf_in_body = data[0] & 4;
  if (data[0] & 8) cfg.domains = {"a.test"};
  if (data[0] & 16) {  // AUTH: "alice" / "secret" signs in
    cfg.auth = [](std::string_view u, std::string_view p) { return u == "alice" && p == "secret"; };
    cfg.auth_allow_insecure = data[0] & 32;
    cfg.auth_required = data[0] & 64;
  }
  std::size_t frag = 1 + data[0] % 13;
  inlet::smtp::server_session s(cfg);
  s.start();
  std::string pending;
  std::size_t pos = 1, messages = 0;
  std::uint64_t body = 0;
  while (pos < size) {
    std::size_t n = std::min(frag, size - pos);
    pending.append(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
    for (int guard = 0;; ++guard) {
      if (guard > 100000) std::abort();  // no progress: a bug
      auto st = s.consume(pending);
      if (st.consumed > pending.size()) std::abort();
      if (st.kind == inlet::smtp::step_kind::body_data) {
        if (st.data.data() < pending.data() ||
            st.data.data() + st.data.size() > pending.data() + st.consumed)
          std::abort();
        body += st.data.size();
        if (body > cfg.max_message_size) std::abort();
      }
      pending.erase(0, st.consumed);
      using k = inlet::smtp::step_kind;
      if (st.kind == k::need_more) break;
      if (st.kind == k::close) return 0;
      if (st.kind == k::message_aborted) body = 0;
      if (st.kind == k::message_complete) {
        auto env = s.take_envelope();
        if (env.rcpt_to.empty() || env.rcpt_to.size() > cfg.max_recipients) std::abort();
        if (cfg.auth_required && !cfg.lmtp && env.auth_user != "alice") std::abort();
        body = 0;
        s.delivery_done({++messages % 2 ? inlet::smtp::delivery_status::accepted("Q")
                                        : inlet::smtp::delivery_status::rejected(554, "5.7.1", "no"),
                         {}});
      }
      if (st.kind == k::start_tls) s.tls_started();
    }
    s.clear_output();
  }
  return 0;
}
