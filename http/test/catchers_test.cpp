// The catchers' parts without sockets: MailHog's Jim settings over inlet's chaos
// triggers, the cache of rendered messages, and the JSON string writer of renderings.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <random>

#include "catchers_json.hpp"
#include "inlet/http/api.hpp"
#include "render_cache.hpp"

namespace {

using inlet::http::jim_settings;
using inlet::http::jim_state;

TEST(Jim, ParsesMailHogNamesCaseInsensitivelyKeepingTheRest) {
  jim_settings s;
  std::string why;
  ASSERT_TRUE(jim_state::parse("RejectSenderChance:1,linkspeedmin:2048", s, why)) << why;
  EXPECT_EQ(s.reject_sender_chance, 1.0);
  EXPECT_EQ(s.link_speed_min, 2048.0);
  EXPECT_EQ(s.accept_chance, 0.99);  // unnamed: MailHog's default
  EXPECT_TRUE(jim_state::parse("", s, why));
}

TEST(Jim, RejectsMalformedLists) {
  std::string why;
  for (const char* bad : {"RejectSenderChance", "Nope:1", "AcceptChance:x", "AcceptChance:1,",
                          "AcceptChance:", "AcceptChance:inf"}) {
    jim_settings s;
    EXPECT_FALSE(jim_state::parse(bad, s, why)) << bad;
    EXPECT_EQ(s, jim_settings{}) << bad;  // untouched on failure
  }
}

TEST(Jim, MapsRejectionsOntoTriggersAsMailHogAnswers) {
  jim_settings s;
  s.reject_sender_chance = 0.25;
  s.reject_recipient_chance = 7;  // beyond 1: always
  s.reject_auth_chance = -1;      // below 0: never
  auto t = jim_state::triggers(s);
  EXPECT_EQ(t.sender.error_code, 550u);
  EXPECT_EQ(t.sender.probability, 25u);
  EXPECT_EQ(t.recipient.error_code, 550u);
  EXPECT_EQ(t.recipient.probability, 100u);
  EXPECT_EQ(t.authentication.error_code, 535u);
  EXPECT_EQ(t.authentication.probability, 0u);
}

TEST(Jim, InvitingSetsTheChaosTriggersAndTurningOutClearsThem) {
  auto chaos = std::make_shared<inlet::smtp::chaos_state>();
  jim_state jim(chaos);
  EXPECT_FALSE(jim.get());
  jim_settings s;
  s.reject_recipient_chance = 1;
  jim.set(s);
  ASSERT_TRUE(jim.get());
  EXPECT_EQ(*jim.get(), s);
  EXPECT_EQ(chaos->get().recipient.probability, 100u);
  EXPECT_EQ(chaos->get().sender.probability, 5u);
  jim.set(std::nullopt);
  EXPECT_FALSE(jim.get());
  EXPECT_EQ(chaos->get(), inlet::smtp::chaos_triggers{});
  EXPECT_EQ(jim.last(), s);  // what a body-less POST invites again
}

TEST(Jim, JsonIsMailHogsFieldsInOrderWithGoNumbers) {
  EXPECT_EQ(jim_state::json(jim_settings{}),
            "{\"DisconnectChance\":0.005,\"AcceptChance\":0.99,\"LinkSpeedAffect\":0.1,"
            "\"LinkSpeedMin\":1024,\"LinkSpeedMax\":10240,\"RejectSenderChance\":0.05,"
            "\"RejectRecipientChance\":0.05,\"RejectAuthChance\":0.05}");
}

using inlet::http::detail::render_cache;

std::shared_ptr<const render_cache::entry> text(std::size_t n, char ch = 'x') {
  return std::make_shared<const render_cache::entry>(render_cache::entry{std::string(n, ch)});
}

TEST(RenderCache, KeysAreViewAndIdAndHitsAreShared) {
  render_cache cache(1 << 20);
  EXPECT_FALSE(cache.find('h', "a"));
  auto e = text(10);
  cache.put('h', "a", e);
  EXPECT_EQ(cache.find('h', "a"), e);
  EXPECT_FALSE(cache.find('d', "a"));  // another view of the same message
  EXPECT_FALSE(cache.find('h', "ab"));
  cache.put('h', "a", text(10, 'y'));  // a racing second render: the first stays
  EXPECT_EQ(cache.find('h', "a"), e);
}

TEST(RenderCache, EvictsTheLeastRecentlyUsedPastItsBound) {
  // Each entry costs its text plus a fixed overhead (under 200 bytes): three fit.
  render_cache cache(3 * 1200);
  cache.put('h', "1", text(1000));
  cache.put('h', "2", text(1000));
  cache.put('h', "3", text(1000));
  EXPECT_TRUE(cache.find('h', "1"));  // 1 is now the most recent
  cache.put('h', "4", text(1000));
  cache.put('h', "5", text(1000));
  EXPECT_TRUE(cache.find('h', "1"));
  EXPECT_FALSE(cache.find('h', "2"));
  EXPECT_FALSE(cache.find('h', "3"));
  EXPECT_LE(cache.bytes(), 3u * 1200);
  cache.put('h', "big", text(7000));  // larger than the bound: not kept, nothing evicted
  EXPECT_FALSE(cache.find('h', "big"));
  EXPECT_TRUE(cache.find('h', "5"));
}

TEST(RenderCache, ZeroBytesKeepsNothing) {
  render_cache cache(0);
  cache.put('d', "a", text(1));
  EXPECT_FALSE(cache.find('d', "a"));
  EXPECT_EQ(cache.bytes(), 0u);
}

}  // namespace

namespace {

// What the renderings wrote before the direct writer: a sanitised copy, serialised.
std::string tree_json(std::string_view s) {
  return boost::json::serialize(boost::json::string(inlet::http::sanitize_utf8(s)));
}

std::string direct_json(std::string_view s) {
  std::string out;
  inlet::http::detail::append_json_string(out, s);
  return out;
}

}  // namespace

TEST(CatcherJson, StringsAreWhatTheJsonTreeWrote) {
  static constexpr char with_nul[] = "controls \0 \x01\x02\b\f\n\r\t\x1f\x7f end";
  const std::vector<std::string> cases = {
      "",
      "plain ascii text that is longer than sixteen bytes, twice over and more",
      "quote \" and backslash \\ and slash /",
      std::string(with_nul, sizeof with_nul - 1),
      "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 (valid)",
      "bad \xC3 lone lead, \x80 lone continuation, \xED\xA0\x80 surrogate, \xF5 too high",
      "overlong \xC0\xAF and \xE0\x80\xAF, truncated at the end \xE2\x82",
      std::string(40, '"'),
      "lines\r\nof a body\r\n\r\n\r\rbare\n\nends with CR\r",
  };
  for (const auto& c : cases) EXPECT_EQ(direct_json(c), tree_json(c)) << c;
  // Every byte value at every offset of a 16-byte block and around it.
  for (int b = 0; b < 256; ++b)
    for (std::size_t at = 0; at < 34; ++at) {
      std::string s(40, 'a');
      s[at] = static_cast<char>(b);
      ASSERT_EQ(direct_json(s), tree_json(s)) << b << " at " << at;
    }
}

TEST(CatcherJson, RandomBytesAgreeWithTheTreeAndParseBack) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string s(rng() % 80, '\0');
    // Mostly ASCII with some high and control bytes, as mail is.
    for (auto& ch : s) {
      const unsigned r = rng() % 100;
      ch = static_cast<char>(r < 80   ? 0x20 + rng() % 0x5f
                             : r < 90 ? 0x80 + rng() % 0x80
                                      : rng() % 0x20);
    }
    const auto text = direct_json(s);
    ASSERT_EQ(text, tree_json(s));
    EXPECT_EQ(boost::json::parse(text).as_string(), inlet::http::sanitize_utf8(s));
  }
}
