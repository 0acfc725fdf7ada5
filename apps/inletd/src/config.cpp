// The parser, `--help` and the documentation tables, all made from the flag table; and
// `finish`, which resolves what depends on more than one flag.
#include "config.hpp"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "catcher_env.hpp"
#include "flag_table.hpp"
#include "self_signed.hpp"

namespace inletd {

config::config() {
  smtp.listen = {{"127.0.0.1", 1025, false}};
  smtp.session.max_message_size = 50u << 20;  // Mailpit's default, 50 MiB
  http.address = "127.0.0.1";
  http.port = 8025;
  pop3.server.address = "127.0.0.1";
  pop3.server.port = 1110;  // Mailpit's port (on loopback, as inletd's other listeners)
  http.threads = 0;  // one per core: a client fetching large messages holds up no one else
  // Mailpit's --allow-internal-http-requests covers the link and HTML checks, not the
  // webhook: its URL is the operator's own, often on the same host.
  webhook.allow_internal = true;
}

bool parse_host_port(const std::string& text, host_port& out) {
  std::string host;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return false;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty() && !text.empty() && text.front() == ':') host = "0.0.0.0";  // Mailpit's ":1025"
  if (host.empty() || port.empty()) return false;
  unsigned value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || p != port.data() + port.size() || value > 65535) return false;
  out.host = host;
  out.port = static_cast<std::uint16_t>(value);
  return true;
}

bool parse_duration(const std::string& text, std::uint64_t& seconds) {
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || p == text.data()) return false;
  std::string_view unit(p, static_cast<std::size_t>(text.data() + text.size() - p));
  std::uint64_t mul = 0;
  if (unit.empty() || unit == "s")
    mul = 1;
  else if (unit == "m")
    mul = 60;
  else if (unit == "h")
    mul = 3600;
  else if (unit == "d")
    mul = 86400;
  else
    return false;
  if (n > UINT64_MAX / mul) return false;
  seconds = n * mul;
  return true;
}

namespace {

bool truthy(std::string v) {
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

// One relay key, as Mailpit's YAML file and its MP_SMTP_RELAY_* variables name them.
bool set_relay_key(inlet::http::relay_config& r, const std::string& key, const std::string& value,
                   std::string& error) {
  if (key == "host") {
    r.host = value;
  } else if (key == "port") {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), p);
    if (ec != std::errc{} || end != value.data() + value.size() || p == 0 || p > 65535) {
      error = "relay port must be 1-65535, got '" + value + "'";
      return false;
    }
    r.port = static_cast<std::uint16_t>(p);
  } else if (key == "starttls") {
    r.starttls = truthy(value);
  } else if (key == "tls") {
    r.tls = truthy(value);
  } else if (key == "allow-insecure") {
    r.allow_insecure = truthy(value);
  } else if (key == "auth") {
    r.auth = value;
  } else if (key == "username") {
    r.username = value;
  } else if (key == "password" || key == "secret") {
    r.password = value;  // cram-md5's secret: libcurl takes it as the password
  } else if (key == "return-path") {
    r.return_path = value;
  } else if (key == "allowed-recipients") {
    r.allowed_recipients = value;
  } else if (key == "blocked-recipients") {
    r.blocked_recipients = value;
  } else if (key == "preserve-message-ids") {
    r.preserve_message_ids = truthy(value);
  } else if (key == "override-from") {
    r.override_from = value;
  } else if (key == "subject-prefix") {
    r.subject_prefix = value;
  } else if (key == "forward-smtp-errors") {
    r.forward_smtp_errors = truthy(value);
  } else {
    error = "unknown relay setting '" + key + "'";
    return false;
  }
  return true;
}

void relay_from_environment(inlet::http::relay_config& r) {
  const char* host = std::getenv("MP_SMTP_RELAY_HOST");
  if (!host || !*host) return;
  static constexpr std::pair<const char*, const char*> keys[] = {
      {"MP_SMTP_RELAY_HOST", "host"},
      {"MP_SMTP_RELAY_PORT", "port"},
      {"MP_SMTP_RELAY_STARTTLS", "starttls"},
      {"MP_SMTP_RELAY_TLS", "tls"},
      {"MP_SMTP_RELAY_ALLOW_INSECURE", "allow-insecure"},
      {"MP_SMTP_RELAY_AUTH", "auth"},
      {"MP_SMTP_RELAY_USERNAME", "username"},
      {"MP_SMTP_RELAY_PASSWORD", "password"},
      {"MP_SMTP_RELAY_SECRET", "secret"},
      {"MP_SMTP_RELAY_RETURN_PATH", "return-path"},
      {"MP_SMTP_RELAY_ALLOWED_RECIPIENTS", "allowed-recipients"},
      {"MP_SMTP_RELAY_BLOCKED_RECIPIENTS", "blocked-recipients"},
      {"MP_SMTP_RELAY_PRESERVE_MESSAGE_IDS", "preserve-message-ids"},
  };
  std::string ignored;
  for (auto [env, key] : keys)
    if (const char* v = std::getenv(env); v && *v) set_relay_key(r, key, v, ignored);
}

// Every long name of a flag ("--max-recipients", "--smtp-max-recipients").
std::vector<std::string> long_names(const flags::flag& f) {
  std::vector<std::string> out;
  std::string_view rest = f.names;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view n = rest.substr(0, comma);
    if (n.starts_with("--")) out.emplace_back(n);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::string inlet_variable(const std::string& long_flag) {
  std::string var = "INLET_" + long_flag.substr(2);
  for (auto& c : var)
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return var;
}

// The environment's INLET_<FLAG> variables as flags placed before the command line's own,
// for each flag the command line does not give: so flags win over the environment, which
// wins over the config file (CLI11 reads the file only for flags still unset). A flag's
// MP_* variable wins over its INLET_* one (CLI11 reads it after this). Returned in CLI11's
// reversed order.
std::vector<std::string> with_environment(int argc, char** argv) {
  std::vector<std::string> given(argv + (argc > 0 ? 1 : 0), argv + argc);
  std::vector<std::string> from_env;
  for (const auto& f : flags::table()) {
    const auto names = long_names(f);
    if (names.empty()) continue;
    bool on_command_line = false;
    for (const auto& a : given)
      for (const auto& flag : names)
        on_command_line |= a == flag || a.rfind(flag + "=", 0) == 0;
    if (on_command_line) continue;
    if (!f.env.empty() && std::getenv(f.env.c_str())) continue;
    const char* value = std::getenv(inlet_variable(names.front()).c_str());
    if (!value) continue;
    if (f.bind.is_switch) {  // INLET_QUIET=1 (or true/yes/on)
      if (truthy(value)) from_env.push_back(names.front());
      continue;
    }
    from_env.push_back(names.front() + "=" + value);
  }
  if (const char* file = std::getenv("INLET_CONFIG")) {
    bool given_file = false;
    for (const auto& a : given) given_file |= a == "--config" || a.rfind("--config=", 0) == 0;
    if (!given_file) from_env.push_back(std::string("--config=") + file);
  }
  from_env.insert(from_env.end(), given.begin(), given.end());
  std::reverse(from_env.begin(), from_env.end());  // CLI11's parse(vector) takes argv reversed
  return from_env;
}

// The setter of `f`, with a deprecated or unsupported flag's note, as CLI11 calls it.
void apply(const flags::flag& f, config& c, const std::string& value) {
  try {
    f.bind.set(c, value);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(flags::long_name(f), e.what());
  }
  if (f.from == flags::origin::deprecated && (!f.bind.is_switch || truthy(value)))
    c.deprecated.push_back(flags::long_name(f) +
                           (f.instead == "nothing" ? std::string(" (no longer used)")
                                                   : " (use " + f.instead + ")"));
}

void build_parser(CLI::App& app, config& c) {
  config defaults;
  for (const auto& f : flags::table()) {
    CLI::Option* opt = nullptr;
    if (f.bind.is_switch) {
      opt = app.add_flag_function(
          f.names, [&f, &c](std::int64_t n) { apply(f, c, n > 0 ? "true" : "false"); }, f.help);
    } else if (f.bind.repeatable) {
      opt = app.add_option_function<std::vector<std::string>>(
          f.names,
          [&f, &c](const std::vector<std::string>& values) {
            for (const auto& v : values) apply(f, c, v);
          },
          f.help);
      // Mailpit's flags without effect yet: each occurrence is one value, each named.
      if (f.from == flags::origin::unsupported)
        opt->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else {
      // Given twice, the last wins (as Go's flag package does for Mailpit).
      opt = app.add_option_function<std::string>(
                   f.names, [&f, &c](const std::string& v) { apply(f, c, v); }, f.help)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    if (!f.bind.unit.empty()) opt->type_name(f.bind.unit);
    std::string shown = f.default_text.empty() && f.bind.show ? f.bind.show(defaults) : "";
    if (!shown.empty() && shown != "off") opt->default_str(shown);
    if (f.bind.existing_file) opt->check(CLI::ExistingFile);
    if (!f.env.empty()) opt->envname(f.env);
    opt->group(f.group);
  }
}

// Markdown cell text: pipes escaped.
std::string cell(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

// Reads a YAML file; false with a message naming the file (and the line) when it cannot.
bool load_yaml(const std::string& path, std::string_view what, YAML::Node& root,
               std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read the " + std::string(what) + " configuration " + path;
    return false;
  }
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    error = path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg;
    return false;
  }
  return true;
}

}  // namespace

bool read_relay_config(const std::string& path, inlet::http::relay_config& r,
                       std::string& error) {
  YAML::Node root;
  if (!load_yaml(path, "relay", root, error)) return false;
  if (!root || root.IsNull()) return true;
  if (!root.IsMap()) {
    error = path + ": expected `key: value` lines";
    return false;
  }
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    for (auto& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!kv.second.IsScalar() && !kv.second.IsNull()) {
      error = path + ":" + std::to_string(kv.first.Mark().line + 1) + ": '" + key +
              "' takes a single value";
      return false;
    }
    std::string value = kv.second.IsNull() ? std::string() : kv.second.as<std::string>();
    if (!set_relay_key(r, key, value, error)) {
      error = path + ":" + std::to_string(kv.first.Mark().line + 1) + ": " + error;
      return false;
    }
  }
  return true;
}

namespace {

// Mailpit's forwarding `to`: addresses separated by commas.
bool read_forward_to(const std::string& value, std::vector<std::string>& out, std::string& error) {
  out.clear();
  std::size_t b = 0;
  while (b <= value.size()) {
    std::size_t e = value.find(',', b);
    if (e == std::string::npos) e = value.size();
    std::string a = value.substr(b, e - b);
    a.erase(0, a.find_first_not_of(" \t"));
    a.erase(a.find_last_not_of(" \t") + 1);
    if (!a.empty()) {
      if (a.find('@') == std::string::npos || a.find_first_of(" <>\r\n") != std::string::npos) {
        error = "not an address: '" + a + "'";
        return false;
      }
      out.push_back(a);
    }
    b = e + 1;
  }
  return true;
}

// Mailpit's forwarding file (YAML): the relay keys, and `to` (comma-separated).
bool read_forward_config(const std::string& path, inlet::http::relay_config& r,
                         std::vector<std::string>& to, std::string& error) {
  YAML::Node root;
  if (!load_yaml(path, "forwarding", root, error)) return false;
  if (!root || !root.IsMap()) {
    error = path + ": expected `key: value` lines";
    return false;
  }
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    for (auto& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string value = kv.second.IsScalar() ? kv.second.as<std::string>() : std::string();
    const std::string at = path + ":" + std::to_string(kv.first.Mark().line + 1) + ": ";
    if (key == "to") {
      if (!read_forward_to(value, to, error)) {
        error = at + error;
        return false;
      }
    } else if (!set_relay_key(r, key, value, error)) {
      error = at + error;
      return false;
    }
  }
  return true;
}

}  // namespace

std::string finish(config& c) {
  // Store: the shard list, and --max-age for every store.
  c.store.memory.max_age = c.store.max_age;
  if (!c.store.pg.retention && c.store.max_age.count() > 0) c.store.pg.retention = c.store.max_age;
  if (!c.store.file.path.empty()) {
    if (c.store.kind != store_kind::memory)
      return "--database keeps mail in a file: it does not go with --store " + c.store.name;
    c.store.kind = store_kind::file;
    c.store.name = c.store.file.path;  // /api/v1/info's Database, as Mailpit shows it
    const auto cap = c.store.memory.max_messages;
    c.store.file.max_messages = cap == std::numeric_limits<std::size_t>::max() ? 0 : cap;
    c.store.file.max_age = c.store.max_age;
  }
  if (c.store.kind == store_kind::postgresql) {
    c.store.pg.shards.clear();
    if (!c.store.first_shard.empty()) c.store.pg.shards.push_back(c.store.first_shard);
    c.store.pg.shards.insert(c.store.pg.shards.end(), c.store.shards.begin(),
                             c.store.shards.end());
    if (!c.store.shards_file.empty()) {
      std::ifstream in(c.store.shards_file);
      if (!in) return "cannot read --shards-file " + c.store.shards_file;
      for (std::string line; std::getline(in, line);) {
        auto b = line.find_first_not_of(" \t");
        if (b == std::string::npos || line[b] == '#') continue;
        auto e = line.find_last_not_of(" \t\r");
        c.store.pg.shards.push_back(line.substr(b, e - b + 1));
      }
    }
    if (c.store.pg.shards.empty())
      return "--store postgresql needs shards: --shard URI (repeat) or --shards-file FILE";
  }
  if (c.smtp.model == inlet::smtp::io_model::process) {
    // The deliver hook runs in the forked child: a message stored there would vanish with
    // the child. Only the sink (parse and discard) makes sense.
    if (c.store.kind != store_kind::sink)
      return "--io-model process needs --store sink: each connection runs in a forked child, "
             "which cannot add messages to the parent's --store " +
             c.store.name;
    // A connection's process holds up no other connection, and the worker pool's threads
    // do not survive the fork: heavy messages stay on its thread.
    c.ingest.heavy_bytes = 0;
  }

  // TLS and the SMTP rules that need it.
  if (c.smtp.tls_cert.empty() != c.smtp.tls_key.empty())
    return "--tls-cert and --tls-key go together";
  if (std::string e = resolve_sans(c.smtp.tls_cert, c.smtp.tls_key); !e.empty())
    return "--tls-cert: " + e;
  if (c.smtp.session.require_starttls && c.smtp.tls_cert.empty())
    return "--smtp-require-starttls needs --tls-cert and --tls-key";
  if (c.smtp.listen.front().implicit_tls) {
    if (c.smtp.tls_cert.empty()) return "--smtp-require-tls needs --tls-cert and --tls-key";
    if (c.smtp.session.require_starttls)
      return "--smtp-require-tls and --smtp-require-starttls cannot be used together";
    if (c.smtp.session.auth_allow_insecure)
      return "--smtp-require-tls cannot be used with --smtp-auth-allow-insecure";
  }

  // SMTP AUTH as Mailpit configures it: credentials make AUTH required; accept-any offers
  // it and takes any. Both need STARTTLS unless --smtp-auth-allow-insecure.
  if (const char* a = std::getenv("MP_SMTP_AUTH"); a && c.smtp_auth.users.empty())
    c.smtp_auth.users = a;
  const bool credentials = !c.smtp_auth.file.empty() || !c.smtp_auth.users.empty();
  if (credentials || c.smtp_auth.accept_any) {
    if (credentials && c.smtp_auth.accept_any)
      return "SMTP authentication cannot use both credentials and --smtp-auth-accept-any";
    if (c.smtp.tls_cert.empty() && !c.smtp.session.auth_allow_insecure)
      return "SMTP authentication requires TLS (--smtp-tls-cert/--tls-cert); run with "
             "--smtp-auth-allow-insecure to allow it without";
    if (c.smtp_auth.accept_any) {
      c.smtp.session.auth = [](std::string_view, std::string_view) { return true; };
    } else {
      std::string error;
      auto users = inlet::auth::load_credentials(c.smtp_auth.file, c.smtp_auth.users, error);
      if (!users) return "SMTP authentication: " + error;
      c.smtp.session.auth = [users](std::string_view user, std::string_view password) {
        return users->check(user, password);
      };
      c.smtp.session.auth_required = true;
    }
  }

  // POP3 as Mailpit runs it: on when credentials are given (a file or MP_POP3_AUTH), with
  // implicit TLS when a certificate is (inletd's --pop3-stls: STLS on clear text instead).
  if (const char* a = std::getenv("MP_POP3_AUTH"); a && c.pop3.users.empty()) c.pop3.users = a;
  if (c.pop3.server.tls_cert.empty() != c.pop3.server.tls_key.empty())
    return "--pop3-tls-cert and --pop3-tls-key go together";
  if (std::string e = resolve_sans(c.pop3.server.tls_cert, c.pop3.server.tls_key); !e.empty())
    return "--pop3-tls-cert: " + e;
  if (!c.pop3.auth_file.empty() || !c.pop3.users.empty()) {
    std::string error;
    auto users = inlet::auth::load_credentials(c.pop3.auth_file, c.pop3.users, error);
    if (!users) return "POP3 authentication: " + error;
    c.pop3.server.session.auth = [users](std::string_view user, std::string_view password) {
      return users->check(user, password);
    };
    c.pop3.enabled = true;
  }
  // POP3 runs on the SMTP server's I/O model; a forked child per connection could not
  // remove messages from the parent's store (and that model stores nothing anyway).
  c.pop3.server.model = c.smtp.model;
  if (c.pop3.enabled && c.smtp.model == inlet::smtp::io_model::process)
    return "--pop3 is not served under --io-model process (every other model runs it)";

  // HTTPS for the page and the API.
  if (c.http.tls_cert.empty() != c.http.tls_key.empty())
    return "--ui-tls-cert and --ui-tls-key go together";
  if (std::string e = resolve_sans(c.http.tls_cert, c.http.tls_key); !e.empty())
    return "--ui-tls-cert: " + e;

  // The page's and API's basic authentication.
  if (const char* a = std::getenv("MP_UI_AUTH"); a && c.ui_auth.users.empty())
    c.ui_auth.users = a;
  if (!c.ui_auth.file.empty() || !c.ui_auth.users.empty()) {
    std::string error;
    c.http.api.ui_auth = inlet::auth::load_credentials(c.ui_auth.file, c.ui_auth.users, error);
    if (!c.http.api.ui_auth) return "web UI authentication: " + error;
  }

  // The send API's own credentials, or none at all (Mailpit's send-api-auth flags).
  if (const char* a = std::getenv("MP_SEND_API_AUTH"); a && c.send_auth.users.empty())
    c.send_auth.users = a;
  if (!c.send_auth.file.empty() || !c.send_auth.users.empty()) {
    if (c.http.api.send_auth_accept_any)
      return "send API authentication cannot use both credentials and "
             "--send-api-auth-accept-any";
    std::string error;
    c.http.api.send_auth =
        inlet::auth::load_credentials(c.send_auth.file, c.send_auth.users, error);
    if (!c.http.api.send_auth) return "send API authentication: " + error;
  }

  // Message release: the file, else the flags, else MP_SMTP_RELAY_*.
  if (!c.relay_file.empty()) {
    std::string error;
    if (!read_relay_config(c.relay_file, c.relay, error)) return error;
  } else if (c.relay.host.empty()) {
    relay_from_environment(c.relay);
  }
  if (c.relay.password.empty())
    if (const char* p = std::getenv("MP_SMTP_RELAY_PASSWORD")) c.relay.password = p;
  if (!c.relay.host.empty()) c.http.api.relay = c.relay;

  // Auto-relay (Mailpit's --smtp-relay-all / --smtp-relay-matching) needs that relay.
  if (c.auto_relay.all || !c.auto_relay.matching.empty()) {
    if (c.relay.host.empty())
      return "a relay configuration must be set to auto-relay any messages "
             "(--smtp-relay-config, MP_SMTP_RELAY_*, or --relay)";
    try {
      if (!c.auto_relay.all && !c.auto_relay.matching.empty())
        c.auto_relay.matching_re = std::make_shared<const std::regex>(c.auto_relay.matching);
      if (!c.relay.blocked_recipients.empty())
        c.auto_relay.blocked_re = std::make_shared<const std::regex>(c.relay.blocked_recipients);
    } catch (const std::regex_error& e) {
      return std::string("auto-relay: bad regular expression: ") + e.what();
    }
  }

  // Forwarding: Mailpit's file, else its MP_SMTP_FORWARD_* variables.
  if (!c.forward_file.empty()) {
    std::string error;
    if (!read_forward_config(c.forward_file, c.forward, c.forward_to, error)) return error;
  } else if (const char* host = std::getenv("MP_SMTP_FORWARD_HOST"); host && *host) {
    static constexpr std::pair<const char*, const char*> keys[] = {
        {"MP_SMTP_FORWARD_HOST", "host"},
        {"MP_SMTP_FORWARD_PORT", "port"},
        {"MP_SMTP_FORWARD_STARTTLS", "starttls"},
        {"MP_SMTP_FORWARD_TLS", "tls"},
        {"MP_SMTP_FORWARD_ALLOW_INSECURE", "allow-insecure"},
        {"MP_SMTP_FORWARD_AUTH", "auth"},
        {"MP_SMTP_FORWARD_USERNAME", "username"},
        {"MP_SMTP_FORWARD_PASSWORD", "password"},
        {"MP_SMTP_FORWARD_SECRET", "secret"},
        {"MP_SMTP_FORWARD_RETURN_PATH", "return-path"},
        {"MP_SMTP_FORWARD_OVERRIDE_FROM", "override-from"},
        {"MP_SMTP_FORWARD_SUBJECT_PREFIX", "subject-prefix"},
    };
    for (auto [env, key] : keys)
      if (const char* v = std::getenv(env); v && *v) {
        std::string error;
        if (!set_relay_key(c.forward, key, v, error)) return std::string(env) + ": " + error;
      }
    if (const char* to = std::getenv("MP_SMTP_FORWARD_TO")) {
      std::string error;
      if (!read_forward_to(to, c.forward_to, error)) return "MP_SMTP_FORWARD_TO: " + error;
    }
  }
  if (!c.forward.host.empty() && c.forward_to.empty())
    return "forwarding needs its recipients (`to` in --smtp-forward-config, or "
           "MP_SMTP_FORWARD_TO)";

  // Tag rules, and the per-message log line.
  {
    std::string error;
    if (!inlet::mail::tag_rules::parse(c.tag_rules, c.tag_rules_file, c.ingest.rules, error))
      return error;
  }
  c.ingest.log_stored = c.log.verbose && !c.log.quiet;
  c.http.api.duplicates_ignored = c.ingest.ignore_duplicate_ids;

  // Chaos: triggers alone enable it, as in Mailpit; MailHog's flavour has it too, for
  // Jim (/api/v2/jim), whose triggers stay off until Jim is invited.
  if (c.chaos.enabled || !c.chaos.triggers.empty() || c.http.api.mailhog_v1 ||
      !c.mailhog_jim.empty()) {
    inlet::smtp::chaos_triggers triggers;
    std::string error;
    if (!c.chaos.triggers.empty() &&
        !inlet::smtp::chaos_state::parse(c.chaos.triggers, triggers, error))
      return "--chaos-triggers: " + error;
    c.http.api.chaos = std::make_shared<inlet::smtp::chaos_state>(triggers);
    c.smtp.session.policy = inlet::smtp::chaos_policy(c.http.api.chaos);
    c.http.api.jim = std::make_shared<inlet::http::jim_state>(c.http.api.chaos);
    if (!c.mailhog_jim.empty()) {
      inlet::http::jim_settings jim;
      if (!inlet::http::jim_state::parse(c.mailhog_jim, jim, error))
        return "--mailhog-jim: " + error;
      c.http.api.jim->set(jim);  // Jim's rejections replace the triggers above
    }
  }

  // The send API takes messages up to the SMTP size limit (its JSON carries attachments as
  // base64: a third more), at least the 1 MiB every other request may use.
  {
    constexpr std::uint64_t floor = 1u << 20, unlimited_cap = std::uint64_t{1} << 30;
    const std::uint64_t m =
        c.smtp.session.max_message_size == 0 ? unlimited_cap : c.smtp.session.max_message_size;
    c.http.body_limit = static_cast<std::size_t>(std::max(floor, m / 3 * 4 + (64u << 10)));
  }
  c.http.api.rate_limit =
      c.api_rate_limit >= 0 ? c.api_rate_limit : c.http.api.public_mode ? 10.0 : 0.0;
  return {};
}

std::optional<int> parse_config(int argc, char** argv, config& c) {
  catcher_args catchers(argc, argv);  // MailHog's and MailDev's flags and variables
  argc = catchers.argc(), argv = catchers.argv();
  CLI::App app{"inletd: takes mail for any address over SMTP, keeps it, serves it over HTTP"};
  app.set_version_flag("--version", "inletd 0.1.0");
  build_parser(app, c);
  bool markdown = false;
  app.add_flag("--flags-markdown", markdown, "")->group("");  // docs/configuration.md's tables
  app.set_config("--config", "",
                 "read flags from this file: one `name = value` per line, names as the long "
                 "flags without dashes (docs/configuration.md); flags given here win");
  try {
    app.parse(with_environment(argc, argv));
  } catch (const CLI::ParseError& e) {
    if (dynamic_cast<const CLI::ExtrasError*>(&e))
      std::fprintf(stderr, "inletd: not an inletd or Mailpit option (see --help): ");
    return app.exit(e);
  }
  if (markdown) {
    std::fputs(flags_markdown().c_str(), stdout);
    return 0;
  }
  if (std::string error = finish(c); !error.empty()) {
    std::fprintf(stderr, "inletd: %s\n", error.c_str());
    return 2;
  }
  return std::nullopt;
}

std::string flags_markdown() {
  config defaults;
  std::vector<std::string> groups;
  for (const auto& f : flags::table())
    if (std::find(groups.begin(), groups.end(), f.group) == groups.end())
      groups.push_back(f.group);
  std::string out;
  for (const auto& g : groups) {
    out += "<!-- flags: " + g + " -->\n";
    out += "| flag | environment | default | meaning |\n|---|---|---|---|\n";
    for (const auto& f : flags::table()) {
      if (f.group != g) continue;
      // "`--smtp HOST:PORT`, `-s`": the long names with the unit, then short ones.
      std::string names;
      std::string_view rest = f.names;
      std::vector<std::string> shorts;
      while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string n(rest.substr(0, comma));
        if (n.starts_with("--"))
          names += (names.empty() ? "" : ", ") + ("`" + n) +
                   (f.bind.unit.empty() ? "" : " " + f.bind.unit) + "`";
        else
          shorts.push_back(n);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
      for (const auto& s : shorts) names += ", `" + s + "`";
      std::string env = f.env.empty() ? std::string() : "`" + f.env + "`";
      std::string def = f.default_text;
      if (def.empty() && f.bind.show) {
        def = f.bind.show(defaults);
        if (!def.empty() && def != "off") def = "`" + def + "`";
      }
      std::string meaning = f.doc.empty() ? f.help : f.doc;
      if (!meaning.empty())
        meaning[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(meaning[0])));
      out += "| " + cell(names) + " | " + env + " | " + cell(def) + " | " + cell(meaning) + " |\n";
    }
    out += "<!-- /flags -->\n";
  }
  return out;
}

}  // namespace inletd
