#include "send.hpp"

#include <boost/json.hpp>
#include <inlet/util/ascii.hpp>
#include <inlet/util/base64.hpp>

namespace inlet::http::detail {
namespace json = boost::json;

namespace {

// Members of an object matched case-insensitively (as Mailpit's JSON decoder does).
const json::value* member(const json::object& o, std::string_view key) {
  for (const auto& kv : o)
    if (util::iequals(kv.key(), key)) return &kv.value();
  return nullptr;
}

// {"Email": "...", "Name": "..."}.
bool read_mailbox(const json::value& v, mail::mailbox& out, std::string& error,
                  std::string_view what) {
  const auto* o = v.if_object();
  const json::value* e = o ? member(*o, "Email") : nullptr;
  if (!e || !e->is_string()) {
    error = std::string(what) + " needs an \"Email\"";
    return false;
  }
  out.email = std::string(e->get_string());
  if (const json::value* n = member(*o, "Name"); n && n->is_string())
    out.name = std::string(n->get_string());
  return true;
}

bool read_mailboxes(const json::value* v, std::vector<mail::mailbox>& out, std::string& error,
                    std::string_view what) {
  if (!v || v->is_null()) return true;
  if (!v->is_array()) {
    error = std::string(what) + " must be an array";
    return false;
  }
  for (const auto& e : v->get_array()) {
    mail::mailbox m;
    if (!read_mailbox(e, m, error, what)) return false;
    out.push_back(std::move(m));
  }
  return true;
}

bool read_strings(const json::value* v, std::vector<std::string>& out, std::string& error,
                  const char* message) {
  if (!v || v->is_null()) return true;
  if (!v->is_array()) {
    error = message;
    return false;
  }
  for (const auto& e : v->get_array()) {
    if (!e.is_string()) {
      error = message;
      return false;
    }
    out.emplace_back(e.get_string());
  }
  return true;
}

bool read_attachments(const json::value* v, std::vector<mail::attachment>& out,
                      std::string& error) {
  if (!v || v->is_null()) return true;
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
    mail::attachment a;
    a.filename = std::string(name->get_string());
    // Clients wrap long base64 into lines: whitespace anywhere is dropped.
    if (!util::base64_decode(content->get_string(), a.bytes, util::base64_whitespace::anywhere)) {
      error = "attachment \"" + a.filename + "\": Content is not base64";
      return false;
    }
    if (const json::value* t = member(*ao, "ContentType");
        t && t->is_string() && !t->get_string().empty())
      a.content_type = std::string(t->get_string());
    else
      a.content_type = mail::guess_type(a.filename);
    if (const json::value* c = member(*ao, "ContentID"); c && c->is_string())
      a.content_id = std::string(c->get_string());
    out.push_back(std::move(a));
  }
  return true;
}

}  // namespace

bool read_send_request(const json::value& body, mail::draft& d, std::string& error) {
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
    for (auto k : known) ok = ok || util::iequals(kv.key(), k);
    if (!ok) {
      error = "unknown field \"" + std::string(kv.key()) + "\"";
      return false;
    }
  }
  const json::value* from_v = member(*o, "From");
  if (!from_v) {
    error = "From is required";
    return false;
  }
  if (!read_mailbox(*from_v, d.from, error, "From") ||
      !read_mailboxes(member(*o, "To"), d.to, error, "To") ||
      !read_mailboxes(member(*o, "Cc"), d.cc, error, "Cc") ||
      !read_mailboxes(member(*o, "ReplyTo"), d.reply_to, error, "ReplyTo") ||
      !read_strings(member(*o, "Bcc"), d.bcc, error, "Bcc must be an array of addresses"))
    return false;
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
  if (!text_of("Subject", d.subject) || !text_of("Text", d.text) || !text_of("HTML", d.html) ||
      !read_strings(member(*o, "Tags"), d.tags, error, "Tags must be an array of strings"))
    return false;
  if (const json::value* v = member(*o, "Headers"); v && !v->is_null()) {
    if (!v->is_object()) {
      error = "Headers must be an object of strings";
      return false;
    }
    for (const auto& kv : v->get_object()) {
      if (!kv.value().is_string()) {
        error = "Headers: \"" + std::string(kv.key()) +
                "\" must be a header name with a one-line string";
        return false;
      }
      d.headers.emplace_back(std::string(kv.key()), std::string(kv.value().get_string()));
    }
  }
  return read_attachments(member(*o, "Attachments"), d.attachments, error);
}

bool compose_message(const json::value& body, std::chrono::system_clock::time_point now,
                     std::string_view id_domain, composed_message& out, std::string& error) {
  mail::draft d;
  if (!read_send_request(body, d, error) || !mail::validate(d, error)) return false;
  out = mail::compose(d, now, id_domain);
  return true;
}

}  // namespace inlet::http::detail
