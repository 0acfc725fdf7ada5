// libFuzzer target: arbitrary bytes through the POP3 session, cut into fragments
// by the first byte, the store steps answered from a small maildrop (some
// fetches and removals fail). Checks the driver contract: consumption never
// exceeds the input, the carried-over input stays under the line limit, the
// session always makes progress, and every reply line ends in CRLF.
#include <cstdint>
#include <cstdlib>
#include <inlet/pop3/session.hpp>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  inlet::pop3::session_config cfg;
  cfg.max_command_line = 16 + data[0] % 64;
  cfg.max_messages = 1 + data[0] % 4;
  cfg.stls = data[0] & 1;
  cfg.auth = [](std::string_view u, std::string_view p) { return u == "a" && p == "b"; };
  static const char* const raws[] = {"", ".\r\n", "S: x\n\n.\n..\r\nend", "H: 1\r\n\r\nb\rc\r\n."};
  const std::size_t frag = 1 + data[0] % 11;
  inlet::pop3::session s(cfg);
  s.start();
  std::string pending;
  std::size_t pos = 1, steps = 0;
  while (pos < size) {
    std::size_t n = std::min(frag, size - pos);
    pending.append(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
    for (int guard = 0;; ++guard) {
      if (guard > 100000) std::abort();  // no progress: a bug
      auto st = s.consume(pending);
      if (st.consumed > pending.size()) std::abort();
      pending.erase(0, st.consumed);
      if (pending.size() >= cfg.max_command_line && st.kind == inlet::pop3::step_kind::need_more &&
          !s.awaiting())
        std::abort();
      using k = inlet::pop3::step_kind;
      ++steps;
      if (st.kind == k::need_more) break;
      if (st.kind == k::close) return 0;
      if (st.kind == k::list) {
        std::vector<inlet::pop3::maildrop_entry> e;
        for (std::size_t i = 0; i < 6; ++i) e.push_back({"id" + std::to_string(i), i * 7});
        s.list_done(steps % 5 == 0 ? std::make_error_code(std::errc::io_error) : std::error_code{},
                    std::move(e));
      } else if (st.kind == k::fetch) {
        if (s.fetch_id().empty()) std::abort();
        s.fetch_done(steps % 3 == 0 ? std::make_error_code(std::errc::io_error) : std::error_code{},
                     raws[steps % 4]);
      } else if (st.kind == k::remove) {
        if (s.deletions().empty()) std::abort();
        s.remove_done({}, s.deletions().size());
      } else if (st.kind == k::start_tls) {
        pending.clear();
        s.tls_started();
      }
      std::string_view out = s.output();
      if (!out.empty() && (out.size() < 2 || out.substr(out.size() - 2) != "\r\n")) std::abort();
      s.clear_output();
    }
  }
  return 0;
}
