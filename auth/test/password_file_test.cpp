#include <gtest/gtest.h>

#include <inlet/auth/password_file.hpp>
#include <string>

namespace {

TEST(Auth, EveryMailpitPasswordFormat) {
  // Vectors from `openssl passwd -apr1 / -1` and Python's crypt / hashlib.
  EXPECT_EQ(inlet::auth::md5_crypt("secret", "abcdefgh", "$apr1$"), "$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/");
  EXPECT_EQ(inlet::auth::md5_crypt("secret", "saltsalt", "$1$"), "$1$saltsalt$9xy1btjgzLYfb7hivXtC//");
  std::string err;
  auto f = inlet::auth::password_file::parse(
      "# users\n"
      "plain:secret\n"
      "apr:$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/\n"
      "md5:$1$saltsalt$9xy1btjgzLYfb7hivXtC//\n"
      "sha512:$6$saltsalt$"
      "TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1\n"
      "bcrypt:$2b$12$tf9G42zK/jOnYYR7jVlF2eIg9HYN.MjB/nOo0CXrgLrTk2ilB5X4m\n"
      "sha:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n"
      "ssha:{SSHA}+RFhsab2AfzZ0VfEdyknXtUT06RhYmNk\r\n",
      err);
  ASSERT_TRUE(f) << err;
  for (auto u : {"plain", "apr", "md5", "sha512", "bcrypt", "sha", "ssha"}) {
    EXPECT_TRUE(f->check(u, "secret")) << u;
    EXPECT_FALSE(f->check(u, "Secret")) << u;
  }
  EXPECT_FALSE(f->check("nobody", "secret"));
  EXPECT_TRUE(f->check_basic("Basic cGxhaW46c2VjcmV0"));  // plain:secret
  EXPECT_TRUE(f->check_basic("basic  cGxhaW46c2VjcmV0"));
  EXPECT_FALSE(f->check_basic("Basic cGxhaW46d3Jvbmc="));  // plain:wrong
  EXPECT_FALSE(f->check_basic("Bearer cGxhaW46c2VjcmV0"));
  EXPECT_FALSE(f->check_basic("Basic ***"));
  EXPECT_FALSE(inlet::auth::password_file::parse("no colon here\n", err));
  EXPECT_FALSE(inlet::auth::password_file::parse("\n# only comments\n", err));
}

TEST(Auth, InlineListsAsMailpitsVariablesGiveThem) {
  std::string err;
  auto f = inlet::auth::load_credentials("", "ann:one bob:two", err);
  ASSERT_TRUE(f) << err;
  EXPECT_EQ(f->size(), 2u);
  EXPECT_TRUE(f->check("bob", "two"));
  EXPECT_FALSE(f->check("bob", "one"));
  EXPECT_FALSE(inlet::auth::load_credentials("/nonexistent/inlet-passwords", "", err));
  EXPECT_FALSE(err.empty());
}

}  // namespace
