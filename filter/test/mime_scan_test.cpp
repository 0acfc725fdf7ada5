// inlet::filter over messages parsed by inlet::mime: what is scanned and what is not,
// with the raw message split at every offset into two fragments.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "decode.hpp"
#include "compile.hpp"
#include "inlet/filter/mime_scan.hpp"

namespace f = inlet::filter;
namespace mime = inlet::mime;
using inlet::filter::test::base64_encode;
using inlet::filter::test::from_utf8;

namespace {

using inlet::filter::test::make;
using inlet::filter::test::matched;

// Every split of `raw` into two fragments, parsed over the pieces (no linearising).
template <class Fn>
void for_every_split(const std::string& raw, Fn fn) {
  for (std::size_t cut = 0; cut <= raw.size(); ++cut) {
    std::string_view pieces[2] = {std::string_view(raw).substr(0, cut), std::string_view(raw).substr(cut)};
    mime::parsed_message m = mime::parse(std::span<const std::string_view>(pieces, 2));
    fn(m, cut);
  }
}

std::string sample_message() {
  std::string latin1 = from_utf8("Un café crème, s'il vous plaît.\r\n", "ISO-8859-1");
  std::string utf16 = from_utf8("Claim your €100 “bonus” now", "UTF-16LE");
  return "From: Someone <a@example.com>\r\n"
         "To: b@example.com\r\n"
         // "Gagnez un iPhone gratuit" in an RFC 2047 encoded word
         "Subject: =?UTF-8?B?R2FnbmV6IHVuIGlQaG9uZSBncmF0dWl0?=\r\n"
         "MIME-Version: 1.0\r\n"
         "Content-Type: multipart/mixed; boundary=\"outer\"\r\n"
         "\r\n"
         "preamble mentions lottery winner but is not a part\r\n"
         "--outer\r\n"
         "Content-Type: multipart/alternative; boundary=\"inner\"\r\n"
         "\r\n"
         "--inner\r\n"
         "Content-Type: text/plain; charset=us-ascii\r\n"
         "Content-Transfer-Encoding: quoted-printable\r\n"
         "\r\n"
         "Buy cheap vi=\r\nagra now=2E\r\n"
         "--inner\r\n"
         "Content-Type: text/html; charset=utf-8\r\n"
         "Content-Transfer-Encoding: base64\r\n"
         "\r\n" +
         base64_encode("<p>Get <b>FREE MONEY</b> at <a href=\"http://spam-domain.example/\">here</a></p>") +
         "--inner--\r\n"
         "--outer\r\n"
         "Content-Type: text/plain; charset=iso-8859-1\r\n"
         "Content-Transfer-Encoding: 8bit\r\n"
         "\r\n" +
         latin1 +
         "--outer\r\n"
         "Content-Type: text/plain; charset=utf-16le\r\n"
         "Content-Transfer-Encoding: base64\r\n"
         "\r\n" +
         base64_encode(utf16) +
         "--outer\r\n"
         "Content-Type: application/octet-stream\r\n"
         "Content-Disposition: attachment; filename=\"a.bin\"\r\n"
         "Content-Transfer-Encoding: base64\r\n"
         "\r\n" +
         base64_encode("attachment-only-term inside a binary attachment") +
         "--outer\r\n"
         "Content-Type: text/plain\r\n"
         "Content-Disposition: attachment; filename=\"notes.txt\"\r\n"
         "\r\n"
         "another attachment-only-term in a text attachment\r\n"
         "--outer--\r\n"
         "epilogue lottery winner\r\n";
}

class FilterMime : public ::testing::TestWithParam<f::engine_kind> {};

}  // namespace

TEST_P(FilterMime, ScansDecodedTextNotAttachmentsAtEverySplit) {
  auto fl = make(
      "iphone gratuit\n"          // only in the RFC 2047 Subject
      "viagra\n"                  // across a QP soft line break
      "free money\n"              // in a base64 text/html part
      "spam-domain.example\n"     // in an href of that part
      "café crème\n"              // in an ISO-8859-1 part
      "€100 “bonus”\n"            // in a UTF-16LE base64 part
      "attachment-only-term\n"    // only inside attachments: must not match
      "lottery winner\n",         // only in preamble/epilogue: not text parts
      GetParam());
  const std::string raw = sample_message();
  const std::set<std::string> want{"iphone gratuit", "viagra", "free money", "spam-domain.example",
                                   "café crème", "€100 “bonus”"};
  f::counters c;
  std::size_t runs = 0;
  for_every_split(raw, [&](const mime::parsed_message& m, std::size_t cut) {
    auto v = f::scan_message(fl, m, 1.0, &c);
    ASSERT_EQ(matched(v), want) << "split at " << cut;
    ++runs;
  });
  EXPECT_EQ(c.load().messages_scanned, runs);
  EXPECT_EQ(c.load().messages_matched, runs);
}

TEST_P(FilterMime, EncodedSubjectOnly) {
  auto fl = make("iphone gratuit\n", GetParam());
  const std::string raw =
      "Subject: =?ISO-8859-1?Q?Gagnez_un_iPhone_gratuit?=\r\n"
      "\r\n"
      "nothing here\r\n";
  ASSERT_EQ(raw.find("iPhone gratuit"), std::string::npos);
  for_every_split(raw, [&](const mime::parsed_message& m, std::size_t) {
    EXPECT_EQ(matched(f::scan_message(fl, m)), std::set<std::string>{"iphone gratuit"});
  });
}

TEST_P(FilterMime, TermOnlyInAttachmentIsNotMatched) {
  auto fl = make("secret-term\n", GetParam());
  const std::string raw =
      "Subject: hello\r\n"
      "Content-Type: multipart/mixed; boundary=b\r\n"
      "\r\n"
      "--b\r\n"
      "Content-Type: text/plain\r\n"
      "\r\n"
      "clean body\r\n"
      "--b\r\n"
      "Content-Type: application/pdf\r\n"
      "Content-Disposition: attachment; filename=x.pdf\r\n"
      "\r\n"
      "secret-term\r\n"
      "--b--\r\n";
  for_every_split(raw, [&](const mime::parsed_message& m, std::size_t) {
    EXPECT_FALSE(f::scan_message(fl, m).matched());
  });
}

INSTANTIATE_TEST_SUITE_P(Engines, FilterMime,
                         ::testing::Values(f::engine_kind::hyperscan, f::engine_kind::aho_corasick),
                         [](const auto& info) {
                           return info.param == f::engine_kind::hyperscan ? std::string("hyperscan")
                                                                         : std::string("aho_corasick");
                         });
