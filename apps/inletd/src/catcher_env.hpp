// MailHog's and MailDev's own command lines and variables (MH_*, MAILDEV_*) read as
// inletd's flags, so their users' compose files start inletd unchanged. The translated
// flags come before the command line's own, so inletd's flags still win.
#pragma once

#include <string>
#include <vector>

namespace inletd {

/// argv with MailHog's and MailDev's flags rewritten and their variables added as
/// inletd flags. Owns the strings; argv() stays valid while this lives.
class catcher_args {
 public:
  catcher_args(int argc, char** argv);
  int argc() const noexcept { return static_cast<int>(ptrs_.size()) - 1; }
  char** argv() noexcept { return ptrs_.data(); }
  /// What was recognised: "mailhog", "maildev" or "" (neither).
  const std::string& flavour() const noexcept { return flavour_; }

 private:
  std::vector<std::string> args_;
  std::vector<char*> ptrs_;
  std::string flavour_;
};

/// The translation itself, for tests: `args` without argv[0], `env` a lookup.
std::vector<std::string> translate_catcher_args(const std::vector<std::string>& args,
                                                const char* (*env)(const char*),
                                                std::string& flavour);

}  // namespace inletd
