#include <gtest/gtest.h>

#include <inlet/smtp/chaos.hpp>
#include <memory>
#include <string>

namespace {

TEST(Chaos, ParseAndTrigger) {
  inlet::smtp::chaos_triggers t;
  std::string err;
  ASSERT_TRUE(
      inlet::smtp::chaos_state::parse("Sender:451:100, recipient:550:0,AUTHENTICATION:535:100", t, err))
      << err;
  EXPECT_EQ(t.sender.error_code, 451u);
  EXPECT_EQ(t.recipient.probability, 0u);
  EXPECT_EQ(t.authentication.error_code, 535u);
  for (auto bad : {"Sender:451", "Nobody:451:1", "Sender:399:1", "Sender:451:101", "Sender:x:1"})
    EXPECT_FALSE(inlet::smtp::chaos_state::parse(bad, t, err)) << bad;
  inlet::smtp::chaos_state s;
  EXPECT_FALSE(s.smtp_error(inlet::smtp::chaos_stage::sender));  // off by default
  inlet::smtp::chaos_triggers on;
  on.sender = {452, 100};
  s.set(on);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.smtp_error(inlet::smtp::chaos_stage::sender), 452u);
  EXPECT_FALSE(s.smtp_error(inlet::smtp::chaos_stage::recipient));
}

TEST(Chaos, PolicyAnswersTheStagesWithMailpitsText) {
  inlet::smtp::chaos_triggers t;
  t.sender = {451, 100};
  t.authentication = {535, 100};
  auto policy = inlet::smtp::chaos_policy(std::make_shared<inlet::smtp::chaos_state>(t));
  auto mail = policy(inlet::smtp::policy_stage::mail, "a@example.com");
  ASSERT_TRUE(mail);
  EXPECT_EQ(mail->code, 451);
  EXPECT_EQ(mail->text, "Chaos sender error");
  EXPECT_EQ(mail->enhanced, "4.1.0");
  EXPECT_FALSE(policy(inlet::smtp::policy_stage::rcpt, "b@example.com"));
  auto auth = policy(inlet::smtp::policy_stage::auth, "PLAIN");
  ASSERT_TRUE(auth);
  EXPECT_EQ(auth->enhanced, "5.7.0");
}

}  // namespace
