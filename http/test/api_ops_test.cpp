// Every operation of Mailpit's API v1 beyond listing and reading: headers, parts,
// thumbnails, views, tags, send, release, checks, chaos, info, web UI configuration,
// health, the swagger itself; and the HTTP manners (CORS, basic auth, path cleaning,
// webroot). Scripted requests, no sockets.
#include <gtest/gtest.h>
#include <inlet/outbound/smtp_relay.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <future>

#include "api_test_util.hpp"
#include "inlet/http/api.hpp"
#include "outbound.hpp"

using namespace inlet::http::test;
using inlet::http::api;
using inlet::http::api_config;
using inlet::http::request;
using inlet::http::response;

namespace {

const std::string png_b64 =
    "iVBORw0KGgoAAAANSUhEUgAAAPAAAACgCAIAAAC9uXYyAAABRElEQVR42u3SQQ0AAAjEsBOBWCQiCxV8SJMqWJbqgTciAY"
    "YGQ4OhwdAYGgwNhgZDg6ExNBgaDA2GBkNjaDA0GBoMDYbG0GBoMDQYGgyNocHQYGgwNBgaQ4OhwdBgaDA0hgZDg6HB0Bga"
    "DA2GBkODoTE0GBoMDYYGQ2NoMDQYGgwNhsbQYGgwNBgaDI2hwdBgaDA0GBpDg6HB0GBoMDSGBkODocHQYGgMDYYGQ4OhMT"
    "QYGgwNhgZDY2gwNBgaDA2GxtBgaDA0GBoMjaHB0GBoMDQYGkODocHQYGgwNIYGQ4OhwdBgaAwNhgZDg6ExtAoYGgwNhgZD"
    "Y2gwNBgaDA2GxtBgaDA0GBoMjaHB0GBoMDQYGkODocHQYGgwNIYGQ4OhwdBgaAwNhgZDg6HB0BgaDA2GBkNjaDA0GBoMDY"
    "bG0GBoMDTcWG/IQ6r6MrpnAAAAAElFTkSuQmCC";

std::string parts_message() {
  return "From: Ann <ann@example.com>\r\n"
         "To: box@example.com\r\n"
         "Subject: parts\r\n"
         "X-Two: a\r\n"
         "X-Two: b\r\n"
         "MIME-Version: 1.0\r\n"
         "Content-Type: multipart/mixed; boundary=\"o\"\r\n\r\n"
         "--o\r\n"
         "Content-Type: multipart/related; boundary=\"r\"\r\n\r\n"
         "--r\r\n"
         "Content-Type: text/html; charset=utf-8\r\n\r\n"
         "<p>Hi <img src=\"cid:pic@x\"> <a "
         "href=\"https://example.com/\">link</a><script>alert(1)</script></p>\r\n"
         "--r\r\n"
         "Content-Type: image/png\r\n"
         "Content-ID: <pic@x>\r\n"
         "Content-Transfer-Encoding: base64\r\n\r\n" +
         png_b64 +
         "\r\n"
         "--r--\r\n"
         "--o\r\n"
         "Content-Type: text/html; name=\"evil.html\"\r\n"
         "Content-Disposition: attachment; filename=\"evil.html\"\r\n\r\n"
         "<script>steal()</script>\r\n"
         "--o--\r\n";
}

struct Ops : ::testing::Test {
  st::memory_store store{{.max_messages = 100, .max_bytes = 1 << 24}};
  api_config cfg{};
  std::unique_ptr<api> a;
  void make_api() { a = std::make_unique<api>(store, cfg); }
  void SetUp() override { make_api(); }
  std::string put(st::new_message m) {
    std::error_code ec;
    auto p = store.put_sync(std::move(m), ec);
    EXPECT_FALSE(ec);
    return p ? p->id : std::string{};
  }
  response call(request r) { return run(*a, std::move(r)); }
  response get(std::string t) { return call(req(bh::verb::get, std::move(t))); }
};

}  // namespace

TEST_F(Ops, HeadersAreAMapOfLists) {
  auto id = put(message("parts", parts_message()));
  auto o = body_json(get("/api/v1/message/" + id + "/headers"));
  EXPECT_EQ(o["Subject"].as_array()[0].as_string(), "parts");
  EXPECT_EQ(o["X-Two"].as_array().size(), 2u);
  EXPECT_TRUE(o.contains("Mime-Version"));
  EXPECT_EQ(get("/api/v1/message/latest/headers").result_int(), 200u);
  EXPECT_EQ(get("/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA/headers").result_int(), 404u);
}

TEST_F(Ops, PartDownloadAndViewAreSandboxed) {
  auto id = put(message("parts", parts_message()));
  auto png = get("/api/v1/message/" + id + "/part/1.2");
  ASSERT_EQ(png.result_int(), 200u);
  EXPECT_EQ(png[bh::field::content_type], "image/png");
  EXPECT_EQ(png.body().substr(1, 3), "PNG");
  auto html = get("/api/v1/message/" + id + "/part/2");
  ASSERT_EQ(html.result_int(), 200u);
  EXPECT_EQ(html[bh::field::content_disposition], "attachment; filename=\"evil.html\"");
  EXPECT_NE(std::string(html["Content-Security-Policy"]).find("sandbox"), std::string::npos);
  auto view = get("/view/" + id + "/part/2");
  EXPECT_EQ(view[bh::field::content_disposition], "inline; filename=\"evil.html\"");
  EXPECT_NE(std::string(view["Content-Security-Policy"]).find("sandbox"), std::string::npos);
  EXPECT_EQ(get("/api/v1/message/" + id + "/part/9").result_int(), 404u);
  EXPECT_EQ(get("/api/v1/message/" + id + "/part/1").result_int(), 404u);  // a multipart
}

TEST_F(Ops, PartViewShowsOnlySafeTypesInline) {
  const std::string msg =
      "From: a@example.com\r\nTo: b@example.com\r\nSubject: types\r\nMIME-Version: 1.0\r\n"
      "Content-Type: multipart/mixed; boundary=\"o\"\r\n\r\n"
      "--o\r\nContent-Type: text/plain\r\n\r\nbody\r\n"
      "--o\r\nContent-Type: Application/PDF; name=\"r.pdf\"\r\n\r\n%PDF-1.4\r\n"
      "--o\r\nContent-Type: image/svg+xml; name=\"s.svg\"\r\n\r\n<svg onload=\"x()\"/>\r\n"
      "--o\r\nContent-Type: text/xml; charset=utf-8; name=\"d.xml\"\r\n\r\n<?xml-stylesheet?>\r\n"
      "--o\r\nContent-Type: application/x-msdownload; name=\"a.exe\"\r\n\r\nMZ\r\n"
      "--o--\r\n";
  auto id = put(message("types", msg));
  auto v = [&](const char* part) { return get("/view/" + id + "/part/" + part); };
  EXPECT_EQ(v("2")[bh::field::content_type], "application/pdf");
  EXPECT_EQ(v("2")[bh::field::content_disposition], "inline; filename=\"r.pdf\"");
  EXPECT_EQ(v("3")[bh::field::content_type], "image/svg+xml");
  EXPECT_EQ(v("3")["Content-Security-Policy"].substr(0, 9), "sandbox; ");
  EXPECT_EQ(v("4")[bh::field::content_type], "text/plain; charset=utf-8");
  EXPECT_EQ(v("5")[bh::field::content_type], "application/octet-stream");
  EXPECT_EQ(v("5")[bh::field::content_disposition], "attachment; filename=\"a.exe\"");
  // The download route keeps the declared type.
  EXPECT_EQ(get("/api/v1/message/" + id + "/part/5")[bh::field::content_type],
            "application/x-msdownload");
  for (const char* p : {"2", "3", "4", "5"})
    EXPECT_EQ(v(p)["X-Content-Type-Options"], "nosniff");
}

TEST_F(Ops, ThumbnailIsA180x120Jpeg) {
  auto id = put(message("parts", parts_message()));
  auto t = get("/api/v1/message/" + id + "/part/1.2/thumb");
  ASSERT_EQ(t.result_int(), 200u);
  EXPECT_EQ(t[bh::field::content_type], "image/jpeg");
  ASSERT_GT(t.body().size(), 4u);
  EXPECT_EQ(static_cast<unsigned char>(t.body()[0]), 0xFF);
  // Not an image: the blank thumbnail, still a JPEG.
  auto blank = get("/api/v1/message/" + id + "/part/2/thumb");
  ASSERT_EQ(blank.result_int(), 200u);
  EXPECT_EQ(blank[bh::field::content_type], "image/jpeg");
  EXPECT_NE(blank.body(), t.body());
}

TEST_F(Ops, ViewHtmlRewritesCidsAndEmbeds) {
  auto id = put(message("parts", parts_message()));
  auto v = get("/view/" + id + ".html");
  ASSERT_EQ(v.result_int(), 200u);
  EXPECT_EQ(v[bh::field::content_type], "text/html; charset=utf-8");
  EXPECT_NE(v.body().find("src=\"/api/v1/message/" + id + "/part/1.2\""), std::string::npos)
      << v.body();
  EXPECT_EQ(v.body().find("cid:"), std::string::npos);
  EXPECT_EQ(v.body().find("target=\"_blank\""), std::string::npos);
  const std::string csp(v["Content-Security-Policy"]);
  EXPECT_TRUE(csp.starts_with("sandbox")) << csp;  // the message's scripts never run
  auto e = get("/view/" + id + ".html?embed=1");
  EXPECT_NE(e.body().find("<a target=\"_blank\" rel=\"noreferrer noopener\" href="),
            std::string::npos)
      << e.body();
  auto t = get("/view/latest.txt");
  EXPECT_EQ(t.result_int(), 200u);
  EXPECT_EQ(t[bh::field::content_type], "text/plain; charset=utf-8");
  EXPECT_NE(t.body().find("Hi"), std::string::npos);
  auto plain = put(message("plain", "Subject: p\r\n\r\njust text\r\n"));
  EXPECT_EQ(get("/view/" + plain + ".html").result_int(), 404u);  // no HTML part
  EXPECT_EQ(get("/view/" + plain + ".txt").body(), "just text\r\n");
}

TEST_F(Ops, TagsListSetRenameDelete) {
  auto id1 = put(message("a", "Subject: a\r\n\r\nx\r\n"));
  auto id2 = put(message("b", "Subject: b\r\n\r\nx\r\n"));
  auto r = call(
      req(bh::verb::put, "/api/v1/tags",
          R"({"IDs":[")" + id1 + R"(",")" + id2 + R"("],"Tags":["Alpha","be ta!","alpha",""]})"));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r.body(), "ok");
  auto tags = body_value(get("/api/v1/tags"));
  ASSERT_TRUE(tags.is_array());
  EXPECT_EQ(tags.as_array(), (json::array{"Alpha", "be ta"}));
  EXPECT_EQ(body_json(get("/api/v1/messages"))["tags"].as_array().size(), 2u);
  EXPECT_EQ(body_json(get("/api/v1/message/" + id1))["Tags"].as_array(),
            (json::array{"Alpha", "be ta"}));
  // Rename (URL-encoded name), then delete.
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/tags/be%20ta", R"({"Name":"Gamma"})")).result_int(),
            200u);
  EXPECT_EQ(body_value(get("/api/v1/tags")).as_array(), (json::array{"Alpha", "Gamma"}));
  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/tags/Alpha")).result_int(), 200u);
  EXPECT_EQ(body_value(get("/api/v1/tags")).as_array(), (json::array{"Gamma"}));
  EXPECT_EQ(body_json(get("/api/v1/search?query=tag:gamma"))["messages_count"].as_int64(), 2);
  // Empty tags remove every tag of those messages; bad bodies change nothing.
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/tags", R"({"IDs":[")" + id1 + R"("],"Tags":[]})"))
                .result_int(),
            200u);
  EXPECT_EQ(body_json(get("/api/v1/message/" + id1))["Tags"].as_array().size(), 0u);
  for (std::string b : {R"({"Tags":["x"]})", R"({"IDs":"x","Tags":[]})", "nope"})
    EXPECT_EQ(call(req(bh::verb::put, "/api/v1/tags", b)).result_int(), 400u) << b;
  // Tags left out clears them, as Mailpit decodes the body.
  auto id3 = put(message("c", "Subject: c\r\n\r\nx\r\n"));
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/tags", R"({"IDs":[")" + id3 + R"("],"Tags":["t"]})"))
                .result_int(),
            200u);
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/tags", R"({"IDs":[")" + id3 + R"("]})")).result_int(),
            200u);
  EXPECT_EQ(body_json(get("/api/v1/message/" + id3))["Tags"].as_array().size(), 0u);
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/tags/Gamma", R"({"Name":"!!!"})")).result_int(), 400u);
  EXPECT_EQ(body_value(get("/api/v1/tags")).as_array(), (json::array{"Gamma"}));
}

TEST_F(Ops, SendStoresThroughTheHookAsIfReceived) {
  std::vector<inlet::http::submission> got;
  cfg.submit = [&](inlet::http::submission s,
                   std::function<void(std::error_code, std::string)> done) {
    st::new_message m;
    m.envelope = s.envelope;
    m.raw = s.raw;
    m.tags = s.tags;
    m.summary.subject = "sent";
    got.push_back(std::move(s));
    std::error_code ec;
    auto p = store.put_sync(std::move(m), ec);
    done(ec, p ? p->id : std::string{});
  };
  make_api();
  auto r = call(req(
      bh::verb::post, "/api/v1/send",
      R"({"From":{"Email":"app@example.com","Name":"App"},"To":[{"Email":"user@example.com"}],)"
      R"("Bcc":["audit@example.com"],"Subject":"Welcome","Text":"Hello!","Tags":["signup","!!"]})"));
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  auto id = std::string(body_json(r)["ID"].as_string());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].envelope.mail_from, "app@example.com");
  EXPECT_EQ(got[0].envelope.rcpt_to,
            (inlet::store::recipient_list{"user@example.com", "audit@example.com"}));
  EXPECT_EQ(got[0].envelope.protocol, "HTTP");
  EXPECT_EQ(got[0].tags, (std::vector<std::string>{"signup"}));
  auto m = body_json(get("/api/v1/message/" + id));
  EXPECT_EQ(m["Text"].as_string(), "Hello!");
  EXPECT_EQ(m["Tags"].as_array(), (json::array{"signup"}));
  auto bad = call(req(bh::verb::post, "/api/v1/send", R"({"To":[{"Email":"x@y"}]})"));
  EXPECT_EQ(bad.result_int(), 400u);
  // The send API's errors are JSON (Mailpit's JSONErrorResponse), unlike the others.
  EXPECT_EQ(bad[bh::field::content_type], "application/json");
  EXPECT_FALSE(body_json(bad)["Error"].as_string().empty());
  EXPECT_EQ(call(req(bh::verb::post, "/api/v1/send", "{")).result_int(), 400u);
  EXPECT_EQ(got.size(), 1u);
}

TEST_F(Ops, SendWithoutAHookIs400) {
  EXPECT_EQ(call(req(bh::verb::post, "/api/v1/send",
                     R"({"From":{"Email":"a@b"},"To":[{"Email":"c@d"}]})"))
                .result_int(),
            400u);
}

TEST_F(Ops, ReleaseNeedsARelayAndAllowedRecipients) {
  auto id = put(message("r", "Subject: r\r\nMessage-ID: <old@x>\r\n\r\nbody\r\n"));
  auto body = R"({"To":["someone@example.com"]})";
  EXPECT_EQ(call(req(bh::verb::post, "/api/v1/message/" + id + "/release", body)).result_int(),
            400u);
  inlet::http::relay_config rc;
  rc.host = "127.0.0.1";
  rc.port = 1;  // nothing listens: a refused connection, never a hang
  rc.allowed_recipients = "@example\\.com$";
  rc.timeout = std::chrono::seconds(5);
  cfg.relay = rc;
  make_api();
  for (std::string b :
       {R"({"To":[]})", R"({"To":["not-an-address"]})", R"({"To":["x@other.org"]})", "{}"})
    EXPECT_EQ(call(req(bh::verb::post, "/api/v1/message/" + id + "/release", b)).result_int(), 400u)
        << b;
  EXPECT_EQ(call(req(bh::verb::post, "/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA/release", body))
                .result_int(),
            404u);
  EXPECT_EQ(call(req(bh::verb::get, "/api/v1/message/" + id + "/release")).result_int(), 405u);
}

TEST_F(Ops, ReleaseCopyGetsANewMessageIdAndReturnPath) {
  inlet::http::relay_config rc;
  rc.return_path = "bounce@relay.example";
  auto out = inlet::outbound::prepare_release(
      "Return-Path: <old@x>\r\nMessage-ID:\r\n <old@x>\r\nSubject: s\r\n\r\nMessage-ID: body "
      "stays\r\n",
      rc, "new@inlet");
  EXPECT_EQ(out,
            "Return-Path: <bounce@relay.example>\r\nMessage-ID: <new@inlet>\r\nSubject: "
            "s\r\n\r\nMessage-ID: body "
            "stays\r\n");
  rc.preserve_message_ids = true;
  rc.return_path.clear();
  EXPECT_EQ(inlet::outbound::prepare_release("Message-ID: <a@b>\r\n\r\nx", rc, "n@i"),
            "Message-ID: <a@b>\r\n\r\nx");
}

namespace {
bool internal(const char* text) {
  sockaddr_storage ss{};
  if (inet_pton(AF_INET, text, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr) == 1) {
    ss.ss_family = AF_INET;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, text, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr), 1)
        << text;
    ss.ss_family = AF_INET6;
  }
  return inlet::http::detail::internal_address(reinterpret_cast<const sockaddr*>(&ss));
}
}  // namespace

TEST(LinkCheck, InternalAddressesAreKnown) {
  for (const char* a :
       {"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.251", "255.255.255.255",
        "192.0.2.7", "198.18.0.1", "203.0.113.9", "168.63.129.16", "::", "::1", "fe80::1",
        "fd00::1", "ff02::1", "fec0::1", "2001:db8::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
        "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2001:0:4136:e378:8000:63bf:80ff:fffe",
        "fe80::5efe:10.0.0.1", "2001:470:1:2::5efe:c0a8:101"})
    EXPECT_TRUE(internal(a)) << a;
  for (const char* a : {"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.169.0.1",
                        "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808",
                        "2002:808:808::"})
    EXPECT_FALSE(internal(a)) << a;
}

TEST_F(Ops, ChecksAnswerAsMailpit) {
  auto plain = put(message("p", "Subject: p\r\n\r\nno links here\r\n"));
  auto lc = body_json(get("/api/v1/message/" + plain + "/link-check"));
  EXPECT_EQ(lc["Errors"].as_int64(), 0);
  EXPECT_TRUE(lc["Links"].as_array().empty());
  EXPECT_EQ(get("/api/v1/message/" + plain + "/html-check").result_int(), 400u);  // no HTML
  auto sa = get("/api/v1/message/" + plain + "/sa-check");
  EXPECT_EQ(sa.result_int(), 400u);                         // Mailpit without SpamAssassin
  EXPECT_EQ(sa.body(), "no SpamAssassin service defined");  // plain text, as Mailpit
  EXPECT_EQ(get("/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA/sa-check").result_int(), 404u);
  auto html = put(message("h", parts_message()));
  auto hc = get("/api/v1/message/" + html + "/html-check");
  if (hc.result_int() == 400u) GTEST_SKIP() << "built without caniemail data";
  ASSERT_EQ(hc.result_int(), 200u);
  auto o = body_json(hc);
  EXPECT_TRUE(o.contains("Platforms"));
  EXPECT_TRUE(o.contains("Warnings"));
  EXPECT_GT(o["Total"].at("Tests").as_int64(), 0);
}

TEST_F(Ops, SpamChecksAsMailpit) {
  auto id = put(message("s", "Subject: s\r\n\r\nbody\r\n"));
  auto rs = get("/api/v1/message/" + id + "/rspamd-check");
  EXPECT_EQ(rs.result_int(), 400u);
  EXPECT_EQ(rs.body(), "no Rspamd service defined");
  EXPECT_EQ(get("/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA/rspamd-check").result_int(), 404u);
  auto w = body_json(get("/api/v1/webui"));
  EXPECT_FALSE(w["SpamAssassin"].as_bool());
  EXPECT_FALSE(w["Rspamd"].as_bool());
  // A spamd that is not there: 200 with the reason, Rules null (Mailpit's nil slice).
  cfg.spam_check.spamassassin = "unix:/nonexistent-inlet-dir/spamd.sock";
  cfg.spam_check.rspamd = "http://127.0.0.1:11333";
  make_api();
  auto sa = get("/api/v1/message/" + id + "/sa-check");
  ASSERT_EQ(sa.result_int(), 200u);
  EXPECT_EQ(sa[bh::field::content_type], "application/json");
  auto o = body_json(sa);
  EXPECT_FALSE(o["IsSpam"].as_bool());
  EXPECT_NE(o["Error"].as_string().find("dial unix /nonexistent-inlet-dir/spamd.sock"),
            std::string::npos);
  EXPECT_TRUE(o["Rules"].is_null());
  EXPECT_EQ(o["Score"].as_int64(), 0);
  w = body_json(get("/api/v1/webui"));
  EXPECT_TRUE(w["SpamAssassin"].as_bool());
  EXPECT_TRUE(w["Rspamd"].as_bool());
}

TEST_F(Ops, ChaosOffUnlessEnabled) {
  EXPECT_EQ(get("/api/v1/chaos").result_int(), 400u);
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/chaos", "{}")).result_int(), 400u);
  cfg.chaos = std::make_shared<inlet::smtp::chaos_state>();
  make_api();
  auto o = body_json(get("/api/v1/chaos"));
  EXPECT_EQ(o["Sender"].at("ErrorCode").as_int64(), 451);
  EXPECT_EQ(o["Sender"].at("Probability").as_int64(), 0);
  auto r = call(
      req(bh::verb::put, "/api/v1/chaos", R"({"Recipient":{"ErrorCode":550,"Probability":100}})"));
  ASSERT_EQ(r.result_int(), 200u);
  EXPECT_EQ(body_json(r)["Recipient"].at("ErrorCode").as_int64(), 550);
  EXPECT_EQ(cfg.chaos->smtp_error(inlet::smtp::chaos_stage::recipient), 550u);
  EXPECT_FALSE(cfg.chaos->smtp_error(inlet::smtp::chaos_stage::sender));
  // Out of range: 400 and nothing changes; {} resets every trigger.
  EXPECT_EQ(
      call(req(bh::verb::put, "/api/v1/chaos", R"({"Sender":{"ErrorCode":200,"Probability":5}})"))
          .result_int(),
      400u);
  EXPECT_EQ(cfg.chaos->get().recipient.probability, 100u);
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/chaos", "{}")).result_int(), 200u);
  EXPECT_EQ(cfg.chaos->get().recipient.probability, 0u);
  EXPECT_TRUE(body_json(get("/api/v1/webui"))["ChaosEnabled"].as_bool());
}

TEST_F(Ops, InfoAndWebUi) {
  cfg.label = "ci";
  cfg.version = "inlet-test";
  cfg.app_counters = [] { return inlet::http::app_counters{7, 700, 1, 0}; };
  make_api();
  auto t = message("t", "Subject: t\r\n\r\nx\r\n");
  t.tags = {"one"};
  put(std::move(t));
  put(message("u", "Subject: u\r\n\r\nx\r\n"));
  auto o = body_json(get("/api/v1/info"));
  EXPECT_EQ(o["Version"].as_string(), "inlet-test");
  EXPECT_EQ(o["Messages"].as_int64(), 2);
  EXPECT_EQ(o["Unread"].as_int64(), 2);
  EXPECT_EQ(o["Tags"].at("one").as_int64(), 1);
  EXPECT_EQ(o["RuntimeStats"].at("SMTPAccepted").as_int64(), 7);
  EXPECT_GT(o["RuntimeStats"].at("Memory").as_int64(), 0);
  auto w = body_json(get("/api/v1/webui"));
  EXPECT_EQ(w["Label"].as_string(), "ci");
  EXPECT_FALSE(w["MessageRelay"].at("Enabled").as_bool());
  EXPECT_FALSE(w["SpamAssassin"].as_bool());
}

TEST_F(Ops, HealthAndSwagger) {
  EXPECT_EQ(get("/livez").body(), "ok");
  EXPECT_EQ(get("/readyz").result_int(), 200u);
  auto s = get("/api/v1/swagger.json");
  ASSERT_EQ(s.result_int(), 200u);
  auto o = body_json(s);
  EXPECT_EQ(o["swagger"].as_string(), "2.0");
  EXPECT_TRUE(o["paths"].as_object().contains("/api/v1/search"));
}

TEST_F(Ops, CorsPreflightAndHeaders) {
  // Answered as Mailpit answers it, without CORS headers while --api-cors is off.
  auto off = call(req(bh::verb::options, "/api/v1/messages"));
  EXPECT_EQ(off.result_int(), 204u);
  EXPECT_TRUE(off["Access-Control-Allow-Origin"].empty());
  cfg.cors_origin = "*";
  make_api();
  auto pre = req(bh::verb::options, "/api/v1/messages");
  pre.set("Access-Control-Request-Headers", "Content-Type");
  auto r = call(pre);
  EXPECT_EQ(r.result_int(), 204u);
  EXPECT_EQ(r["Access-Control-Allow-Origin"], "*");
  EXPECT_NE(std::string(r["Access-Control-Allow-Methods"]).find("DELETE"), std::string::npos);
  EXPECT_EQ(r["Access-Control-Allow-Headers"], "Content-Type");
  EXPECT_EQ(get("/api/v1/messages")["Access-Control-Allow-Origin"], "*");
  EXPECT_TRUE(get("/")["Access-Control-Allow-Origin"].empty());  // the page is not the API
}

TEST_F(Ops, BasicAuthGuardsEverythingButHealth) {
  std::string err;
  cfg.ui_auth = inlet::auth::password_file::parse("user:secret\n", err);
  make_api();
  auto r = get("/api/v1/messages");
  EXPECT_EQ(r.result_int(), 401u);
  EXPECT_EQ(r[bh::field::www_authenticate], "Basic realm=\"Login\"");
  EXPECT_EQ(get("/").result_int(), 401u);
  EXPECT_EQ(get("/livez").result_int(), 200u);
  EXPECT_EQ(get("/readyz").result_int(), 200u);
  auto ok = req(bh::verb::get, "/api/v1/messages");
  ok.set(bh::field::authorization, "Basic dXNlcjpzZWNyZXQ=");  // user:secret
  EXPECT_EQ(call(ok).result_int(), 200u);
  auto wrong = req(bh::verb::get, "/api/v1/messages");
  wrong.set(bh::field::authorization, "Basic dXNlcjp3cm9uZw==");
  EXPECT_EQ(call(wrong).result_int(), 401u);
  EXPECT_FALSE(a->authorized(wrong));
  EXPECT_TRUE(a->authorized(ok));
}

TEST_F(Ops, PathsAreCleanedAndWebrootHonoured) {
  put(message("x", "Subject: x\r\n\r\nx\r\n"));
  EXPECT_EQ(get("//api/v1/messages").result_int(), 200u);
  EXPECT_EQ(get("/api//v1///messages?limit=1").result_int(), 200u);
  cfg.webroot = "mail";
  make_api();
  EXPECT_EQ(get("/mail/api/v1/messages").result_int(), 200u);
  EXPECT_EQ(get("/mail/").result_int(), 200u);
  EXPECT_EQ(get("/mail").result_int(), 308u);  // the page's relative URLs need "/mail/"
  EXPECT_EQ(get("/mail?q=a")[bh::field::location], "/mail/?q=a");
  EXPECT_EQ(get("/api/v1/messages").result_int(), 404u);
  EXPECT_EQ(get("/mailbox/api/v1/messages").result_int(), 404u);
  EXPECT_TRUE(a->is_events_request(req(bh::verb::get, "/mail/api/events")));
  auto id = body_json(get("/mail/api/v1/messages"))["messages"].as_array()[0].at("ID").as_string();
  auto v = put(message("h", parts_message()));
  EXPECT_NE(get("/mail/view/" + v + ".html").body().find("src=\"/mail/api/v1/message/"),
            std::string::npos);
  (void)id;
}

TEST_F(Ops, BeforeListsOnlyOlderMessagesAsMailpitDoes) {
  auto old_msg = message("old", "Subject: old\r\n\r\nx\r\n");
  old_msg.created = std::chrono::sys_days{std::chrono::year{2024} / 1 / 10};
  put(std::move(old_msg));
  put(message("now", "Subject: now\r\n\r\nx\r\n"));
  auto subjects = [&](std::string target) {
    std::vector<std::string> out;
    const auto page = body_json(get(target));
    for (const auto& m : page.at("messages").as_array())
      out.emplace_back(m.as_object().at("Subject").as_string());
    return out;
  };
  EXPECT_EQ(subjects("/api/v1/messages?before=2025-01-01"), (std::vector<std::string>{"old"}));
  EXPECT_EQ(subjects("/api/v1/messages?before=2024-01-01"), (std::vector<std::string>{}));
  // Unreadable: ignored, as Mailpit ignores it.
  EXPECT_EQ(subjects("/api/v1/messages?before=someday").size(), 2u);
  EXPECT_EQ(subjects("/api/v1/search?query=x&before=2025-01-01").size(), 1u);
}

TEST_F(Ops, ViewLatestOpensTheNewestMessageInThePage) {
  put(message("first", "Subject: first\r\n\r\nx\r\n"));
  auto newest = put(message("second", "Subject: second\r\n\r\nx\r\n"));
  auto r = get("/view/latest");
  EXPECT_EQ(r.result_int(), 302u);
  EXPECT_EQ(r[bh::field::location], "/?m=" + newest);
  EXPECT_EQ(get("/view/" + newest)[bh::field::location], "/?m=" + newest);
  EXPECT_EQ(get("/view/NoSuchMessageIdHere00").result_int(), 404u);
}
