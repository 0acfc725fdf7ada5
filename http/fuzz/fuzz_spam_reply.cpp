// Fuzz target: arbitrary bytes as spamd's REPORT reply (whole, and in two pieces split
// where the first byte says: the results must be equal) and as rspamd's /checkv2 body.
// Mailpit's JSON made of either must parse.
#include <boost/json.hpp>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "spam_check.hpp"

namespace sc = inlet::http::detail;

namespace {

sc::spam_result parse(std::string_view a, std::string_view b) {
  sc::spamd_reply_parser p(4096, 64);
  p.feed(a);
  p.feed(b);
  p.finish();
  return p.result();
}

void must_parse(const std::string& text) {
  std::error_code ec;
  boost::json::parse(text, ec);
  if (ec) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = size ? static_cast<std::size_t>(data[0]) % (size + 1) : 0;
  const auto whole = parse(in, {});
  const auto split = parse(in.substr(0, cut), in.substr(cut));
  if (whole.error != split.error || whole.is_spam != split.is_spam ||
      whole.rules.size() != split.rules.size())
    std::abort();
  for (std::size_t i = 0; i < whole.rules.size(); ++i)
    if (whole.rules[i].name != split.rules[i].name ||
        whole.rules[i].description != split.rules[i].description)
      std::abort();
  const auto json = sc::spamassassin_json(whole);
  if (json != sc::spamassassin_json(split)) std::abort();
  must_parse(json);
  must_parse(sc::rspamd_json(sc::read_rspamd_reply(200, in)));
  return 0;
}
