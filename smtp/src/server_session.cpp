// The sans-io SMTP/LMTP session. See server_session.hpp and ../DESIGN.md.
#include <inlet/smtp/server_session.hpp>
#include <inlet/util/ascii.hpp>
#include <inlet/util/base64.hpp>

#include "address.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define INLET_SMTP_DATA_SCAN_AVX2 1
#include <immintrin.h>
#endif

namespace inlet::smtp {
namespace {

#ifdef INLET_SMTP_DATA_SCAN_AVX2
// The DATA scan 64 bytes a step: bit masks of LF, CR and '.' give, for a whole
// block at once, the data lines' ends (CRLF), the bare LFs, and the line that
// ends the scan (CRLF followed by '.', or by the end of the input), instead of
// one memchr and one round of checks per line; a block whose LFs all have a CR
// before and no '.' after them (most) needs only its first and last LF, and
// runs of such blocks go two at a time. Line
// length is checked on the first LF of a block only: with limit >= 64 no line
// that starts and ends in one block can exceed it. Returns where the caller's
// byte loop goes on (the first unscanned byte, never the end: the byte after a
// block is read); `stop` is the index of the LF ending the scan, or npos.
__attribute__((target("avx2"), always_inline)) inline std::uint64_t movemask64(
    __m256i lo, __m256i hi) noexcept {
  return static_cast<std::uint32_t>(_mm256_movemask_epi8(lo)) |
         std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(hi))} << 32;
}

__attribute__((target("avx2"), always_inline)) inline __m256i load32(const char* p) noexcept {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// The LFs of the 32 bytes at p (given as `lfs`) with a '.' after them or no CR
// before them: those that may end the scan or are bare.
__attribute__((target("avx2"), always_inline)) inline __m256i odd_lfs(const char* p,
                                                                      __m256i lfs) noexcept {
  const __m256i dot_next = _mm256_cmpeq_epi8(load32(p + 1), _mm256_set1_epi8('.'));
  const __m256i no_cr_prev = _mm256_xor_si256(
      _mm256_cmpeq_epi8(load32(p - 1), _mm256_set1_epi8('\r')), _mm256_set1_epi8(-1));
  return _mm256_and_si256(lfs, _mm256_or_si256(dot_next, no_cr_prev));
}

__attribute__((target("avx2"))) std::size_t scan_data_blocks(
    const char* base, std::size_t pos, std::size_t size, bool cr_before, std::size_t limit,
    std::size_t& line_len_io, std::size_t& line_start_io, bool& long_line_io, bool& bare_lf,
    std::size_t& stop) noexcept {
  // Locals, not the references: stores through a char* could alias them.
  std::size_t line_len = line_len_io, line_start = line_start_io;
  bool long_line = false;
  auto done = [&](std::size_t at) {
    line_len_io = line_len;
    line_start_io = line_start;
    long_line_io = long_line;
    return at;
  };
  const __m256i lf_v = _mm256_set1_epi8('\n'), cr_v = _mm256_set1_epi8('\r'),
                dot_v = _mm256_set1_epi8('.');
  stop = std::string_view::npos;
  const bool pairs = limit == 0 || limit >= 128;
  // One byte past the block is read (the byte after its last LF).
  for (; pos + 65 <= size; pos += 64) {
    // Two usual blocks a step while they last (the first odd LF leaves the
    // block to the code below). Exact for limit >= 128: a line that starts and
    // ends inside the 128 bytes cannot pass it; one that runs in is checked at
    // the first LF.
    if (pairs && pos > 0) {
      for (; pos + 129 <= size; pos += 128) {
        const char* p = base + pos;
        const __m256i l0 = _mm256_cmpeq_epi8(load32(p), lf_v);
        const __m256i l1 = _mm256_cmpeq_epi8(load32(p + 32), lf_v);
        const __m256i l2 = _mm256_cmpeq_epi8(load32(p + 64), lf_v);
        const __m256i l3 = _mm256_cmpeq_epi8(load32(p + 96), lf_v);
        const __m256i odd =
            _mm256_or_si256(_mm256_or_si256(odd_lfs(p, l0), odd_lfs(p + 32, l1)),
                            _mm256_or_si256(odd_lfs(p + 64, l2), odd_lfs(p + 96, l3)));
        if (!_mm256_testz_si256(odd, odd)) break;
        const std::uint64_t lo = movemask64(l0, l1), hi = movemask64(l2, l3);
        if ((lo | hi) == 0) continue;
        const std::size_t first = lo ? static_cast<std::size_t>(__builtin_ctzll(lo))
                                     : 64 + static_cast<std::size_t>(__builtin_ctzll(hi));
        const std::size_t last = hi ? 64 + static_cast<std::size_t>(63 - __builtin_clzll(hi))
                                    : static_cast<std::size_t>(63 - __builtin_clzll(lo));
        if (limit && line_len + (pos + first + 1 - line_start) > limit) long_line = true;
        line_len = 0;
        line_start = pos + last + 1;
      }
      if (pos + 65 > size) break;
    }
    const __m256i a = load32(base + pos), b = load32(base + pos + 32);
    const __m256i lfa = _mm256_cmpeq_epi8(a, lf_v), lfb = _mm256_cmpeq_epi8(b, lf_v);
    const std::uint64_t lf = movemask64(lfa, lfb);
    if (lf == 0) continue;
    if (pos > 0) {
      // The usual block: every LF has a CR before it and no '.' after it. Then
      // only the line lengths need a look.
      if (movemask64(odd_lfs(base + pos, lfa), odd_lfs(base + pos + 32, lfb)) == 0) {
        const std::size_t first = static_cast<std::size_t>(__builtin_ctzll(lf));
        if (limit && line_len + (pos + first + 1 - line_start) > limit) long_line = true;
        line_len = 0;
        line_start = pos + static_cast<std::size_t>(63 - __builtin_clzll(lf)) + 1;
        continue;
      }
      cr_before = base[pos - 1] == '\r';
    }
    const std::uint64_t cr = movemask64(_mm256_cmpeq_epi8(a, cr_v), _mm256_cmpeq_epi8(b, cr_v));
    const std::uint64_t dot = movemask64(_mm256_cmpeq_epi8(a, dot_v), _mm256_cmpeq_epi8(b, dot_v));
    const std::uint64_t crlf = lf & ((cr << 1) | std::uint64_t{cr_before});
    // A CRLF ends the scan when '.' follows it.
    const std::uint64_t stops = crlf & ((dot >> 1) | (std::uint64_t{base[pos + 64] == '.'} << 63));
    const std::uint64_t upto = stops ? ((stops & -stops) << 1) - 1 : ~std::uint64_t{0};
    const std::uint64_t lfs = lf & upto;  // the LFs this call consumes
    const std::size_t first = static_cast<std::size_t>(__builtin_ctzll(lfs));
    if (limit && line_len + (pos + first + 1 - line_start) > limit) long_line = true;
    line_len = 0;
    line_start = pos + static_cast<std::size_t>(63 - __builtin_clzll(lfs)) + 1;
    if (lfs & ~crlf) bare_lf = true;
    if (stops) {
      stop = pos + static_cast<std::size_t>(__builtin_ctzll(stops));
      return done(pos);
    }
  }
  return done(pos);
}

bool have_avx2() noexcept {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

using util::iequals;

// A four-byte verb folded to lower case in one word, 0 for any other length. Exact for
// letters: `| 0x20` maps no byte but the upper-case letter onto a lower-case one.
constexpr std::uint32_t verb4(std::string_view s) noexcept {
  if (s.size() != 4) return 0;
  std::uint32_t w = 0;
  for (std::size_t i = 0; i < 4; ++i)
    w |= std::uint32_t{static_cast<unsigned char>(s[i])} << (8 * i);
  return w | 0x20202020u;
}

bool istarts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_u64(std::string_view s, std::uint64_t& v) noexcept {
  if (s.empty() || s.size() > 19) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}


// SASL responses are strict base64 (RFC 4954: anything else is 501).
bool base64_decode(std::string_view in, std::string& out) {
  return util::base64_decode(in, out, util::base64_whitespace::reject);
}

// Overwrites a credential before the string is dropped or reused.
void wipe(std::string& s) noexcept {
  volatile char* p = s.data();
  for (std::size_t i = 0; i < s.size(); ++i) p[i] = 0;
  s.clear();
}

}  // namespace

std::string_view to_string(protocol p) noexcept {
  switch (p) {
    case protocol::smtp: return "smtp";
    case protocol::esmtp: return "esmtp";
    case protocol::lmtp: return "lmtp";
  }
  return "smtp";
}

delivery_status delivery_status::accepted(std::string_view queue_id) {
  delivery_status s;
  if (!queue_id.empty() && queue_id.size() <= max_inline_queue_id) {
    std::memcpy(s.queue_id_bytes.data(), queue_id.data(), queue_id.size());
    s.queue_id_size = static_cast<std::uint8_t>(queue_id.size());
  } else {
    s.text = "Ok: queued as ";
    s.text += queue_id;
  }
  return s;
}

delivery_status delivery_status::rejected(int code, std::string_view enhanced,
                                          std::string_view text) {
  return delivery_status{code, std::string(enhanced), std::string(text)};
}

server_session::server_session(session_config cfg)
    : server_session(std::make_shared<const session_config>(std::move(cfg))) {}

server_session::server_session(std::shared_ptr<const session_config> cfg) : cfg_(std::move(cfg)) {
  if (cfg_->max_command_line < 16) {  // room for the shortest commands
    session_config c = *cfg_;
    c.max_command_line = 16;
    cfg_ = std::make_shared<const session_config>(std::move(c));
  }
}

void server_session::set_remote(std::string address, std::uint16_t port) {
  remote_address_ = std::move(address);
  remote_port_ = port;
}

void server_session::start() {
  if (state_ != state::fresh) return;
  state_ = state::init;
  tls_ = cfg_->implicit_tls;  // SMTPS: secured before the first byte
  if (shutdown_) {
    close_with(421, "4.3.2", cfg_->hostname + " Service shutting down", errc::shutting_down);
    return;
  }
  out_ += "220 ";
  out_ += cfg_->hostname;
  out_ += cfg_->lmtp ? " LMTP inlet" : " ESMTP inlet";
  if (!cfg_->label.empty()) {
    out_ += " (";
    out_ += cfg_->label;
    out_ += ')';
  }
  out_ += "\r\n";
}

bool server_session::in_transaction() const noexcept {
  switch (state_) {
    case state::mail:
    case state::rcpt:
    case state::data:
    case state::bdat:
    case state::delivering: return true;
    default: return false;
  }
}

envelope server_session::take_envelope() {
  envelope e = std::move(env_);
  env_ = envelope{};
  env_.helo = e.helo;
  if (cfg_->lmtp) lmtp_rcpts_ = e.rcpt_to;  // one reply per recipient after the data
  return e;
}

void server_session::reply(int code, std::string_view enhanced, std::string_view text,
                           std::string_view more) {
  char num[4] = {char('0' + code / 100), char('0' + code / 10 % 10), char('0' + code % 10), ' '};
  out_.append(num, 4);
  if (!enhanced.empty()) {
    out_ += enhanced;
    out_ += ' ';
  }
  out_ += text;
  out_ += more;
  out_ += "\r\n";
}

void server_session::error_reply(int code, std::string_view enhanced, std::string_view text) {
  reply(code, enhanced, text);
  if (++errors_ >= cfg_->max_errors && !closing_)
    close_with(421, "4.7.0", cfg_->hostname + " Error: too many errors", errc::too_many_errors);
}

void server_session::close_with(int code, std::string_view enhanced, std::string_view text,
                                errc why) {
  if (closing_) return;
  reply(code, enhanced, text);
  closing_ = true;
  close_reason_ = make_error_code(why);
}

void server_session::timeout() {
  close_with(421, "4.4.2", cfg_->hostname + " Error: timeout exceeded", errc::timeout);
}

void server_session::shutdown() {
  shutdown_ = true;
  if (state_ == state::fresh || closing_) return;
  if (!in_transaction() && state_ != state::tls_wait)
    close_with(421, "4.3.2", cfg_->hostname + " Service shutting down", errc::shutting_down);
}

void server_session::shutdown_now() {
  shutdown_ = true;
  if (state_ == state::fresh) return;  // start() answers 421
  close_with(421, "4.3.2", cfg_->hostname + " Service shutting down", errc::shutting_down);
}

void server_session::evict() {
  close_with(421, "4.7.0", cfg_->hostname + " Error: too many connections, closing a slow one",
             errc::evicted);
}

void server_session::tls_started() {
  if (state_ != state::tls_wait) return;
  tls_ = true;
  auth_user_.clear();  // RFC 3207 4.2: nothing learnt before TLS is kept
  extended_ = false;
  env_ = envelope{};
  env_.helo.clear();
  state_ = state::init;
}

void server_session::reset_transaction() {
  std::string helo = std::move(env_.helo);
  env_ = envelope{};
  env_.helo = std::move(helo);
  rcpt_rejected_ = 0;
  rcpt_dropped_ = 0;
  body_size_ = 0;
  body_too_big_ = body_bad_ = body_long_ = bdat_last_ = bdat_failed_ = false;
  line_len_ = 0;
  bdat_left_ = 0;
  state_ = extended_ || !env_.helo.empty() ? state::ready : state::init;
}

step server_session::consume(std::string_view in) {
  std::size_t used = 0;
  for (;;) {
    if (closing_) return step{step_kind::close, used, {}, close_reason_};
    std::string_view rest = in.substr(used);
    std::size_t n = 0;  // octets the inner call used
    std::optional<step> s;
    switch (state_) {
      case state::fresh: start(); continue;
      case state::tls_wait: return step{step_kind::need_more, in.size(), {}, {}};
      case state::delivering: return step{step_kind::need_more, used, {}, {}};
      case state::data: s = consume_data(rest, n); break;
      case state::bdat: s = consume_bdat(rest, n); break;
      default: s = consume_command(rest, n); break;
    }
    used += n;
    if (!s) continue;  // progress made: go on with the rest
    if (s->kind == step_kind::body_data && s->data.empty()) {
      if (n == 0) return step{step_kind::need_more, used, {}, {}};
      continue;  // discarded bytes or a dropped dot
    }
    s->consumed = used;
    return *s;
  }
}

std::optional<step> server_session::consume_command(std::string_view in, std::size_t& n) {
  const void* lf = in.empty() ? nullptr : std::memchr(in.data(), '\n', in.size());
  if (overlong_) {
    if (!lf) {
      n = in.size();
      return step{step_kind::need_more, 0, {}, {}};
    }
    overlong_ = false;
    n = static_cast<std::size_t>(static_cast<const char*>(lf) - in.data()) + 1;
    sasl_end();  // a bad response line ends an AUTH exchange
    error_reply(500, "5.5.6", "Error: line too long");
    return std::nullopt;
  }
  if (!lf) {
    if (in.size() >= cfg_->max_command_line) {
      overlong_ = true;
      n = in.size();
    }
    return step{step_kind::need_more, 0, {}, {}};
  }
  n = static_cast<std::size_t>(static_cast<const char*>(lf) - in.data()) + 1;
  if (n > cfg_->max_command_line) {
    sasl_end();
    error_reply(500, "5.5.6", "Error: line too long");
    return std::nullopt;
  }
  std::string_view line = in.substr(0, n - 1);
  if (line.empty() || line.back() != '\r') {
    sasl_end();
    error_reply(500, "5.5.2", "Error: bare <LF> received; lines end with <CR><LF>");
    return std::nullopt;
  }
  line.remove_suffix(1);
  if (state_ == state::auth)
    sasl_response(line);
  else
    dispatch(line);
  if (state_ == state::tls_wait) return step{step_kind::start_tls, 0, {}, {}};
  return std::nullopt;
}

void server_session::dispatch(std::string_view line) {
  if (line.find('\0') != line.npos || line.find('\r') != line.npos) {
    error_reply(500, "5.5.2", "Error: NUL or bare <CR> in command");
    return;
  }
  std::size_t sp = line.find(' ');
  std::string_view verb = line.substr(0, sp);
  std::string_view arg = sp == line.npos ? std::string_view{} : line.substr(sp + 1);
  const std::uint32_t v = verb4(verb);
  if (v == verb4("quit")) {
    close_with(221, "2.0.0", "Bye", errc::client_quit);
    return;
  }
  if (shutdown_ && !in_transaction()) {
    close_with(421, "4.3.2", cfg_->hostname + " Service shutting down", errc::shutting_down);
    return;
  }
  if (v == verb4(cfg_->lmtp ? "lhlo" : "ehlo")) return cmd_helo(arg, true);
  if (!cfg_->lmtp && v == verb4("helo")) return cmd_helo(arg, false);
  if (starttls_missing() && (v == verb4("mail") || v == verb4("rcpt") || v == verb4("data") ||
                             v == verb4("rset") || v == verb4("auth")))
    return error_reply(530, "5.7.0", "Must issue a STARTTLS command first");
  if (v == verb4("mail")) return cmd_mail(arg);
  if (v == verb4("rcpt")) return cmd_rcpt(arg);
  if (v == verb4("data")) return cmd_data(arg);
  if (v == verb4("bdat") && cfg_->chunking) return cmd_bdat(arg);
  if (v == verb4("rset")) return cmd_rset(arg);
  if (v == verb4("noop")) return reply(250, "2.0.0", "Ok");
  if (iequals(verb, "STARTTLS")) {
    // RFC 3207: not offered (no certificate) is not temporary, so 502, not 454.
    if (!cfg_->starttls) return error_reply(502, "5.5.1", "Error: STARTTLS not available");
    return cmd_starttls(arg);
  }
  if (v == verb4("auth") && cfg_->auth && !cfg_->lmtp) return cmd_auth(arg);
  if (v == verb4("vrfy")) {
    if (trim(arg).empty()) return error_reply(501, "5.5.4", "Syntax: VRFY address");
    return reply(252, "2.0.0", "Cannot VRFY user, but will accept message and attempt delivery");
  }
  if (v == verb4("help"))
    return reply(214, "2.0.0",
                 auth_offered()
                     ? "Commands: HELO EHLO AUTH MAIL RCPT DATA BDAT RSET NOOP VRFY HELP QUIT"
                     : "Commands: HELO EHLO MAIL RCPT DATA BDAT RSET NOOP VRFY HELP QUIT");
  if (v == verb4("expn") || v == verb4("auth") || v == verb4("etrn") ||
      v == verb4("turn"))
    return error_reply(502, "5.5.1", "Error: command not implemented");
  error_reply(500, "5.5.2", "Error: command not recognized");
}

void server_session::cmd_helo(std::string_view arg, bool extended) {
  arg = trim(arg);
  if (arg.empty()) return error_reply(501, "5.5.4", extended ? "Syntax: EHLO hostname" : "Syntax: HELO hostname");
  if (state_ == state::mail || state_ == state::rcpt) reset_transaction();
  extended_ = extended;
  env_.helo.assign(arg);
  state_ = state::ready;
  if (!extended) {
    out_ += "250 ";
    out_ += cfg_->hostname;
    out_ += "\r\n";
    return;
  }
  auto line = [this](std::string_view text, bool last = false) {
    out_ += last ? "250 " : "250-";
    out_ += text;
    out_ += "\r\n";
  };
  line(cfg_->hostname);
  line("PIPELINING");
  line("SIZE " + std::to_string(cfg_->max_message_size));
  line("8BITMIME");
  if (cfg_->smtputf8) line("SMTPUTF8");
  if (cfg_->chunking) line("CHUNKING");
  if (cfg_->starttls && !tls_) line("STARTTLS");
  if (auth_offered()) line("AUTH PLAIN LOGIN");
  line("ENHANCEDSTATUSCODES", true);
}

void server_session::cmd_mail(std::string_view arg) {
  if (state_ == state::init) return error_reply(503, "5.5.1", "Error: send HELO/EHLO first");
  if (state_ != state::ready) return error_reply(503, "5.5.1", "Error: nested MAIL command");
  if (cfg_->auth && cfg_->auth_required && !cfg_->lmtp && auth_user_.empty())
    return error_reply(530, "5.7.0", "Error: authentication required");
  if (!istarts_with(arg, "FROM:")) return error_reply(501, "5.5.4", "Syntax: MAIL FROM:<address>");
  detail::parsed_path p;
  if (!detail::parse_path(trim(arg.substr(5)), p))
    return error_reply(501, "5.1.7", "Error: bad sender address syntax");
  envelope& e = env_;
  e.body = body_type::unspecified;
  e.smtputf8 = false;
  e.declared_size = 0;
  for (std::string_view param : p.params) {
    std::size_t eq = param.find('=');
    std::string_view key = param.substr(0, eq);
    std::string_view value = eq == param.npos ? std::string_view{} : param.substr(eq + 1);
    if (!extended_) return error_reply(555, "5.5.4", "Error: parameters need EHLO");
    if (iequals(key, "SIZE")) {
      std::uint64_t v = 0;
      if (!parse_u64(value, v)) return error_reply(501, "5.5.4", "Error: bad SIZE parameter");
      if (cfg_->max_message_size != 0 && v > cfg_->max_message_size)
        return error_reply(552, "5.3.4", "Error: message size exceeds fixed maximum message size");
      e.declared_size = v;
    } else if (iequals(key, "BODY")) {
      if (iequals(value, "7BIT")) e.body = body_type::seven_bit;
      else if (iequals(value, "8BITMIME")) e.body = body_type::eight_bit_mime;
      else return error_reply(555, "5.5.4", "Error: unsupported BODY type");
    } else if (iequals(key, "SMTPUTF8") && cfg_->smtputf8 && eq == param.npos) {
      e.smtputf8 = true;
    } else {
      return error_reply(555, "5.5.4", "Error: unsupported MAIL parameter");
    }
  }
  if (p.non_ascii && !e.smtputf8)
    return error_reply(553, "5.6.7", "Error: non-ASCII address needs SMTPUTF8");
  if (!p.null_path && !p.has_domain)
    return error_reply(501, "5.1.7", "Error: sender address needs a domain");
  if (policy_refused(policy_stage::mail, p.mailbox)) return;
  e.mail_from.assign(p.mailbox);
  e.auth_user = auth_user_;
  e.rcpt_to.clear();
  e.proto = cfg_->lmtp ? protocol::lmtp : extended_ ? protocol::esmtp : protocol::smtp;
  e.tls = tls_;
  e.remote_address = remote_address_;
  e.remote_port = remote_port_;
  rcpt_rejected_ = 0;
  rcpt_dropped_ = 0;
  state_ = state::mail;
  reply(250, "2.1.0", "Ok");
}

bool server_session::starttls_missing() const noexcept {
  return cfg_->require_starttls && cfg_->starttls && !cfg_->lmtp && !tls_;
}

// A transaction whose recipients were all dropped (ignore_rejected_recipients):
// the body was read; answer as Mailpit does and deliver nothing.
bool server_session::discard_recipientless() {
  if (!env_.rcpt_to.empty()) return false;
  reset_transaction();
  reply(250, "2.0.0", "Ok: queued");
  return true;
}

bool server_session::domain_accepted(std::string_view domain) const {
  if (cfg_->domains.empty()) return true;
  return std::any_of(cfg_->domains.begin(), cfg_->domains.end(),
                     [&](const std::string& d) { return iequals(d, domain); });
}

void server_session::cmd_rcpt(std::string_view arg) {
  if (state_ != state::mail && state_ != state::rcpt)
    return error_reply(503, "5.5.1", "Error: need MAIL command");
  if (env_.chunked) return error_reply(503, "5.5.1", "Error: RCPT after BDAT");
  if (!istarts_with(arg, "TO:")) return error_reply(501, "5.5.4", "Syntax: RCPT TO:<address>");
  detail::parsed_path p;
  if (!detail::parse_path(trim(arg.substr(3)), p) || p.null_path)
    return error_reply(501, "5.1.3", "Error: bad recipient address syntax");
  if (!p.params.empty()) return error_reply(555, "5.5.4", "Error: unsupported RCPT parameter");
  if (p.non_ascii && !env_.smtputf8)
    return error_reply(553, "5.6.7", "Error: non-ASCII address needs SMTPUTF8");
  bool postmaster = iequals(p.local, "postmaster") && (!p.has_domain || domain_accepted(p.domain));
  if (!p.has_domain && !postmaster)
    return error_reply(501, "5.1.3", "Error: recipient address needs a domain");
  if (env_.rcpt_to.size() >= cfg_->max_recipients)
    return reply(452, "4.5.3", "Error: too many recipients");
  if (!postmaster && !domain_accepted(p.domain)) {
    ++rcpt_rejected_;
    return error_reply(550, "5.1.1", "Error: recipient address rejected: domain not served here");
  }
  if (policy_refused(policy_stage::rcpt, p.mailbox)) {
    ++rcpt_rejected_;
    return;
  }
  if (cfg_->recipient_allowed && !cfg_->recipient_allowed(p.mailbox)) {
    if (!cfg_->ignore_rejected_recipients) {
      ++rcpt_rejected_;
      return error_reply(550, "5.1.0", "Requested action not taken: mailbox unavailable");
    }
    ++rcpt_dropped_;
    state_ = state::rcpt;  // DATA goes on; the body is discarded if nobody is left
    return reply(250, "2.1.5", "Ok");
  }
  env_.rcpt_to.emplace_back(p.mailbox);
  state_ = state::rcpt;
  reply(250, "2.1.5", "Ok");
}

void server_session::cmd_data(std::string_view arg) {
  if (!trim(arg).empty()) return error_reply(501, "5.5.4", "Syntax: DATA");
  if (env_.chunked && state_ == state::rcpt)
    return error_reply(503, "5.5.1", "Error: DATA after BDAT");
  if (state_ != state::rcpt) {
    if (state_ == state::mail && rcpt_rejected_ > 0)
      return error_reply(554, "5.5.1", "Error: no valid recipients");
    return error_reply(503, "5.5.1", "Error: need RCPT command");
  }
  body_size_ = 0;
  body_too_big_ = body_bad_ = body_long_ = false;
  line_len_ = 0;
  line_ = line_state::bol;
  state_ = state::data;
  reply(354, "", "End data with <CR><LF>.<CR><LF>");
}

void server_session::cmd_bdat(std::string_view arg) {
  arg = trim(arg);
  std::size_t sp = arg.find(' ');
  std::string_view size = arg.substr(0, sp);
  std::string_view rest = sp == arg.npos ? std::string_view{} : trim(arg.substr(sp + 1));
  std::uint64_t n = 0;
  if (!parse_u64(size, n) || (!rest.empty() && !iequals(rest, "LAST")))
    return error_reply(501, "5.5.4", "Syntax: BDAT size [LAST]");
  bdat_left_ = n;
  bdat_last_ = !rest.empty();
  bdat_failed_ = state_ != state::rcpt;
  bdat_prev_ = state_;
  if (!bdat_failed_) {
    if (!env_.chunked) {
      env_.chunked = true;
      body_size_ = 0;
      body_too_big_ = body_bad_ = body_long_ = false;
      line_len_ = 0;
    }
    if (cfg_->max_message_size != 0 && body_size_ + n > cfg_->max_message_size)
      body_too_big_ = true;
  }
  state_ = state::bdat;  // the chunk is always read, even when it will be refused
}

std::optional<step> server_session::consume_bdat(std::string_view in, std::size_t& n) {
  if (bdat_left_ > 0) {
    if (in.empty()) return step{step_kind::need_more, 0, {}, {}};
    std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(bdat_left_, in.size()));
    bdat_left_ -= take;
    n = take;
    step s{step_kind::body_data, 0, {}, {}};
    if (!bdat_failed_ && !body_too_big_) {
      body_size_ += take;
      count_text_lines(in.substr(0, take));
      if (!body_long_) s.data = in.substr(0, take);
    }
    return s;
  }
  // chunk complete
  if (bdat_failed_) {
    bdat_failed_ = false;
    state_ = bdat_prev_;  // no transaction took this chunk
    error_reply(503, "5.5.1", "Error: BDAT needs a transaction with recipients");
    return std::nullopt;
  }
  if (body_too_big_) {
    reset_transaction();
    error_reply(552, "5.3.4", "Error: message size exceeds fixed maximum message size");
    return step{step_kind::message_aborted, 0, {}, {}};
  }
  if (body_long_) {
    reset_transaction();
    error_reply(500, "5.5.6", "Error: line too long in message data");
    return step{step_kind::message_aborted, 0, {}, {}};
  }
  if (!bdat_last_) {
    state_ = state::rcpt;
    reply(250, "2.0.0", std::to_string(body_size_) + " octets received");
    return std::nullopt;
  }
  if (discard_recipientless()) return step{step_kind::message_aborted, 0, {}, {}};
  state_ = state::delivering;
  return step{step_kind::message_complete, 0, {}, {}};
}

std::optional<step> server_session::consume_data(std::string_view in, std::size_t& n) {
  if (in.empty()) return step{step_kind::need_more, 0, {}, {}};
  std::size_t start = 0;
  if (line_ == line_state::bol) {
    if (in[0] == '.') {
      if (in.size() < 2) return step{step_kind::need_more, 0, {}, {}};
      if (in[1] == '\r') {
        if (in.size() < 3) return step{step_kind::need_more, 0, {}, {}};
        if (in[2] == '\n') {
          n = 3;
          finish_body();
          return step{state_ == state::delivering ? step_kind::message_complete
                                                  : step_kind::message_aborted, 0, {}, {}};
        }
      }
      start = 1;  // a stuffed dot: leave it out (RFC 5321 4.5.2)
    }
  }
  const char* base = in.data();
  // Text line limit (RFC 5321 4.5.3.1.6), counted on the content: every LF
  // the scan visits ends a line; the stuffed dot is not counted.
  const std::size_t limit = body_long_ ? 0 : cfg_->max_text_line;
  std::size_t line_start = start;
  std::size_t pos = start;
  std::size_t end = in.size();
  line_state after = line_state::mid;
  bool stopped = false;
#ifdef INLET_SMTP_DATA_SCAN_AVX2
  if (in.size() - pos >= 128 && (limit == 0 || limit >= 64) && have_avx2()) {
    bool long_line = false, bare = false;
    std::size_t stop;
    const bool cr_before = pos > 0 ? base[pos - 1] == '\r' : line_ == line_state::cr;
    pos = scan_data_blocks(base, pos, in.size(), cr_before, limit, line_len_, line_start, long_line,
                           bare, stop);
    if (long_line) body_long_ = true;
    if (bare && cfg_->reject_bare_lf_in_body) body_bad_ = true;
    if (stop != std::string_view::npos) {
      end = stop + 1;
      after = line_state::bol;
      stopped = true;
    }
  }
#endif
  while (!stopped && pos < in.size()) {
    const void* hit = std::memchr(base + pos, '\n', in.size() - pos);
    if (!hit) {
      after = base[in.size() - 1] == '\r' ? line_state::cr : line_state::mid;
      break;
    }
    std::size_t p = static_cast<const char*>(hit) - base;
    if (limit && line_len_ + (p + 1 - line_start) > limit) body_long_ = true;
    line_len_ = 0;
    line_start = p + 1;
    bool crlf = p > 0 ? base[p - 1] == '\r' : line_ == line_state::cr;
    if (!crlf) {
      if (cfg_->reject_bare_lf_in_body) body_bad_ = true;
      pos = p + 1;
      after = line_state::mid;
      continue;
    }
    if (p + 1 == in.size() || base[p + 1] == '.') {
      end = p + 1;
      after = line_state::bol;
      break;
    }
    pos = p + 1;
  }
  line_ = after;
  line_len_ += end - line_start;
  if (limit && line_len_ > limit) body_long_ = true;
  std::size_t len = end - start;
  n = end;
  step s{step_kind::body_data, 0, {}, {}};
  if (!body_too_big_ && !body_bad_) {
    body_size_ += len;  // counted past a long line too: 552 takes precedence
    if (cfg_->max_message_size != 0 && body_size_ > cfg_->max_message_size) body_too_big_ = true;
    else if (!body_long_) s.data = in.substr(start, len);
  }
  return s;
}

void server_session::finish_body() {
  if (body_too_big_) {
    reset_transaction();
    return error_reply(552, "5.3.4", "Error: message size exceeds fixed maximum message size");
  }
  if (body_long_) {
    reset_transaction();
    return error_reply(500, "5.5.6", "Error: line too long in message data");
  }
  if (body_bad_) {
    reset_transaction();
    return error_reply(550, "5.6.0", "Error: bare <LF> in message data");
  }
  if (discard_recipientless()) return;
  state_ = state::delivering;
}

// BDAT chunks: the same text line count as the DATA scanner does inline.
void server_session::count_text_lines(std::string_view c) {
  if (cfg_->max_text_line == 0 || body_long_) return;
  const char* p = c.data();
  const char* e = p + c.size();
  while (p < e) {
    const void* lf = std::memchr(p, '\n', static_cast<std::size_t>(e - p));
    if (!lf) {
      line_len_ += static_cast<std::size_t>(e - p);
      break;
    }
    std::size_t n = static_cast<std::size_t>(static_cast<const char*>(lf) - p) + 1;
    if (line_len_ + n > cfg_->max_text_line) {
      body_long_ = true;
      return;
    }
    line_len_ = 0;
    p += n;
  }
  if (line_len_ > cfg_->max_text_line) body_long_ = true;
}

void server_session::delivery_done(const delivery_result& r) {
  if (state_ != state::delivering) return;
  if (closing_) {  // shutdown_now() came first: its 421 was the last reply
    lmtp_rcpts_.clear();
    reset_transaction();
    return;
  }
  auto one = [this](const delivery_status& st, std::string_view prefix) {
    // "Ok: queued as ID" is formatted here, on the stack, from the inline ID.
    constexpr std::string_view queued = "Ok: queued as ";
    char buf[queued.size() + delivery_status::max_inline_queue_id];
    std::string_view text = st.text;
    if (text.empty() && st.queue_id_size > 0) {
      const std::string_view id = st.queue_id();
      std::memcpy(buf, queued.data(), queued.size());
      std::memcpy(buf + queued.size(), id.data(), id.size());
      text = std::string_view(buf, queued.size() + id.size());
    } else if (text.empty()) {
      text = st.ok() ? "Ok" : "Error";
    }
    reply(st.code, st.enhanced, prefix, text);
  };
  if (cfg_->lmtp) {
    const auto& rcpts = env_.rcpt_to.empty() ? lmtp_rcpts_ : env_.rcpt_to;
    for (std::size_t i = 0; i < rcpts.size(); ++i) {
      const delivery_status& st = i < r.per_recipient.size() ? r.per_recipient[i] : r.status;
      one(st, "<" + rcpts[i] + "> ");
    }
    lmtp_rcpts_.clear();
  } else {
    one(r.status, "");
  }
  reset_transaction();
  if (shutdown_)
    close_with(421, "4.3.2", cfg_->hostname + " Service shutting down", errc::shutting_down);
}

void server_session::cmd_rset(std::string_view arg) {
  if (!trim(arg).empty()) return error_reply(501, "5.5.4", "Syntax: RSET");
  reset_transaction();
  reply(250, "2.0.0", "Ok");
}

void server_session::cmd_starttls(std::string_view arg) {
  if (!trim(arg).empty()) return error_reply(501, "5.5.4", "Syntax: STARTTLS");
  if (tls_) return error_reply(503, "5.5.1", "Error: TLS already active");
  if (in_transaction()) return error_reply(503, "5.5.1", "Error: STARTTLS inside a transaction");
  reply(220, "2.0.0", "Ready to start TLS");
  state_ = state::tls_wait;
}

// ---------------------------------------------------------------- AUTH

bool server_session::auth_offered() const noexcept {
  return cfg_->auth && !cfg_->lmtp && (tls_ || cfg_->auth_allow_insecure);
}

bool server_session::policy_refused(policy_stage stage, std::string_view arg) {
  if (!cfg_->policy) return false;
  std::optional<delivery_status> st = cfg_->policy(stage, arg);
  if (!st || st->ok()) return false;
  reply(st->code, st->enhanced, st->text.empty() ? "Error: refused by policy" : st->text);
  return true;
}

// AUTH mechanism [initial-response] (RFC 4954 section 4).
void server_session::cmd_auth(std::string_view arg) {
  if (state_ == state::init || !extended_)
    return error_reply(503, "5.5.1", "Error: send EHLO first");
  if (!auth_user_.empty()) return error_reply(503, "5.5.1", "Error: already authenticated");
  if (state_ != state::ready)
    return error_reply(503, "5.5.1", "Error: AUTH not permitted during a mail transaction");
  arg = trim(arg);
  std::size_t sp = arg.find(' ');
  std::string_view mech = arg.substr(0, sp);
  std::string_view initial = sp == arg.npos ? std::string_view{} : trim(arg.substr(sp + 1));
  if (mech.empty()) return error_reply(501, "5.5.4", "Syntax: AUTH mechanism [initial-response]");
  const bool plain = iequals(mech, "PLAIN");
  if (!plain && !iequals(mech, "LOGIN"))
    return error_reply(504, "5.5.4", "Error: unrecognized authentication type");
  if (!tls_ && !cfg_->auth_allow_insecure)
    return error_reply(538, "5.7.11",
                       "Error: encryption required for requested authentication mechanism");
  if (policy_refused(policy_stage::auth, plain ? "PLAIN" : "LOGIN")) return;
  state_ = state::auth;
  if (plain) {
    sasl_ = sasl::plain;
    if (initial.empty()) return reply(334, "", "");
    return sasl_plain(initial == "=" ? std::string_view{} : initial);
  }
  if (initial.empty()) {
    sasl_ = sasl::login_user;
    return reply(334, "", "VXNlcm5hbWU6");  // "Username:"
  }
  sasl_login_user(initial == "=" ? std::string_view{} : initial);
}

// One line of the client during the exchange: a base64 response, or "*".
void server_session::sasl_response(std::string_view line) {
  if (line == "*") {
    sasl_end();
    return error_reply(501, "5.7.0", "Error: authentication cancelled");
  }
  switch (sasl_) {
    case sasl::plain:
      return sasl_plain(line);
    case sasl::login_user:
      return sasl_login_user(line);
    case sasl::login_password: {
      std::string password;
      if (!base64_decode(line, password)) {
        sasl_end();
        return error_reply(501, "5.5.2", "Error: cannot decode response");
      }
      std::string user = std::move(sasl_user_);
      sasl_check(user, password);
      wipe(password);
      wipe(user);
      return;
    }
  }
}

// PLAIN (RFC 4616): authzid NUL authcid NUL passwd.
void server_session::sasl_plain(std::string_view b64) {
  std::string msg;
  if (!base64_decode(b64, msg)) {
    sasl_end();
    return error_reply(501, "5.5.2", "Error: cannot decode response");
  }
  std::string_view m(msg);
  std::size_t a = m.find('\0');
  std::size_t b = a == m.npos ? m.npos : m.find('\0', a + 1);
  if (b == m.npos || m.find('\0', b + 1) != m.npos || b == a + 1) {
    wipe(msg);
    sasl_end();
    return error_reply(501, "5.5.2", "Error: malformed PLAIN response");
  }
  std::string_view authzid = m.substr(0, a), user = m.substr(a + 1, b - a - 1);
  // Acting for another identity (authzid) is not supported: only oneself.
  if (!authzid.empty() && authzid != user)
    sasl_check({}, {});
  else
    sasl_check(user, m.substr(b + 1));
  wipe(msg);
}

void server_session::sasl_login_user(std::string_view b64) {
  if (!base64_decode(b64, sasl_user_) || sasl_user_.empty()) {
    sasl_end();
    return error_reply(501, "5.5.2", "Error: cannot decode response");
  }
  state_ = state::auth;
  sasl_ = sasl::login_password;
  reply(334, "", "UGFzc3dvcmQ6");  // "Password:"
}

void server_session::sasl_check(std::string_view user, std::string_view password) {
  sasl_end();
  if (!user.empty() && cfg_->auth(user, password)) {
    auth_user_.assign(user);
    return reply(235, "2.7.0", "Authentication successful");
  }
  ++auth_failures_;
  error_reply(535, "5.7.8", "Error: authentication credentials invalid");
  if (cfg_->max_auth_failures != 0 && auth_failures_ >= cfg_->max_auth_failures)
    close_with(421, "4.7.0", cfg_->hostname + " Error: too many failed authentication attempts",
               errc::too_many_auth_failures);
}

void server_session::sasl_end() {
  wipe(sasl_user_);
  if (state_ == state::auth) state_ = state::ready;
}

}  // namespace inlet::smtp
