// The POP3 session; see session.hpp and docs/pop3.md.
#include <charconv>
#include <cstring>
#include <inlet/pop3/session.hpp>
#include <inlet/util/ascii.hpp>

namespace inlet::pop3 {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "inlet.pop3"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok: return "ok";
      case errc::client_quit: return "client sent QUIT";
      case errc::too_many_errors: return "too many protocol errors";
      case errc::auth_failures: return "too many failed sign-ins";
      case errc::shutdown: return "server shutting down";
      case errc::timeout: return "timeout";
      case errc::remove_failed: return "deleted messages could not be removed";
      case errc::connection_lost: return "connection lost";
      case errc::tls_failed: return "TLS handshake failed";
      case errc::too_many_connections: return "too many connections";
      case errc::evicted: return "slot given to another client";
      case errc::bad_config: return "bad configuration";
    }
    return "unknown inlet.pop3 error";
  }
};

// A message number or line count: decimal digits only (no sign, no spaces).
bool parse_number(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  std::from_chars(s.data(), s.data() + s.size(), out);
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "a b" at the first run of spaces; `rest` is what follows it.
std::string_view first_word(std::string_view s, std::string_view& rest) {
  std::size_t sp = s.find(' ');
  if (sp == std::string_view::npos) {
    rest = {};
    return s;
  }
  rest = trim(s.substr(sp + 1));
  return s.substr(0, sp);
}

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Octets of `raw` as append_stuffed sends it (CRLF line ends, last line ended),
// without the stuffing: RETR announces this size.
std::uint64_t sent_size(std::string_view raw) {
  std::uint64_t n = raw.size();
  const char* p = raw.data();
  const char* end = p + raw.size();
  while (p < end) {
    const char* lf = static_cast<const char*>(std::memchr(p, '\n', end - p));
    if (lf == nullptr) {
      n += raw.back() == '\r' ? 1 : 2;  // "x\r" ends as "x\r\n"; "x" as "x\r\n"
      break;
    }
    if (lf == raw.data() || lf[-1] != '\r') ++n;  // a bare LF becomes CRLF
    p = lf + 1;
  }
  return n;
}

}  // namespace

const std::error_category& pop3_category() noexcept {
  static const category c;
  return c;
}

std::uint64_t append_stuffed(std::string& out, std::string_view raw, std::int64_t body_lines) {
  const std::size_t n = raw.size();
  std::uint64_t sent = 0;
  bool in_header = true;
  std::int64_t left = body_lines;
  std::size_t pos = 0;
  std::size_t run = 0;  // start of the bytes copied unchanged at the next flush
  out.reserve(out.size() + n + n / 64 + 8);
  auto flush = [&](std::size_t to) {
    out.append(raw.data() + run, to - run);
    sent += to - run;
  };
  while (pos < n) {
    if (body_lines >= 0 && !in_header && left-- == 0) break;
    if (raw[pos] == '.') {  // stuffed: the extra dot is not part of the message
      flush(pos);
      out.push_back('.');
      run = pos;
    }
    const char* lf = static_cast<const char*>(std::memchr(raw.data() + pos, '\n', n - pos));
    std::size_t eol = lf ? static_cast<std::size_t>(lf - raw.data()) : n;
    std::size_t text_end = (eol > pos && raw[eol - 1] == '\r') ? eol - 1 : eol;
    if (in_header && text_end == pos) in_header = false;  // the blank line ends the header
    if (lf == nullptr || text_end == eol) {  // last line unended, or a bare LF
      flush(text_end);
      out.append("\r\n");
      sent += 2;
      run = lf ? eol + 1 : n;
    }
    pos = lf ? eol + 1 : n;
  }
  flush(pos);
  return sent;
}

session::session(session_config cfg)
    : session(std::make_shared<const session_config>(std::move(cfg))) {}

session::session(std::shared_ptr<const session_config> cfg) : cfg_(std::move(cfg)) {}

void session::start() {
  if (state_ != state::fresh) return;
  state_ = state::authorization;
  std::string text = "inlet";
  if (!cfg_->label.empty()) {
    text += " (";
    for (char c : cfg_->label) text.push_back(c == '\r' || c == '\n' ? ' ' : c);
    text += ")";
  }
  text += " POP3 server ready";
  ok(text);
}

void session::ok(std::string_view text) {
  out_ += "+OK";
  if (!text.empty()) {
    out_ += ' ';
    out_ += text;
  }
  out_ += "\r\n";
}

void session::err(std::string_view text) {
  out_ += "-ERR ";
  out_ += text;
  out_ += "\r\n";
}

void session::error(std::string_view text) {
  if (++errors_ >= cfg_->max_errors && cfg_->max_errors != 0) {
    err("too many errors, closing");
    closing_ = true;
    close_reason_ = errc::too_many_errors;
    return;
  }
  err(text);
}

step session::close_step(errc why) {
  closing_ = true;
  if (close_reason_ == errc::ok) close_reason_ = why;
  state_ = state::done;
  return step{step_kind::close, 0, make_error_code(close_reason_)};
}

step session::consume(std::string_view in) {
  std::size_t used = 0;
  for (;;) {
    if (closing_) {
      step st = close_step(close_reason_);
      st.consumed = used;
      return st;
    }
    // RFC 2595 4: what the client sent after STLS, before the handshake, is dropped.
    if (state_ == state::tls_wait) return step{step_kind::need_more, in.size(), {}};
    if (state_ == state::waiting || state_ == state::fresh || state_ == state::done)
      return step{step_kind::need_more, used, {}};
    std::size_t n = 0;
    std::optional<step> st = command(in.substr(used), n);
    used += n;
    if (st) {
      st->consumed = used;
      return *st;
    }
    if (n == 0) return step{step_kind::need_more, used, {}};
  }
}

std::optional<step> session::command(std::string_view in, std::size_t& n) {
  std::size_t lf = in.find('\n');
  if (overlong_) {  // the rest of a line already answered as too long
    n = lf == std::string_view::npos ? in.size() : lf + 1;
    overlong_ = lf == std::string_view::npos;
    if (!overlong_) error("line too long");
    return std::nullopt;
  }
  if (lf == std::string_view::npos) {
    n = 0;
    if (in.size() >= cfg_->max_command_line) {  // cannot end within the limit
      n = in.size();
      overlong_ = true;
    }
    return std::nullopt;
  }
  n = lf + 1;
  if (n > cfg_->max_command_line) {
    error("line too long");
    return std::nullopt;
  }
  std::string_view line = in.substr(0, lf);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return dispatch(line);
}

std::optional<step> session::dispatch(std::string_view line) {
  std::string_view arg;
  std::string_view word = first_word(line, arg);
  char cmd[5] = {};
  if (word.empty() || word.size() > 4) {
    error("unknown command");
    return std::nullopt;
  }
  for (std::size_t i = 0; i < word.size(); ++i) cmd[i] = util::ascii_upper(word[i]);
  std::string_view c(cmd, word.size());
  if (c == "CAPA") {
    cmd_capa();
    return std::nullopt;
  }
  if (c == "PASS") {  // RFC 1939 7: a password may hold spaces; keep them
    std::size_t sp = line.find(' ');
    arg = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
  }
  if (state_ == state::authorization) return authorization_command(c, arg);
  return transaction_command(c, arg);
}

void session::cmd_capa() {
  out_ +=
      "+OK capability list follows\r\n"
      "TOP\r\nUSER\r\nUIDL\r\nPIPELINING\r\nRESP-CODES\r\nAUTH-RESP-CODE\r\n";
  if (state_ == state::authorization && cfg_->stls && !tls_) out_ += "STLS\r\n";
  out_ += "IMPLEMENTATION inlet\r\n.\r\n";
}

std::optional<step> session::authorization_command(std::string_view c, std::string_view arg) {
  if (c == "USER") {
    if (arg.empty()) return error("USER needs a name"), std::nullopt;
    user_.assign(arg);
    user_given_ = true;
    ok("send PASS");
  } else if (c == "PASS") {
    if (!user_given_) return error("send USER first"), std::nullopt;
    cmd_pass(arg);
    if (state_ == state::waiting) return step{step_kind::list, 0, {}};
  } else if (c == "STLS") {
    if (!arg.empty()) return error("STLS takes no argument"), std::nullopt;
    if (tls_ || !cfg_->stls) return error(tls_ ? "TLS already active" : "STLS not available"),
                                    std::nullopt;
    ok("begin TLS negotiation");
    state_ = state::tls_wait;
    return step{step_kind::start_tls, 0, {}};
  } else if (c == "QUIT") {
    ok("inlet POP3 server signing off");
    closing_ = true;
    close_reason_ = errc::client_quit;
  } else if (c == "APOP" || c == "AUTH") {
    error("not supported, use USER and PASS");
  } else if (c == "STAT" || c == "LIST" || c == "UIDL" || c == "RETR" || c == "TOP" ||
             c == "DELE" || c == "RSET" || c == "NOOP") {
    error("sign in first");
  } else {
    error("unknown command");
  }
  return std::nullopt;
}

void session::cmd_pass(std::string_view password) {
  user_given_ = false;
  if (cfg_->auth && cfg_->auth(user_, password)) {
    state_ = state::waiting;
    pending_ = pending::list;
    return;
  }
  user_.clear();
  if (cfg_->max_auth_failures != 0 && ++auth_failures_ >= cfg_->max_auth_failures) {
    err("[AUTH] too many failed sign-ins, closing");
    closing_ = true;
    close_reason_ = errc::auth_failures;
    return;
  }
  err("[AUTH] invalid user name or password");
}

void session::list_done(std::error_code ec, std::vector<maildrop_entry> entries) {
  if (state_ != state::waiting || pending_ != pending::list) return;
  pending_ = pending::none;
  if (ec) {
    user_.clear();
    state_ = state::authorization;
    err("[SYS/TEMP] maildrop unavailable");
  } else {
    if (entries.size() > cfg_->max_messages) entries.resize(cfg_->max_messages);
    drop_ = std::move(entries);
    deleted_.assign(drop_.size(), false);
    total_octets_ = 0;
    for (const auto& e : drop_) total_octets_ += e.size;
    state_ = state::transaction;
    std::string text = "signed in, ";
    append_number(text, drop_.size());
    text += " messages (";
    append_number(text, total_octets_);
    text += " octets)";
    ok(text);
  }
  if (shutdown_pending_) shutdown();
  if (evict_pending_) evict();
}

std::optional<step> session::transaction_command(std::string_view c, std::string_view arg) {
  if (c == "STAT") {
    if (!arg.empty()) return error("STAT takes no argument"), std::nullopt;
    cmd_stat();
  } else if (c == "LIST" || c == "UIDL") {
    cmd_list(arg, c == "UIDL");
  } else if (c == "RETR" || c == "TOP") {
    return cmd_retr(arg, c == "TOP");
  } else if (c == "DELE") {
    cmd_dele(arg);
  } else if (c == "RSET") {
    if (!arg.empty()) return error("RSET takes no argument"), std::nullopt;
    cmd_rset();
  } else if (c == "NOOP") {
    if (!arg.empty()) return error("NOOP takes no argument"), std::nullopt;
    ok({});
  } else if (c == "QUIT") {
    if (!arg.empty()) return error("QUIT takes no argument"), std::nullopt;
    return cmd_quit();
  } else if (c == "USER" || c == "PASS" || c == "APOP" || c == "AUTH") {
    error("already signed in");
  } else if (c == "STLS") {
    error("STLS only before sign-in");
  } else {
    error("unknown command");
  }
  return std::nullopt;
}

void session::cmd_stat() {
  std::string text;
  append_number(text, drop_.size() - marked_);
  text += ' ';
  append_number(text, total_octets_ - marked_octets_);
  ok(text);
}

const maildrop_entry* session::message_arg(std::string_view arg, std::size_t* index) {
  std::uint64_t nr = 0;
  if (!parse_number(arg, nr)) {
    error("message number required");
    return nullptr;
  }
  if (nr == 0 || nr > drop_.size()) {
    err("no such message");
    return nullptr;
  }
  if (deleted_[nr - 1]) {
    err("message already deleted");
    return nullptr;
  }
  if (index) *index = nr - 1;
  return &drop_[nr - 1];
}

void session::cmd_list(std::string_view arg, bool uidl) {
  auto line = [&](std::size_t i) {
    append_number(out_, i + 1);
    out_ += ' ';
    if (uidl)
      out_ += drop_[i].id;
    else
      append_number(out_, drop_[i].size);
    out_ += "\r\n";
  };
  if (!arg.empty()) {
    std::size_t i = 0;
    if (message_arg(arg, &i) == nullptr) return;
    out_ += "+OK ";
    line(i);
    return;
  }
  if (uidl) {
    ok("unique-id listing follows");
  } else {
    std::string text;
    append_number(text, drop_.size() - marked_);
    text += " messages (";
    append_number(text, total_octets_ - marked_octets_);
    text += " octets)";
    ok(text);
  }
  for (std::size_t i = 0; i < drop_.size(); ++i)
    if (!deleted_[i]) line(i);
  out_ += ".\r\n";
}

void session::cmd_dele(std::string_view arg) {
  std::size_t i = 0;
  if (message_arg(arg, &i) == nullptr) return;
  deleted_[i] = true;
  ++marked_;
  marked_octets_ += drop_[i].size;
  ok("message marked for deletion");
}

void session::cmd_rset() {
  deleted_.assign(drop_.size(), false);
  marked_ = 0;
  marked_octets_ = 0;
  std::string text = "maildrop has ";
  append_number(text, drop_.size());
  text += " messages (";
  append_number(text, total_octets_);
  text += " octets)";
  ok(text);
}

std::optional<step> session::cmd_retr(std::string_view arg, bool top) {
  std::string_view lines;
  std::string_view nr = top ? first_word(arg, lines) : arg;
  if (top) {
    if (lines.empty() || lines.find(' ') != std::string_view::npos ||
        !parse_number(lines, top_lines_)) {
      error("TOP needs a message number and a line count");
      return std::nullopt;
    }
  } else if (nr.find(' ') != std::string_view::npos) {
    error("RETR takes one message number");
    return std::nullopt;
  }
  if (message_arg(nr, &fetch_index_) == nullptr) return std::nullopt;
  state_ = state::waiting;
  pending_ = top ? pending::top : pending::retr;
  return step{step_kind::fetch, 0, {}};
}

std::string_view session::fetch_id() const noexcept {
  return fetch_index_ < drop_.size() ? std::string_view(drop_[fetch_index_].id)
                                     : std::string_view{};
}

void session::fetch_done(std::error_code ec, std::string_view raw) {
  if (state_ != state::waiting || (pending_ != pending::retr && pending_ != pending::top)) return;
  const bool top = pending_ == pending::top;
  pending_ = pending::none;
  state_ = state::transaction;
  if (ec) {
    err("no such message");
  } else if (top) {
    ok("top of message follows");
    // A count past the message's length simply sends all of it.
    constexpr std::uint64_t cap = std::uint64_t{1} << 62;
    append_stuffed(out_, raw, static_cast<std::int64_t>(top_lines_ < cap ? top_lines_ : cap));
    out_ += ".\r\n";
  } else {
    std::string text;
    append_number(text, sent_size(raw));
    text += " octets";
    ok(text);
    append_stuffed(out_, raw);
    out_ += ".\r\n";
  }
  if (shutdown_pending_) shutdown();
  if (evict_pending_) evict();
}

std::optional<step> session::cmd_quit() {
  if (marked_ == 0) {
    ok("inlet POP3 server signing off");
    closing_ = true;
    close_reason_ = errc::client_quit;
    return std::nullopt;
  }
  deletions_.clear();
  deletions_.reserve(marked_);
  for (std::size_t i = 0; i < drop_.size(); ++i)
    if (deleted_[i]) deletions_.push_back(drop_[i].id);
  state_ = state::waiting;
  pending_ = pending::quit;
  return step{step_kind::remove, 0, {}};
}

void session::remove_done(std::error_code ec, std::size_t removed) {
  if (state_ != state::waiting || pending_ != pending::quit) return;
  pending_ = pending::none;
  state_ = state::done;
  closing_ = true;
  if (ec) {
    err("[SYS/TEMP] some deleted messages not removed");
    close_reason_ = errc::remove_failed;
    return;
  }
  std::string text = "inlet POP3 server signing off (";
  append_number(text, removed);
  text += " messages deleted)";
  ok(text);
  close_reason_ = errc::client_quit;
}

void session::tls_started() {
  if (state_ != state::tls_wait) return;
  tls_ = true;
  state_ = state::authorization;
  user_.clear();
  user_given_ = false;
}

void session::timeout() {
  if (closing_) return;
  closing_ = true;
  close_reason_ = errc::timeout;
}

void session::shutdown() {
  if (closing_) return;
  if (state_ == state::waiting) {  // the step in flight finishes first
    shutdown_pending_ = true;
    return;
  }
  err("[SYS/TEMP] server shutting down");
  closing_ = true;
  close_reason_ = errc::shutdown;
}

void session::evict() {
  if (closing_) return;
  if (state_ == state::waiting) {
    evict_pending_ = true;
    return;
  }
  err("[SYS/TEMP] too many connections, closing an idle one");
  closing_ = true;
  close_reason_ = errc::evicted;
}

}  // namespace inlet::pop3
