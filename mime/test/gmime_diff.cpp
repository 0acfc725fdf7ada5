// Differential run of inlet::mime's field parsers against GMime 3 (an independent C
// implementation): dates, address lists, Content-Type and Content-Disposition. Both get
// the same raw field value; the results are compared in one normal form and agreement is
// counted per class.
//
//   mime_gmime_diff [--cases FILE]... [--show N] [MESSAGE-FILE-OR-DIR]...
//
// A cases file holds one case a line, "class<TAB>raw value" (class: date, address,
// content-type, disposition; escapes \r \n \t \\ \xHH; '#' starts a comment line). From
// messages, the raw values of Date, From, To, Cc, Reply-To and of every part's
// Content-Type and Content-Disposition are taken.
#include <inlet/mime/fields.hpp>
#include <inlet/mime/message.hpp>
#include <inlet/mime/parser.hpp>

#include <gmime/gmime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace m = inlet::mime;

namespace {

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c + 32);
  return s;
}

std::string inlet_date(const std::string& v) {
  auto d = m::parse_date(v);
  return d ? std::to_string(d->time_since_epoch().count()) : "error";
}

std::string gmime_date(const std::string& v) {
  GDateTime* d = g_mime_utils_header_decode_date(v.c_str());
  if (!d) return "error";
  std::string s = std::to_string(g_date_time_to_unix(d));
  g_date_time_unref(d);
  return s;
}

std::string inlet_addresses(const std::string& v) {
  std::string o;
  for (const auto& a : m::parse_address_list(v)) o += "{" + a.name + "|" + lower(a.address) + "}";
  return o;
}

void flatten(InternetAddressList* list, std::string& o) {
  if (!list) return;
  for (int i = 0; i < internet_address_list_length(list); ++i) {
    InternetAddress* a = internet_address_list_get_address(list, i);
    if (INTERNET_ADDRESS_IS_GROUP(a)) {
      flatten(internet_address_group_get_members(INTERNET_ADDRESS_GROUP(a)), o);
      continue;
    }
    const char* name = internet_address_get_name(a);
    const char* addr = internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(a));
    o += "{" + std::string(name ? name : "") + "|" + lower(addr ? addr : "") + "}";
  }
}

std::string gmime_addresses(const std::string& v) {
  InternetAddressList* list = internet_address_list_parse(nullptr, v.c_str());
  std::string o;
  flatten(list, o);
  if (list) g_object_unref(list);
  return o;
}

std::string show_params(const std::string& value, const std::vector<std::pair<std::string, std::string>>& ps) {
  std::string o = value;
  for (const auto& [n, v] : ps) o += "; " + n + "=[" + v + "]";
  return o;
}

std::string inlet_field(const std::string& v, bool disposition) {
  m::mime_field f = disposition ? m::parse_content_disposition(v) : m::parse_content_type(v);
  std::vector<std::pair<std::string, std::string>> ps;
  for (const auto& p : f.params) ps.emplace_back(p.name, p.value);
  return show_params(f.value, ps);
}

std::vector<std::pair<std::string, std::string>> gmime_params(GMimeParamList* list) {
  std::vector<std::pair<std::string, std::string>> ps;
  for (int i = 0; list && i < g_mime_param_list_length(list); ++i) {
    GMimeParam* p = g_mime_param_list_get_parameter_at(list, i);
    const char* n = g_mime_param_get_name(p);
    const char* v = g_mime_param_get_value(p);
    ps.emplace_back(lower(n ? n : ""), v ? v : "");
  }
  return ps;
}

std::string gmime_field(const std::string& v, bool disposition) {
  if (disposition) {
    GMimeContentDisposition* d = g_mime_content_disposition_parse(nullptr, v.c_str());
    if (!d) return "";
    const char* dv = g_mime_content_disposition_get_disposition(d);
    std::string o = show_params(lower(dv ? dv : ""), gmime_params(g_mime_content_disposition_get_parameters(d)));
    g_object_unref(d);
    return o;
  }
  GMimeContentType* t = g_mime_content_type_parse(nullptr, v.c_str());
  if (!t) return "";
  char* mt = g_mime_content_type_get_mime_type(t);
  std::string o = show_params(lower(mt ? mt : ""), gmime_params(g_mime_content_type_get_parameters(t)));
  g_free(mt);
  g_object_unref(t);
  return o;
}

struct tally {
  std::size_t same = 0, differ = 0;
  std::vector<std::string> misses;
};

std::map<std::string, tally> tallies;
std::size_t show = 20;

void compare(const std::string& cls, const std::string& v) {
  std::string a, b;
  if (cls == "date") {
    a = inlet_date(v), b = gmime_date(v);
  } else if (cls == "address") {
    a = inlet_addresses(v), b = gmime_addresses(v);
  } else if (cls == "content-type" || cls == "disposition") {
    a = inlet_field(v, cls == "disposition"), b = gmime_field(v, cls == "disposition");
  } else {
    std::cerr << "unknown class " << cls << "\n";
    return;
  }
  tally& t = tallies[cls];
  if (a == b) {
    ++t.same;
  } else {
    ++t.differ;
    if (t.misses.size() < show) t.misses.push_back("[" + v + "]\n    inlet: " + a + "\n    gmime: " + b);
  }
}

std::string unescape(const std::string& s) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      o += s[i];
      continue;
    }
    char c = s[++i];
    if (c == 'r') o += '\r';
    else if (c == 'n') o += '\n';
    else if (c == 't') o += '\t';
    else if (c == 'x' && i + 2 < s.size()) {
      o += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else o += c;
  }
  return o;
}

void run_cases(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    compare(line.substr(0, tab), unescape(line.substr(tab + 1)));
  }
}

void run_message(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  m::parser p;
  p.feed(raw);
  p.finish();
  m::parsed_message msg = p.release();
  for (const char* h : {"Date", "From", "To", "Cc", "Reply-To"})
    if (const m::header_field* f = msg.find(h))
      compare(std::strcmp(h, "Date") == 0 ? "date" : "address", msg.copy(f->value));
  for (std::uint32_t i = 0; i < msg.parts().size(); ++i) {
    if (const m::header_field* f = msg.find(i, "Content-Type")) compare("content-type", msg.copy(f->value));
    if (const m::header_field* f = msg.find(i, "Content-Disposition")) compare("disposition", msg.copy(f->value));
  }
}

}  // namespace

int main(int argc, char** argv) {
  g_mime_init();
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cases" && i + 1 < argc) {
      run_cases(argv[++i]);
    } else if (a == "--show" && i + 1 < argc) {
      show = std::stoul(argv[++i]);
    } else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path().string());
    } else {
      files.push_back(a);
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) run_message(f);
  for (const auto& [cls, t] : tallies) {
    const double pct = 100.0 * double(t.same) / double(std::max<std::size_t>(1, t.same + t.differ));
    std::printf("%-13s same %6zu  differ %5zu  agree %6.2f %%\n", cls.c_str(), t.same, t.differ, pct);
  }
  for (const auto& [cls, t] : tallies)
    for (const auto& s : t.misses) std::cout << cls << " " << s << "\n";
  g_mime_shutdown();
  return 0;
}
