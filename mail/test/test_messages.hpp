// Messages the mail tests share, CRLF line ends.
#pragma once

#include <string>

namespace inlet::mail::test {

inline const std::string plain_message =
    "From: \"Ann Example\" <ann@example.com>\r\n"
    "To: Bob <bob@example.org>, carol@example.net\r\n"
    "Cc: dave@example.com\r\n"
    "Subject: Quarterly =?UTF-8?B?csOpc3VsdGF0cw==?=\r\n"
    "Date: Tue, 03 Mar 2026 10:20:30 +0100\r\n"
    "Message-ID: <abc.123@example.com>\r\n"
    "X-Tags: Alpha, beta\r\n"
    "\r\n"
    "Hello Bob,\r\n"
    "the   figures are   in.\r\n";

// text + html alternative, an inline image (Content-ID), a PDF attachment and an attached
// message (which counts as one attachment, its own parts not listed).
inline const std::string multipart_message =
    "From: sender+news@example.com\r\n"
    "To: list@example.com\r\n"
    "Subject: Parts\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=\"outer\"\r\n"
    "\r\n"
    "--outer\r\n"
    "Content-Type: multipart/related; boundary=\"rel\"\r\n"
    "\r\n"
    "--rel\r\n"
    "Content-Type: multipart/alternative; boundary=\"alt\"\r\n"
    "\r\n"
    "--alt\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "Content-Transfer-Encoding: quoted-printable\r\n"
    "\r\n"
    "Caf=C3=A9 menu\r\n"
    "--alt\r\n"
    "Content-Type: text/html; charset=utf-8\r\n"
    "\r\n"
    "<html><body><p>Caf\xC3\xA9 <b>menu</b></p><script>x()</script></body></html>\r\n"
    "--alt--\r\n"
    "--rel\r\n"
    "Content-Type: image/png\r\n"
    "Content-ID: <logo@x>\r\n"
    "Content-Transfer-Encoding: base64\r\n"
    "\r\n"
    "iVBORw0KGgo=\r\n"
    "--rel--\r\n"
    "--outer\r\n"
    "Content-Type: application/pdf; name=\"report.pdf\"\r\n"
    "Content-Disposition: attachment; filename=\"report.pdf\"\r\n"
    "Content-Transfer-Encoding: base64\r\n"
    "\r\n"
    "JVBERi0xLjQK\r\n"
    "--outer\r\n"
    "Content-Type: message/rfc822\r\n"
    "\r\n"
    "From: inner@example.com\r\n"
    "Subject: Inner\r\n"
    "Content-Type: multipart/mixed; boundary=\"in\"\r\n"
    "\r\n"
    "--in\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "inner text\r\n"
    "--in\r\n"
    "Content-Type: application/zip\r\n"
    "Content-Disposition: attachment; filename=\"inner.zip\"\r\n"
    "\r\n"
    "PK\r\n"
    "--in--\r\n"
    "--outer--\r\n";

}  // namespace inlet::mail::test
