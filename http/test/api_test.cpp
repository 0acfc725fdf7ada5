// The API as a function of in-memory Beast requests: no sockets.
#include "inlet/http/api.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <string>

#include "inlet/store/memory_store.hpp"

namespace bh = boost::beast::http;
namespace json = boost::json;
namespace st = inlet::store;
using inlet::http::api;
using inlet::http::request;
using inlet::http::response;

namespace {

st::new_message make(std::string subject, std::vector<std::string> rcpt = {"box@example.com"},
                     std::string raw = "Subject: hi\r\n\r\nbody\r\n") {
  st::new_message m;
  m.envelope = {"client.example", "sender@example.org", {}, "127.0.0.1:40000", "ESMTP", ""};
  m.envelope.rcpt_to.assign(rcpt.begin(), rcpt.end());
  m.summary.from = {"Sen Der", "sender@example.org"};
  m.summary.to = {{"", "box@example.com"}, {"Two", "two@example.com"}};
  m.summary.cc = {{"C", "c@example.com"}};
  m.summary.reply_to = {{"", "reply@example.org"}};
  m.summary.subject = std::move(subject);
  m.summary.message_id = "abc@example.org";
  m.summary.snippet = "body";
  m.summary.attachments = {{"a.pdf", "application/pdf", 1234}};
  m.raw = std::move(raw);
  m.tags = {"t1"};
  return m;
}

// A message with a text and an HTML body, an inline image and an attachment.
std::string mime_message() {
  return "From: Ann <ann@example.com>\r\n"
         "To: box@example.com\r\n"
         "Subject: mime\r\n"
         "Return-Path: <bounces@example.org>\r\n"
         "List-Unsubscribe: <https://example.com/unsubscribe>\r\n"
         "MIME-Version: 1.0\r\n"
         "Content-Type: multipart/mixed; boundary=\"o\"\r\n\r\n"
         "--o\r\n"
         "Content-Type: multipart/alternative; boundary=\"a\"\r\n\r\n"
         "--a\r\n"
         "Content-Type: text/plain\r\n\r\n"
         "Hello text\r\n"
         "--a\r\n"
         "Content-Type: multipart/related; boundary=\"r\"\r\n\r\n"
         "--r\r\n"
         "Content-Type: text/html\r\n\r\n"
         "<p>Hello <img src=\"cid:logo@x\"> <a href=\"https://x.example/\">x</a></p>\r\n"
         "--r\r\n"
         "Content-Type: image/png\r\n"
         "Content-ID: <logo@x>\r\n"
         "Content-Transfer-Encoding: base64\r\n\r\n"
         "iVBORw0KGgo=\r\n"
         "--r--\r\n"
         "--a--\r\n"
         "--o\r\n"
         "Content-Type: text/plain; name=\"hello.txt\"\r\n"
         "Content-Disposition: attachment; filename=\"hello.txt\"\r\n"
         "Content-Transfer-Encoding: base64\r\n\r\n"
         "aGVsbG8=\r\n"
         "--o--\r\n";
}

// Runs api::handle to completion on a local io_context (the memory store completes inline).
response run(const api& a, request r) {
  boost::asio::io_context io;
  auto f = boost::asio::co_spawn(io, a.handle(std::move(r)), boost::asio::use_future);
  io.run();
  return f.get();
}

request req(bh::verb v, std::string target, std::string body = {}) {
  request r{v, target, 11};
  r.body() = std::move(body);
  r.prepare_payload();
  return r;
}

json::object body_json(const response& r) {
  std::error_code ec;
  auto v = json::parse(r.body(), ec);
  EXPECT_FALSE(ec) << r.body();
  EXPECT_TRUE(v.is_object()) << r.body();
  return v.is_object() ? v.get_object() : json::object{};
}

struct ApiTest : ::testing::Test {
  st::memory_store store{{.max_messages = 100, .max_bytes = 1 << 20}};
  inlet::http::api_config cfg{};
  std::unique_ptr<api> a = std::make_unique<api>(store, cfg);
  std::string put(st::new_message m) {
    std::error_code ec;
    auto p = store.put_sync(std::move(m), ec);
    EXPECT_FALSE(ec);
    return p ? p->id : std::string{};
  }
  response call(request r) { return run(*a, std::move(r)); }
  response get(std::string target) { return call(req(bh::verb::get, std::move(target))); }
};

}  // namespace

TEST_F(ApiTest, EmptyListHasMailpitShape) {
  auto r = get("/api/v1/messages");
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r[bh::field::content_type], "application/json");
  auto o = body_json(r);
  for (auto k : {"total", "unread", "count", "messages_count", "start", "tags", "messages"})
    EXPECT_TRUE(o.contains(k)) << k;
  EXPECT_EQ(o["total"].as_int64(), 0);
  EXPECT_EQ(o["count"].as_int64(), 0);
  EXPECT_TRUE(o["messages"].as_array().empty());
}

TEST_F(ApiTest, ListNewestFirstWithSummaryFields) {
  put(make("first"));
  auto id2 = put(make("second"));
  auto o = body_json(get("/api/v1/messages"));
  EXPECT_EQ(o["total"].as_int64(), 2);
  EXPECT_EQ(o["messages_count"].as_int64(), 2);
  EXPECT_EQ(o["count"].as_int64(), 2);
  EXPECT_EQ(o["unread"].as_int64(), 2);  // nothing opened yet
  auto& msgs = o["messages"].as_array();
  ASSERT_EQ(msgs.size(), 2u);
  auto& m = msgs[0].as_object();
  EXPECT_EQ(m.at("ID").as_string(), id2);
  EXPECT_EQ(m.at("Subject").as_string(), "second");
  EXPECT_EQ(m.at("MessageID").as_string(), "abc@example.org");
  EXPECT_EQ(m.at("Read").as_bool(), false);
  EXPECT_EQ(m.at("From").at("Name").as_string(), "Sen Der");
  EXPECT_EQ(m.at("From").at("Address").as_string(), "sender@example.org");
  ASSERT_EQ(m.at("To").as_array().size(), 2u);
  EXPECT_EQ(m.at("To").as_array()[1].at("Name").as_string(), "Two");
  EXPECT_EQ(m.at("Cc").as_array().size(), 1u);
  EXPECT_EQ(m.at("Bcc").as_array().size(), 0u);
  EXPECT_EQ(m.at("ReplyTo").as_array()[0].at("Address").as_string(), "reply@example.org");
  EXPECT_EQ(m.at("Tags").as_array()[0].as_string(), "t1");
  EXPECT_EQ(m.at("Size").as_int64(), std::ssize(std::string_view("Subject: hi\r\n\r\nbody\r\n")));
  EXPECT_EQ(m.at("Attachments").as_int64(), 1);
  EXPECT_EQ(m.at("Snippet").as_string(), "body");
  std::string created(m.at("Created").as_string());
  ASSERT_EQ(created.size(), 24u) << created;  // 2026-11-22T02:10:00.123Z
  EXPECT_EQ(created[10], 'T');
  EXPECT_EQ(created.back(), 'Z');
  EXPECT_EQ(msgs[1].at("Subject").as_string(), "first");
}

TEST_F(ApiTest, PagingStartAndLimit) {
  for (int i = 0; i < 7; ++i) put(make(std::to_string(i)));
  auto o = body_json(get("/api/v1/messages?start=2&limit=3"));
  EXPECT_EQ(o["total"].as_int64(), 7);
  EXPECT_EQ(o["start"].as_int64(), 2);
  EXPECT_EQ(o["count"].as_int64(), 3);
  auto& msgs = o["messages"].as_array();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0].at("Subject").as_string(), "4");
  EXPECT_EQ(msgs[2].at("Subject").as_string(), "2");
  auto last = body_json(get("/api/v1/messages?limit=3&start=6"));
  EXPECT_EQ(last["count"].as_int64(), 1);
  auto past = body_json(get("/api/v1/messages?start=100"));
  EXPECT_EQ(past["count"].as_int64(), 0);
  EXPECT_EQ(past["total"].as_int64(), 7);
  auto dflt = body_json(get("/api/v1/messages?limit=0&other=x&start="));
  EXPECT_EQ(dflt["count"].as_int64(), 7);
}

TEST_F(ApiTest, LimitIsClampedAndDefaulted) {
  cfg.default_limit = 2;
  cfg.max_limit = 3;
  a = std::make_unique<api>(store, cfg);
  for (int i = 0; i < 5; ++i) put(make(std::to_string(i)));
  EXPECT_EQ(body_json(get("/api/v1/messages"))["count"].as_int64(), 2);
  EXPECT_EQ(body_json(get("/api/v1/messages?limit=1000000"))["count"].as_int64(), 3);
}

// Errors are plain text, the message as the body, as Mailpit's httpError writes them.
TEST_F(ApiTest, BadPagingIs400PlainText) {
  for (auto t :
       {"/api/v1/messages?start=-1", "/api/v1/messages?limit=abc", "/api/v1/messages?start=1x",
        "/api/v1/messages?limit=%zz", "/api/v1/messages?start=99999999999999999999999"}) {
    auto r = get(t);
    EXPECT_EQ(r.result_int(), 400u) << t;
    EXPECT_EQ(r[bh::field::content_type], "text/plain; charset=utf-8") << t;
    EXPECT_EQ(r.body(), "start and limit must be non-negative integers") << t;
  }
}

TEST_F(ApiTest, MessageHasFieldsEnvelopeAndBodiesFromTheRawBytes) {
  auto m = make("subj");
  m.summary.date = std::chrono::sys_days{std::chrono::year{2024} / 2 / 29} +
                   std::chrono::hours{13} + std::chrono::milliseconds{5};
  auto id = put(std::move(m));
  auto r = get("/api/v1/message/" + id);
  ASSERT_EQ(r.result_int(), 200u);
  auto o = body_json(r);
  EXPECT_EQ(o["ID"].as_string(), id);
  EXPECT_EQ(o["Subject"].as_string(), "subj");
  EXPECT_EQ(o["ReturnPath"].as_string(), "sender@example.org");  // no Return-Path: the envelope
  EXPECT_EQ(o["Date"].as_string(), "2024-02-29T13:00:00.005Z");
  EXPECT_EQ(o["Text"].as_string(), "body\r\n");
  EXPECT_EQ(o["HTML"].as_string(), "");
  EXPECT_EQ(o["Size"].as_int64(), 21);  // bytes of the default raw
  EXPECT_TRUE(o["Inline"].as_array().empty());
  EXPECT_TRUE(o["Attachments"].as_array().empty());  // the raw bytes have none
  auto& lu = o["ListUnsubscribe"].as_object();
  EXPECT_EQ(lu.at("Header").as_string(), "");
  EXPECT_TRUE(lu.at("Links").as_array().empty());
  auto& env = o["Envelope"].as_object();
  EXPECT_EQ(env.at("From").as_string(), "sender@example.org");
  EXPECT_EQ(env.at("To").as_array()[0].as_string(), "box@example.com");
  EXPECT_EQ(env.at("Helo").as_string(), "client.example");
  EXPECT_EQ(env.at("Remote").as_string(), "127.0.0.1:40000");
  for (auto k : {"MessageID", "From", "To", "Cc", "Bcc", "ReplyTo", "Tags", "Created", "Username"})
    EXPECT_TRUE(o.contains(k)) << k;
}

// Mailpit: the Date header when set, else the received time.
TEST_F(ApiTest, MessageWithoutDateHeaderHasReceivedTimeAsDate) {
  auto id = put(make("s"));
  auto o = body_json(get("/api/v1/message/" + id));
  EXPECT_EQ(o["Date"].as_string(), o["Created"].as_string());
}

TEST_F(ApiTest, PartsTextHtmlAndChecksumsFromMime) {
  auto id = put(make("s", {"box@example.com"}, mime_message()));
  auto o = body_json(get("/api/v1/message/" + id));
  EXPECT_EQ(o["Text"].as_string(), "Hello text");
  EXPECT_EQ(o["HTML"].as_string(),
            "<p>Hello <img src=\"cid:logo@x\"> <a href=\"https://x.example/\">x</a></p>");
  ASSERT_EQ(o["Inline"].as_array().size(), 1u);
  auto& in = o["Inline"].as_array()[0].as_object();
  EXPECT_EQ(in.at("PartID").as_string(), "1.2.2");
  EXPECT_EQ(in.at("ContentID").as_string(), "logo@x");
  EXPECT_EQ(in.at("ContentType").as_string(), "image/png");
  ASSERT_EQ(o["Attachments"].as_array().size(), 1u);
  auto& at = o["Attachments"].as_array()[0].as_object();
  EXPECT_EQ(at.at("PartID").as_string(), "2");
  EXPECT_EQ(at.at("FileName").as_string(), "hello.txt");
  EXPECT_EQ(at.at("Size").as_int64(), 5);
  EXPECT_EQ(at.at("Checksums").at("MD5").as_string(), "5d41402abc4b2a76b9719d911017c592");
  EXPECT_EQ(at.at("Checksums").at("SHA256").as_string(),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  auto& lu = o["ListUnsubscribe"].as_object();
  EXPECT_EQ(lu.at("Links").as_array().size(), 1u);
  EXPECT_EQ(o["ReturnPath"].as_string(), "bounces@example.org");
}

TEST_F(ApiTest, MalformedMimeStillAnswers) {
  auto id = put(make(
      "s", {"box@example.com"},
      "Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/html\r\n\r\n<p"));
  auto r = get("/api/v1/message/" + id);
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(body_json(r)["HTML"].as_string(), "<p");
}

// Every 404 has Mailpit's body, whatever was not found.
TEST_F(ApiTest, UnknownOrMalformedIdIs404PlainText) {
  put(make("s"));
  for (auto t : {"/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA", "/api/v1/message/short",
                 "/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA/raw", "/api/v1/message/",
                 "/api/v1/message/%2e%2e/raw", "/api/v1/message/x/raw/more"}) {
    auto r = get(t);
    EXPECT_EQ(r.result_int(), 404u) << t;
    EXPECT_EQ(r[bh::field::content_type], "text/plain; charset=utf-8") << t;
    EXPECT_EQ(r.body(), "404 page not found") << t;
  }
}

TEST_F(ApiTest, RawIsByteExact) {
  std::string raw("From: a@b\r\nSubject: \xe9t\xe9\r\n\r\n.leading dot\r\nNUL:\0:\r\n\xff\xfe\r\n",
                  51);
  auto id = put(make("raw", {"box@example.com"}, raw));
  auto r = get("/api/v1/message/" + id + "/raw");
  ASSERT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r[bh::field::content_type], "text/plain; charset=utf-8");  // as Mailpit
  EXPECT_EQ(r.body(), raw);
  EXPECT_TRUE(r[bh::field::content_disposition].empty());
  auto dl = get("/api/v1/message/" + id + "/raw?dl=1");
  EXPECT_EQ(dl.body(), raw);
  EXPECT_EQ(dl[bh::field::content_disposition], "attachment; filename=\"" + id + ".eml\"");
  EXPECT_EQ(r[bh::field::content_length], std::to_string(raw.size()));
}

TEST_F(ApiTest, DeleteByIdsThenAll) {
  auto id1 = put(make("1"));
  auto id2 = put(make("2"));
  put(make("3"));
  auto r = call(req(bh::verb::delete_, "/api/v1/messages",
                    R"({"IDs":[")" + id1 + R"(",")" + id2 + R"(","nope"]})"));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(r.body(), "ok");
  auto o = body_json(get("/api/v1/messages"));
  EXPECT_EQ(o["total"].as_int64(), 1);
  EXPECT_EQ(o["messages"].as_array()[0].at("Subject").as_string(), "3");
  EXPECT_EQ(get("/api/v1/message/" + id1).result_int(), 404u);

  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/messages")).result_int(), 200u);
  EXPECT_EQ(body_json(get("/api/v1/messages"))["total"].as_int64(), 0);
}

TEST_F(ApiTest, DeleteWithEmptyIdsDeletesAll) {
  put(make("1"));
  put(make("2"));
  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/messages", R"({"IDs":[]})")).result_int(), 200u);
  EXPECT_EQ(store.stats().messages, 0u);
  put(make("3"));
  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/messages", " \r\n")).result_int(), 200u);
  EXPECT_EQ(store.stats().messages, 0u);
}

TEST_F(ApiTest, DeleteWithBadBodyIs400AndDeletesNothing) {
  put(make("1"));
  for (auto b : {"{", "[]", R"({"IDs":"x"})", R"({"IDs":[1]})", "null", "\xff"}) {
    auto r = call(req(bh::verb::delete_, "/api/v1/messages", b));
    EXPECT_EQ(r.result_int(), 400u) << b;
    EXPECT_EQ(r[bh::field::content_type], "text/plain; charset=utf-8") << b;
    EXPECT_FALSE(r.body().empty()) << b;
  }
  EXPECT_EQ(store.stats().messages, 1u);
}

// Keys match case-insensitively, as in Mailpit: {"ids": [...]} deletes those IDs only.
// A body naming anything else (a Search this API does not take, a typo) is 400 and
// deletes nothing; it used to mean "no IDs", which emptied the store.
TEST_F(ApiTest, DeleteBodyKeysAreCaseInsensitiveAndNeverWidenToAll) {
  auto id1 = put(make("1"));
  put(make("2"));
  put(make("3"));
  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/messages", R"({"ids":[")" + id1 + R"("]})"))
                .result_int(),
            200u);
  EXPECT_EQ(store.stats().messages, 2u);
  EXPECT_EQ(get("/api/v1/message/" + id1).result_int(), 404u);
  for (std::string b : {R"({"ids":["x"],"IDs":["y"]})", R"({"Search":"subject:x"})",
                        R"({"id":["x"]})", R"({"IDs":["x"],"extra":1})"}) {
    EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/messages", b)).result_int(), 400u) << b;
    EXPECT_EQ(store.stats().messages, 2u) << b;
  }
}

TEST_F(ApiTest, PutBodyKeysAreCaseInsensitiveAndNeverWidenToAll) {
  auto id1 = put(make("1"));
  put(make("2"));
  EXPECT_EQ(
      call(req(bh::verb::put, "/api/v1/messages", R"({"ids":[")" + id1 + R"("],"read":true})"))
          .result_int(),
      200u);
  EXPECT_EQ(store.stats().unread, 1u);
  for (std::string b :
       {R"({"idz":["x"],"Read":true})", R"({"Search":"subject:x","Read":true,"x":1})",
        R"({"Search":"after:never","Read":true})", R"({"Search":"to:","Read":true})",
        R"({"Search":5,"Read":true})"}) {
    EXPECT_EQ(call(req(bh::verb::put, "/api/v1/messages", b)).result_int(), 400u) << b;
    EXPECT_EQ(store.stats().unread, 1u) << b;
  }
}

// A search marks only what matches (it used to mark every message).
TEST_F(ApiTest, PutWithSearchMarksOnlyMatches) {
  put(make("alpha"));
  put(make("beta"));
  put(make("gamma"));
  auto r = call(req(bh::verb::put, "/api/v1/messages", R"({"search":"subject:beta","Read":true})"));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(store.stats().unread, 2u);
  auto o = body_json(get("/api/v1/search?query=is%3Aread"));
  ASSERT_EQ(o["messages"].as_array().size(), 1u);
  EXPECT_EQ(o["messages"].as_array()[0].at("Subject").as_string(), "beta");
  // IDs win over Search, as in Mailpit.
  auto id = body_json(get("/api/v1/search?query=subject:gamma"))["messages"]
                .as_array()[0]
                .at("ID")
                .as_string();
  r = call(req(bh::verb::put, "/api/v1/messages",
               R"({"IDs":[")" + std::string(id) + R"("],"Search":"subject:alpha","Read":true})"));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(body_json(get("/api/v1/search?query=is:read"))["messages_count"].as_int64(), 2);
  EXPECT_EQ(body_json(get("/api/v1/search?query=subject:alpha"))["messages_unread"].as_int64(), 1);
}

TEST_F(ApiTest, SearchListsAndDeletesMatches) {
  put(make("Invoice 1"));
  put(make("Lunch"));
  put(make("invoice 2"));
  auto o = body_json(get("/api/v1/search?query=subject%3Ainvoice&limit=1"));
  EXPECT_EQ(o["total"].as_int64(), 3);
  EXPECT_EQ(o["messages_count"].as_int64(), 2);
  EXPECT_EQ(o["messages_unread"].as_int64(), 2);
  ASSERT_EQ(o["messages"].as_array().size(), 1u);
  EXPECT_EQ(o["messages"].as_array()[0].at("Subject").as_string(), "invoice 2");
  EXPECT_EQ(get("/api/v1/search").result_int(), 400u);
  EXPECT_EQ(get("/api/v1/search?query=").result_int(), 400u);
  EXPECT_EQ(get("/api/v1/search?query=larger:huge").result_int(), 400u);
  EXPECT_EQ(get("/api/v1/search?query=after:2026-01-01&tz=No/Where").result_int(), 400u);
  EXPECT_EQ(get("/api/v1/search?query=after:2026-01-01&tz=Europe/Berlin").result_int(), 200u);
  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/search?query=to%3A")).result_int(), 400u);
  EXPECT_EQ(store.stats().messages, 3u);
  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/search?query=subject:invoice")).result_int(),
            200u);
  EXPECT_EQ(store.stats().messages, 1u);
  EXPECT_EQ(body_json(get("/api/v1/messages"))["messages"].as_array()[0].at("Subject").as_string(),
            "Lunch");
}

TEST_F(ApiTest, LatestIsTheNewestMessage) {
  EXPECT_EQ(get("/api/v1/message/latest").result_int(), 404u);
  put(make("old"));
  auto id = put(make("new"));
  auto o = body_json(get("/api/v1/message/latest"));
  EXPECT_EQ(o["ID"].as_string(), id);
  EXPECT_EQ(o["Subject"].as_string(), "new");
  EXPECT_EQ(get("/api/v1/message/latest/raw").result_int(), 200u);
}

TEST_F(ApiTest, MailboxListsOneRecipientCaseInsensitively) {
  put(make("for ann", {"ann@example.com"}));
  put(make("for bob", {"bob@example.com"}));
  put(make("for both", {"Ann@Example.com", "bob@example.com"}));
  auto o = body_json(get("/api/v1/mailbox/ANN%40example.com?limit=10"));
  EXPECT_EQ(o["total"].as_int64(), 2);
  auto& msgs = o["messages"].as_array();
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].at("Subject").as_string(), "for both");
  EXPECT_EQ(msgs[1].at("Subject").as_string(), "for ann");
  EXPECT_EQ(body_json(get("/api/v1/mailbox/bob@example.com?start=1"))["count"].as_int64(), 1);
  EXPECT_EQ(body_json(get("/api/v1/mailbox/nobody@example.com"))["total"].as_int64(), 0);
  EXPECT_EQ(get("/api/v1/mailbox/bad%zz").result_int(), 400u);
  EXPECT_EQ(get("/api/v1/mailbox/a%2fb").result_int(), 400u);
}

TEST_F(ApiTest, ReadFlagsFollowMailpit) {
  auto id1 = put(make("one"));
  auto id2 = put(make("two", {"other@example.com"}));
  auto list = body_json(get("/api/v1/messages"));
  EXPECT_EQ(list["unread"].as_int64(), 2);
  EXPECT_FALSE(list["messages"].as_array()[0].as_object().at("Read").as_bool());

  // HEAD and /raw do not mark read; opening the message does.
  call(req(bh::verb::head, "/api/v1/message/" + id1));
  get("/api/v1/message/" + id1 + "/raw");
  EXPECT_EQ(body_json(get("/api/v1/messages"))["unread"].as_int64(), 2);
  EXPECT_TRUE(body_json(get("/api/v1/message/" + id1))["Read"].as_bool());
  list = body_json(get("/api/v1/messages"));
  EXPECT_EQ(list["unread"].as_int64(), 1);
  EXPECT_TRUE(list["messages"].as_array()[1].as_object().at("Read").as_bool());  // id1 is older
  EXPECT_EQ(body_json(get("/api/v1/mailbox/box@example.com"))["unread"].as_int64(), 0);
  EXPECT_EQ(body_json(get("/api/v1/mailbox/other@example.com"))["unread"].as_int64(), 1);

  // PUT with IDs, PUT without IDs (every message), and bad bodies change nothing.
  auto r =
      call(req(bh::verb::put, "/api/v1/messages", R"({"IDs":[")" + id1 + R"("],"Read":false})"));
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_EQ(body_json(get("/api/v1/messages"))["unread"].as_int64(), 2);
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/messages", R"({"Read":true})")).result_int(), 200u);
  EXPECT_EQ(body_json(get("/api/v1/messages"))["unread"].as_int64(), 0);
  for (std::string bad : {"", R"({"Read":"yes"})", R"({"IDs":"x","Read":true})",
                          R"({"IDs":[1],"Read":false})", "not json"})
    EXPECT_EQ(call(req(bh::verb::put, "/api/v1/messages", bad)).result_int(), 400u) << bad;
  EXPECT_EQ(body_json(get("/api/v1/messages"))["unread"].as_int64(), 0);
  EXPECT_NE(a->metrics_text().find("inlet_store_unread 0"), std::string::npos);
  // `{}`: Read left out is false, no IDs and no search is every message, as Mailpit
  // decodes it: all unread.
  EXPECT_EQ(call(req(bh::verb::put, "/api/v1/messages", "{}")).result_int(), 200u);
  EXPECT_EQ(body_json(get("/api/v1/messages"))["unread"].as_int64(), 2);
  (void)id2;
}

TEST_F(ApiTest, HeadIsGetWithoutBody) {
  auto id = put(make("Subject: s\r\n\r\nbody\r\n"));
  const std::vector<std::string> targets{"/",
                                         "/metrics",
                                         "/api/v1/messages",
                                         "/api/v1/message/" + id,
                                         "/api/v1/message/" + id + "/raw",
                                         "/api/v1/mailbox/box@example.com"};
  for (const auto& target : targets) {
    auto g = get(target);
    auto h = call(req(bh::verb::head, target));
    SCOPED_TRACE(target);
    EXPECT_EQ(h.result_int(), g.result_int());
    EXPECT_TRUE(h.body().empty());
    if (target != "/metrics") {  // the metrics count this very request
      EXPECT_EQ(h[bh::field::content_length], std::to_string(g.body().size()));
    }
    EXPECT_EQ(h[bh::field::content_type], g[bh::field::content_type]);
  }
  EXPECT_EQ(call(req(bh::verb::head, "/api/v1/message/AAAAAAAAAAAAAAAAAAAAAA")).result_int(), 404u);
  auto ev = call(req(bh::verb::head, "/api/events"));
  EXPECT_EQ(ev.result_int(), 405u);
  EXPECT_EQ(ev[bh::field::allow], "GET");
}

TEST_F(ApiTest, WrongMethodIs405WithAllow) {
  auto r = call(req(bh::verb::post, "/api/v1/messages"));
  EXPECT_EQ(r.result_int(), 405u);
  EXPECT_EQ(r[bh::field::allow], "GET, HEAD, PUT, DELETE");
  EXPECT_EQ(r.body(), "method not allowed");
  auto id = put(make("s"));
  EXPECT_EQ(call(req(bh::verb::delete_, "/api/v1/message/" + id)).result_int(), 405u);
  EXPECT_EQ(call(req(bh::verb::put, "/")).result_int(), 405u);
  EXPECT_EQ(call(req(bh::verb::post, "/metrics")).result_int(), 405u);
  EXPECT_EQ(call(req(bh::verb::post, "/api/v1/mailbox/a@b")).result_int(), 405u);
  EXPECT_EQ(store.stats().messages, 1u);
}

TEST_F(ApiTest, UnknownPathIs404PlainText) {
  for (auto t : {"/nope", "/api/v1", "/api/v1/messages/x", "/api/v3/messages", "*", "/view/x",
                 "/api/v1/tags/"}) {
    auto r = get(t);
    EXPECT_EQ(r.result_int(), 404u) << t;
    EXPECT_EQ(r.body(), "404 page not found") << t;
  }
}

TEST_F(ApiTest, HostileStringsStayValidJson) {
  auto m = make(std::string("<script>alert(1)</script> \xff\xc3(\xed\xa0\x80\"\\\x01"));
  m.summary.from.name = "\xf0\x9f\x98\x80 ok";
  auto id = put(std::move(m));
  auto o = body_json(get("/api/v1/message/" + id));  // parse validates UTF-8
  std::string subject(o["Subject"].as_string());
  EXPECT_EQ(subject.substr(0, 26), "<script>alert(1)</script> ");
  EXPECT_NE(subject.find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_NE(subject.find("\"\\\x01"), std::string::npos);
  EXPECT_EQ(o["From"].at("Name").as_string(), "\xf0\x9f\x98\x80 ok");
  auto r = get("/api/v1/message/" + id);
  EXPECT_EQ(r["X-Content-Type-Options"], "nosniff");
}

TEST_F(ApiTest, MetricsCountStoreAndRequests) {
  cfg.extra_metrics = [](std::string& out) { out += "inlet_smtp_sessions 3\n"; };
  a = std::make_unique<api>(store, cfg);
  put(make("s", {"a@x"}, "12345"));
  get("/nope");
  get("/nope");
  get("/api/v1/messages");
  auto r = get("/metrics");
  ASSERT_EQ(r.result_int(), 200u);
  const auto& b = r.body();
  EXPECT_NE(b.find("\ninlet_store_messages 1\n"), std::string::npos) << b;
  EXPECT_NE(b.find("\ninlet_store_bytes " + std::to_string(store.stats().bytes) + "\n"),
            std::string::npos);
  EXPECT_NE(b.find("# TYPE inlet_store_evicted_total counter\ninlet_store_evicted_total 0\n"),
            std::string::npos);
  EXPECT_NE(b.find("inlet_http_requests_total{code=\"404\"} 2\n"), std::string::npos);
  EXPECT_NE(b.find("inlet_http_requests_total{code=\"200\"} 1\n"), std::string::npos);
  EXPECT_NE(b.find("inlet_smtp_sessions 3\n"), std::string::npos);
}

TEST_F(ApiTest, EventsRequestIsRecognised) {
  EXPECT_TRUE(a->is_events_request(req(bh::verb::get, "/api/events")));
  EXPECT_TRUE(a->is_events_request(req(bh::verb::get, "/api/events?x=1")));
  EXPECT_TRUE(a->is_events_request(req(bh::verb::get, "//api//events")));
  EXPECT_FALSE(a->is_events_request(req(bh::verb::post, "/api/events")));
  EXPECT_FALSE(a->is_events_request(req(bh::verb::get, "/api/eventsx")));
  EXPECT_EQ(call(req(bh::verb::post, "/api/events")).result_int(), 405u);
}

TEST_F(ApiTest, KeepAliveFollowsRequest) {
  auto r1 = get("/api/v1/messages");
  EXPECT_TRUE(r1.keep_alive());
  auto q = req(bh::verb::get, "/api/v1/messages");
  q.keep_alive(false);
  EXPECT_FALSE(call(q).keep_alive());
  request old{bh::verb::get, "/nope", 10};
  EXPECT_FALSE(call(old).keep_alive());
}

TEST(Util, PercentDecode) {
  std::string out;
  EXPECT_TRUE(inlet::http::percent_decode("a%40b%2Ec+d", out, true));
  EXPECT_EQ(out, "a@b.c d");
  EXPECT_TRUE(inlet::http::percent_decode("a+b", out, false));
  EXPECT_EQ(out, "a+b");
  EXPECT_TRUE(inlet::http::percent_decode("%00", out, false));
  EXPECT_EQ(out, std::string(1, '\0'));
  EXPECT_FALSE(inlet::http::percent_decode("%", out, false));
  EXPECT_FALSE(inlet::http::percent_decode("%4", out, false));
  EXPECT_FALSE(inlet::http::percent_decode("x%g0", out, false));
}

TEST(Util, SanitizeUtf8) {
  using inlet::http::sanitize_utf8;
  EXPECT_EQ(sanitize_utf8("plain"), "plain");
  EXPECT_EQ(sanitize_utf8("\xc3\xa9"), "\xc3\xa9");
  EXPECT_EQ(sanitize_utf8("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
  EXPECT_EQ(sanitize_utf8("\xe9t\xe9"), "\xef\xbf\xbdt\xef\xbf\xbd");
  // Long ASCII runs (copied eight bytes at a time) around bad and good bytes at every
  // offset across the eight-byte steps.
  for (std::size_t at = 0; at < 20; ++at) {
    std::string in(24, 'a');
    in.insert(at, "\xff");
    std::string want(24, 'a');
    want.insert(at, "\xef\xbf\xbd");
    EXPECT_EQ(sanitize_utf8(in), want) << at;
    std::string ok(24, 'b');
    ok.insert(at, "\xc3\xa9");
    EXPECT_EQ(sanitize_utf8(ok), ok) << at;
  }
  EXPECT_EQ(sanitize_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong
  EXPECT_EQ(sanitize_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(sanitize_utf8("\xf4\x90\x80\x80").substr(0, 3), "\xef\xbf\xbd");         // > U+10FFFF
  EXPECT_EQ(sanitize_utf8("ab\xe2\x82"), "ab\xef\xbf\xbd\xef\xbf\xbd");              // truncated
  EXPECT_EQ(sanitize_utf8(std::string("\0", 1)), std::string("\0", 1));
}

TEST(Util, Rfc3339) {
  using namespace std::chrono;
  EXPECT_EQ(inlet::http::format_rfc3339(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(inlet::http::format_rfc3339(sys_days{year{2026} / 11 / 22} + hours{23} + minutes{59} +
                                        seconds{58} + milliseconds{999}),
            "2026-11-22T23:59:58.999Z");
  EXPECT_EQ(inlet::http::format_rfc3339(system_clock::time_point{} - milliseconds{1}),
            "1969-12-31T23:59:59.999Z");
}
