// The summary's list totals (summary::list_totals) through every read of any store: a
// message whose lists the receive path cut (5 To kept of 80,000, ...) reads back with the
// same totals through get, a global listing, a mailbox listing and a search; a message
// with whole lists reads totals 0. The memory store's tests and the PostgreSQL store's
// tests both run it.
//
//   inlet::store::test::run_totals_case(my_store, "box@example.com");  // inside a TEST
//
// The store must be empty. Blocking on each completion, as search_cases.hpp.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "inlet/store/search.hpp"
#include "inlet/store/store.hpp"
#include "sync_ops.hpp"

namespace inlet::store::test {

inline new_message totals_message(const std::string& mailbox, std::string subject) {
  new_message m;
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to = {mailbox};
  m.envelope.remote = "127.0.0.1:40000";
  m.envelope.protocol = "ESMTP";
  m.summary.from = {"Sender", "sender@example.org"};
  m.summary.subject = subject;
  m.summary.search_text = subject;
  m.raw = "From: sender@example.org\r\nSubject: " + subject + "\r\n\r\nbody\r\n";
  return m;
}

inline void expect_totals(const message_ptr& m, const summary::list_totals& want, const char* via) {
  ASSERT_TRUE(m) << via;
  const auto& t = m->summary.totals;
  EXPECT_EQ(t.to, want.to) << via;
  EXPECT_EQ(t.cc, want.cc) << via;
  EXPECT_EQ(t.bcc, want.bcc) << via;
  EXPECT_EQ(t.reply_to, want.reply_to) << via;
  EXPECT_EQ(t.attachments, want.attachments) << via;
}

inline void run_totals_case(store& s, const std::string& mailbox) {
  auto cut = totals_message(mailbox, "cutlists");
  for (int i = 0; i < 5; ++i)
    cut.summary.to.push_back({"", "to" + std::to_string(i) + "@example.com"});
  cut.summary.cc = {{"", "cc@example.com"}};
  cut.summary.attachments = {{"a.pdf", "application/pdf", 10}};
  const summary::list_totals want{80'000, 1'234, 3, 7, 512};
  cut.summary.totals = want;
  auto whole = totals_message(mailbox, "wholelists");
  whole.summary.to = {{"", mailbox}};

  std::error_code ec;
  auto put_cut = s.put_sync(std::move(cut), ec);
  ASSERT_FALSE(ec) << ec.message();
  auto put_whole = s.put_sync(std::move(whole), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(put_cut && put_whole);
  const summary::list_totals zero{};

  auto got = get_sync(s, put_cut->id);
  ASSERT_FALSE(got.ec) << got.ec.message();
  expect_totals(got.value, want, "get");
  EXPECT_EQ(got.value->summary.to.size(), 5u);
  auto got_whole = get_sync(s, put_whole->id);
  ASSERT_FALSE(got_whole.ec);
  expect_totals(got_whole.value, zero, "get (whole lists)");

  for (const std::string& box : {std::string(), mailbox}) {
    auto p = list_all(s, 0, 10, box);
    ASSERT_EQ(p.messages.size(), 2u) << "mailbox '" << box << "'";
    expect_totals(p.messages[0], zero, box.empty() ? "list (whole lists)" : "mailbox list (whole)");
    expect_totals(p.messages[1], want, box.empty() ? "list" : "mailbox list");
  }

  list_request r(0, 10);
  ASSERT_FALSE(search::parse("subject:cutlists", "", r.query));
  auto found = list_sync(s, r);
  ASSERT_FALSE(found.ec) << found.ec.message();
  ASSERT_EQ(found.value.messages.size(), 1u);
  expect_totals(found.value.messages[0], want, "search");
  r.mailbox = mailbox;
  auto in_box = list_sync(s, r);
  ASSERT_FALSE(in_box.ec) << in_box.ec.message();
  ASSERT_EQ(in_box.value.messages.size(), 1u);
  expect_totals(in_box.value.messages[0], want, "search in a mailbox");
}

}  // namespace inlet::store::test
