// inlet-parse [--json] FILE...   ('-' reads stdin)
// --with-text (an extension beyond the schema) adds each text/* leaf's decoded
// UTF-8 content as "text"; the differential test uses it.
// Parses each message with inlet::mime and prints its structure: with --json one JSON
// object per file (one per line when several files are given, each with a "file"
// field), otherwise a readable tree. Exit status: 0, or 1 if a file could not be read.
#include <inlet/mime/message.hpp>

#include <boost/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace json = boost::json;
namespace mime = inlet::mime;

namespace {

bool read_all(const std::string& path, std::string& out) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    out = ss.str();
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

json::value opt(const std::optional<std::string>& s) {
  return s ? json::value(*s) : json::value(nullptr);
}

json::array mailboxes(const std::vector<mime::mailbox>& v) {
  json::array a;
  for (const auto& m : v) a.push_back(json::object{{"name", m.name}, {"address", m.address}});
  return a;
}

bool with_text = false;  // --with-text: add the decoded UTF-8 "text" of text/* leaves

json::object part_json(const mime::parsed_message& m, std::uint32_t i, json::array& defects) {
  const mime::part& p = m.parts()[i];
  json::object o;
  o["content_type"] = std::string(p.content_type());
  o["charset"] = opt(mime::charset(m, i));
  o["disposition"] = opt(mime::disposition(m, i));
  o["filename"] = opt(mime::filename(m, i));
  std::size_t size = 0;
  if (p.kind == mime::part_kind::leaf) {
    mime::errc e = mime::decode_body(m, i, [&](std::string_view s) { size += s.size(); });
    if (e != mime::errc::ok) defects.push_back(json::string(mime::defect_name(e)));
  } else {
    size = p.body.size();
  }
  o["size"] = size;
  if (with_text && p.kind == mime::part_kind::leaf && p.main_type() == "text") {
    std::string text;
    mime::decode_text(m, i, [&](std::string_view t) { text.append(t); });
    o["text"] = text;
  }
  json::array children;
  for (std::uint32_t c = p.first_child; c != mime::no_index; c = m.parts()[c].next_sibling)
    children.push_back(part_json(m, c, defects));
  o["children"] = std::move(children);
  return o;
}

json::object message_json(const mime::parsed_message& m) {
  mime::summary s = mime::summarize(m);
  json::object o;
  json::array headers;
  const mime::part& root = m.root();
  for (std::uint32_t k = root.first_header; k < root.first_header + root.header_count; ++k) {
    const mime::header_field& h = m.headers()[k];
    headers.push_back(json::object{{"name", m.copy(h.name)}, {"value", mime::header_value(m, h)}});
  }
  o["headers"] = std::move(headers);
  o["subject"] = opt(s.subject);
  o["from"] = mailboxes(s.from);
  o["to"] = mailboxes(s.to);
  o["cc"] = mailboxes(s.cc);
  o["bcc"] = mailboxes(s.bcc);
  o["reply_to"] = mailboxes(s.reply_to);
  o["date"] = s.date ? json::value(mime::format_iso8601(*s.date)) : json::value(nullptr);
  o["message_id"] = opt(s.message_id);
  json::array defects;
  for (const mime::defect& d : m.defects()) defects.push_back(json::string(mime::defect_name(d.code)));
  o["body"] = part_json(m, 0, defects);
  o["defects"] = std::move(defects);
  return o;
}

void print_tree(const mime::parsed_message& m, std::uint32_t i, int indent) {
  const mime::part& p = m.parts()[i];
  std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  std::cout << pad << p.content_type();
  if (auto cs = mime::charset(m, i)) std::cout << "; charset=" << *cs;
  if (auto fn = mime::filename(m, i)) std::cout << "; filename=\"" << *fn << "\"";
  if (auto d = mime::disposition(m, i)) std::cout << " [" << *d << "]";
  std::cout << " (" << mime::decoded_size(m, i) << " bytes)\n";
  for (std::uint32_t c = p.first_child; c != mime::no_index; c = m.parts()[c].next_sibling)
    print_tree(m, c, indent + 1);
}

void print_text(const std::string& path, bool with_name, const mime::parsed_message& m) {
  mime::summary s = mime::summarize(m);
  auto list = [](const std::vector<mime::mailbox>& v) {
    std::string out;
    for (const auto& b : v) {
      if (!out.empty()) out += ", ";
      out += b.name.empty() ? "<" + b.address + ">" : b.name + " <" + b.address + ">";
    }
    return out;
  };
  if (with_name) std::cout << "== " << path << "\n";
  std::cout << "Subject:    " << s.subject.value_or("(none)") << "\n"
            << "From:       " << list(s.from) << "\n"
            << "To:         " << list(s.to) << "\n";
  if (!s.cc.empty()) std::cout << "Cc:         " << list(s.cc) << "\n";
  std::cout << "Date:       " << (s.date ? mime::format_iso8601(*s.date) : "(none)") << "\n"
            << "Message-ID: " << s.message_id.value_or("(none)") << "\n"
            << "Snippet:    " << s.snippet << "\n"
            << "Parts:\n";
  print_tree(m, 0, 1);
  for (const auto& d : m.defects()) std::cout << "Defect:     " << mime::defect_name(d.code) << " at byte " << d.offset << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  bool as_json = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") as_json = true;
    else if (a == "--with-text") with_text = true;
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: inlet-parse [--json] [--with-text] FILE...   ('-' reads stdin)\n";
      return 0;
    } else files.push_back(a);
  }
  if (files.empty()) {
    std::cerr << "usage: inlet-parse [--json] [--with-text] FILE...   ('-' reads stdin)\n";
    return 2;
  }
  int status = 0;
  std::string bytes;
  for (const std::string& f : files) {
    if (!read_all(f, bytes)) {
      std::cerr << "inlet-parse: cannot read " << f << "\n";
      status = 1;
      continue;
    }
    mime::parsed_message m = mime::parse(bytes);
    if (as_json) {
      json::object o = message_json(m);
      if (files.size() > 1) {
        json::object with_file;
        with_file["file"] = f;
        for (auto& kv : o) with_file[kv.key()] = std::move(kv.value());
        o = std::move(with_file);
      }
      std::cout << json::serialize(o) << "\n";
    } else {
      print_text(f, files.size() > 1, m);
    }
  }
  return status;
}
