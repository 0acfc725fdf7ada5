// MailHog's and MailDev's flags and variables read as inletd's flags (no sockets).
#include "catcher_env.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace {

std::map<std::string, std::string>* current_env = nullptr;

const char* fake_env(const char* name) {
  auto it = current_env->find(name);
  return it == current_env->end() ? nullptr : it->second.c_str();
}

std::vector<std::string> translate(std::vector<std::string> args,
                                   std::map<std::string, std::string> env, std::string& flavour) {
  current_env = &env;
  auto out = inletd::translate_catcher_args(args, fake_env, flavour);
  current_env = nullptr;
  return out;
}

TEST(CatcherEnv, NothingGivenChangesNothing) {
  std::string flavour;
  auto out = translate({"--smtp", "127.0.0.1:0", "-s", "127.0.0.1:1"}, {}, flavour);
  EXPECT_EQ(out, (std::vector<std::string>{"--smtp", "127.0.0.1:0", "-s", "127.0.0.1:1"}));
  EXPECT_EQ(flavour, "");
}

TEST(CatcherEnv, MailHogVariables) {
  std::string flavour;
  auto out = translate({"--quiet"},
                       {{"MH_SMTP_BIND_ADDR", "0.0.0.0:1025"},
                        {"MH_API_BIND_ADDR", "0.0.0.0:8025"},
                        {"MH_UI_BIND_ADDR", "0.0.0.0:8025"},
                        {"MH_HOSTNAME", "mailhog.example"},
                        {"MH_CORS_ORIGIN", "*"},
                        {"MH_AUTH_FILE", "/etc/auth"}},
                       flavour);
  EXPECT_EQ(flavour, "mailhog");
  EXPECT_EQ(out, (std::vector<std::string>{"--mailhog-api", "--smtp=0.0.0.0:1025",
                                           "--listen=0.0.0.0:8025", "--hostname=mailhog.example",
                                           "--api-cors=*", "--ui-auth-file=/etc/auth",
                                           "--quiet"}));
}

TEST(CatcherEnv, MailHogFlagsWinOverVariablesAndJimMapsToChaos) {
  std::string flavour;
  auto out = translate({"-smtp-bind-addr", "127.0.0.1:2525", "-invite-jim",
                        "-jim-reject-sender=0.5", "-api-bind-addr=127.0.0.1:9025"},
                       {{"MH_SMTP_BIND_ADDR", "0.0.0.0:1025"}}, flavour);
  EXPECT_EQ(flavour, "mailhog");
  EXPECT_EQ(out, (std::vector<std::string>{
                     "--mailhog-api", "--smtp=127.0.0.1:2525", "--listen=127.0.0.1:9025",
                     "--mailhog-jim=DisconnectChance:0.005,AcceptChance:0.99,"
                     "LinkSpeedAffect:0.1,LinkSpeedMin:1024,LinkSpeedMax:10240,"
                     "RejectSenderChance:0.5,RejectRecipientChance:0.05,RejectAuthChance:0.05"}));
}

TEST(CatcherEnv, MailHogInviteJimVariable) {
  std::string flavour;
  auto out = translate({}, {{"MH_INVITE_JIM", "true"}, {"JIM_REJECT_AUTH", "1"}}, flavour);
  EXPECT_EQ(flavour, "mailhog");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], "--mailhog-api");
  EXPECT_TRUE(out[1].starts_with("--mailhog-jim=DisconnectChance:0.005,"));
  EXPECT_TRUE(out[1].ends_with(",RejectAuthChance:1"));
  flavour.clear();
  out = translate({}, {{"MH_INVITE_JIM", "false"}}, flavour);
  EXPECT_EQ(flavour, "");
  EXPECT_TRUE(out.empty());
}

TEST(CatcherEnv, MailDevDefaultsToPort1080) {
  std::string flavour;
  auto out = translate({}, {{"MAILDEV_SMTP_PORT", "1025"}}, flavour);
  EXPECT_EQ(flavour, "maildev");
  EXPECT_EQ(out, (std::vector<std::string>{"--smtp=0.0.0.0:1025", "--listen=0.0.0.0:1080"}));
}

TEST(CatcherEnv, MailDevFlagsAndIPv6) {
  std::string flavour;
  auto out = translate({"-s", "2525", "--web=9080", "--ip", "::", "--max-emails", "100"}, {},
                       flavour);
  EXPECT_EQ(flavour, "maildev");
  EXPECT_EQ(out, (std::vector<std::string>{"--smtp=[::]:2525", "--listen=0.0.0.0:9080",
                                           "--max-messages=100"}));
}

TEST(CatcherEnv, FlagsInletdSharesWithMailDevStayInletds) {
  std::string flavour;
  auto out = translate({"--max-message-size", "1000"}, {}, flavour);
  EXPECT_EQ(out, (std::vector<std::string>{"--max-message-size", "1000"}));
  EXPECT_EQ(flavour, "");
}

TEST(CatcherEnv, InletdShortSmtpFlagStaysInletds) {
  std::string flavour;
  auto out = translate({"-s", "127.0.0.1:25"}, {}, flavour);
  EXPECT_EQ(out, (std::vector<std::string>{"-s", "127.0.0.1:25"}));
  EXPECT_EQ(flavour, "");
}

}  // namespace
