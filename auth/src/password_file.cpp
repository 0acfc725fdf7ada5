#include "inlet/auth/password_file.hpp"

#include <inlet/util/base64.hpp>

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace inlet::auth {
namespace {

bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// An Authorization header or a stored hash may end in stray line breaks or spaces.
bool base64_decode(std::string_view in, std::string& out) {
  return util::base64_decode(in, out, util::base64_whitespace::trailing);
}

// One digest over several pieces (OpenSSL's EVP interface).
class hasher {
 public:
  explicit hasher(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(ctx_, md, nullptr);
  }
  ~hasher() { EVP_MD_CTX_free(ctx_); }
  hasher(const hasher&) = delete;
  hasher& operator=(const hasher&) = delete;
  hasher& update(std::string_view s) {
    EVP_DigestUpdate(ctx_, s.data(), s.size());
    return *this;
  }
  std::string final() {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx_, d, &n);
    return std::string(reinterpret_cast<char*>(d), n);
  }

 private:
  EVP_MD_CTX* ctx_;
};

constexpr std::size_t sha1_size = 20;

std::string sha1(std::string_view a, std::string_view b = {}) {
  return hasher(EVP_sha1()).update(a).update(b).final();
}

}  // namespace

std::string md5_crypt(std::string_view pw, std::string_view salt, std::string_view magic) {
  // The MD5-based crypt (Poul-Henning Kamp's algorithm; Apache's APR1 is the same with
  // the magic "$apr1$").
  if (salt.starts_with(magic)) salt.remove_prefix(magic.size());
  salt = salt.substr(0, std::min(salt.find('$'), std::size_t{8}));
  hasher ctx(EVP_md5());
  ctx.update(pw).update(magic).update(salt);
  const std::string alt = hasher(EVP_md5()).update(pw).update(salt).update(pw).final();
  for (std::size_t left = pw.size(); left > 0; left -= std::min<std::size_t>(left, 16))
    ctx.update(std::string_view(alt).substr(0, std::min<std::size_t>(left, 16)));
  for (std::size_t i = pw.size(); i; i >>= 1)
    ctx.update((i & 1) ? std::string_view("\0", 1) : pw.substr(0, 1));
  std::string f = ctx.final();
  for (int i = 0; i < 1000; ++i) {
    hasher c(EVP_md5());
    if (i & 1)
      c.update(pw);
    else
      c.update(f);
    if (i % 3) c.update(salt);
    if (i % 7) c.update(pw);
    if (i & 1)
      c.update(f);
    else
      c.update(pw);
    f = c.final();
  }
  const auto* fin = reinterpret_cast<const unsigned char*>(f.data());
  static constexpr char itoa64[] =
      "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string out(magic);
  out.append(salt).push_back('$');
  auto to64 = [&](unsigned long v, int n) {
    while (n-- > 0) {
      out.push_back(itoa64[v & 0x3f]);
      v >>= 6;
    }
  };
  to64((fin[0] << 16) | (fin[6] << 8) | fin[12], 4);
  to64((fin[1] << 16) | (fin[7] << 8) | fin[13], 4);
  to64((fin[2] << 16) | (fin[8] << 8) | fin[14], 4);
  to64((fin[3] << 16) | (fin[9] << 8) | fin[15], 4);
  to64((fin[4] << 16) | (fin[10] << 8) | fin[5], 4);
  to64(fin[11], 2);
  return out;
}

bool password_matches(std::string_view stored, std::string_view pw) {
  if (stored.starts_with("$apr1$"))
    return equal_constant_time(md5_crypt(pw, stored, "$apr1$"), stored);
  if (stored.starts_with("$1$") || stored.starts_with("$2a$") || stored.starts_with("$2b$") ||
      stored.starts_with("$2y$") || stored.starts_with("$5$") || stored.starts_with("$6$")) {
    crypt_data data;
    std::memset(&data, 0, sizeof data);
    const std::string key(pw), setting(stored);
    const char* h = crypt_r(key.c_str(), setting.c_str(), &data);
    return h && h[0] != '*' && equal_constant_time(h, stored);
  }
  if (stored.starts_with("{SHA}")) {
    std::string want;
    return base64_decode(stored.substr(5), want) && equal_constant_time(sha1(pw), want);
  }
  if (stored.starts_with("{SSHA}")) {
    std::string blob;
    if (!base64_decode(stored.substr(6), blob) || blob.size() <= sha1_size) return false;
    std::string_view digest(blob.data(), sha1_size),
        salt(blob.data() + sha1_size, blob.size() - sha1_size);
    return equal_constant_time(sha1(pw, salt), digest);
  }
  return equal_constant_time(stored, pw);  // plain text
}

std::shared_ptr<const password_file> password_file::parse(std::string_view text,
                                                          std::string& error) {
  auto f = std::make_shared<password_file>();
  std::size_t line_no = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      error = "line " + std::to_string(line_no) + " is not user:password";
      return nullptr;
    }
    f->users_.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
  }
  if (f->users_.empty()) {
    error = "no user:password line";
    return nullptr;
  }
  return f;
}

std::shared_ptr<const password_file> password_file::load(const std::string& path,
                                                         std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return nullptr;
  }
  std::ostringstream s;
  s << in.rdbuf();
  auto f = parse(s.str(), error);
  if (!f) error = path + ": " + error;
  return f;
}

bool password_file::check(std::string_view user, std::string_view password) const {
  bool ok = false;
  for (const auto& [u, stored] : users_)
    if (u == user) ok = password_matches(stored, password) || ok;
  return ok;
}

bool password_file::check_basic(std::string_view authorization) const {
  constexpr std::string_view scheme = "basic ";
  if (authorization.size() < scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if ((authorization[i] | 0x20) != scheme[i]) return false;
  authorization.remove_prefix(scheme.size());
  while (!authorization.empty() && authorization.front() == ' ') authorization.remove_prefix(1);
  std::string decoded;
  if (!base64_decode(authorization, decoded)) return false;
  auto colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  return check(std::string_view(decoded).substr(0, colon),
               std::string_view(decoded).substr(colon + 1));
}

std::shared_ptr<const password_file> load_credentials(const std::string& file,
                                                      std::string_view inline_list,
                                                      std::string& error) {
  if (!file.empty()) return password_file::load(file, error);
  std::string lines(inline_list);
  for (auto& c : lines)
    if (c == ' ') c = '\n';
  return password_file::parse(lines, error);
}

}  // namespace inlet::auth
