// Shared by the API's request tests: build a request, run api::handle to completion on a
// local io_context (no sockets), read a JSON answer.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <string>

#include "inlet/http/api.hpp"
#include "inlet/store/memory_store.hpp"

namespace inlet::http::test {

namespace bh = boost::beast::http;
namespace json = boost::json;
namespace st = inlet::store;

// The io_context outlives every call: a worker of the api's pool may still be waking it up
// just after the handler it posted has run and io.run() has returned.
inline response run(const api& a, request r) {
  static boost::asio::io_context io;
  io.restart();
  auto f = boost::asio::co_spawn(io, a.handle(std::move(r)), boost::asio::use_future);
  io.run();
  return f.get();
}

inline request req(bh::verb v, std::string target, std::string body = {}) {
  request r{v, target, 11};
  r.body() = std::move(body);
  r.prepare_payload();
  return r;
}

inline json::value body_value(const response& r) {
  std::error_code ec;
  auto v = json::parse(r.body(), ec);
  EXPECT_FALSE(ec) << r.body();
  return v;
}

inline json::object body_json(const response& r) {
  auto v = body_value(r);
  EXPECT_TRUE(v.is_object()) << r.body();
  return v.is_object() ? v.get_object() : json::object{};
}

inline st::new_message message(std::string subject, std::string raw,
                               std::vector<std::string> rcpt = {"box@example.com"}) {
  st::new_message m;
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "sender@example.org";
  m.envelope.rcpt_to.assign(rcpt.begin(), rcpt.end());
  m.envelope.remote = "127.0.0.1:40000";
  m.envelope.protocol = "ESMTP";
  m.summary.from = {"Sen Der", "sender@example.org"};
  m.summary.subject = std::move(subject);
  m.summary.search_text = st::search::build_search_text(m.summary, "", 1000);
  m.raw = std::move(raw);
  return m;
}

}  // namespace inlet::http::test
