// Password files, as Mailpit reads them for the web UI and API (--ui-auth-file, HTTP basic
// authentication), SMTP AUTH (--smtp-auth-file) and POP3 (--pop3-auth-file):
// one `user:password` per line, the password in plain text or hashed as bcrypt
// ($2a$/$2b$/$2y$), SHA-256/SHA-512 crypt ($5$/$6$), MD5 crypt ($1$), Apache APR1
// ($apr1$), {SHA} or {SSHA}. Blank lines and lines starting with '#' are skipped.
//
// Thread-safety: immutable after load; check() may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inlet::auth {

class password_file {
 public:
  /// Reads `path`. On failure returns null and says why in `error`.
  static std::shared_ptr<const password_file> load(const std::string& path, std::string& error);
  /// From text (tests).
  static std::shared_ptr<const password_file> parse(std::string_view text, std::string& error);

  /// True when `user` is listed and `password` matches its entry.
  bool check(std::string_view user, std::string_view password) const;

  /// True when an `Authorization: Basic ...` header value names a listed user with the
  /// right password.
  bool check_basic(std::string_view authorization) const;

  std::size_t size() const noexcept { return users_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> users_;  // user, stored password
};

/// A password file (`file` set) or Mailpit's inline list (MP_UI_AUTH, MP_SMTP_AUTH,
/// MP_POP3_AUTH: "user:password user2:password2", space-separated). Null and why in
/// `error` on failure.
std::shared_ptr<const password_file> load_credentials(const std::string& file,
                                                      std::string_view inline_list,
                                                      std::string& error);

/// One password against one stored entry (plain or hashed, see above).
bool password_matches(std::string_view stored, std::string_view password);

/// Apache's APR1 MD5 crypt of `password` with `salt` (the part after "$apr1$", up to 8
/// characters): "$apr1$salt$hash". With magic "$1$" it is the classic MD5 crypt.
std::string md5_crypt(std::string_view password, std::string_view salt,
                      std::string_view magic = "$apr1$");

}  // namespace inlet::auth
