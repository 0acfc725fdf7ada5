#include "catcher_env.hpp"

#include <cstdlib>
#include <string_view>
#include <utility>

namespace inletd {

namespace {

bool digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "::" and "0.0.0.0" as a HOST:PORT inletd reads ("[::]:1025").
std::string endpoint(std::string host, std::string_view port) {
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return host + ":" + std::string(port);
}

// Go's strconv.ParseBool, as MailHog reads MH_INVITE_JIM.
bool go_true(const char* v) {
  if (!v) return false;
  std::string_view s = v;
  return s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True";
}

}  // namespace

std::vector<std::string> translate_catcher_args(const std::vector<std::string>& args,
                                                const char* (*env)(const char*),
                                                std::string& flavour) {
  std::vector<std::string> out, rest;
  // MailHog: flag (single or double dash) -> variable; values collected by variable.
  static const std::pair<const char*, const char*> mailhog[] = {
      {"smtp-bind-addr", "MH_SMTP_BIND_ADDR"}, {"api-bind-addr", "MH_API_BIND_ADDR"},
      {"ui-bind-addr", "MH_UI_BIND_ADDR"},     {"hostname", "MH_HOSTNAME"},
      {"cors-origin", "MH_CORS_ORIGIN"},       {"auth-file", "MH_AUTH_FILE"},
      {"storage", "MH_STORAGE"},               {"maildir-path", "MH_MAILDIR_PATH"},
      {"mongo-uri", "MH_MONGO_URI"},           {"mongo-db", "MH_MONGO_DB"},
      {"mongo-coll", "MH_MONGO_COLLECTION"},   {"outgoing-smtp", "MH_OUTGOING_SMTP"},
      {"ui-web-path", "MH_UI_WEB_PATH"},       {"jim-disconnect", "JIM_DISCONNECT"},
      {"jim-accept", "JIM_ACCEPT"},            {"jim-linkspeed-affect", "JIM_LINKSPEED_AFFECT"},
      {"jim-linkspeed-min", "JIM_LINKSPEED_MIN"}, {"jim-linkspeed-max", "JIM_LINKSPEED_MAX"},
      {"jim-reject-sender", "JIM_REJECT_SENDER"}, {"jim-reject-recipient", "JIM_REJECT_RECIPIENT"},
      {"jim-reject-auth", "JIM_REJECT_AUTH"}};
  static const std::pair<const char*, const char*> maildev[] = {
      {"smtp", "MAILDEV_SMTP_PORT"},        {"web", "MAILDEV_WEB_PORT"},
      {"ip", "MAILDEV_IP"},                 {"web-ip", "MAILDEV_WEB_IP"},
      {"max-emails", "MAILDEV_MAX_EMAILS"}, {"incoming-user", "MAILDEV_INCOMING_USER"},
      {"incoming-pass", "MAILDEV_INCOMING_PASS"}, {"web-user", "MAILDEV_WEB_USER"},
      {"web-pass", "MAILDEV_WEB_PASS"},     {"base-pathname", "MAILDEV_BASE_PATHNAME"},
      {"mail-directory", "MAILDEV_MAIL_DIRECTORY"}};
  // MailDev's --max-message-size is inletd's own flag with the same meaning: left as is.
  std::vector<std::pair<std::string, std::string>> given;  // variable -> value
  bool invite_jim = false;
  auto lookup = [&](std::string_view var) -> const char* {
    for (auto it = given.rbegin(); it != given.rend(); ++it)
      if (it->first == var) return it->second.c_str();
    return env(std::string(var).c_str());
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string_view name = a;
    bool single = a.size() > 1 && a[0] == '-' && a[1] != '-';
    if (name.starts_with("--")) name.remove_prefix(2);
    else if (single) name.remove_prefix(1);
    else {
      rest.push_back(a);
      continue;
    }
    std::string value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
      has_value = true;
    }
    if (name == "invite-jim" && single) {
      invite_jim = true;
      continue;
    }
    const char* var = nullptr;
    // MailHog's flags are Go's, written with one dash.
    if (single)
      for (auto& [f, v] : mailhog)
        if (name == f) var = v;
    // MailDev's: -s/--smtp PORT and -w/--web PORT (a port, where inletd's -s takes
    // HOST:PORT), and its long flags.
    if (!var && (name == "s" || name == "smtp" || name == "w" || name == "web")) {
      std::string v = has_value ? value : (i + 1 < args.size() ? args[i + 1] : std::string{});
      if (digits(v)) {
        var = (name[0] == 's') ? "MAILDEV_SMTP_PORT" : "MAILDEV_WEB_PORT";
        if (!has_value) ++i;
        given.emplace_back(var, v);
        continue;
      }
    }
    if (!var && !single)
      for (auto& [f, v] : maildev)
        if (name == f && name != "smtp" && name != "web") var = v;
    if (!var) {
      rest.push_back(a);
      continue;
    }
    if (!has_value && i + 1 < args.size()) value = args[++i];
    given.emplace_back(var, value);
  }

  invite_jim = invite_jim || go_true(lookup("MH_INVITE_JIM"));
  const bool is_mailhog = invite_jim || lookup("MH_SMTP_BIND_ADDR") || lookup("MH_API_BIND_ADDR") ||
                          lookup("MH_UI_BIND_ADDR") || lookup("MH_HOSTNAME") ||
                          lookup("MH_STORAGE") || lookup("MH_CORS_ORIGIN") || lookup("MH_AUTH_FILE");
  bool is_maildev = lookup("MAILDEV_MAX_MESSAGE_SIZE") != nullptr;
  for (auto& [f, v] : maildev) is_maildev |= lookup(v) != nullptr;
  if (is_mailhog) {
    flavour = "mailhog";
    out.push_back("--mailhog-api");
    if (auto v = lookup("MH_SMTP_BIND_ADDR")) out.push_back(std::string("--smtp=") + v);
    // One HTTP listener: the API's address (MailHog shares it with the UI by default).
    if (auto v = lookup("MH_API_BIND_ADDR")) out.push_back(std::string("--listen=") + v);
    else if (auto u = lookup("MH_UI_BIND_ADDR")) out.push_back(std::string("--listen=") + u);
    if (auto v = lookup("MH_HOSTNAME")) out.push_back(std::string("--hostname=") + v);
    if (auto v = lookup("MH_CORS_ORIGIN")) out.push_back(std::string("--api-cors=") + v);
    if (auto v = lookup("MH_AUTH_FILE")) out.push_back(std::string("--ui-auth-file=") + v);
    if (auto v = lookup("MH_UI_WEB_PATH"); v && *v) out.push_back(std::string("--webroot=/") + v);
    if (invite_jim) {
      // Every Jim setting, by MailHog's JSON name, with MailHog's default when unset.
      static const char* const jim[][3] = {
          {"DisconnectChance", "JIM_DISCONNECT", "0.005"},
          {"AcceptChance", "JIM_ACCEPT", "0.99"},
          {"LinkSpeedAffect", "JIM_LINKSPEED_AFFECT", "0.1"},
          {"LinkSpeedMin", "JIM_LINKSPEED_MIN", "1024"},
          {"LinkSpeedMax", "JIM_LINKSPEED_MAX", "10240"},
          {"RejectSenderChance", "JIM_REJECT_SENDER", "0.05"},
          {"RejectRecipientChance", "JIM_REJECT_RECIPIENT", "0.05"},
          {"RejectAuthChance", "JIM_REJECT_AUTH", "0.05"}};
      std::string list;
      for (auto& [name, var, dflt] : jim) {
        auto v = lookup(var);
        list += (list.empty() ? "" : ",") + std::string(name) + ":" + (v ? v : dflt);
      }
      out.push_back("--mailhog-jim=" + list);
    }
  } else if (is_maildev) {
    flavour = "maildev";
    auto smtp_port = lookup("MAILDEV_SMTP_PORT");
    auto web_port = lookup("MAILDEV_WEB_PORT");
    auto ip = lookup("MAILDEV_IP");
    auto web_ip = lookup("MAILDEV_WEB_IP");
    if (smtp_port || ip)
      out.push_back("--smtp=" + endpoint(ip ? ip : "0.0.0.0", smtp_port ? smtp_port : "1025"));
    out.push_back("--listen=" + endpoint(web_ip ? web_ip : "0.0.0.0", web_port ? web_port : "1080"));
    if (auto v = lookup("MAILDEV_MAX_EMAILS"); v && digits(v) && std::string_view(v) != "0")
      out.push_back(std::string("--max-messages=") + v);
    if (auto v = lookup("MAILDEV_MAX_MESSAGE_SIZE"); v && digits(v) && std::string_view(v) != "0")
      out.push_back(std::string("--max-message-size=") + v);
    if (auto v = lookup("MAILDEV_BASE_PATHNAME"); v && *v) out.push_back(std::string("--webroot=") + v);
  }
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

catcher_args::catcher_args(int argc, char** argv) {
  std::vector<std::string> in(argv + (argc > 0 ? 1 : 0), argv + argc);
  args_.emplace_back(argc > 0 ? argv[0] : "inletd");
  auto t = translate_catcher_args(in, [](const char* n) -> const char* { return std::getenv(n); },
                                  flavour_);
  args_.insert(args_.end(), t.begin(), t.end());
  for (auto& a : args_) ptrs_.push_back(a.data());
  ptrs_.push_back(nullptr);
}

}  // namespace inletd
