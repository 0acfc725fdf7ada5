#include "self_signed.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <functional>
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

bool is_ip(const std::string& n) {
  ASN1_OCTET_STRING* ip = a2i_IPADDRESS(n.c_str());
  if (!ip) return false;
  ASN1_OCTET_STRING_free(ip);
  return true;
}

using pkey_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using x509_ptr = std::unique_ptr<X509, decltype(&X509_free)>;

std::string write_pem(const std::string& path, const std::function<bool(FILE*)>& put) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return "cannot write " + path;
  ::fchmod(::fileno(f), 0600);
  bool ok = put(f);
  ok = std::fclose(f) == 0 && ok;
  return ok ? std::string() : "cannot write " + path;
}

std::string generate(const std::vector<std::string>& names, pair_paths& out) {
  registry& r = reg();
  if (r.dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "inletd-tls-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return "cannot make a directory for sans: certificates";
    r.dir = tmpl;
  }
  pkey_ptr key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  x509_ptr x(X509_new(), X509_free);
  if (!key || !x) return "cannot generate a key";
  X509_set_version(x.get(), 2);
  unsigned char serial[16];
  FILE* rnd = std::fopen("/dev/urandom", "rb");
  if (!rnd || std::fread(serial, 1, sizeof serial, rnd) != sizeof serial) {
    if (rnd) std::fclose(rnd);
    return "cannot read random bytes";
  }
  std::fclose(rnd);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 365L * 86400);
  X509_set_pubkey(x.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("inlet (self-signed)"), -1,
                             -1, 0);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(names.front().c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(x.get(), subject);
  std::string sans;
  for (const auto& n : names) {
    if (!sans.empty()) sans += ',';
    sans += (is_ip(n) ? "IP:" : "DNS:") + n;
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x.get(), x.get(), nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair<int, std::string>{NID_subject_alt_name, sans},
                            {NID_basic_constraints, "critical,CA:FALSE"},
                            {NID_ext_key_usage, "serverAuth"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (!ext) return "cannot make the certificate for " + sans;
    X509_add_ext(x.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(x.get(), key.get(), EVP_sha256()) <= 0) return "cannot sign the certificate";
  const std::string stem = r.dir + "/" + std::to_string(r.pairs.size());
  out.cert = stem + "-cert.pem";
  out.key = stem + "-key.pem";
  if (auto e = write_pem(out.cert, [&](FILE* f) { return PEM_write_X509(f, x.get()) == 1; });
      !e.empty())
    return e;
  return write_pem(out.key, [&](FILE* f) {
    return PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1;
  });
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
