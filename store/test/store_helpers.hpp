// What the memory store's and the file store's tests both use to speak to a store:
// a new message with a plain envelope, and put/list/search/get that expect no error.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "inlet/store/search.hpp"
#include "sync_ops.hpp"

namespace inlet::store::test {

inline new_message make(std::string raw, std::vector<std::string> rcpt = {"a@example.com"},
                        std::string subject = {}) {
  new_message m;
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to.assign(rcpt.begin(), rcpt.end());
  m.envelope.remote = "127.0.0.1:4000";
  m.envelope.protocol = "ESMTP";
  m.summary.subject = std::move(subject);
  m.raw = std::move(raw);
  return m;
}

inline message_ptr put(store& s, new_message m) {
  std::error_code ec;
  auto p = s.put_sync(std::move(m), ec);
  EXPECT_FALSE(ec) << ec.message();
  return p;
}

inline std::vector<std::string> subjects(const page& p) {
  std::vector<std::string> out;
  for (auto& m : p.messages) out.push_back(m->summary.subject);
  return out;
}

inline page list(store& s, std::size_t start, std::size_t limit, std::string mailbox = {}) {
  return list_all(s, start, limit, std::move(mailbox));
}

inline page search(store& s, std::string_view q, std::size_t start = 0, std::size_t limit = 100) {
  list_request r(start, limit);
  EXPECT_FALSE(search::parse(q, "", r.query));
  auto o = list_sync(s, std::move(r));
  EXPECT_FALSE(o.ec) << o.ec.message();
  return std::move(o.value);
}

inline message_ptr get(store& s, std::string id) { return get_sync(s, std::move(id)).value; }

}  // namespace inlet::store::test
