#!/usr/bin/env python3
"""Interop with a real client: Python's smtplib against smtp_sink_server.

Sends messages with lines starting with ".", an SMTPUTF8 message and a
pipelined-looking multi-recipient one, checks that a 5000-octet text line is
refused (RFC 5321 4.5.3.1.6: 500 5.5.6, nothing delivered), then stops the server with SIGTERM and
checks its counters: every message delivered and the body octets exactly the
expected ones (smtplib dot-stuffs; the server must unstuff to the original).
Usage: smtplib_test.py PATH/TO/smtp_sink_server
"""
import re, signal, smtplib, subprocess, sys, json

server = subprocess.Popen([sys.argv[1], "--listen", "127.0.0.1:0", "--seconds", "60"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    line = server.stderr.readline()
    port = int(re.search(r":(\d+) ", line).group(1))
    bodies = [
        b"Subject: dots\r\n\r\n.leading dot\r\n..two dots\r\n.\r\nend\r\n",
        "Subject: caf\u00e9\r\nTo: \u7528\u6237@\u4f8b.test\r\n\r\nUTF-8 body \u00e9\r\n".encode(),
        b"Subject: many\r\n\r\n" + (b"x" * 998 + b"\r\n") * 5,  # lines at the 1000-octet limit
    ]
    expected = 0
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as s:
        s.ehlo("client.test")
        assert s.has_extn("pipelining") and s.has_extn("smtputf8") and s.has_extn("8bitmime")
        s.sendmail("a@x.test", ["b@y.test"], bodies[0])
        s.sendmail("\u00e4@x.test", ["\u7528\u6237@\u4f8b.test"], bodies[1],
                   mail_options=["SMTPUTF8", "BODY=8BITMIME"])
        s.sendmail("", ["p@y.test", "q@y.test"], bodies[2])
        try:
            s.sendmail("a@x.test", ["b@y.test"], b"Subject: long\r\n\r\n" + b"y" * 5000 + b"\r\n")
            raise AssertionError("a 5000-octet text line was accepted")
        except smtplib.SMTPDataError as e:
            assert e.smtp_code == 500 and e.smtp_error.startswith(b"5.5.6 "), e
        try:
            s.sendmail("a@x.test", ["b@y.test"], b"x" * 100, mail_options=["FOO=1"])
            raise AssertionError("unknown MAIL parameter accepted")
        except smtplib.SMTPSenderRefused as e:
            assert e.smtp_code == 555, e
        code, _ = s.noop()
        assert code == 250
    for b in bodies:
        expected += len(b)  # smtplib sends bodies ending in CRLF unchanged
    server.send_signal(signal.SIGTERM)
    out, _ = server.communicate(timeout=30)
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["messages"] == 3, stats
    assert stats["bytes"] == expected, (stats, expected)
    print("ok", stats)
finally:
    if server.poll() is None:
        server.kill()
