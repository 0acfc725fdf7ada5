#include "self_signed.hpp"

#include <inlet/tls/self_signed.hpp>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace inletd {

namespace {

struct pair_paths {
  std::string cert, key;
};

// The pairs made so far, by their name list; their directory goes at exit.
struct registry {
  std::mutex mu;
  std::map<std::string, pair_paths> pairs;
  std::string dir;
  ~registry() {
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};
registry& reg() {
  static registry r;
  return r;
}

std::vector<std::string> names_of(const std::string& value) {
  std::vector<std::string> out;
  std::string rest = value.substr(5);
  std::size_t b = 0;
  while (b <= rest.size()) {
    std::size_t e = rest.find(',', b);
    if (e == std::string::npos) e = rest.size();
    std::string n = rest.substr(b, e - b);
    n.erase(0, n.find_first_not_of(" \t"));
    n.erase(n.find_last_not_of(" \t") + 1);
    for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!n.empty() && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    b = e + 1;
  }
  return out;
}

std::string generate(const std::vector<std::string>& names, pair_paths& out) {
  registry& r = reg();
  if (r.dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "inletd-tls-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return "cannot make a directory for sans: certificates";
    r.dir = tmpl;
  }
  std::string error;
  auto pem = inlet::tls::make_self_signed(names, 365, error);
  if (!pem) return error;
  const std::string stem = r.dir + "/" + std::to_string(r.pairs.size());
  out.cert = stem + "-cert.pem";
  out.key = stem + "-key.pem";
  if (!inlet::tls::write_pem_files(*pem, out.cert, out.key, error)) return error;
  return {};
}

std::string resolve_one(std::string& value, bool want_cert) {
  if (!is_sans(value)) return {};
  auto names = names_of(value);
  if (names.empty()) return "'" + value + "': no names after sans:";
  std::vector<std::string> sorted = names;  // the same names in any order: the same pair
  std::sort(sorted.begin(), sorted.end());
  std::string id;
  for (const auto& n : sorted) id += n + ",";
  registry& r = reg();
  std::lock_guard lk(r.mu);
  auto it = r.pairs.find(id);
  if (it == r.pairs.end()) {
    pair_paths p;
    if (auto e = generate(names, p); !e.empty()) return e;
    it = r.pairs.emplace(id, p).first;
  }
  value = want_cert ? it->second.cert : it->second.key;
  return {};
}

}  // namespace

bool is_sans(const std::string& value) { return value.rfind("sans:", 0) == 0; }

std::string resolve_sans(std::string& cert, std::string& key) {
  if (auto e = resolve_one(cert, true); !e.empty()) return e;
  return resolve_one(key, false);
}

}  // namespace inletd
