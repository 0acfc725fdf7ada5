// inletd's flag parsing: endpoints, defaults, validation.
#include "options.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::optional<int> parse(std::vector<std::string> args, inletd::options& o) {
  args.insert(args.begin(), "inletd");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return inletd::parse_options(static_cast<int>(argv.size()), argv.data(), o);
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
  for (const char* bad : {"", "127.0.0.1", ":25", "host:", "host:65536", "host:12a", "[::1]25",
                          "[::1:25"})
    EXPECT_FALSE(inletd::parse_host_port(bad, hp)) << bad;
}

TEST(Options, DefaultsAreMailpitPorts) {
  inletd::options o;
  EXPECT_FALSE(parse({}, o).has_value());
  EXPECT_EQ(o.smtp.host, "127.0.0.1");
  EXPECT_EQ(o.smtp.port, 1025);
  EXPECT_EQ(o.http.port, 8025);
  EXPECT_EQ(o.store, "memory");
  EXPECT_FALSE(o.lmtp.has_value());
}

TEST(Options, SlotPressureFlags) {
  inletd::options d;
  EXPECT_FALSE(parse({}, d).has_value());
  EXPECT_EQ(d.max_connections_per_subnet, 2500u);
  EXPECT_EQ(d.pressure_at, 75u);
  EXPECT_EQ(d.min_data_rate, 500u);
  EXPECT_FALSE(d.no_evict);
  inletd::options o;
  EXPECT_FALSE(parse({"--max-connections-per-subnet", "0", "--subnet-prefix-v4", "16",
                      "--subnet-prefix-v6", "48", "--pressure-at", "60", "--pressure-per-ip", "7",
                      "--pressure-per-subnet", "30", "--pressure-timeout", "5", "--min-data-rate",
                      "0", "--no-evict", "--no-release-memory"},
                     o)
                   .has_value());
  EXPECT_EQ(o.max_connections_per_subnet, 0u);
  EXPECT_EQ(o.subnet_prefix_v4, 16u);
  EXPECT_EQ(o.subnet_prefix_v6, 48u);
  EXPECT_EQ(o.pressure_at, 60u);
  EXPECT_EQ(o.pressure_per_ip, 7u);
  EXPECT_EQ(o.pressure_per_subnet, 30u);
  EXPECT_EQ(o.pressure_timeout_seconds, 5u);
  EXPECT_EQ(o.min_data_rate, 0u);
  EXPECT_TRUE(o.no_evict);
  EXPECT_TRUE(o.no_release_memory);
  inletd::options bad;
  EXPECT_TRUE(parse({"--subnet-prefix-v4", "33"}, bad).has_value());
  EXPECT_TRUE(parse({"--pressure-at", "101"}, bad).has_value());
}

TEST(Options, FlagsFillTheStruct) {
  inletd::options o;
  EXPECT_FALSE(parse({"--smtp", "127.0.0.2:2525", "--listen", "127.0.0.3:8080", "--lmtp",
                      "127.0.0.1:24", "--store", "sink", "--max-messages", "5",
                      "--max-message-size", "1000", "--hostname", "mx.example", "--domain",
                      "a.example", "--domain", "b.example", "--io-model", "thread",
                      "--filter-action", "reject", "--filter-threshold", "2.5",
                      "--accepts-per-event", "16"},
                     o)
                   .has_value());
  EXPECT_EQ(o.smtp.host, "127.0.0.2");
  EXPECT_EQ(o.smtp.port, 2525);
  EXPECT_EQ(o.http.port, 8080);
  ASSERT_TRUE(o.lmtp.has_value());
  EXPECT_EQ(o.lmtp->port, 24);
  EXPECT_EQ(o.store, "sink");
  EXPECT_EQ(o.max_messages, 5u);
  EXPECT_EQ(o.max_message_size, 1000u);
  EXPECT_EQ(o.hostname, "mx.example");
  EXPECT_EQ(o.domains, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_EQ(o.io_model, "thread");
  EXPECT_EQ(o.filter_action, "reject");
  EXPECT_DOUBLE_EQ(o.filter_threshold, 2.5);
  EXPECT_EQ(o.accepts_per_event, 16u);
}

TEST(Options, BadValuesAreRefusedWithAnExitCode) {
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--smtp", "nonsense"}, {"--max-messages", "0"},
        {"--filter-action", "delete"}, {"--unknown-flag"}, {"--accepts-per-event", "0"}, {"--max-command-line", "10"},
        {"--tls-cert", "does-not-exist.pem", "--tls-key", "does-not-exist.pem"}}) {
    inletd::options o;
    auto rc = parse(bad, o);
    ASSERT_TRUE(rc.has_value()) << bad[0];
    EXPECT_NE(*rc, 0) << bad[0];
  }
}

TEST(Options, HelpExitsZero) {
  inletd::options o;
  auto rc = parse({"--help"}, o);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0);
}

}  // namespace

TEST(Options, LineLengthAndShutdownGrace) {
  inletd::options o;
  EXPECT_FALSE(parse({}, o).has_value());
  EXPECT_EQ(o.max_line_length, 1000u);
  EXPECT_EQ(o.shutdown_grace_seconds, 30u);
  inletd::options p;
  EXPECT_FALSE(parse({"--max-line-length", "0", "--shutdown-grace", "2", "--io-model", "stackful"}, p).has_value());
  EXPECT_EQ(p.max_line_length, 0u);
  EXPECT_EQ(p.shutdown_grace_seconds, 2u);
  EXPECT_EQ(p.io_model, "stackful");
  inletd::options q;
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
  inletd::options o;
  ASSERT_FALSE(parse({"--config", path}, o).has_value());
  EXPECT_EQ(o.smtp.host, "127.0.0.2");
  EXPECT_EQ(o.smtp.port, 2525);
  EXPECT_EQ(o.max_messages, 77u);
  EXPECT_EQ(o.hostname, "from-file");
  EXPECT_EQ(o.domains, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_TRUE(o.quiet);

  ::setenv("INLET_MAX_MESSAGES", "88", 1);
  ::setenv("INLET_HOSTNAME", "from-env", 1);
  inletd::options e;
  ASSERT_FALSE(parse({"--config", path, "--hostname", "from-flag"}, e).has_value());
  EXPECT_EQ(e.max_messages, 88u);      // environment over file
  EXPECT_EQ(e.hostname, "from-flag");  // flag over environment
  EXPECT_EQ(e.smtp.port, 2525);        // the file where nothing else says
  ::setenv("INLET_MAX_MESSAGES", "-3", 1);
  inletd::options bad;
  auto rc = parse({}, bad);  // a bad value from the environment is refused like a flag
  EXPECT_TRUE(rc.has_value() && *rc != 0);
  ::unsetenv("INLET_MAX_MESSAGES");
  ::unsetenv("INLET_HOSTNAME");

  inletd::options missing;
  EXPECT_NE(parse({"--config", std::string(dir) + "/none.conf"}, missing).value_or(0), 0);
  std::remove(path.c_str());
  ::rmdir(dir);
}
