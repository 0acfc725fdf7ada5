// The search table: a fixed set of messages and queries with the messages each must find,
// for any store (the memory store's tests and the PostgreSQL store's tests both run it).
//
//   inlet::store::test::run_search_table(my_store);  // inside a gtest TEST
//
// The store must be empty. Messages are put in the order listed (oldest first, with
// fixed received times), then marked read as listed; every expectation is a list of
// fixture labels, newest first. The table only uses the public store interface, blocking
// on each completion, so it works with stores that complete inline or on their own
// threads (never call it from a thread such a store needs).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "inlet/store/search.hpp"
#include "inlet/store/store.hpp"
#include "sync_ops.hpp"

namespace inlet::store::test {

struct fixture_message {
  std::string label;
  new_message msg;
  bool read = false;
};

struct search_case {
  std::string query;
  std::string tz;                   ///< "" is UTC
  std::vector<std::string> expect;  ///< labels, newest first
  bool parse_error = false;         ///< the query must not parse
};

inline time_point at(int y, unsigned mo, unsigned d, int h = 0, int mi = 0) {
  using namespace std::chrono;
  return time_point(sys_days(year{y} / month{mo} / day{d}) + hours(h) + minutes(mi));
}

inline std::vector<fixture_message> search_fixture() {
  struct spec {
    const char* label;
    address from;
    address_list to;
    std::vector<address> cc, bcc, reply_to;
    const char* subject;
    const char* message_id;
    const char* text;
    std::vector<attachment_info> attachments;
    std::uint32_t inline_parts;
    std::size_t size;
    time_point created;
    std::vector<std::string> tags;
    bool read;
    std::vector<std::string> rcpt;
  };
  const std::vector<spec> specs = {
      {"ann-invoice",
       {"Ann Smith", "ann@example.com"},
       {{"Bob", "bob@example.org"}},
       {},
       {},
       {},
       "Invoice 2026-001",
       "inv001@example.com",
       "Please find the invoice attached.",
       {{"invoice.pdf", "application/pdf", 12000}},
       0,
       20000,
       at(2026, 1, 10, 9),
       {},
       true,
       {"bob@example.org"}},
      {"bob-lunch",
       {"", "bob@example.org"},
       {{"", "ann@example.com"}},
       {{"Carol", "carol@example.net"}},
       {},
       {},
       "Lunch tomorrow?",
       "l1@example.org",
       "Shall we meet at noon?",
       {},
       0,
       500,
       at(2026, 1, 15, 12),
       {"personal"},
       false,
       {"ann@example.com", "carol@example.net"}},
      {"newsletter",
       {"News", "news@list.example.com"},
       {{"", "subscribers@list.example.com"}},
       {},
       {},
       {{"", "noreply@list.example.com"}},
       "Weekly news \xE2\x80\x94 \xC3\x84pfel und Birnen",
       "n1@list.example.com",
       "Unsubscribe here.",
       {},
       2,
       1600000,
       at(2026, 2, 1, 8),
       {},
       false,
       {"subscribers@list.example.com"}},
      {"spam",
       {"Winner", "prize@spam.example"},
       {{"", "ann@example.com"}},
       {},
       {},
       {},
       "You WON",
       "w@spam.example",
       "Claim your prize now",
       {},
       0,
       3000,
       at(2026, 2, 10, 23, 30),
       {"spam"},
       false,
       {"ann@example.com"}},
      {"bcc-only",
       {"Eve", "eve@example.com"},
       {{"", "list@example.org"}},
       {},
       {{"", "dave@example.com"}},
       {},
       "Meeting notes",
       "m1@example.com",
       "Notes from the meeting.",
       {},
       0,
       800,
       at(2026, 3, 1, 10),
       {"Work", "urgent"},
       true,
       {"list@example.org", "dave@example.com"}},
      {"greek",
       {"\xCE\x95\xCE\xBB\xCE\xAD\xCE\xBD\xCE\xB7", "eleni@example.gr"},
       {{"", "team@example.com"}},
       {},
       {},
       {},
       "\xCE\x9A\xCE\x91\xCE\x9B\xCE\x97\xCE\x9C\xCE\x95\xCE\xA1\xCE\x91",
       "g1@example.gr",
       "\xCE\xBA\xCE\xB1\xCE\xBB\xCE\xB7\xCE\xBC\xCE\xB5\xCF\x81\xCE\xB1 "
       "\xCE\xBA\xCF\x8C\xCF\x83\xCE\xBC\xCE\xB5",
       {},
       0,
       900,
       at(2026, 3, 5, 10),
       {},
       false,
       {"team@example.com"}},
      {"russian",
       {"", "ivan@example.ru"},
       {{"", "team@example.com"}},
       {},
       {},
       {},
       "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",
       "r1@example.ru",
       "\xD0\x9F\xD0\xA0\xD0\x98\xD0\x92\xD0\x95\xD0\xA2 \xD0\xBC\xD0\xB8\xD1\x80",
       {},
       0,
       700,
       at(2026, 3, 10, 10),
       {},
       false,
       {"team@example.com"}},
      {"report",
       {"Finance", "finance@example.com"},
       {{"Ann Smith", "ann.smith@corp.example"}},
       {},
       {},
       {},
       "Quarterly report",
       "q1@example.com",
       "The quarterly report is ready for review.",
       {{"report.xlsx", "application/vnd.ms-excel", 4000}},
       1,
       100 * 1024 + 1,
       at(2026, 4, 1),
       {},
       false,
       {"ann.smith@corp.example"}},
  };
  std::vector<fixture_message> out;
  for (const auto& s : specs) {
    fixture_message f;
    f.label = s.label;
    f.read = s.read;
    auto& m = f.msg;
    m.envelope.helo = "client.example";
    m.envelope.mail_from = s.from.address;
    m.envelope.rcpt_to.assign(s.rcpt.begin(), s.rcpt.end());
    m.envelope.remote = "127.0.0.1:40000";
    m.envelope.protocol = "ESMTP";
    m.summary.from = s.from;
    m.summary.to = s.to;
    m.summary.cc = s.cc;
    m.summary.bcc = s.bcc;
    m.summary.reply_to = s.reply_to;
    m.summary.subject = s.subject;
    m.summary.message_id = s.message_id;
    m.summary.snippet = s.text;
    m.summary.attachments = s.attachments;
    m.summary.inline_parts = s.inline_parts;
    m.summary.search_text = search::build_search_text(m.summary, s.text, 8192);
    m.raw = "Subject: x\r\n\r\n";
    m.raw.resize(s.size, 'x');
    m.tags = s.tags;
    m.created = s.created;
    out.push_back(std::move(f));
  }
  // Envelopes that differ from the headers (for envelope_cases): a VERP bounce address
  // as MAIL FROM, and a recipient no header names (Bcc-style), in mixed case.
  for (auto& f : out) {
    if (f.label == "newsletter") f.msg.envelope.mail_from = "Bounce-7@Lists.Example.COM";
    if (f.label == "spam") f.msg.envelope.rcpt_to.push_back("Trap@Honeypot.example");
  }
  return out;
}

inline std::vector<search_case> search_cases() {
  const std::vector<std::string> all = {"report", "russian",    "greek",     "bcc-only",
                                        "spam",   "newsletter", "bob-lunch", "ann-invoice"};
  return {
      {"", "", all},
      {"   ", "", all},
      // free words and phrases (search_text: subject, addresses, text, file names)
      {"invoice", "", {"ann-invoice"}},
      {"INVOICE", "", {"ann-invoice"}},
      {"invoice.pdf", "", {"ann-invoice"}},
      {"quarterly report", "", {"report"}},
      {"\"quarterly report\"", "", {"report"}},
      {"\"report quarterly\"", "", {}},
      {"report !quarterly", "", {}},
      {"report -quarterly", "", {}},
      {"noon", "", {"bob-lunch"}},
      {"news", "", {"newsletter"}},
      {"\xC3\xA4pfel", "", {"newsletter"}},  // äpfel
      {"\xC3\x84PFEL", "", {"newsletter"}},  // ÄPFEL
      {"\xCE\xBA\xCE\xB1\xCE\xBB\xCE\xB7\xCE\xBC\xCE\xB5\xCF\x81\xCE\xB1", "", {"greek"}},
      {"\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82", "", {"russian"}},  // привет
      {"-\xD0\x9F\xD0\xA0\xD0\x98\xD0\x92\xD0\x95\xD0\xA2",
       "",  // -ПРИВЕТ
       {"report", "greek", "bcc-only", "spam", "newsletter", "bob-lunch", "ann-invoice"}},
      // header fields
      {"subject:invoice", "", {"ann-invoice"}},
      {"SUBJECT:Lunch", "", {"bob-lunch"}},
      {"subject:\"weekly news\"", "", {"newsletter"}},
      {"subject:\xC3\xA4pfel", "", {"newsletter"}},
      {"subject:\xCE\xBA\xCE\xB1\xCE\xBB\xCE\xB7\xCE\xBC\xCE\xB5\xCF\x81\xCE\xB1", "", {"greek"}},
      {"-subject:invoice",
       "",
       {"report", "russian", "greek", "bcc-only", "spam", "newsletter", "bob-lunch"}},
      {"from:ann", "", {"ann-invoice"}},
      {"from:\"ann smith\"", "", {"ann-invoice"}},
      {"from:example.com", "", {"report", "bcc-only", "newsletter", "ann-invoice"}},
      {"to:ann@example.com", "", {"spam", "bob-lunch"}},
      {"to:\"ann smith\"", "", {"report"}},
      {"cc:carol", "", {"bob-lunch"}},
      {"bcc:dave", "", {"bcc-only"}},
      {"reply-to:noreply", "", {"newsletter"}},
      {"addressed:bob@example.org", "", {"bob-lunch", "ann-invoice"}},
      {"addressed:ann", "", {"report", "spam", "bob-lunch", "ann-invoice"}},
      {"addressed:dave", "", {"bcc-only"}},
      {"message-id:inv001@example.com", "", {"ann-invoice"}},
      {"message-id:<INV001@example.com>", "", {"ann-invoice"}},
      {"message-id:inv001", "", {}},
      // tags
      {"tag:spam", "", {"spam"}},
      {"tag:SPAM", "", {"spam"}},
      {"tag:work", "", {"bcc-only"}},
      {"tag:wor", "", {}},
      {"-tag:spam",
       "",
       {"report", "russian", "greek", "bcc-only", "newsletter", "bob-lunch", "ann-invoice"}},
      {"is:tagged", "", {"bcc-only", "spam", "bob-lunch"}},
      {"!is:tagged", "", {"report", "russian", "greek", "newsletter", "ann-invoice"}},
      // flags
      {"is:read", "", {"bcc-only", "ann-invoice"}},
      {"is:unread", "", {"report", "russian", "greek", "spam", "newsletter", "bob-lunch"}},
      {"-is:read", "", {"report", "russian", "greek", "spam", "newsletter", "bob-lunch"}},
      {"has:attachment", "", {"report", "ann-invoice"}},
      {"has:attachments", "", {"report", "ann-invoice"}},
      {"-has:attachment", "", {"russian", "greek", "bcc-only", "spam", "newsletter", "bob-lunch"}},
      {"has:inline", "", {"report", "newsletter"}},
      {"has:inlines", "", {"report", "newsletter"}},
      // sizes (1024-based; larger is strict)
      {"larger:1M", "", {"newsletter"}},
      {"larger:1.5M", "", {"newsletter"}},
      {"larger:100K", "", {"report", "newsletter"}},
      {"larger:102401", "", {"newsletter"}},
      {"smaller:1K", "", {"russian", "greek", "bcc-only", "bob-lunch"}},
      {"smaller:1kb larger:600", "", {"russian", "greek", "bcc-only"}},
      {"-larger:100K", "", {"russian", "greek", "bcc-only", "spam", "bob-lunch", "ann-invoice"}},
      {"larger:1G", "", {}},
      // dates (received time; a date without a time is the start of that day in tz)
      {"after:2026-03-01", "", {"report", "russian", "greek", "bcc-only"}},
      {"before:2026-02-01", "", {"bob-lunch", "ann-invoice"}},
      {"before:2026/02/01", "", {"bob-lunch", "ann-invoice"}},
      {"after:2026.02.11", "", {"report", "russian", "greek", "bcc-only"}},
      {"after:2026-02-11", "Europe/Berlin", {"report", "russian", "greek", "bcc-only", "spam"}},
      {"after:2026-02-11", "America/New_York", {"report", "russian", "greek", "bcc-only"}},
      {"before:2026-02-10", "America/New_York", {"newsletter", "bob-lunch", "ann-invoice"}},
      {"before:\"2026-01-15 12:00\"", "", {"ann-invoice"}},
      {"after:2026-01-15T12:00:00Z",
       "",
       {"report", "russian", "greek", "bcc-only", "spam", "newsletter", "bob-lunch"}},
      {"after:2026-01-15T13:00+01:00",
       "Asia/Tokyo",
       {"report", "russian", "greek", "bcc-only", "spam", "newsletter", "bob-lunch"}},
      {"after:01/15/2026",
       "",
       {"report", "russian", "greek", "bcc-only", "spam", "newsletter", "bob-lunch"}},
      {"-after:2026-02-01", "", {"bob-lunch", "ann-invoice"}},
      {"after:2026-01-01 before:2026-02-01", "", {"bob-lunch", "ann-invoice"}},
      {"after:1767225600", "", all},  // 2026-01-01T00:00Z as Unix seconds
      // combinations
      {"subject:invoice from:ann has:attachment is:read", "", {"ann-invoice"}},
      {"from:ann -subject:invoice", "", {}},
      {"tag:personal cc:carol is:unread smaller:1K before:2026-02-01", "", {"bob-lunch"}},
      {"addressed:ann -tag:spam has:attachment", "", {"report", "ann-invoice"}},
      // ignored and literal terms
      {"to:", "", all},
      {"subject:\"\"", "", all},
      {"is:bogus", "", {}},
      {"-", "", {"ann-invoice"}},      // a lone "-" is a word ("2026-001"), not a negation
      {"Mars/Base", "Mars/Base", {}},  // an unknown zone matters only to dates
      // errors: the whole query is refused (Mailpit would ignore the term)
      {"after:yesterday", "", {}, true},
      {"after:2026-02-30", "", {}, true},
      {"before:2026-13-01", "", {}, true},
      {"larger:lots", "", {}, true},
      {"smaller:5T", "", {}, true},
      {"after:2026-01-01", "Mars/Base", {}, true},
  };
}

/// Queries built by code rather than parsed (the envelope terms have no syntax; MailHog's
/// search builds them), with the labels each must find, newest first.
struct built_case {
  std::string name;
  search::query query;
  std::vector<std::string> expect;
};

/// A match term; `value` must be folded already (as search::parse folds it).
inline search::term match_term(search::field where, std::string value,
                               std::vector<search::field> also = {}, bool negated = false) {
  search::term t;
  t.where = where;
  t.value = std::move(value);
  t.also = std::move(also);
  t.negated = negated;
  return t;
}

inline std::vector<built_case> envelope_cases() {
  using search::field;
  auto one = [](search::term t) {
    search::query q;
    q.terms.push_back(std::move(t));
    return q;
  };
  search::query read_and_envelope;
  search::parse("is:read", "", read_and_envelope);
  read_and_envelope.terms.push_back(match_term(field::envelope_to, "example.com"));
  return {
      {"envelope sender", one(match_term(field::envelope_from, "bounce-7")), {"newsletter"}},
      {"envelope sender, folded",
       one(match_term(field::envelope_from, "lists.example.com")),
       {"newsletter"}},
      {"envelope sender is not the From header",
       one(match_term(field::envelope_from, "news@")),
       {}},
      {"From header or envelope sender (header)",
       one(match_term(field::from, "news@", {field::envelope_from})),
       {"newsletter"}},
      {"envelope sender or From header (envelope)",
       one(match_term(field::envelope_from, "bounce-7", {field::from})),
       {"newsletter"}},
      {"negated envelope sender",
       one(match_term(field::envelope_from, "example.com", {}, true)),
       {"russian", "greek", "spam", "bob-lunch"}},
      {"envelope recipient no header names",
       one(match_term(field::envelope_to, "honeypot")),
       {"spam"}},
      {"envelope recipient, whole and folded",
       one(match_term(field::envelope_to, "trap@honeypot.example")),
       {"spam"}},
      {"To header does not see it", one(match_term(field::to, "honeypot")), {}},
      {"any envelope recipient",
       one(match_term(field::envelope_to, "ann@example.com")),
       {"spam", "bob-lunch"}},
      {"envelope recipient or To header (envelope)",
       one(match_term(field::envelope_to, "dave", {field::to})),
       {"bcc-only"}},
      {"To header or envelope recipient (both)",
       one(match_term(field::to, "team@", {field::envelope_to})),
       {"russian", "greek"}},
      {"negated envelope recipient or To header",
       one(match_term(field::envelope_to, "example.com", {field::to}, true)),
       {"report", "ann-invoice"}},
      {"with a parsed term", read_and_envelope, {"bcc-only"}},
  };
}

/// How the fixture hands its search text to the store.
enum class search_text_mode {
  given,     ///< summary.search_text filled by the caller
  deferred,  ///< left empty: the store derives it from a MIME body holding the same words
};

/// The raw bytes of a fixture message for the deferred mode: its body words (kept in the
/// snippet) as a MIME text part, quoted-printable where they are not ASCII (so the store
/// decodes them), padded with blanks to the message's size (`larger:` and `smaller:`).
inline std::string fixture_raw(const summary& s, std::size_t size) {
  bool ascii = true;
  for (unsigned char c : s.snippet) ascii = ascii && c < 0x80;
  std::string raw = "Subject: x\r\nContent-Type: text/plain; charset=utf-8\r\n";
  if (ascii) {
    raw += "\r\n" + s.snippet;
  } else {
    raw += "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
    static constexpr char hex[] = "0123456789ABCDEF";
    for (unsigned char c : s.snippet) {
      if (c < 0x80 && c != '=') {
        raw += static_cast<char>(c);
      } else {
        raw += '=';
        raw += hex[c >> 4];
        raw += hex[c & 15];
      }
    }
  }
  raw += "\r\n";
  if (raw.size() < size) raw.resize(size, ' ');
  return raw;
}

/// Puts the fixture; returns label -> ID.
inline std::map<std::string, std::string> load_search_fixture(
    store& s, search_text_mode mode = search_text_mode::given) {
  std::map<std::string, std::string> ids;
  std::vector<std::string> read_ids;
  for (auto& f : search_fixture()) {
    if (mode == search_text_mode::deferred) {
      f.msg.summary.search_text.clear();
      const std::size_t size = f.msg.raw.size();
      f.msg.raw = fixture_raw(f.msg.summary, size);
      EXPECT_EQ(f.msg.raw.size(), size) << f.label;
    }
    std::error_code ec;
    auto m = s.put_sync(std::move(f.msg), ec);
    EXPECT_FALSE(ec) << f.label << ": " << ec.message();
    if (!m) continue;
    ids[f.label] = m->id;
    if (f.read) read_ids.push_back(m->id);
  }
  auto r = set_read_sync(s, selection::of_ids(read_ids), true);
  EXPECT_FALSE(r.ec);
  EXPECT_EQ(r.value, read_ids.size());
  return ids;
}

/// Runs every case of the table against `s` (empty on entry).
inline void run_search_table(store& s, search_text_mode mode = search_text_mode::given) {
  auto ids = load_search_fixture(s, mode);
  std::map<std::string, std::string> label_of;
  for (const auto& [label, id] : ids) label_of[id] = label;
  for (const auto& c : search_cases()) {
    SCOPED_TRACE("query '" + c.query + "' tz '" + c.tz + "'");
    search::query q;
    std::string why;
    auto ec = search::parse(c.query, c.tz, q, &why);
    if (c.parse_error) {
      EXPECT_TRUE(ec) << "parsed, but should not";
      EXPECT_FALSE(why.empty());
      continue;
    }
    ASSERT_FALSE(ec) << why;
    list_request req(0, 100);
    req.query = q;
    auto r = list_sync(s, std::move(req));
    ASSERT_FALSE(r.ec) << r.ec.message();
    std::vector<std::string> got;
    for (const auto& m : r.value.messages) got.push_back(label_of[m->id]);
    EXPECT_EQ(got, c.expect);
    EXPECT_EQ(r.value.matched, c.expect.size());
    EXPECT_EQ(r.value.total, ids.size());
    std::size_t unread = 0;
    for (const auto& m : r.value.messages) unread += !m->is_read();
    EXPECT_EQ(r.value.matched_unread, unread);
  }
  for (const auto& c : envelope_cases()) {
    SCOPED_TRACE("built query '" + c.name + "'");
    list_request req(0, 100);
    req.query = c.query;
    auto r = list_sync(s, std::move(req));
    ASSERT_FALSE(r.ec) << r.ec.message();
    std::vector<std::string> got;
    for (const auto& m : r.value.messages) got.push_back(label_of[m->id]);
    EXPECT_EQ(got, c.expect);
    EXPECT_EQ(r.value.matched, c.expect.size());
  }
}

}  // namespace inlet::store::test
