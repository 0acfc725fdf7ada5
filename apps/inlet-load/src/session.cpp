#include "inlet/load/session.hpp"

#include <cctype>

namespace inlet::load {

envelope::envelope(std::string_view helo, std::string_view from, std::string_view to)
    : envelope(helo, from, std::vector<std::string>{std::string(to)}) {}

envelope::envelope(std::string_view helo, std::string_view from,
                   const std::vector<std::string>& to)
    : ehlo("EHLO " + std::string(helo) + "\r\n"),
      mail("MAIL FROM:<" + std::string(from) + ">\r\n"),
      data("DATA\r\n"),
      rset("RSET\r\n"),
      quit("QUIT\r\n"),
      starttls("STARTTLS\r\n") {
  std::vector<std::size_t> ends;
  for (const auto& t : to) {
    rcpt += "RCPT TO:<" + t + ">\r\n";
    ends.push_back(rcpt.size());
  }
  std::size_t at = 0;
  for (auto end : ends) {
    rcpt_lines.push_back(std::string_view(rcpt).substr(at, end - at));
    at = end;
  }
  mail_rcpt = mail + rcpt;
  mail_rcpt_data = mail + rcpt + data;
}

void client_session::on_connected() noexcept {
  state_ = state::greeting;
  head_ = count_ = 0;
  srv_pipelining_ = srv_chunking_ = srv_starttls_ = false;
  tls_ = false;
  done_on_conn_ = 0;
  failed_code_ = 0;
  msg_ = nullptr;
}

namespace {
bool keyword_is(std::string_view line, std::string_view kw) {
  if (line.size() < kw.size()) return false;
  for (std::size_t i = 0; i < kw.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(line[i])) != kw[i]) return false;
  return line.size() == kw.size() || line[kw.size()] == ' ';
}
}  // namespace

void client_session::parse_ehlo(std::string_view text) noexcept {
  std::size_t pos = text.find('\n');  // the first line is the server's name
  while (pos != std::string_view::npos) {
    const std::size_t next = text.find('\n', pos + 1);
    const std::string_view line = text.substr(pos + 1, next == text.npos ? text.npos : next - pos - 1);
    if (keyword_is(line, "PIPELINING")) srv_pipelining_ = true;
    if (keyword_is(line, "CHUNKING")) srv_chunking_ = true;
    if (keyword_is(line, "STARTTLS")) srv_starttls_ = true;
    pos = next;
  }
}

session_output client_session::on_reply(const reply& r) noexcept {
  session_output out;
  switch (state_) {
    case state::greeting:
      if (r.code == 220) {
        state_ = state::ehlo;
        out.add(env_->ehlo);
      } else {
        out.ev = session_output::event::connect_failed;
        out.code = r.code;
        out.close = true;
        state_ = state::idle;
      }
      return out;
    case state::ehlo:
      if (r.code == 250) {
        srv_pipelining_ = srv_chunking_ = srv_starttls_ = false;
        parse_ehlo(r.text);
        state_ = state::ready;
        if (cfg_.starttls && !tls_) {
          if (!srv_starttls_) {
            out.ev = session_output::event::tls_refused;
            out.code = 0;
            out.close = true;
            state_ = state::idle;
            return out;
          }
          out.add(env_->starttls);
          state_ = state::starttls;
        }
      } else {
        out.ev = session_output::event::connect_failed;
        out.code = r.code;
        out.close = true;
        state_ = state::idle;
      }
      return out;
    case state::starttls:
      if (r.code == 220) {
        out.ev = session_output::event::start_tls;
        state_ = state::handshake;
      } else {
        out.ev = session_output::event::tls_refused;
        out.code = r.code;
        out.close = true;
        state_ = state::idle;
      }
      return out;
    case state::in_transaction:
      return on_transaction_reply(r);
    case state::rset:
      if (r.code == 250) {
        state_ = state::ready;
        return out;
      }
      break;
    case state::quit:
      out.ev = session_output::event::closed;
      out.code = r.code;
      out.close = true;
      state_ = state::idle;
      return out;
    case state::idle:
    case state::handshake:  // nothing may arrive in clear text after 220 to STARTTLS
    case state::ready:
      break;
  }
  out.ev = session_output::event::protocol_error;
  out.code = r.code;
  out.close = true;
  state_ = state::idle;
  return out;
}

session_output client_session::on_tls_established() noexcept {
  session_output out;
  if (state_ != state::handshake) {
    out.ev = session_output::event::protocol_error;
    out.close = true;
    state_ = state::idle;
    return out;
  }
  tls_ = true;
  srv_pipelining_ = srv_chunking_ = srv_starttls_ = false;
  out.add(env_->ehlo);
  state_ = state::ehlo;
  return out;
}

session_output client_session::send(const prepared_message& m, const envelope* env) noexcept {
  session_output out;
  msg_ = &m;
  tx_env_ = env ? env : env_;
  failed_code_ = 0;
  rcpt_next_ = 0;
  head_ = count_ = 0;
  pipelined_ = cfg_.pipelining && srv_pipelining_;
  chunked_ = cfg_.bdat && srv_chunking_;
  state_ = state::in_transaction;
  if (pipelined_ && chunked_) {
    out.add(tx_env_->mail_rcpt);
    out.add(m.bdat_cmd);
    out.add(m.raw);
    out.body_started = true;
    push(expect::mail);
    for (std::size_t i = 0; i < tx_env_->rcpt_lines.size(); ++i) push(expect::rcpt);
    push(expect::bdat);
  } else if (pipelined_) {
    out.add(tx_env_->mail_rcpt_data);
    push(expect::mail);
    for (std::size_t i = 0; i < tx_env_->rcpt_lines.size(); ++i) push(expect::rcpt);
    push(expect::data);
  } else {
    out.add(tx_env_->mail);
    push(expect::mail);
  }
  return out;
}

session_output client_session::quit() noexcept {
  session_output out;
  out.add(env_->quit);
  state_ = state::quit;
  return out;
}

session_output client_session::on_transaction_reply(const reply& r) noexcept {
  session_output out;
  if (count_ == 0) {
    out.ev = session_output::event::protocol_error;
    out.code = r.code;
    out.close = true;
    state_ = state::idle;
    return out;
  }
  const bool ok2 = r.code >= 200 && r.code < 300;
  switch (pop()) {
    case expect::mail:
    case expect::rcpt: {
      if (!ok2 && failed_code_ == 0) failed_code_ = r.code;
      if (pipelined_) return out;  // the rest of the group is still coming
      if (!ok2) return finish_transaction(r.code, false);
      break;
    }
    case expect::data:
      if (r.code == 354) {
        out.add(msg_->stuffed);
        out.body_started = true;
        push(expect::body);
        return out;
      }
      return finish_transaction(failed_code_ ? failed_code_ : r.code, false);
    case expect::body:
    case expect::bdat:
      if (ok2 && failed_code_ == 0) return finish_transaction(r.code, true);
      return finish_transaction(failed_code_ ? failed_code_ : r.code, false);
  }
  // Non-pipelined: MAIL or an RCPT accepted, send the next command.
  if (rcpt_next_ == tx_env_->rcpt_lines.size()) {
    rcpt_next_ = 0;
    if (chunked_) {
      out.add(msg_->bdat_cmd);
      out.add(msg_->raw);
      out.body_started = true;
      push(expect::bdat);
    } else {
      out.add(tx_env_->data);
      push(expect::data);
    }
  } else {
    out.add(tx_env_->rcpt_lines[rcpt_next_++]);
    push(expect::rcpt);
  }
  return out;
}

session_output client_session::finish_transaction(int code, bool ok) noexcept {
  session_output out;
  out.ev = ok ? session_output::event::message_ok : session_output::event::message_failed;
  out.code = code;
  msg_ = nullptr;
  head_ = count_ = 0;
  rcpt_next_ = 0;
  ++done_on_conn_;
  if (cfg_.messages_per_connection != 0 && done_on_conn_ >= cfg_.messages_per_connection) {
    out.add(env_->quit);
    state_ = state::quit;
  } else if (!ok) {
    out.add(env_->rset);
    state_ = state::rset;
  } else {
    state_ = state::ready;
  }
  return out;
}

}  // namespace inlet::load
