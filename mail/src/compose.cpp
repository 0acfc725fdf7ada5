#include "inlet/mail/compose.hpp"

#include <algorithm>
#include <ctime>
#include <inlet/store/store.hpp>
#include <inlet/util/ascii.hpp>
#include <inlet/util/base64.hpp>
#include <random>

namespace inlet::mail {

namespace {

bool plain_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80 || c < 0x20) return false;
  return true;
}

bool has_line_break(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

std::string format_mailbox(const mailbox& m) {
  if (m.name.empty()) return "<" + m.email + ">";
  if (!plain_ascii(m.name)) return encode_header_text(m.name) + " <" + m.email + ">";
  std::string quoted = "\"";
  for (char c : m.name) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c);
  }
  return quoted + "\" <" + m.email + ">";
}

std::string rfc5322_date(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S +0000", &tm);
  return buf;
}

std::string boundary() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  static constexpr char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string b = "inlet-";
  for (int i = 0; i < 24; ++i) b.push_back(alphabet[gen() % 36]);
  return b;
}

std::string quote_param(std::string_view v) {
  if (plain_ascii(v)) {
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') q.push_back('\\');
      q.push_back(c);
    }
    return q + "\"";
  }
  return "\"" + encode_header_text(v) + "\"";
}

void append_attachment(std::string& out, const std::string& b, const attachment& a) {
  out += "--" + b + "\r\n";
  const std::string type = a.content_type.empty() ? guess_type(a.filename) : a.content_type;
  out += "Content-Type: " + type + "; name=" + quote_param(a.filename) + "\r\n";
  out += "Content-Transfer-Encoding: base64\r\n";
  if (!a.content_id.empty()) {
    out += "Content-ID: <" + a.content_id + ">\r\n";
    out += "Content-Disposition: inline; filename=" + quote_param(a.filename) + "\r\n\r\n";
  } else {
    out += "Content-Disposition: attachment; filename=" + quote_param(a.filename) + "\r\n\r\n";
  }
  out += util::base64_encode_lines(a.bytes);
}

void append_text(std::string& out, const std::string& b, std::string_view subtype,
                 std::string_view text) {
  out += "--" + b + "\r\n";
  out += "Content-Type: text/" + std::string(subtype) + "; charset=utf-8\r\n";
  out += "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
  out += encode_quoted_printable(text);
  out += "\r\n";
}

bool check_mailbox(const mailbox& m, std::string_view what, std::string& error) {
  if (!valid_email(m.email)) {
    error = std::string(what) + ": invalid email address \"" + m.email + "\"";
    return false;
  }
  if (has_line_break(m.name)) {
    error = std::string(what) + ": a name may not contain line breaks";
    return false;
  }
  return true;
}

}  // namespace

// An addr-spec we are willing to put in a header and an envelope: local@domain, no
// spaces, brackets, quotes or line breaks.
bool valid_email(std::string_view e) {
  auto at = e.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == e.size() || e.size() > 254) return false;
  for (unsigned char c : e)
    if (c <= 0x20 || c == '<' || c == '>' || c == '"' || c == ',' || c == ';' || c == '(' ||
        c == ')' || c == 0x7f)
      return false;
  return true;
}

// A Content-Type for a file name, when the request gives none.
std::string guess_type(std::string_view filename) {
  auto dot = filename.rfind('.');
  std::string ext;
  if (dot != std::string_view::npos)
    for (char c : filename.substr(dot + 1))
      ext.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  static constexpr std::pair<std::string_view, std::string_view> types[] = {
      {"png", "image/png"},       {"jpg", "image/jpeg"},        {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},       {"webp", "image/webp"},       {"svg", "image/svg+xml"},
      {"pdf", "application/pdf"}, {"txt", "text/plain"},        {"html", "text/html"},
      {"csv", "text/csv"},        {"json", "application/json"}, {"zip", "application/zip"},
      {"ics", "text/calendar"},   {"xml", "application/xml"},   {"doc", "application/msword"},
      {"eml", "message/rfc822"},
  };
  for (auto [e, t] : types)
    if (ext == e) return std::string(t);
  return "application/octet-stream";
}

bool validate(const draft& d, std::string& error) {
  if (!check_mailbox(d.from, "From", error)) return false;
  for (auto [list, what] : {std::pair{&d.to, "To"}, {&d.cc, "Cc"}, {&d.reply_to, "ReplyTo"}})
    for (const auto& m : *list)
      if (!check_mailbox(m, what, error)) return false;
  for (const auto& b : d.bcc)
    if (!valid_email(b)) {
      error = "Bcc: invalid email address";
      return false;
    }
  if (has_line_break(d.subject)) {
    error = "Subject may not contain line breaks";
    return false;
  }
  if (d.to.empty() && d.cc.empty() && d.bcc.empty()) {
    error = "at least one To, Cc or Bcc recipient is required";
    return false;
  }
  static constexpr std::string_view structural[] = {
      "content-type", "content-transfer-encoding", "mime-version", "from", "to", "cc", "bcc",
      "reply-to",     "subject"};
  for (const auto& [name, value] : d.headers) {
    bool ok_name = !name.empty();
    for (unsigned char c : name) ok_name = ok_name && c > 32 && c < 127 && c != ':';
    if (!ok_name || has_line_break(value)) {
      error = "Headers: \"" + name + "\" must be a header name with a one-line string";
      return false;
    }
    for (auto s : structural)
      if (util::iequals(name, s)) {
        error = "Headers: \"" + name + "\" is set from the message's fields";
        return false;
      }
  }
  for (const auto& a : d.attachments) {
    if (a.filename.empty() || has_line_break(a.filename) || has_line_break(a.content_type) ||
        has_line_break(a.content_id) || a.content_type.find(';') != std::string::npos) {
      error = "attachment \"" + a.filename + "\": invalid Filename, ContentType or ContentID";
      return false;
    }
  }
  return true;
}

std::string encode_quoted_printable(std::string_view text) {
  static constexpr char hexd[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  std::size_t col = 0;
  auto put = [&](std::string_view piece) {
    if (col + piece.size() > 75) {
      out += "=\r\n";
      col = 0;
    }
    out += piece;
    col += piece.size();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      // A space or tab before a line break must be encoded.
      if (!out.empty() && (out.back() == ' ' || out.back() == '\t')) {
        char last = out.back();
        out.pop_back();
        --col;
        char enc[4] = {'=', hexd[static_cast<unsigned char>(last) >> 4],
                       hexd[static_cast<unsigned char>(last) & 15], 0};
        put(enc);
      }
      out += "\r\n";
      col = 0;
      if (c == '\r') ++i;
      continue;
    }
    if ((c >= 33 && c <= 126 && c != '=') || c == ' ' || c == '\t') {
      char lit[2] = {static_cast<char>(c), 0};
      put(lit);
    } else {
      char enc[4] = {'=', hexd[c >> 4], hexd[c & 15], 0};
      put(enc);
    }
  }
  if (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out += "=\r\n";
  return out;
}

std::string encode_header_text(std::string_view text) {
  if (plain_ascii(text)) return std::string(text);
  // Encoded words of at most 45 input bytes (60 base64 characters), cut between UTF-8
  // characters, separated by folding whitespace.
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t n = std::min<std::size_t>(45, text.size() - i);
    while (n > 0 && i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80)
      --n;
    if (n == 0) n = std::min<std::size_t>(45, text.size() - i);
    if (!out.empty()) out += "\r\n ";
    out += "=?UTF-8?B?" + util::base64_encode(text.substr(i, n)) + "?=";
    i += n;
  }
  return out;
}

composed_message compose(const draft& d, std::chrono::system_clock::time_point now,
                         std::string_view id_domain) {
  std::vector<const attachment*> inline_parts, files;
  for (const auto& a : d.attachments) (a.content_id.empty() ? files : inline_parts).push_back(&a);
  composed_message out;
  out.tags = d.tags;
  out.mail_from = d.from.email;
  for (const auto* list : {&d.to, &d.cc})
    for (const auto& m : *list) out.rcpt_to.push_back(m.email);
  for (const auto& b : d.bcc) out.rcpt_to.push_back(b);

  std::string& r = out.raw;
  auto list_header = [&](std::string_view name, const std::vector<mailbox>& v) {
    if (v.empty()) return;
    r += std::string(name) + ": ";
    for (std::size_t i = 0; i < v.size(); ++i) r += (i ? ",\r\n " : "") + format_mailbox(v[i]);
    r += "\r\n";
  };
  r += "From: " + format_mailbox(d.from) + "\r\n";
  list_header("To", d.to);
  list_header("Cc", d.cc);
  list_header("Reply-To", d.reply_to);
  r += "Subject: " + encode_header_text(d.subject) + "\r\n";
  r += "Date: " + rfc5322_date(now) + "\r\n";
  bool has_id = false;
  for (const auto& [k, v] : d.headers) has_id = has_id || util::iequals(k, "message-id");
  if (!has_id)
    r += "Message-ID: <" + store::make_message_id().str() + "@" + std::string(id_domain) + ">\r\n";
  for (const auto& [k, v] : d.headers) r += k + ": " + encode_header_text(v) + "\r\n";
  r += "MIME-Version: 1.0\r\n";

  // multipart/mixed (files) > multipart/related (inline parts) > multipart/alternative
  // (text, html), each level only when needed.
  const bool alt = !d.text.empty() && !d.html.empty();
  const bool related = !inline_parts.empty();
  const bool mixed = !files.empty();
  std::string b_mixed = boundary(), b_related = boundary(), b_alt = boundary();
  auto body_alt = [&](std::string& s) {
    if (alt) {
      s += "Content-Type: multipart/alternative; boundary=\"" + b_alt + "\"\r\n\r\n";
      append_text(s, b_alt, "plain", d.text);
      append_text(s, b_alt, "html", d.html);
      s += "--" + b_alt + "--\r\n";
    } else {
      const bool is_html = !d.html.empty();
      s +=
          std::string("Content-Type: text/") + (is_html ? "html" : "plain") + "; charset=utf-8\r\n";
      s += "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
      s += encode_quoted_printable(is_html ? d.html : d.text);
      // The line break before a boundary belongs to the boundary; a single part ends
      // where its text ends.
      if (related || mixed) s += "\r\n";
    }
  };
  auto body_related = [&](std::string& s) {
    if (!related) return body_alt(s);
    s += "Content-Type: multipart/related; boundary=\"" + b_related + "\"\r\n\r\n";
    s += "--" + b_related + "\r\n";
    body_alt(s);
    for (const auto* a : inline_parts) append_attachment(s, b_related, *a);
    s += "--" + b_related + "--\r\n";
  };
  if (mixed) {
    r += "Content-Type: multipart/mixed; boundary=\"" + b_mixed + "\"\r\n\r\n";
    r += "--" + b_mixed + "\r\n";
    body_related(r);
    for (const auto* a : files) append_attachment(r, b_mixed, *a);
    r += "--" + b_mixed + "--\r\n";
  } else {
    body_related(r);
  }
  return out;
}

}  // namespace inlet::mail
