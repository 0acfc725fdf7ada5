#include "send.hpp"

#include <openssl/evp.h>

#include <boost/json.hpp>
#include <cctype>
#include <ctime>
#include <random>

#include "inlet/store/store.hpp"

namespace inlet::http::detail {
namespace json = boost::json;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// Members of an object matched case-insensitively (as Mailpit's JSON decoder does).
const json::value* member(const json::object& o, std::string_view key) {
  for (const auto& kv : o)
    if (iequals(kv.key(), key)) return &kv.value();
  return nullptr;
}

bool plain_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80 || c < 0x20) return false;
  return true;
}

bool has_line_break(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

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

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

bool base64_decode(std::string_view in, std::string& out) {
  std::string clean;
  clean.reserve(in.size());
  for (char c : in)
    if (!std::isspace(static_cast<unsigned char>(c))) clean.push_back(c);
  if (clean.size() % 4 != 0) return false;
  out.resize(clean.size() / 4 * 3);
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()),
                          static_cast<int>(clean.size()));
  if (n < 0) return false;
  std::size_t len = static_cast<std::size_t>(n);
  if (!clean.empty() && clean.back() == '=') --len;
  if (clean.size() >= 2 && clean[clean.size() - 2] == '=') --len;
  out.resize(len);
  return true;
}

struct mailbox {
  std::string name, email;
};

// {"Email": "...", "Name": "..."}.
bool read_mailbox(const json::value& v, mailbox& out, std::string& error, std::string_view what) {
  const auto* o = v.if_object();
  const json::value* e = o ? member(*o, "Email") : nullptr;
  if (!e || !e->is_string()) {
    error = std::string(what) + " needs an \"Email\"";
    return false;
  }
  out.email = std::string(e->get_string());
  if (const json::value* n = member(*o, "Name"); n && n->is_string())
    out.name = std::string(n->get_string());
  if (!valid_email(out.email)) {
    error = std::string(what) + ": invalid email address \"" + out.email + "\"";
    return false;
  }
  if (has_line_break(out.name)) {
    error = std::string(what) + ": a name may not contain line breaks";
    return false;
  }
  return true;
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

bool read_mailboxes(const json::value* v, std::vector<mailbox>& out, std::string& error,
                    std::string_view what) {
  if (!v || v->is_null()) return true;
  if (!v->is_array()) {
    error = std::string(what) + " must be an array";
    return false;
  }
  for (const auto& e : v->get_array()) {
    mailbox m;
    if (!read_mailbox(e, m, error, what)) return false;
    out.push_back(std::move(m));
  }
  return true;
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

struct attachment {
  std::string filename, content_type, content_id, bytes;
};

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
  out += "Content-Type: " + a.content_type + "; name=" + quote_param(a.filename) + "\r\n";
  out += "Content-Transfer-Encoding: base64\r\n";
  if (!a.content_id.empty()) {
    out += "Content-ID: <" + a.content_id + ">\r\n";
    out += "Content-Disposition: inline; filename=" + quote_param(a.filename) + "\r\n\r\n";
  } else {
    out += "Content-Disposition: attachment; filename=" + quote_param(a.filename) + "\r\n\r\n";
  }
  out += encode_base64_lines(a.bytes);
}

void append_text(std::string& out, const std::string& b, std::string_view subtype,
                 std::string_view text) {
  out += "--" + b + "\r\n";
  out += "Content-Type: text/" + std::string(subtype) + "; charset=utf-8\r\n";
  out += "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
  out += encode_quoted_printable(text);
  out += "\r\n";
}

}  // namespace

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

std::string encode_base64_lines(std::string_view bytes) {
  std::string b64 = base64(bytes);
  std::string out;
  out.reserve(b64.size() + b64.size() / 76 * 2 + 2);
  for (std::size_t i = 0; i < b64.size(); i += 76) {
    out.append(b64, i, 76);
    out += "\r\n";
  }
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
    out += "=?UTF-8?B?" + base64(text.substr(i, n)) + "?=";
    i += n;
  }
  return out;
}

bool compose_message(const json::value& body, std::chrono::system_clock::time_point now,
                     std::string_view id_domain, composed_message& out, std::string& error) {
  const auto* o = body.if_object();
  if (!o) {
    error = "the body must be a JSON object";
    return false;
  }
  static constexpr std::string_view known[] = {"From",    "To",          "Cc",     "Bcc",
                                               "ReplyTo", "Subject",     "Text",   "HTML",
                                               "Tags",    "Attachments", "Headers"};
  for (const auto& kv : *o) {
    bool ok = false;
    for (auto k : known) ok = ok || iequals(kv.key(), k);
    if (!ok) {
      error = "unknown field \"" + std::string(kv.key()) + "\"";
      return false;
    }
  }
  mailbox from;
  const json::value* from_v = member(*o, "From");
  if (!from_v) {
    error = "From is required";
    return false;
  }
  if (!read_mailbox(*from_v, from, error, "From")) return false;
  std::vector<mailbox> to, cc, reply_to;
  if (!read_mailboxes(member(*o, "To"), to, error, "To") ||
      !read_mailboxes(member(*o, "Cc"), cc, error, "Cc") ||
      !read_mailboxes(member(*o, "ReplyTo"), reply_to, error, "ReplyTo"))
    return false;
  std::vector<std::string> bcc;
  if (const json::value* v = member(*o, "Bcc"); v && !v->is_null()) {
    if (!v->is_array()) {
      error = "Bcc must be an array of addresses";
      return false;
    }
    for (const auto& e : v->get_array()) {
      if (!e.is_string() || !valid_email(e.get_string())) {
        error = "Bcc: invalid email address";
        return false;
      }
      bcc.emplace_back(e.get_string());
    }
  }
  auto text_of = [&](std::string_view key, std::string& dst) {
    const json::value* v = member(*o, key);
    if (!v || v->is_null()) return true;
    if (!v->is_string()) {
      error = std::string(key) + " must be a string";
      return false;
    }
    dst = std::string(v->get_string());
    return true;
  };
  std::string subject, text, html;
  if (!text_of("Subject", subject) || !text_of("Text", text) || !text_of("HTML", html))
    return false;
  if (has_line_break(subject)) {
    error = "Subject may not contain line breaks";
    return false;
  }
  if (to.empty() && cc.empty() && bcc.empty()) {
    error = "at least one To, Cc or Bcc recipient is required";
    return false;
  }
  if (const json::value* v = member(*o, "Tags"); v && !v->is_null()) {
    if (!v->is_array()) {
      error = "Tags must be an array of strings";
      return false;
    }
    for (const auto& t : v->get_array()) {
      if (!t.is_string()) {
        error = "Tags must be an array of strings";
        return false;
      }
      out.tags.emplace_back(t.get_string());
    }
  }
  std::vector<std::pair<std::string, std::string>> headers;
  if (const json::value* v = member(*o, "Headers"); v && !v->is_null()) {
    if (!v->is_object()) {
      error = "Headers must be an object of strings";
      return false;
    }
    for (const auto& kv : v->get_object()) {
      std::string_view name = kv.key();
      bool ok_name = !name.empty();
      for (unsigned char c : name) ok_name = ok_name && c > 32 && c < 127 && c != ':';
      if (!ok_name || !kv.value().is_string() || has_line_break(kv.value().get_string())) {
        error =
            "Headers: \"" + std::string(name) + "\" must be a header name with a one-line string";
        return false;
      }
      static constexpr std::string_view structural[] = {"content-type", "content-transfer-encoding",
                                                        "mime-version", "from",
                                                        "to",           "cc",
                                                        "bcc",          "reply-to",
                                                        "subject"};
      for (auto s : structural)
        if (iequals(name, s)) {
          error = "Headers: \"" + std::string(name) + "\" is set from the message's fields";
          return false;
        }
      headers.emplace_back(std::string(name), std::string(kv.value().get_string()));
    }
  }
  std::vector<attachment> inline_parts, files;
  if (const json::value* v = member(*o, "Attachments"); v && !v->is_null()) {
    if (!v->is_array()) {
      error = "Attachments must be an array";
      return false;
    }
    for (const auto& e : v->get_array()) {
      const auto* ao = e.if_object();
      const json::value* content = ao ? member(*ao, "Content") : nullptr;
      const json::value* name = ao ? member(*ao, "Filename") : nullptr;
      if (!content || !content->is_string() || !name || !name->is_string() ||
          name->get_string().empty()) {
        error = "each attachment needs Content (base64) and Filename";
        return false;
      }
      attachment a;
      a.filename = std::string(name->get_string());
      if (!base64_decode(content->get_string(), a.bytes)) {
        error = "attachment \"" + a.filename + "\": Content is not base64";
        return false;
      }
      if (const json::value* t = member(*ao, "ContentType");
          t && t->is_string() && !t->get_string().empty())
        a.content_type = std::string(t->get_string());
      else
        a.content_type = guess_type(a.filename);
      if (const json::value* c = member(*ao, "ContentID"); c && c->is_string())
        a.content_id = std::string(c->get_string());
      if (has_line_break(a.filename) || has_line_break(a.content_type) ||
          has_line_break(a.content_id) || a.content_type.find(';') != std::string::npos) {
        error = "attachment \"" + a.filename + "\": invalid Filename, ContentType or ContentID";
        return false;
      }
      (a.content_id.empty() ? files : inline_parts).push_back(std::move(a));
    }
  }

  out.mail_from = from.email;
  for (const auto* list : {&to, &cc})
    for (const auto& m : *list) out.rcpt_to.push_back(m.email);
  for (const auto& b : bcc) out.rcpt_to.push_back(b);

  std::string& r = out.raw;
  auto list_header = [&](std::string_view name, const std::vector<mailbox>& v) {
    if (v.empty()) return;
    r += std::string(name) + ": ";
    for (std::size_t i = 0; i < v.size(); ++i) r += (i ? ",\r\n " : "") + format_mailbox(v[i]);
    r += "\r\n";
  };
  r += "From: " + format_mailbox(from) + "\r\n";
  list_header("To", to);
  list_header("Cc", cc);
  list_header("Reply-To", reply_to);
  r += "Subject: " + encode_header_text(subject) + "\r\n";
  r += "Date: " + rfc5322_date(now) + "\r\n";
  bool has_id = false;
  for (const auto& [k, v] : headers) has_id = has_id || iequals(k, "message-id");
  if (!has_id)
    r += "Message-ID: <" + store::make_message_id().str() + "@" + std::string(id_domain) + ">\r\n";
  for (const auto& [k, v] : headers) r += k + ": " + encode_header_text(v) + "\r\n";
  r += "MIME-Version: 1.0\r\n";

  // multipart/mixed (files) > multipart/related (inline parts) > multipart/alternative
  // (text, html), each level only when needed.
  const bool alt = !text.empty() && !html.empty();
  const bool related = !inline_parts.empty();
  const bool mixed = !files.empty();
  std::string b_mixed = boundary(), b_related = boundary(), b_alt = boundary();
  auto body_alt = [&](std::string& s) {
    if (alt) {
      s += "Content-Type: multipart/alternative; boundary=\"" + b_alt + "\"\r\n\r\n";
      append_text(s, b_alt, "plain", text);
      append_text(s, b_alt, "html", html);
      s += "--" + b_alt + "--\r\n";
    } else {
      const bool is_html = !html.empty();
      s +=
          std::string("Content-Type: text/") + (is_html ? "html" : "plain") + "; charset=utf-8\r\n";
      s += "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
      s += encode_quoted_printable(is_html ? html : text);
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
    for (const auto& a : inline_parts) append_attachment(s, b_related, a);
    s += "--" + b_related + "--\r\n";
  };
  if (mixed) {
    r += "Content-Type: multipart/mixed; boundary=\"" + b_mixed + "\"\r\n\r\n";
    r += "--" + b_mixed + "\r\n";
    body_related(r);
    for (const auto& a : files) append_attachment(r, b_mixed, a);
    r += "--" + b_mixed + "--\r\n";
  } else {
    body_related(r);
  }
  return true;
}

}  // namespace inlet::http::detail
