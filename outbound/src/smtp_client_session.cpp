#include "inlet/outbound/smtp_client_session.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <inlet/util/base64.hpp>
#include <utility>

namespace inlet::outbound {

namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

bool ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "5.1.1" at the front of a reply line whose code is of class `cls`, else "".
std::string enhanced_code(std::string_view text, char cls) {
  if (text.size() < 5 || text[0] != cls || text[1] != '.') return {};
  std::size_t i = 2, n = 0;
  while (i < text.size() && digit(text[i]) && n < 3) ++i, ++n;
  if (n == 0 || i >= text.size() || text[i] != '.') return {};
  ++i;
  n = 0;
  while (i < text.size() && digit(text[i]) && n < 3) ++i, ++n;
  if (n == 0 || (i < text.size() && text[i] != ' ')) return {};
  return std::string(text.substr(0, i));
}

// An address we may put between angle brackets: nothing that ends or splits a command.
bool safe_address(std::string_view a) {
  if (a.size() > 512) return false;
  for (char c : a)
    if (c == '\r' || c == '\n' || c == '<' || c == '>' || c == '\0') return false;
  return true;
}

std::string cram_md5(std::string_view user, std::string_view password,
                     std::string_view challenge) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_md5(), password.data(), static_cast<int>(password.size()),
       reinterpret_cast<const unsigned char*>(challenge.data()), challenge.size(), mac, &len);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(user);
  out += ' ';
  for (unsigned i = 0; i < len; ++i) {
    out += hex[mac[i] >> 4];
    out += hex[mac[i] & 15];
  }
  return out;
}

}  // namespace

std::string smtp_reply::first_line() const {
  std::string s = std::to_string(code);
  if (!lines.empty() && !lines[0].empty()) s.append(" ").append(lines[0]);
  return s;
}

smtp_reply_parser::status smtp_reply_parser::fail(std::string why) {
  error_ = std::move(why);
  return status::error;
}

smtp_reply_parser::status smtp_reply_parser::parse(std::string_view& in, smtp_reply& out) {
  if (!error_.empty()) return status::error;
  while (!in.empty()) {
    const auto nl = in.find('\n');
    const std::size_t take = nl == std::string_view::npos ? in.size() : nl + 1;
    if (line_.size() + take > kMaxReplyLine) return fail("reply line too long");
    line_.append(in.substr(0, take));
    in.remove_prefix(take);
    if (nl == std::string_view::npos) return status::more;
    std::string_view l = line_;
    l.remove_suffix(1);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.size() < 3 || l[0] < '1' || l[0] > '5' || !digit(l[1]) || !digit(l[2]) ||
        (l.size() > 3 && l[3] != ' ' && l[3] != '-'))
      return fail("malformed reply line");
    const int code = (l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0');
    if (cur_.lines.empty()) {
      cur_.code = code;
    } else if (code != cur_.code) {
      return fail("reply code changed within a reply");
    }
    if (cur_.lines.size() >= kMaxReplyLines) return fail("reply has too many lines");
    cur_.lines.emplace_back(l.size() > 4 ? l.substr(4) : std::string_view());
    const bool last = l.size() == 3 || l[3] == ' ';
    line_.clear();
    if (last) {
      cur_.enhanced = enhanced_code(cur_.lines[0], static_cast<char>('0' + cur_.code / 100));
      out = std::move(cur_);
      cur_ = {};
      return status::reply;
    }
  }
  return status::more;
}

smtp_client_session::smtp_client_session(smtp_client_options opts) : opts_(std::move(opts)) {}

void smtp_client_session::append_stuffed(std::string& out, std::string_view data) {
  out.reserve(out.size() + data.size() + data.size() / 32 + 8);
  bool line_start = true;
  std::size_t i = 0;
  while (i < data.size()) {
    if (line_start && data[i] == '.') out += '.';
    const auto nl = data.find('\n', i);
    if (nl == std::string_view::npos) {
      out.append(data.substr(i));
      line_start = false;
      break;
    }
    if (nl > i && data[nl - 1] == '\r') {
      out.append(data.substr(i, nl + 1 - i));
    } else {  // a bare LF goes out as CRLF, as the DATA grammar asks
      out.append(data.substr(i, nl - i));
      out += "\r\n";
    }
    i = nl + 1;
    line_start = true;
  }
  if (!line_start) out += "\r\n";
  out += ".\r\n";
}

void smtp_client_session::submit(outgoing_message m) {
  send_result early;
  early.id = m.id;
  if (state_ == state::failed || state_ == state::closed || state_ == state::quit) {
    early.error = error_.empty() ? "the connection is closed" : error_;
  } else if (m.rcpt.empty() || !m.data) {
    early.error = "no recipients";
  } else {
    bool safe = safe_address(m.mail_from);
    for (const auto& r : m.rcpt) safe = safe && !r.empty() && safe_address(r);
    if (!safe) early.error = "an envelope address cannot be sent over SMTP";
  }
  if (!early.error.empty()) {
    results_.push_back(std::move(early));
    return;
  }
  txn t;
  t.result.id = m.id;
  t.msg = std::move(m);
  txns_.push_back(std::move(t));
  pump();
}

void smtp_client_session::quit() {
  quit_asked_ = true;
  pump();
}

std::vector<send_result> smtp_client_session::take_results() {
  std::vector<send_result> out;
  out.swap(results_);
  return out;
}

void smtp_client_session::receive(std::string_view bytes) {
  while (!bytes.empty() && state_ != state::failed && state_ != state::closed) {
    if (state_ == state::tls_wait) {
      // Bytes after the STARTTLS 220 before the handshake would be read as if protected.
      fail("the server sent data before the TLS handshake");
      return;
    }
    smtp_reply r;
    switch (parser_.parse(bytes, r)) {
      case smtp_reply_parser::status::more:
        return;
      case smtp_reply_parser::status::error:
        fail("bad reply from the server: " + parser_.error());
        return;
      case smtp_reply_parser::status::reply:
        on_reply(r);
        break;
    }
  }
}

void smtp_client_session::on_reply(const smtp_reply& r) {
  switch (state_) {
    case state::greeting:
      if (r.code != 220) return fail("greeting: " + r.first_line());
      out_ += "EHLO " + opts_.helo_name + "\r\n";
      state_ = state::ehlo;
      return;
    case state::ehlo:
      return on_ehlo(r);
    case state::helo:
      if (r.code != 250) return fail("HELO refused: " + r.first_line());
      esmtp_ = false;
      return after_hello();
    case state::starttls:
      if (r.code != 220) return fail("STARTTLS refused: " + r.first_line());
      state_ = state::tls_wait;
      return;
    case state::auth:
      return on_auth(r);
    case state::ready:
      return on_txn_reply(r);
    case state::quit:
      state_ = state::closed;
      return;
    case state::tls_wait:
    case state::closed:
    case state::failed:
      return;
  }
}

void smtp_client_session::on_ehlo(const smtp_reply& r) {
  if (r.code == 250) {
    pipelining_ = starttls_offered_ = size_ = eightbit_ = smtputf8_ = false;
    auth_mechs_.clear();
    for (std::size_t i = 1; i < r.lines.size(); ++i) {
      const std::string line = upper(r.lines[i]);
      const std::string_view l = line;
      const auto end = l.find_first_of(" =");
      const std::string_view key = l.substr(0, end);
      if (key == "PIPELINING") {
        pipelining_ = true;
      } else if (key == "SIZE") {
        size_ = true;
      } else if (key == "8BITMIME") {
        eightbit_ = true;
      } else if (key == "SMTPUTF8") {
        smtputf8_ = true;
      } else if (key == "STARTTLS") {
        starttls_offered_ = true;
      } else if (key == "AUTH" && end != std::string_view::npos) {
        std::string_view rest = l.substr(end + 1);
        while (!rest.empty()) {
          const auto sp = rest.find(' ');
          const std::string_view mech = rest.substr(0, sp);
          if (!mech.empty() && std::find(auth_mechs_.begin(), auth_mechs_.end(), mech) ==
                                   auth_mechs_.end())
            auth_mechs_.emplace_back(mech);
          rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
        }
      }
    }
    return after_hello();
  }
  if (r.code >= 500) {  // not an ESMTP server: plain HELO, no extensions
    out_ += "HELO " + opts_.helo_name + "\r\n";
    state_ = state::helo;
    return;
  }
  fail("EHLO refused: " + r.first_line());
}

void smtp_client_session::after_hello() {
  if (opts_.require_starttls && !opts_.tls_active) {
    if (!starttls_offered_) return fail("the server does not offer STARTTLS");
    out_ += "STARTTLS\r\n";
    state_ = state::starttls;
    return;
  }
  if (!opts_.username.empty()) return start_auth();
  state_ = state::ready;
  pump();
}

void smtp_client_session::tls_started() {
  if (state_ != state::tls_wait) return;
  opts_.tls_active = true;
  pipelining_ = starttls_offered_ = false;
  auth_mechs_.clear();
  out_ += "EHLO " + opts_.helo_name + "\r\n";
  state_ = state::ehlo;
}

void smtp_client_session::start_auth() {
  if (auth_mechs_.empty()) return fail("the server does not offer AUTH");
  const std::string wanted = upper(opts_.auth);
  if (wanted == "PLAIN" || wanted == "LOGIN" || wanted == "CRAM-MD5") {
    mech_ = wanted;  // as configured, offered or not (the server's reply says)
  } else {
    mech_.clear();
    for (const char* m : {"CRAM-MD5", "PLAIN", "LOGIN"})
      if (std::find(auth_mechs_.begin(), auth_mechs_.end(), m) != auth_mechs_.end()) {
        mech_ = m;
        break;
      }
    if (mech_.empty()) return fail("no AUTH mechanism in common with the server");
  }
  auth_step_ = 0;
  if (mech_ == "PLAIN") {
    std::string creds;
    creds.push_back('\0');
    creds.append(opts_.username).push_back('\0');
    creds.append(opts_.password);
    out_ += "AUTH PLAIN " + util::base64_encode(creds) + "\r\n";
    auth_step_ = 1;
  } else {
    out_ += "AUTH " + mech_ + "\r\n";
  }
  state_ = state::auth;
}

void smtp_client_session::on_auth(const smtp_reply& r) {
  if (r.code == 235) {
    state_ = state::ready;
    pump();
    return;
  }
  if (r.code != 334) return fail("AUTH " + mech_ + " refused: " + r.first_line());
  const std::string_view challenge = r.lines.empty() ? std::string_view() : r.lines[0];
  if (mech_ == "LOGIN" && auth_step_ < 2) {
    out_ += util::base64_encode(auth_step_ == 0 ? opts_.username : opts_.password) + "\r\n";
    ++auth_step_;
    return;
  }
  if (mech_ == "CRAM-MD5" && auth_step_ == 0) {
    std::string decoded;
    if (!util::base64_decode(challenge, decoded))
      return fail("AUTH CRAM-MD5: the challenge is not base64");
    out_ += util::base64_encode(cram_md5(opts_.username, opts_.password, decoded)) + "\r\n";
    ++auth_step_;
    return;
  }
  out_ += "*\r\n";  // a challenge we cannot answer: cancel (RFC 4954)
  fail("AUTH " + mech_ + ": unexpected challenge");
}

smtp_client_session::txn* smtp_client_session::find(std::uint64_t id) {
  for (auto& t : txns_)
    if (t.msg.id == id && !t.done) return &t;
  return nullptr;
}

void smtp_client_session::pump() {
  if (state_ != state::ready) return;
  for (auto& t : txns_) {
    if (t.done) continue;
    if (!pipelining_ && !replies_.empty() && t.outstanding == 0 && t.written == 0) break;
    write_commands(t);
    if (!t.body_written) break;  // the next message's commands wait for this body
  }
  if (quit_asked_ && txns_.empty() && replies_.empty()) {
    out_ += "QUIT\r\n";
    state_ = state::quit;
  }
}

void smtp_client_session::write_commands(txn& t) {
  const std::size_t total = t.msg.rcpt.size() + 2;  // MAIL, RCPT x n, DATA
  while (!t.failed && t.written < total) {
    if (!pipelining_ && (t.outstanding > 0 || !replies_.empty())) return;
    const std::size_t i = t.written;
    if (i == 0) {
      out_ += "MAIL FROM:<" + t.msg.mail_from + ">";
      if (size_) out_ += " SIZE=" + std::to_string(t.msg.data->size());
      if (eightbit_ && !ascii(*t.msg.data)) out_ += " BODY=8BITMIME";
      if (smtputf8_) {
        bool plain = ascii(t.msg.mail_from);
        for (const auto& r : t.msg.rcpt) plain = plain && ascii(r);
        if (!plain) out_ += " SMTPUTF8";
      }
      out_ += "\r\n";
      replies_.push_back({expect::mail, t.msg.id});
    } else if (i <= t.msg.rcpt.size()) {
      out_ += "RCPT TO:<" + t.msg.rcpt[i - 1] + ">\r\n";
      replies_.push_back({expect::rcpt, t.msg.id});
    } else {
      // Without pipelining, or when every recipient must be taken, DATA waits for the
      // RCPT replies, and is not sent at all when they leave nobody to deliver to.
      if (t.msg.all_recipients || !pipelining_) {
        if (t.outstanding > 0) return;
        if (t.accepted == 0) return;  // on_txn_reply failed it already
      }
      out_ += "DATA\r\n";
      replies_.push_back({expect::data, t.msg.id});
    }
    ++t.written;
    ++t.outstanding;
  }
}

void smtp_client_session::on_txn_reply(const smtp_reply& r) {
  if (replies_.empty()) {
    return fail("unexpected reply: " + r.first_line());
  }
  // 421 ends the session whatever it answers (RFC 5321 3.8): the transaction did not
  // happen, and what was not sent yet may go over another connection.
  if (r.code == 421) return fail("the server is closing the connection: " + r.first_line());
  const pending_reply p = replies_.front();
  replies_.pop_front();
  if (p.kind == expect::rset) {
    pump();
    return;
  }
  txn* t = find(p.id);
  if (!t) return fail("reply for no transaction");
  --t->outstanding;
  auto refuse = [&](std::string why) {
    if (!t->failed) {
      t->failed = true;
      t->result.error = std::move(why) + ": " + r.first_line();
      t->result.reply = r;
    }
  };
  switch (p.kind) {
    case expect::mail:
      if (!r.positive()) refuse("MAIL FROM refused");
      break;
    case expect::rcpt: {
      const std::size_t index = t->accepted + t->result.refused.size();
      const std::string& who = t->msg.rcpt[std::min(index, t->msg.rcpt.size() - 1)];
      if (r.positive()) {
        ++t->accepted;
      } else {
        t->result.refused.push_back(who);
        if (t->msg.all_recipients) refuse("RCPT TO:<" + who + "> refused");
        if (t->result.reply.code == 0) t->result.reply = r;  // the first refusal
      }
      if (t->accepted + t->result.refused.size() == t->msg.rcpt.size() && t->accepted == 0 &&
          !t->failed) {
        const smtp_reply first = t->result.reply;
        refuse("no recipient accepted");
        t->result.reply = first;
        t->result.error = "no recipient accepted: " + first.first_line();
      }
      break;
    }
    case expect::data:
      if (r.code == 354) {
        if (t->failed || t->accepted == 0)
          return fail("the server took DATA for a refused transaction");
        append_stuffed(out_, *t->msg.data);
        replies_.push_back({expect::body, t->msg.id});
        ++t->outstanding;
        t->body_written = true;
        t->result.data_sent = true;
      } else if (t->accepted > 0 || !t->failed) {
        refuse("DATA refused");
      }
      break;
    case expect::body:
      if (r.positive()) {
        t->result.ok = !t->failed;
        t->result.reply = r;
      } else {
        refuse("message refused");
      }
      break;
    case expect::rset:
      break;
  }
  if (t->outstanding == 0 && (t->failed || t->result.ok)) {
    // A transaction that ended before its body leaves the server mid-transaction.
    if (t->failed && !t->body_written) {
      out_ += "RSET\r\n";
      replies_.push_back({expect::rset, 0});
    }
    finish(*t);
  }
  pump();
}

void smtp_client_session::finish(txn& t) {
  t.done = true;
  if (t.result.ok) t.result.error.clear();
  results_.push_back(std::move(t.result));
  while (!txns_.empty() && txns_.front().done) txns_.pop_front();
}

void smtp_client_session::fail(std::string why) {
  if (state_ == state::failed) return;
  state_ = state::failed;
  error_ = std::move(why);
  for (auto& t : txns_) {
    if (t.done) continue;
    t.result.ok = false;
    t.result.error = t.result.error.empty() ? error_ : t.result.error + " (" + error_ + ")";
    results_.push_back(std::move(t.result));
  }
  txns_.clear();
  replies_.clear();
}

void smtp_client_session::connection_lost(std::string why) {
  if (state_ == state::closed || state_ == state::failed) return;
  fail(std::move(why));
}

}  // namespace inlet::outbound
