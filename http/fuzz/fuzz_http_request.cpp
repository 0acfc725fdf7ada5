// Fuzz target: arbitrary bytes -> Beast request parser (server limits) -> api::handle.
// Checks that nothing crashes or throws, that the status is one the API documents, and that
// every JSON body parses as valid JSON (UTF-8 included). "@ID@" in the input is replaced by
// the ID of a stored message so the message paths are reachable.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/json.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "inlet/http/api.hpp"
#include "inlet/store/memory_store.hpp"

namespace bh = boost::beast::http;
namespace st = inlet::store;

namespace {

st::memory_store& the_store() {
  static st::memory_store s({.max_messages = 64, .max_bytes = 1 << 20});
  return s;
}

std::string refill() {
  auto& s = the_store();
  if (s.stats().messages == 0) {
    for (int i = 0; i < 3; ++i) {
      st::new_message m;
      m.envelope.rcpt_to = {"box@example.com", "Other@Example.com"};
      m.summary.subject = "s\xff\xc3(" + std::to_string(i);
      m.summary.from = {"N\xed\xa0\x80", "a@b"};
      m.summary.attachments = {{"f", "text/plain", 3}};
      m.raw = std::string("Subject: x\r\n\r\n\0\x80", 16);
      std::error_code ec;
      s.put_sync(std::move(m), ec);
    }
  }
  std::string id;  // the memory store completes inline
  s.async_list(st::list_request(0, 1),
               [&](std::error_code, st::page p) { id = p.messages.at(0)->id; });
  return id;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static inlet::http::api api(the_store(), {});
  std::string input(reinterpret_cast<const char*>(data), size);
  std::string id = refill();
  for (auto p = input.find("@ID@"); p != std::string::npos; p = input.find("@ID@", p))
    input.replace(p, 4, id);

  bh::request_parser<bh::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(1024 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  std::size_t used = parser.put(boost::asio::buffer(input), ec);
  (void)used;
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;

  boost::asio::io_context io;
  auto fut = boost::asio::co_spawn(io, api.handle(parser.release()), boost::asio::use_future);
  io.run();
  auto res = fut.get();
  switch (res.result_int()) {
    case 200:
    case 400:
    case 403:  // a Host header that does not name this server
    case 404:
    case 405:
    case 308:  // the page's path without its trailing slash ("/mail" -> "/mail/")
    case 500:
      break;
    default:
      std::abort();
  }
  if (res[bh::field::content_type] == "application/json") {
    boost::system::error_code jec;
    boost::json::parse(res.body(), jec);
    if (jec) std::abort();
  }
  if (res.result_int() == 500) std::abort();  // only a throwing renderer may cause 500
  return 0;
}
