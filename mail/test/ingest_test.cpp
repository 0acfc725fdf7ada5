#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <inlet/buffer/segment.hpp>
#include <inlet/mail/content_filter.hpp>
#include <inlet/mail/ingest.hpp>
#include <inlet/store/error.hpp>
#include <inlet/store/memory_store.hpp>

#include "test_messages.hpp"

namespace {

namespace mail = inlet::mail;
namespace st = inlet::store;
namespace sm = inlet::smtp;

// Keeps what ingest hands the store, and answers like a store that holds it.
class recording_store final : public st::store {
 public:
  std::vector<st::new_message> puts;
  std::error_code fail;

  void put(st::new_message msg, st::put_handler done) override {
    if (fail) return done(fail, nullptr);
    auto rec = std::make_shared<st::stored_message>();
    rec->id = st::make_message_id();
    rec->summary = msg.summary;
    rec->size = msg.raw.size();
    puts.push_back(std::move(msg));
    done({}, rec);
  }
  st::store_stats stats() const override { return {}; }
  st::store_health health() const override { return {}; }
  std::uint64_t subscribe(st::event_observer) override { return 0; }
  void unsubscribe(std::uint64_t) override {}

 protected:
  static std::error_code no() { return make_error_code(st::errc::unavailable); }
  void do_list(st::list_request, st::handler<void(std::error_code, st::page)> h) override {
    std::move(h)(no(), st::page{});
  }
  void do_get(std::string, st::handler<void(std::error_code, st::message_ptr)> h) override {
    std::move(h)(no(), nullptr);
  }
  void do_remove(st::selection, st::handler<void(std::error_code, std::size_t)> h) override {
    std::move(h)(no(), 0);
  }
  void do_set_read(st::selection, bool, st::handler<void(std::error_code, std::size_t)> h) override {
    std::move(h)(no(), 0);
  }
  void do_set_tags(st::selection, std::vector<std::string>,
                   st::handler<void(std::error_code, std::size_t)> h) override {
    std::move(h)(no(), 0);
  }
  void do_list_tags(st::handler<void(std::error_code, std::vector<std::string>)> h) override {
    std::move(h)(no(), std::vector<std::string>{});
  }
  void do_rename_tag(std::string, std::string,
                     st::handler<void(std::error_code, std::size_t)> h) override {
    std::move(h)(no(), 0);
  }
  void do_delete_tag(std::string, st::handler<void(std::error_code, std::size_t)> h) override {
    std::move(h)(no(), 0);
  }
};

sm::received_message smtp_message(const std::string& raw) {
  sm::received_message m;
  m.envelope.helo = "client.example";
  m.envelope.mail_from = "ann@example.com";
  m.envelope.rcpt_to = {"bob@example.org", "hidden@example.com"};
  m.envelope.proto = sm::protocol::esmtp;
  m.envelope.tls = true;
  m.envelope.remote_address = "127.0.0.1";
  m.envelope.remote_port = 40000;
  m.body = inlet::buffer::segment::copy_of(raw);
  return m;
}

sm::delivery_result deliver(mail::ingest& in, const std::string& raw) {
  std::promise<sm::delivery_result> p;
  in.deliver(smtp_message(raw), [&](sm::delivery_result r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

std::string terms_file(const std::string& text) {
  char path[] = "/tmp/inlet-terms-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(ingest, smtp_delivery_stores_envelope_summary_tags_and_bytes) {
  recording_store store;
  mail::ingest_options o;
  std::string err;
  ASSERT_TRUE(mail::tag_rules::parse({"money=figures"}, "", o.rules, err)) << err;
  mail::ingest in(&store, nullptr, std::move(o));
  auto r = deliver(in, mail::test::plain_message);
  EXPECT_EQ(r.status.code, 250);
  ASSERT_EQ(store.puts.size(), 1u);
  const auto& m = store.puts[0];
  EXPECT_EQ(m.raw, mail::test::plain_message);  // the bytes exactly as received
  EXPECT_EQ(m.envelope.protocol, "ESMTPS");
  EXPECT_EQ(m.envelope.remote, "127.0.0.1:40000");
  EXPECT_EQ(m.summary.subject, "Quarterly r\xC3\xA9sultats");
  ASSERT_EQ(m.summary.bcc.size(), 1u);
  EXPECT_EQ(m.summary.bcc[0].address, "hidden@example.com");
  // The message's own tags, then the rules'.
  EXPECT_EQ(m.tags, (std::vector<std::string>{"Alpha", "beta", "money"}));
  EXPECT_TRUE(m.summary.search_text.empty());  // derived by the store on demand
  EXPECT_EQ(in.counters().stored.load(), 1u);
  EXPECT_EQ(in.counters().bytes.load(), mail::test::plain_message.size());
}

TEST(ingest, submit_takes_the_same_path) {
  recording_store store;
  mail::ingest_options o;
  std::string err;
  ASSERT_TRUE(mail::tag_rules::parse({"money=figures"}, "", o.rules, err)) << err;
  mail::ingest in(&store, nullptr, std::move(o));
  mail::submission s;
  s.raw = mail::test::plain_message;
  s.envelope.rcpt_to = {"bob@example.org", "hidden@example.com"};
  s.tags = {"asked"};
  std::string id;
  in.submit(std::move(s), [&](std::error_code ec, std::string got) {
    EXPECT_FALSE(ec);
    id = std::move(got);
  });
  EXPECT_EQ(id.size(), st::id_length);
  ASSERT_EQ(store.puts.size(), 1u);
  EXPECT_EQ(store.puts[0].tags, (std::vector<std::string>{"asked", "Alpha", "beta", "money"}));
  EXPECT_EQ(store.puts[0].summary.bcc.size(), 1u);
}

TEST(ingest, filter_tags_spam_before_the_rules_run) {
  const std::string path = terms_file("figures\t2\n");
  std::string err;
  auto filter = mail::content_filter::create(path, false, 1.0, err);
  ASSERT_TRUE(filter) << err;
  recording_store store;
  mail::ingest_options o;
  ASSERT_TRUE(mail::tag_rules::parse({"seen=figures"}, "", o.rules, err)) << err;
  o.tags.x_tags = false;
  mail::ingest in(&store, filter.get(), std::move(o));
  EXPECT_EQ(deliver(in, mail::test::plain_message).status.code, 250);
  ASSERT_EQ(store.puts.size(), 1u);
  EXPECT_EQ(store.puts[0].tags, (std::vector<std::string>{"spam", "seen"}));
  EXPECT_EQ(in.counters().filter_tagged.load(), 1u);
  std::remove(path.c_str());
}

TEST(ingest, filter_rejection_stores_nothing_and_answers_550) {
  const std::string path = terms_file("figures\t2\n");
  std::string err;
  auto filter = mail::content_filter::create(path, true, 1.0, err);
  ASSERT_TRUE(filter) << err;
  recording_store store;
  mail::ingest in(&store, filter.get());
  auto r = deliver(in, mail::test::plain_message);
  EXPECT_EQ(r.status.code, 550);
  EXPECT_TRUE(store.puts.empty());
  std::error_code submitted;
  in.submit({{}, mail::test::plain_message, {}}, [&](std::error_code ec, std::string) { submitted = ec; });
  EXPECT_EQ(submitted, st::errc::invalid_argument);
  EXPECT_TRUE(store.puts.empty());
  EXPECT_EQ(in.counters().filter_rejected.load(), 2u);
  std::remove(path.c_str());
}

TEST(ingest, store_errors_become_the_smtp_reply) {
  recording_store store;
  mail::ingest in(&store, nullptr);
  store.fail = make_error_code(st::errc::too_large);
  EXPECT_EQ(deliver(in, mail::test::plain_message).status.code, 552);
  store.fail = make_error_code(st::errc::unavailable);
  EXPECT_EQ(deliver(in, mail::test::plain_message).status.code, 451);
  EXPECT_EQ(in.counters().store_errors.load(), 2u);
}

TEST(ingest, sink_accepts_without_a_store) {
  mail::ingest in(nullptr, nullptr);
  EXPECT_EQ(deliver(in, mail::test::multipart_message).status.code, 250);
  std::error_code ec;
  in.submit({{}, "x", {}}, [&](std::error_code e, std::string) { ec = e; });
  EXPECT_EQ(ec, st::errc::unavailable);
}

TEST(ingest, heavy_messages_are_answered_from_the_worker_pool) {
  recording_store store;
  mail::ingest_options o;
  o.heavy_bytes = 100;  // every test message is heavy
  mail::ingest in(&store, nullptr, std::move(o));
  EXPECT_EQ(deliver(in, mail::test::multipart_message).status.code, 250);
  ASSERT_EQ(store.puts.size(), 1u);
  EXPECT_EQ(store.puts[0].summary.attachments.size(), 2u);
}

TEST(ingest, metrics_name_every_counter) {
  mail::ingest in(nullptr, nullptr);
  std::string out;
  in.append_metrics(out);
  for (const char* name : {"inlet_messages_received_total", "inlet_messages_accepted_total",
                           "inlet_store_errors_total", "inlet_filter_rejected_total"})
    EXPECT_NE(out.find(std::string("\n") + name + " "), std::string::npos) << name;
}

}  // namespace

// Mailpit's --ignore-duplicate-ids: a Message-ID the store holds is answered and dropped;
// other IDs and messages without one are stored; without the option every copy is.
TEST(ingest, duplicate_message_ids_are_answered_and_dropped_when_asked) {
  const std::string a = "Message-ID: <same@example.com>\r\nSubject: one\r\n\r\nx\r\n";
  const std::string b = "Message-ID: <Same@Example.com>\r\nSubject: two\r\n\r\ny\r\n";
  const std::string c = "Message-ID: <other@example.com>\r\nSubject: three\r\n\r\nz\r\n";
  const std::string none = "Subject: no id\r\n\r\nw\r\n";
  st::memory_store store;
  mail::ingest_options o;
  o.ignore_duplicate_ids = true;
  mail::ingest in(&store, nullptr, std::move(o));
  EXPECT_EQ(deliver(in, a).status.code, 250);
  auto dup = deliver(in, b);  // the same ID (compared as Mailpit's search does)
  EXPECT_EQ(dup.status.code, 250);
  EXPECT_EQ(dup.status.text, "Ok: queued");
  EXPECT_EQ(deliver(in, c).status.code, 250);
  EXPECT_EQ(deliver(in, none).status.code, 250);
  EXPECT_EQ(deliver(in, none).status.code, 250);
  EXPECT_EQ(store.stats().messages, 4u);
  EXPECT_EQ(in.counters().duplicates_ignored.load(), 1u);
  EXPECT_EQ(in.counters().stored.load(), 4u);

  st::memory_store all;
  mail::ingest keep(&all, nullptr, {});
  deliver(keep, a);
  deliver(keep, a);
  EXPECT_EQ(all.stats().messages, 2u);
}
