// The web page's files as the API serves them: the document with its strict CSP, the
// hashed script and stylesheet, gzip, revalidation and methods. No sockets.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <string>

#include "inlet/http/api.hpp"
#include "inlet/store/memory_store.hpp"
#include "page_assets.hpp"

namespace bh = boost::beast::http;
using inlet::http::api;
using inlet::http::request;
using inlet::http::response;

namespace {

struct PageTest : ::testing::Test {
  inlet::store::memory_store store{{.max_messages = 10, .max_bytes = 1 << 20}};
  api a{store, {}};
  response call(bh::verb v, std::string target, std::string accept_encoding = {},
                std::string if_none_match = {}) {
    request r{v, target, 11};
    if (!accept_encoding.empty()) r.set(bh::field::accept_encoding, accept_encoding);
    if (!if_none_match.empty()) r.set(bh::field::if_none_match, if_none_match);
    r.prepare_payload();
    boost::asio::io_context io;
    auto f = boost::asio::co_spawn(io, a.handle(std::move(r)), boost::asio::use_future);
    io.run();
    return f.get();
  }
  response get(std::string target, std::string ae = {}) {
    return call(bh::verb::get, std::move(target), std::move(ae));
  }
  // The script and stylesheet the document names (relative: the page works under a webroot).
  // No std::regex: g++ 12 warns (maybe-uninitialized) inside it under ASan.
  std::string linked(const std::string& html, const std::string& attr, const std::string& ext) {
    const std::string start = attr + "=\"assets/app-";
    auto at = html.find(start);
    if (at == std::string::npos) return {};
    auto name =
        html.substr(at + attr.size() + 2, html.find('"', at + start.size()) - at - attr.size() - 2);
    const auto hash = name.substr(11, name.size() - 11 - ext.size() - 1);
    if (hash.size() != 12 || hash.find_first_not_of("0123456789abcdef") != std::string::npos ||
        !name.ends_with("." + ext))
      return {};
    return "/" + name;
  }
};

}  // namespace

TEST_F(PageTest, DocumentHasStrictPolicyAndNoInlineScript) {
  auto r = get("/");
  ASSERT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r[bh::field::content_type], "text/html; charset=utf-8");
  const std::string csp(r["Content-Security-Policy"]);
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(csp.find("script-src 'self';"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos);
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_EQ(r[bh::field::cache_control], "no-cache");
  const auto& b = r.body();
  EXPECT_EQ(b.find("<script>"), std::string::npos) << "inline script";
  EXPECT_EQ(b.find("http:"), std::string::npos);
  EXPECT_EQ(b.find("https:"), std::string::npos);
  EXPECT_FALSE(linked(b, "src", "js").empty()) << b;
  EXPECT_FALSE(linked(b, "href", "css").empty()) << b;
  EXPECT_EQ(get("/index.html").body(), b);
  // The plain list's first page is preloaded; a view with a query asks for its own.
  EXPECT_EQ(r[bh::field::link],
            "<api/v1/messages?start=0&limit=60>; rel=preload; as=fetch; crossorigin");
  EXPECT_TRUE(get("/?q=from%3Aann")[bh::field::link].empty());
  EXPECT_EQ(inlet::http::web_page(), b);
}

TEST_F(PageTest, ScriptAndStylesheetAreServedImmutable) {
  const auto html = get("/").body();
  for (auto [attr, ext, type] : {std::tuple{"src", "js", "text/javascript; charset=utf-8"},
                                 std::tuple{"href", "css", "text/css; charset=utf-8"}}) {
    auto path = linked(html, attr, ext);
    auto r = get(path);
    ASSERT_EQ(r.result_int(), 200u) << path;
    EXPECT_EQ(r[bh::field::content_type], type);
    EXPECT_EQ(r[bh::field::cache_control], "public, max-age=31536000, immutable");
    EXPECT_EQ(r["X-Content-Type-Options"], "nosniff");
    EXPECT_GT(r.body().size(), 1000u);
  }
  // The script never evaluates strings as code (the policy has no 'unsafe-eval'); the
  // sources' own rules (no innerHTML and the like) are checked by web_check.
  auto js = get(linked(html, "src", "js")).body();
  EXPECT_EQ(js.find("eval("), std::string::npos);
  EXPECT_EQ(js.find("new Function"), std::string::npos);
}

TEST_F(PageTest, GzipOnlyWhenAccepted) {
  auto path = linked(get("/").body(), "src", "js");
  auto plain = get(path);
  EXPECT_TRUE(plain[bh::field::content_encoding].empty());
  EXPECT_EQ(plain[bh::field::vary], "Accept-Encoding");
  auto gz = get(path, "br, gzip;q=0.8");
  EXPECT_EQ(gz[bh::field::content_encoding], "gzip");
  ASSERT_GE(gz.body().size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz.body()[0]), 0x1fu);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz.body()[1]), 0x8bu);
  EXPECT_LT(gz.body().size(), plain.body().size());
  EXPECT_TRUE(get(path, "gzip;q=0").body() == plain.body());
  EXPECT_TRUE(get(path, "identity").body() == plain.body());
}

TEST_F(PageTest, RevalidationAnswers304) {
  auto r = get("/");
  const std::string etag(r[bh::field::etag]);
  ASSERT_FALSE(etag.empty());
  auto again = call(bh::verb::get, "/", {}, etag);
  EXPECT_EQ(again.result_int(), 304u);
  EXPECT_TRUE(again.body().empty());
  EXPECT_EQ(call(bh::verb::get, "/", {}, "\"other\"").result_int(), 200u);
}

TEST_F(PageTest, MethodsAndUnknownAssets) {
  auto post = call(bh::verb::post, "/");
  EXPECT_EQ(post.result_int(), 405u);
  EXPECT_EQ(post[bh::field::allow], "GET, HEAD");
  auto head = call(bh::verb::head, "/");
  EXPECT_EQ(head.result_int(), 200u);
  EXPECT_TRUE(head.body().empty());
  EXPECT_EQ(head[bh::field::content_length], std::to_string(get("/").body().size()));
  EXPECT_EQ(get("/assets/app-000000000000.js").result_int(), 404u);
  EXPECT_EQ(get("/assets/").result_int(), 404u);
  EXPECT_EQ(get("/index.html").result_int(), 200u);
}
