// inletd's typed configuration: endpoints, defaults, validation, the environment, the
// config file, and the flag table's own rules.
#include "config.hpp"
#include "flag_table.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <set>
#include <vector>

namespace {

std::optional<int> parse(std::vector<std::string> args, inletd::config& o) {
  args.insert(args.begin(), "inletd");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return inletd::parse_config(static_cast<int>(argv.size()), argv.data(), o);
}

TEST(HostPort, ParsesV4V6AndRejectsGarbage) {
  inletd::host_port hp;
  ASSERT_TRUE(inletd::parse_host_port("127.0.0.1:1025", hp));
  EXPECT_EQ(hp.host, "127.0.0.1");
  EXPECT_EQ(hp.port, 1025);
  ASSERT_TRUE(inletd::parse_host_port("[::1]:25", hp));
  EXPECT_EQ(hp.host, "::1");
  EXPECT_EQ(hp.port, 25);
  ASSERT_TRUE(inletd::parse_host_port("localhost:0", hp));
  EXPECT_EQ(hp.port, 0);
  for (const char* bad :
       {"", "127.0.0.1", "host:", "host:65536", "host:12a", "[::1]25", "[::1:25", ":"})
    EXPECT_FALSE(inletd::parse_host_port(bad, hp)) << bad;
  // Mailpit's ":1025": every interface.
  ASSERT_TRUE(inletd::parse_host_port(":1025", hp));
  EXPECT_EQ(hp.host, "0.0.0.0");
  EXPECT_EQ(hp.port, 1025);
}

TEST(Options, DefaultsAreMailpitPorts) {
  inletd::config o;
  EXPECT_FALSE(parse({}, o).has_value());
  EXPECT_EQ(o.smtp.listen[0].address, "127.0.0.1");
  EXPECT_EQ(o.smtp.listen[0].port, 1025);
  EXPECT_EQ(o.http.port, 8025);
  EXPECT_EQ(o.store.kind, inletd::store_kind::memory);
  EXPECT_EQ(o.smtp.listen.size(), 1u);
}

TEST(Options, SlotPressureFlags) {
  inletd::config d;
  EXPECT_FALSE(parse({}, d).has_value());
  EXPECT_EQ(d.smtp.max_connections_per_subnet, 2500u);
  EXPECT_EQ(d.smtp.pressure_percent, 75u);
  EXPECT_EQ(d.smtp.min_data_rate, 500u);
  EXPECT_TRUE(d.smtp.evict_when_full);
  inletd::config o;
  EXPECT_FALSE(parse({"--max-connections-per-subnet", "0", "--subnet-prefix-v4", "16",
                      "--subnet-prefix-v6", "48", "--pressure-at", "60", "--pressure-per-ip", "7",
                      "--pressure-per-subnet", "30", "--pressure-timeout", "5", "--min-data-rate",
                      "0", "--no-evict", "--no-release-memory"},
                     o)
                   .has_value());
  EXPECT_EQ(o.smtp.max_connections_per_subnet, 0u);
  EXPECT_EQ(o.smtp.subnet_prefix_v4, 16u);
  EXPECT_EQ(o.smtp.subnet_prefix_v6, 48u);
  EXPECT_EQ(o.smtp.pressure_percent, 60u);
  EXPECT_EQ(o.smtp.pressure_per_ip, 7u);
  EXPECT_EQ(o.smtp.pressure_per_subnet, 30u);
  EXPECT_EQ(o.smtp.pressure_timeout, std::chrono::seconds(5));
  EXPECT_EQ(o.smtp.min_data_rate, 0u);
  EXPECT_FALSE(o.smtp.evict_when_full);
  EXPECT_FALSE(o.smtp.release_memory);
  inletd::config bad;
  EXPECT_TRUE(parse({"--subnet-prefix-v4", "33"}, bad).has_value());
  EXPECT_TRUE(parse({"--pressure-at", "101"}, bad).has_value());
}

TEST(Options, FlagsFillTheStruct) {
  inletd::config o;
  EXPECT_FALSE(parse({"--smtp",
                      "127.0.0.2:2525",
                      "--listen",
                      "127.0.0.3:8080",
                      "--lmtp",
                      "127.0.0.1:24",
                      "--store",
                      "sink",
                      "--max-messages",
                      "5",
                      "--max-message-bytes",
                      "1000",
                      "--hostname",
                      "mx.example",
                      "--domain",
                      "a.example",
                      "--domain",
                      "b.example",
                      "--io-model",
                      "thread",
                      "--filter-action",
                      "reject",
                      "--filter-threshold",
                      "2.5",
                      "--accepts-per-event",
                      "16"},
                     o)
                   .has_value());
  EXPECT_EQ(o.smtp.listen[0].address, "127.0.0.2");
  EXPECT_EQ(o.smtp.listen[0].port, 2525);
  EXPECT_EQ(o.http.port, 8080);
  ASSERT_EQ(o.smtp.listen.size(), 2u);
  EXPECT_TRUE(o.smtp.listen[1].lmtp);
  EXPECT_EQ(o.smtp.listen[1].port, 24);
  EXPECT_EQ(o.store.kind, inletd::store_kind::sink);
  EXPECT_EQ(o.store.memory.max_messages, 5u);
  EXPECT_EQ(o.smtp.session.max_message_size, 1000u);
  EXPECT_EQ(o.smtp.session.hostname, "mx.example");
  EXPECT_EQ(o.smtp.session.domains, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_EQ(o.smtp.model, inlet::smtp::io_model::thread);
  EXPECT_EQ(o.filter.action, inletd::filter_action::reject);
  EXPECT_DOUBLE_EQ(o.filter.threshold, 2.5);
  EXPECT_EQ(o.smtp.accepts_per_event, 16u);
}

TEST(Options, BadValuesAreRefusedWithAnExitCode) {
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--smtp", "nonsense"},
        {"--max-messages", "0"},
        {"--filter-action", "delete"},
        {"--unknown-flag"},
        {"--accepts-per-event", "0"},
        {"--max-command-line", "10"},
        {"--tls-cert", "does-not-exist.pem", "--tls-key", "does-not-exist.pem"}}) {
    inletd::config o;
    auto rc = parse(bad, o);
    ASSERT_TRUE(rc.has_value()) << bad[0];
    EXPECT_NE(*rc, 0) << bad[0];
  }
}

TEST(Options, HelpExitsZero) {
  inletd::config o;
  auto rc = parse({"--help"}, o);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0);
}

}  // namespace

TEST(Options, LineLengthAndShutdownGrace) {
  inletd::config o;
  EXPECT_FALSE(parse({}, o).has_value());
  EXPECT_EQ(o.smtp.session.max_text_line, 1000u);
  EXPECT_EQ(o.smtp.shutdown_grace, std::chrono::seconds(30));
  inletd::config p;
  EXPECT_FALSE(
      parse({"--max-line-length", "0", "--shutdown-grace", "2", "--io-model", "stackful"}, p)
          .has_value());
  EXPECT_EQ(p.smtp.session.max_text_line, 0u);
  EXPECT_EQ(p.smtp.shutdown_grace, std::chrono::seconds(2));
  EXPECT_EQ(p.smtp.model, inlet::smtp::io_model::stackful);
  inletd::config q;
  EXPECT_TRUE(parse({"--shutdown-grace", "x"}, q).has_value());
}

// A config file sets any flag by its long name; INLET_<FLAG> variables override the file;
// flags on the command line override both.
TEST(Options, ConfigFileThenEnvironmentThenFlags) {
  char dir[] = "/tmp/inletd-options.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/inletd.conf";
  {
    std::ofstream f(path);
    f << "# inletd configuration\n"
         "smtp = \"127.0.0.2:2525\"\n"
         "max-messages = 77\n"
         "hostname = \"from-file\"\n"
         "domain = [\"a.example\", \"b.example\"]\n"
         "quiet = true\n";
  }
  inletd::config o;
  ASSERT_FALSE(parse({"--config", path}, o).has_value());
  EXPECT_EQ(o.smtp.listen[0].address, "127.0.0.2");
  EXPECT_EQ(o.smtp.listen[0].port, 2525);
  EXPECT_EQ(o.store.memory.max_messages, 77u);
  EXPECT_EQ(o.smtp.session.hostname, "from-file");
  EXPECT_EQ(o.smtp.session.domains, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_TRUE(o.log.quiet);

  ::setenv("INLET_MAX_MESSAGES", "88", 1);
  ::setenv("INLET_HOSTNAME", "from-env", 1);
  inletd::config e;
  ASSERT_FALSE(parse({"--config", path, "--hostname", "from-flag"}, e).has_value());
  EXPECT_EQ(e.store.memory.max_messages, 88u);      // environment over file
  EXPECT_EQ(e.smtp.session.hostname, "from-flag");  // flag over environment
  EXPECT_EQ(e.smtp.listen[0].port, 2525);        // the file where nothing else says
  ::setenv("INLET_MAX_MESSAGES", "-3", 1);
  inletd::config bad;
  auto rc = parse({}, bad);  // a bad value from the environment is refused like a flag
  EXPECT_TRUE(rc.has_value() && *rc != 0);
  ::unsetenv("INLET_MAX_MESSAGES");
  ::unsetenv("INLET_HOSTNAME");

  inletd::config missing;
  EXPECT_NE(parse({"--config", std::string(dir) + "/none.conf"}, missing).value_or(0), 0);
  std::remove(path.c_str());
  ::rmdir(dir);
}

TEST(InletdOptions, PostgresStoreFlags) {
  std::uint64_t s = 0;
  EXPECT_TRUE(inletd::parse_duration("90m", s));
  EXPECT_EQ(s, 5400u);
  EXPECT_TRUE(inletd::parse_duration("7d", s));
  EXPECT_EQ(s, 7u * 86400);
  EXPECT_TRUE(inletd::parse_duration("3600", s));
  EXPECT_EQ(s, 3600u);
  EXPECT_FALSE(inletd::parse_duration("", s));
  EXPECT_FALSE(inletd::parse_duration("h", s));
  EXPECT_FALSE(inletd::parse_duration("5w", s));
  EXPECT_FALSE(inletd::parse_duration("-5m", s));
  inletd::config o;
  ASSERT_FALSE(
      parse({"--store", "postgresql://a/x", "--shard", "postgresql://b/x", "--shard",
             "postgresql://c/x", "--retention", "24h", "--mailbox-cap", "100", "--pg-writers", "2"},
            o)
          .has_value());
  EXPECT_EQ(o.store.shards, (std::vector<std::string>{"postgresql://b/x", "postgresql://c/x"}));
  EXPECT_EQ(o.store.pg.retention, std::chrono::seconds(86400));
  EXPECT_EQ(o.store.pg.mailbox_cap, 100u);
  EXPECT_EQ(o.store.pg.writer_connections, 2u);
  inletd::config bad;
  EXPECT_NE(parse({"--retention", "soon"}, bad).value_or(0), 0);
}

// Mailpit's --max-age: the memory store's sweep, and the PostgreSQL store's retention
// unless --retention says otherwise.
TEST(Options, MaxAgeIsMailpitsAndSetsTheRetention) {
  inletd::config o;
  ASSERT_FALSE(parse({"--max-age", "7d"}, o).has_value());
  EXPECT_EQ(o.store.max_age, std::chrono::seconds(7u * 86400));
  EXPECT_EQ(o.store.pg.retention, std::chrono::seconds(7u * 86400));
  EXPECT_TRUE(o.ignored.empty());  // no longer a Mailpit option without an equivalent
  inletd::config both;
  ASSERT_FALSE(parse({"--max-age", "12h", "--retention", "1h"}, both).has_value());
  EXPECT_EQ(both.store.max_age, std::chrono::seconds(12u * 3600));
  EXPECT_EQ(both.store.pg.retention, std::chrono::seconds(3600));
  inletd::config none;
  ASSERT_FALSE(parse({}, none).has_value());
  EXPECT_EQ(none.store.max_age, std::chrono::seconds(0));
  EXPECT_FALSE(none.store.pg.retention.has_value());
  for (const char* bad : {"0", "soon", "3w"}) {
    inletd::config b;
    EXPECT_NE(parse({"--max-age", bad}, b).value_or(0), 0) << bad;
  }
}

namespace {

// Sets environment variables for one test and restores them after.
struct scoped_env {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  scoped_env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto [k, v] : vars) {
      const char* old = std::getenv(k);
      saved.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      ::setenv(k, v, 1);
    }
  }
  ~scoped_env() {
    for (auto& [k, v] : saved) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }
};

}  // namespace

TEST(MailpitOptions, FlagsMapToInletSettings) {
  inletd::config o;
  ASSERT_FALSE(parse({"-s",
                      "127.0.0.1:2525",
                      "-l",
                      "127.0.0.1:8080",
                      "-m",
                      "250",
                      "--label",
                      "CI",
                      "--webroot",
                      "mail",
                      "--api-cors",
                      "*",
                      "--tag",
                      "urgent=subject:urgent",
                      "--tags-title-case",
                      "--tags-disable",
                      "plus-addresses",
                      "--enable-chaos",
                      "--chaos-triggers",
                      "Sender:451:5",
                      "--smtp-max-recipients",
                      "20",
                      "--smtp-auth-accept-any",
                      "--smtp-auth-allow-insecure",  // AUTH without TLS is refused at start
                      "--block-remote-css-and-fonts"},
                     o)
                   .has_value());
  EXPECT_EQ(o.smtp.listen[0].port, 2525);
  EXPECT_EQ(o.http.port, 8080);
  EXPECT_EQ(o.store.memory.max_messages, 250u);
  EXPECT_EQ(o.http.api.label, "CI");
  EXPECT_EQ(o.http.api.webroot, "mail");
  EXPECT_EQ(o.http.api.cors_origin, "*");
  EXPECT_EQ(o.tag_rules, (std::vector<std::string>{"urgent=subject:urgent"}));
  EXPECT_TRUE(o.ingest.tags.title_case);
  EXPECT_FALSE(o.ingest.tags.plus_addresses);
  EXPECT_TRUE(o.ingest.tags.x_tags);
  EXPECT_TRUE(o.chaos.enabled);
  EXPECT_EQ(o.chaos.triggers, "Sender:451:5");
  EXPECT_EQ(o.smtp.session.max_recipients, 20u);
  EXPECT_TRUE(o.smtp_auth.accept_any);
  EXPECT_TRUE(o.http.api.block_remote_css_and_fonts);
  EXPECT_TRUE(o.ignored.empty());
  inletd::config unbounded;
  ASSERT_FALSE(parse({"--max", "0"}, unbounded).has_value());  // Mailpit: 0 is no bound
  EXPECT_EQ(unbounded.store.memory.max_messages, std::numeric_limits<std::size_t>::max());
}

TEST(MailpitOptions, EnvironmentVariables) {
  scoped_env env{{"MP_SMTP_BIND_ADDR", "127.0.0.9:1026"},
                 {"MP_UI_BIND_ADDR", "127.0.0.9:8026"},
                 {"MP_MAX_MESSAGES", "42"},
                 {"MP_MAX_AGE", "3d"},
                 {"MP_LABEL", "from env"},
                 {"MP_UI_AUTH", "u:p"},
                 {"MP_ENABLE_CHAOS", "true"},
                 {"MP_SMTP_RELAY_HOST", "relay.example"},
                 {"MP_SMTP_RELAY_PORT", "587"},
                 {"MP_SMTP_RELAY_STARTTLS", "true"},
                 {"MP_SMTP_RELAY_PASSWORD", "pw"},
                 {"MP_DATABASE", "/data/mailpit.db"}};
  inletd::config o;
  ASSERT_FALSE(parse({}, o).has_value());
  EXPECT_EQ(o.smtp.listen[0].address, "127.0.0.9");
  EXPECT_EQ(o.smtp.listen[0].port, 1026);
  EXPECT_EQ(o.http.port, 8026);
  EXPECT_EQ(o.store.memory.max_messages, 42u);
  EXPECT_EQ(o.store.max_age, std::chrono::seconds(3u * 86400));
  EXPECT_EQ(o.http.api.label, "from env");
  EXPECT_EQ(o.ui_auth.users, "u:p");
  EXPECT_TRUE(o.chaos.enabled);
  EXPECT_EQ(o.relay.host, "relay.example");
  EXPECT_EQ(o.relay.port, 587);
  EXPECT_TRUE(o.relay.starttls);
  EXPECT_EQ(o.relay.password, "pw");
  // MP_DATABASE: the file store, with MP_MAX_MESSAGES and MP_MAX_AGE as its bounds.
  EXPECT_TRUE(o.ignored.empty());
  EXPECT_EQ(o.store.kind, inletd::store_kind::file);
  EXPECT_EQ(o.store.file.path, "/data/mailpit.db");
  EXPECT_EQ(o.store.file.max_messages, 42u);
  EXPECT_EQ(o.store.file.max_age, std::chrono::seconds(3u * 86400));
  // A flag wins over its variable.
  inletd::config f;
  ASSERT_FALSE(parse({"--label", "flag"}, f).has_value());
  EXPECT_EQ(f.http.api.label, "flag");
}

TEST(MailpitOptions, Webhook) {
  inletd::config o;
  ASSERT_FALSE(parse({"--webhook-url", "http://127.0.0.1:9/hook", "--webhook-limit", "0",
                      "--webhook-delay", "3"},
                     o)
                   .has_value());
  EXPECT_EQ(o.webhook.url, "http://127.0.0.1:9/hook");
  EXPECT_EQ(o.webhook.limit, 0);
  EXPECT_EQ(o.webhook.delay, std::chrono::seconds(3));
  EXPECT_TRUE(o.ignored.empty());
  inletd::config d;
  ASSERT_FALSE(parse({}, d).has_value());
  EXPECT_EQ(d.webhook.limit, 1);  // Mailpit's default
  EXPECT_EQ(d.webhook.delay, std::chrono::seconds(0));
  inletd::config bad;
  EXPECT_TRUE(parse({"--webhook-limit", "-1"}, bad).has_value());
  EXPECT_TRUE(parse({"--webhook-delay", "soon"}, bad).has_value());
}

TEST(MailpitOptions, Pop3) {
  char users[] = "/tmp/inletd-pop3-users-XXXXXX";
  int fd = ::mkstemp(users);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "alice:pw\n", 9), 9);
  ::close(fd);
  inletd::config o;
  ASSERT_FALSE(parse({"--pop3", "127.0.0.1:0", "--pop3-auth-file", users, "--label", "dev"}, o)
                   .has_value());
  EXPECT_TRUE(o.pop3.enabled);
  EXPECT_EQ(o.pop3.server.port, 0);
  EXPECT_EQ(o.pop3.server.session.label, "dev");
  ASSERT_TRUE(o.pop3.server.session.auth);
  EXPECT_TRUE(o.pop3.server.session.auth("alice", "pw"));
  EXPECT_FALSE(o.pop3.server.session.auth("alice", "no"));
  EXPECT_EQ(o.pop3.server.tls, inlet::pop3::tls_mode::implicit);  // Mailpit's mode
  EXPECT_TRUE(o.ignored.empty());
  // Credentials inline (MP_POP3_AUTH) enable it too; the listener keeps its default.
  setenv("MP_POP3_AUTH", "bob:pw2 carol:pw3", 1);
  inletd::config e;
  ASSERT_FALSE(parse({"--pop3-stls"}, e).has_value());
  unsetenv("MP_POP3_AUTH");
  EXPECT_TRUE(e.pop3.enabled);
  EXPECT_EQ(e.pop3.server.address, "127.0.0.1");
  EXPECT_EQ(e.pop3.server.port, 1110);
  EXPECT_TRUE(e.pop3.server.session.auth("carol", "pw3"));
  EXPECT_EQ(e.pop3.server.tls, inlet::pop3::tls_mode::stls);
  inletd::config off;
  ASSERT_FALSE(parse({}, off).has_value());
  EXPECT_FALSE(off.pop3.enabled);
  // A certificate without its key is refused (exit code 2), as Mailpit refuses it.
  inletd::config half;
  EXPECT_EQ(parse({"--pop3-auth-file", users, "--pop3-tls-cert", users}, half).value_or(0), 2);
  ::unlink(users);
}

TEST(MailpitOptions, OptionsTakeEffectAndUnknownOnesAreRefused) {
  inletd::config o;
  ASSERT_FALSE(parse({"--enable-rspamd", "http://127.0.0.1:11333", "--verbose",
                      "--smtp-disable-rdns", "--enable-spamassassin", "127.0.0.1:783"},
                     o)
                   .has_value());
  // Every Mailpit option has its effect now: nothing is left to name as ignored.
  // --smtp-disable-rdns is inletd's behaviour already (it never looks names up).
  EXPECT_TRUE(o.ignored.empty());
  EXPECT_TRUE(o.log.verbose);  // supported now: a line per message stored
  inletd::config bad;
  auto rc = parse({"--no-such-mailpit-flag"}, bad);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 109);  // CLI11's code for an unexpected argument, with a message
}

TEST(FileStoreOptions, DatabaseMakesTheFileStore) {
  inletd::config d;
  ASSERT_FALSE(parse({}, d).has_value());
  EXPECT_EQ(d.store.kind, inletd::store_kind::memory);  // without --database
  EXPECT_TRUE(d.store.file.wal);
  EXPECT_TRUE(d.store.file.auto_vacuum);
  EXPECT_EQ(d.store.file.compression, 1);  // Mailpit's default
  inletd::config o;
  ASSERT_FALSE(parse({"-d", "/tmp/a.db", "--max", "0", "--compression", "0"}, o).has_value());
  EXPECT_EQ(o.store.kind, inletd::store_kind::file);
  EXPECT_EQ(o.store.name, "/tmp/a.db");
  EXPECT_EQ(o.store.file.max_messages, 0u);  // no bound
  EXPECT_EQ(o.store.file.compression, 0);
  inletd::config old;
  ASSERT_FALSE(parse({"--db-file", "/tmp/b.db"}, old).has_value());
  EXPECT_EQ(old.store.file.path, "/tmp/b.db");
  EXPECT_FALSE(old.deprecated.empty());
  inletd::config bad;
  EXPECT_TRUE(parse({"--compression", "4"}, bad).has_value());
  EXPECT_TRUE(parse({"-d", "/tmp/a.db", "--store", "sink"}, bad).has_value());
  EXPECT_TRUE(parse({"-d", "/tmp/a.db", "--store", "postgresql://db/x"}, bad).has_value());
}

TEST(MailpitOptions, RelayConfigFile) {
  char path[] = "/tmp/inletd-relay-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string yaml =
      "# Mailpit relay\nhost: smtp.example.com\nport: 2525\nstarttls: true\nauth: plain\nusername: "
      "\"me\"\n"
      "password: 'secret' \nreturn-path: bounces@example.com\nallowed-recipients: "
      "'@example\\.com$'\n";
  ASSERT_EQ(::write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  ::close(fd);
  inletd::config o;
  ASSERT_FALSE(parse({"--smtp-relay-config", path}, o).has_value());
  EXPECT_EQ(o.relay.host, "smtp.example.com");
  EXPECT_EQ(o.relay.port, 2525);
  EXPECT_TRUE(o.relay.starttls);
  EXPECT_EQ(o.relay.auth, "plain");
  EXPECT_EQ(o.relay.username, "me");
  EXPECT_EQ(o.relay.password, "secret");
  EXPECT_EQ(o.relay.return_path, "bounces@example.com");
  EXPECT_EQ(o.relay.allowed_recipients, "@example\\.com$");
  std::string bad_yaml = "host: x\nwhat: 1\n";
  fd = ::open(path, O_WRONLY | O_TRUNC);
  ASSERT_EQ(::write(fd, bad_yaml.data(), bad_yaml.size()), static_cast<ssize_t>(bad_yaml.size()));
  ::close(fd);
  inletd::config b;
  auto rc = parse({"--smtp-relay-config", path}, b);
  ::unlink(path);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 2);
}

TEST(InletdOptions, HttpDefenceFlags) {
  inletd::config o;
  EXPECT_EQ(o.api_rate_limit, -1);
  EXPECT_FALSE(o.http.api.public_mode);
  EXPECT_FALSE(
      parse({"--allowed-host", "mail.example", "--allowed-host", ".corp.example", "--public",
             "--api-rate-limit", "2.5", "--api-rate-burst", "7", "--http-max-connections", "100"},
            o)
          .has_value());
  EXPECT_EQ(o.http.api.allowed_hosts, (std::vector<std::string>{"mail.example", ".corp.example"}));
  EXPECT_TRUE(o.http.api.public_mode);
  EXPECT_DOUBLE_EQ(o.api_rate_limit, 2.5);
  EXPECT_DOUBLE_EQ(o.http.api.rate_burst, 7);
  EXPECT_EQ(o.http.max_connections, 100u);
  inletd::config bad;
  EXPECT_TRUE(parse({"--api-rate-limit", "-1"}, bad).has_value());
}

TEST(InletdOptions, EventStreamCaps) {
  inletd::config d;
  EXPECT_FALSE(parse({}, d).has_value());
  EXPECT_EQ(d.http.max_event_streams, 1024u);
  EXPECT_EQ(d.http.max_event_streams_per_client, 32u);
  inletd::config o;
  EXPECT_FALSE(
      parse({"--http-max-event-streams", "5", "--http-max-event-streams-per-client", "2"}, o)
          .has_value());
  EXPECT_EQ(o.http.max_event_streams, 5u);
  EXPECT_EQ(o.http.max_event_streams_per_client, 2u);
  // The environment sets them too; the command line wins over it.
  ::setenv("INLET_HTTP_MAX_EVENT_STREAMS", "7", 1);
  ::setenv("INLET_HTTP_MAX_EVENT_STREAMS_PER_CLIENT", "3", 1);
  inletd::config e;
  EXPECT_FALSE(parse({"--http-max-event-streams-per-client", "4"}, e).has_value());
  ::unsetenv("INLET_HTTP_MAX_EVENT_STREAMS");
  ::unsetenv("INLET_HTTP_MAX_EVENT_STREAMS_PER_CLIENT");
  EXPECT_EQ(e.http.max_event_streams, 7u);
  EXPECT_EQ(e.http.max_event_streams_per_client, 4u);
  inletd::config zero, neg;
  EXPECT_TRUE(parse({"--http-max-event-streams", "0"}, zero).has_value());
  EXPECT_TRUE(parse({"--http-max-event-streams-per-client", "-1"}, neg).has_value());
}

TEST(InletdOptions, HeavyMessageBytes) {
  inletd::config d;
  EXPECT_FALSE(parse({}, d).has_value());
  EXPECT_EQ(d.ingest.heavy_bytes, 256u * 1024u);
  inletd::config o, off, bad;
  EXPECT_FALSE(parse({"--heavy-message-bytes", "65536"}, o).has_value());
  EXPECT_EQ(o.ingest.heavy_bytes, 65536u);
  EXPECT_FALSE(parse({"--heavy-message-bytes", "0"}, off).has_value());
  EXPECT_EQ(off.ingest.heavy_bytes, 0u);
  EXPECT_TRUE(parse({"--heavy-message-bytes", "lots"}, bad).has_value());
}

TEST(MailpitOptions, MaxMessageSizeIsMailpitsMegabytes) {
  inletd::config o;
  EXPECT_EQ(o.smtp.session.max_message_size, 50u << 20);  // Mailpit's default
  ASSERT_FALSE(parse({"--max-message-size", "3"}, o).has_value());
  EXPECT_EQ(o.smtp.session.max_message_size, 3u << 20);
  ASSERT_FALSE(parse({"--max-message-size", "0"}, o).has_value());
  EXPECT_EQ(o.smtp.session.max_message_size, 0u);  // no limit, as in Mailpit
  ASSERT_FALSE(parse({"--max-message-bytes", "1234"}, o).has_value());
  EXPECT_EQ(o.smtp.session.max_message_size, 1234u);
  setenv("MP_MAX_MESSAGE_SIZE", "7", 1);
  inletd::config e;
  ASSERT_FALSE(parse({}, e).has_value());
  unsetenv("MP_MAX_MESSAGE_SIZE");
  EXPECT_EQ(e.smtp.session.max_message_size, 7u << 20);
}

TEST(MailpitOptions, EveryServerFlagOfMailpitIsAccepted) {
  // Mailpit 1.33.1's whole server flag list, each with a value where it takes one, and its
  // deprecated spellings: a Mailpit command line starts inletd. Required STARTTLS needs a
  // certificate and key: files that exist (inletd reads them when the server starts).
  char cert[] = "/tmp/inletd-cert-XXXXXX";
  int fd = ::mkstemp(cert);
  ASSERT_GE(fd, 0);
  ::close(fd);
  inletd::config o;
  auto rc = parse({"--smtp-tls-cert", cert, "--smtp-tls-key", cert, "-d", "/tmp/m.db", "--disable-wal", "--disable-version-check",
                   "--disable-auto-vacuum", "--compression", "2", "--label", "L",
                   "--tenant-id", "t1", "-m", "100", "--max-age", "2d", "--max-message-size", "5",
                   "--use-message-dates", "--ignore-duplicate-ids", "--log-file", "/tmp/mp.log",
                   "-q", "-v", "-l", "127.0.0.1:8025", "--allowed-hosts", "mailpit,localhost",
                   "--webroot", "mail", "--ui-tls-cert", cert, "--ui-tls-key",
                   cert, "--api-cors", "a.com,b.com", "--block-remote-css-and-fonts",
                   "--allow-internal-http-requests", "--disable-link-check-rate-limit",
                   "--enable-spamassassin", "127.0.0.1:783", "--enable-rspamd",
                   "http://127.0.0.1:11333", "--allow-untrusted-tls", "--disable-http-compression",
                   "--hide-delete-all-button", "--send-api-auth-accept-any", "-s",
                   "127.0.0.1:1025", "--smtp-auth-accept-any", "--smtp-require-starttls",
                   "--smtp-auth-allow-insecure", "--smtp-strict-rfc-headers",
                   "--smtp-max-recipients", "10", "--smtp-allowed-recipients", "@example\\.com$",
                   "--smtp-ignore-rejected-recipients", "--smtp-disable-rdns", "--relay", "127.0.0.1:2525", "--smtp-relay-all",
                   "--smtp-relay-matching", "x", "--enable-chaos", "--chaos-triggers",
                   "Sender:451:1", "--pop3", "127.0.0.1:1110", "--tag", "a=b", "--tags-title-case",
                   "--tags-disable", "x-tags", "--tags-username", "--enable-prometheus", "false",
                   "--webhook-url", "http://127.0.0.1:9/", "--webhook-limit", "2",
                   "--webhook-delay", "1", "--db-file", "/tmp/m.db", "--ui-ssl-cert", cert,
                   "--ui-ssl-key", cert, "--smtp-tls-required", "--disable-html-check"},
                  o);
  ::unlink(cert);
  EXPECT_FALSE(rc.has_value());
  EXPECT_EQ(o.http.api.allowed_hosts, (std::vector<std::string>{"mailpit", "localhost"}));
  EXPECT_TRUE(o.http.api.hide_delete_all_button);
  EXPECT_TRUE(o.http.api.disable_http_compression);
  EXPECT_TRUE(o.ingest.use_message_dates);
  EXPECT_TRUE(o.ingest.tag_auth_user);
  EXPECT_TRUE(o.smtp.session.require_starttls);
  EXPECT_EQ(o.smtp_allowed_recipients, "@example\\.com$");
  EXPECT_TRUE(o.smtp.session.ignore_rejected_recipients);
  EXPECT_EQ(o.log.file, "/tmp/mp.log");
  EXPECT_EQ(o.smtp.session.max_message_size, 5u << 20);
  EXPECT_EQ(o.webhook.url, "http://127.0.0.1:9/");  // webhooks are supported (outbound)
  EXPECT_EQ(o.webhook.limit, 2);
  EXPECT_EQ(o.webhook.delay, std::chrono::seconds(1));
  EXPECT_FALSE(o.deprecated.empty());  // --disable-html-check is named at start
  // The file store's flags (--db-file is --database's old spelling).
  EXPECT_EQ(o.store.kind, inletd::store_kind::file);
  EXPECT_EQ(o.store.file.path, "/tmp/m.db");
  EXPECT_EQ(o.store.file.compression, 2);
  EXPECT_FALSE(o.store.file.wal);
  EXPECT_FALSE(o.store.file.auto_vacuum);
  EXPECT_EQ(o.store.file.tenant_id, "t1");
  EXPECT_EQ(o.store.file.max_messages, 100u);
  EXPECT_EQ(o.store.file.max_age, std::chrono::seconds(2u * 86400));
  // What inletd does not do yet is named, never dropped silently.
  EXPECT_FALSE(o.http.api.mailpit_metrics);  // --enable-prometheus false
  EXPECT_TRUE(o.auto_relay.all);  // through the relay given
  // POP3 is supported; without credentials it stays off, as in Mailpit.
  EXPECT_TRUE(o.pop3.listen_given);
  EXPECT_EQ(o.pop3.server.port, 1110);
  EXPECT_FALSE(o.pop3.enabled);
  EXPECT_TRUE(o.ignored.empty());  // every Mailpit option takes effect
}

TEST(MailpitOptions, MailpitsVariableWinsOverInletsOwn) {
  // An image sets INLET_SMTP; a Mailpit compose file sets MP_SMTP_BIND_ADDR: Mailpit's wins.
  setenv("INLET_SMTP", "0.0.0.0:1025", 1);
  setenv("MP_SMTP_BIND_ADDR", "127.0.0.1:2525", 1);
  inletd::config o;
  ASSERT_FALSE(parse({}, o).has_value());
  EXPECT_EQ(o.smtp.listen[0].port, 2525);
  unsetenv("MP_SMTP_BIND_ADDR");
  inletd::config p;
  ASSERT_FALSE(parse({}, p).has_value());
  EXPECT_EQ(p.smtp.listen[0].address, "0.0.0.0");
  EXPECT_EQ(p.smtp.listen[0].port, 1025);
  unsetenv("INLET_SMTP");
  // The command line wins over both.
  setenv("MP_SMTP_BIND_ADDR", "127.0.0.1:2525", 1);
  inletd::config q;
  ASSERT_FALSE(parse({"--smtp", "127.0.0.1:3535"}, q).has_value());
  unsetenv("MP_SMTP_BIND_ADDR");
  EXPECT_EQ(q.smtp.listen[0].port, 3535);
}

// The flag table's own rules: each flag once, each with its help and group; Mailpit's
// variables once each; every default the documentation shows reads back as a value.
TEST(FlagTable, EachFlagDefinedOnceWithHelpAndGroup) {
  std::set<std::string> names, variables;
  for (const auto& f : inletd::flags::table()) {
    EXPECT_FALSE(f.help.empty()) << f.names;
    EXPECT_FALSE(f.group.empty()) << f.names;
    std::string_view rest = f.names;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string n(rest.substr(0, comma));
      EXPECT_TRUE(names.insert(n).second) << n << " is defined twice";
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (!f.env.empty()) {
      EXPECT_TRUE(f.env.starts_with("MP_")) << f.env;
      EXPECT_TRUE(variables.insert(f.env).second) << f.env << " is read by two flags";
    }
    if (f.from == inletd::flags::origin::deprecated) {
      EXPECT_FALSE(f.instead.empty()) << f.names;
    }
  }
  EXPECT_GT(names.size(), 100u);
}

TEST(FlagTable, DefaultsReadBackAsValues) {
  for (const auto& f : inletd::flags::table()) {
    // A default the documentation words itself ("cores", "keep") is not a value.
    if (f.bind.is_switch || !f.bind.show || f.bind.existing_file || !f.default_text.empty())
      continue;
    inletd::config defaults;
    const std::string shown = f.bind.show(defaults);
    if (shown.empty()) continue;
    inletd::config c;
    EXPECT_NO_THROW(f.bind.set(c, shown)) << f.names << " = " << shown;
  }
}

TEST(FlagTable, MarkdownHasEveryFlagInItsGroup) {
  const std::string md = inletd::flags_markdown();
  for (const auto& f : inletd::flags::table()) {
    const std::string name = inletd::flags::long_name(f);
    EXPECT_NE(md.find("`" + name), std::string::npos) << name;
    EXPECT_NE(md.find("<!-- flags: " + f.group + " -->"), std::string::npos) << f.group;
  }
  // Defaults come from the configuration itself, so they cannot drift from the code.
  EXPECT_NE(md.find("| `--smtp HOST:PORT`, `-s` | `MP_SMTP_BIND_ADDR` | `127.0.0.1:1025` |"),
            std::string::npos);
  EXPECT_NE(md.find("| `--max-message-size MB` | `MP_MAX_MESSAGE_SIZE` | `50` |"),
            std::string::npos);
}

// Cross-flag rules are checked once, after every source was read.
TEST(Config, FinishRefusesWhatCannotRun) {
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--store", "postgresql"},  // no shards
        {"--io-model", "process"},                          // needs --store sink
        {"--smtp-auth-accept-any"},                         // AUTH without TLS
        {"--chaos-triggers", "Nonsense:1:1"},
        {"--tag", "=nothing"}}) {
    inletd::config c;
    auto rc = parse(bad, c);
    ASSERT_TRUE(rc.has_value()) << bad[0];
    EXPECT_EQ(*rc, 2) << bad[0];
  }
  inletd::config sink;
  ASSERT_FALSE(parse({"--io-model", "process", "--store", "sink"}, sink).has_value());
  EXPECT_EQ(sink.ingest.heavy_bytes, 0u);  // a forked connection keeps its messages
  inletd::config chaos;
  ASSERT_FALSE(parse({"--chaos-triggers", "Sender:451:10"}, chaos).has_value());
  EXPECT_TRUE(chaos.http.api.chaos);  // triggers alone enable chaos
  EXPECT_TRUE(chaos.smtp.session.policy);
  inletd::config allowed;
  ASSERT_FALSE(parse({"--smtp-allowed-recipients", "@example\\.com$"}, allowed).has_value());
  ASSERT_TRUE(allowed.smtp.session.recipient_allowed);
  EXPECT_TRUE(allowed.smtp.session.recipient_allowed("a@example.com"));
  EXPECT_FALSE(allowed.smtp.session.recipient_allowed("a@example.org"));
  inletd::config bad_re;
  EXPECT_EQ(parse({"--smtp-allowed-recipients", "(["}, bad_re).value_or(0), 105);  // CLI11: a validation error
}

// Mailpit's SMTPS: --smtp-require-tls needs a certificate (a `sans:` one is made at start)
// and goes with neither required STARTTLS nor AUTH without TLS, as in Mailpit.
TEST(MailpitOptions, RequireTlsAndSansCertificates) {
  inletd::config c;
  ASSERT_FALSE(parse({"--smtp-require-tls", "--smtp-tls-cert", "sans:mx.example, 127.0.0.1",
                      "--smtp-tls-key", "sans:mx.example,127.0.0.1"},
                     c)
                   .has_value());
  EXPECT_TRUE(c.smtp.listen.front().implicit_tls);
  ASSERT_FALSE(c.smtp.tls_cert.empty());
  EXPECT_NE(c.smtp.tls_cert, c.smtp.tls_key);  // one pair: the certificate and its key
  EXPECT_EQ(::access(c.smtp.tls_cert.c_str(), R_OK), 0);
  EXPECT_EQ(::access(c.smtp.tls_key.c_str(), R_OK), 0);
  struct stat st {};
  ASSERT_EQ(::stat(c.smtp.tls_key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // the private key is the owner's alone
  inletd::config same;  // the same names: the same pair
  ASSERT_FALSE(parse({"--tls-cert", "sans:127.0.0.1,mx.example", "--tls-key",
                      "sans:mx.example,127.0.0.1"},
                     same)
                   .has_value());
  EXPECT_EQ(same.smtp.tls_cert, c.smtp.tls_cert);
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--smtp-require-tls"},
        {"--smtp-require-tls", "--tls-cert", "sans:x", "--tls-key", "sans:x",
         "--smtp-require-starttls"},
        {"--smtp-require-tls", "--tls-cert", "sans:x", "--tls-key", "sans:x",
         "--smtp-auth-allow-insecure"},
        {"--tls-cert", "sans:", "--tls-key", "sans:"}}) {
    inletd::config b;
    EXPECT_EQ(parse(bad, b).value_or(0), 2) << bad.back();
  }
  inletd::config missing;
  EXPECT_NE(parse({"--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.pem"}, missing)
                .value_or(0),
            0);
}
