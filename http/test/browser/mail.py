"""Realistic test messages for the browser tests, built with Python's email package and
sent over SMTP with smtplib."""
import base64
import smtplib
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

PEOPLE = [
    ("Ada Lovelace", "ada@analytical.example"), ("Grace Hopper", "grace@navy.example"),
    ("Ken Thompson", "ken@bell-labs.example"), ("Barbara Liskov", "liskov@mit.example"),
    ("Linus Torvalds", "linus@kernel.example"), ("Margaret Hamilton", "margaret@apollo.example"),
    ("Dennis Ritchie", "dmr@bell-labs.example"), ("Frances Allen", "fran@ibm.example"),
    ("José Ñúñez", "jose@ejemplo.example"), ("Søren Kierkegaard", "soren@copenhagen.example"),
    ("Zoë Bäcker", "zoe@bakery.example"), ("Notifications", "no-reply@service.example"),
]
SUBJECTS = [
    "Quarterly invoice #{n} is ready", "Re: Deploy window for the storage migration",
    "Your build #{n} passed", "Lunch on Thursday?", "Security alert: new sign-in from Firefox on Linux",
    "Weekly digest — 12 new articles on distributed systems and databases this week",
    "Reset your password", "Meeting notes: API review ({n})", "Ticket {n}: the page stays blank on Safari",
    "Fwd: Conference travel & hotel booking confirmation for the whole team",
]
BODIES = [
    "Hello,\n\nplease find the details below. The totals were checked twice and match the ledger.\n\nBest,\n{name}\n",
    "Hi team,\n\nthe migration is scheduled for Saturday 02:00 UTC. Expect 10 minutes of read-only mode.\nDocs: https://docs.example/migration\n\n— {name}\n",
    "Short one: can we move the call to 3pm?\n",
]


def png(width=8, height=8, rgb=(220, 40, 40)):
    """A small solid-colour PNG, made here (no files needed)."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def pdf():
    """A one-page PDF a viewer can show (objects and cross-reference table written here)."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>", None,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    text = b"BT /F1 18 Tf 20 100 Td (inlet test PDF) Tj ET"
    objs[3] = b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream"
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for k, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % k + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % x for x in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def plain(i, rcpt="inbox@test.example"):
    name, frm = PEOPLE[i % len(PEOPLE)]
    m = EmailMessage()
    m["From"] = Address(name, addr_spec=frm)
    m["To"] = rcpt
    m["Subject"] = SUBJECTS[i % len(SUBJECTS)].format(n=1000 + i)
    m["Date"] = formatdate(localtime=False)
    m["Message-ID"] = make_msgid(domain="test.example")
    m.set_content(BODIES[i % len(BODIES)].format(name=name))
    return m


def rich(rcpt="inbox@test.example", remote_url="http://tracker.invalid/pixel.gif"):
    """HTML with a cid: image, a remote image, a link; a PDF and a PNG attached."""
    m = EmailMessage()
    m["From"] = Address("Newsletter Team", addr_spec="news@letters.example")
    m["To"] = rcpt
    m["Cc"] = Address("Carol Copy", addr_spec="carol@test.example")
    m["Reply-To"] = "replies@letters.example"
    m["Subject"] = "Rich HTML: logo, remote pixel and attachments"
    m["Date"] = formatdate(localtime=False)
    m["Message-ID"] = make_msgid(domain="letters.example")
    m["X-Mailer"] = "inlet browser tests"
    m.set_content("Plain text version. Visit https://example.com/plain for more.\n")
    m.add_alternative(
        '<!doctype html><html><head><style>h1{color:#0a58ca}</style></head><body>'
        '<h1 id="hello">Hello from HTML</h1>'
        '<p><img id="logo" src="cid:logo@inlet" alt="logo" width="8" height="8"></p>'
        f'<p><img id="remote" src="{remote_url}" alt="remote" width="1" height="1"></p>'
        '<p><a id="out" href="https://example.com/landing">Open the landing page</a></p>'
        '<p>' + "Paragraph of text. " * 40 + '</p></body></html>', subtype="html")
    m.get_payload()[1].add_related(png(), maintype="image", subtype="png", cid="<logo@inlet>")
    m.add_attachment(pdf(), maintype="application", subtype="pdf", filename="report.pdf")
    m.add_attachment(png(32, 24, (30, 120, 200)), maintype="image", subtype="png", filename="chart.png")
    return m


def eight_bit(rcpt="inbox@test.example"):
    """An 8-bit UTF-8 body with no transfer encoding (raw bytes on the wire)."""
    return (f"From: Unicode Sender <u@test.example>\r\nTo: {rcpt}\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe_aus_K=C3=B6ln?=\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
            "Grüße aus Köln — naïve café, 日本語, emoji 🎉.\r\n").encode("utf-8")


CANARY_SCRIPT = "fetch('/canary-hit');window.__pwned=1"


def hostile(rcpt="inbox@test.example"):
    """Script payloads in the subject, names, filename, text and HTML; any that runs fetches
    /canary-hit or sets window.__pwned."""
    p = f'<img src=x onerror="{CANARY_SCRIPT}"><script>{CANARY_SCRIPT}</script>'
    m = EmailMessage()
    m["From"] = Address(f'<script>{CANARY_SCRIPT}</script>', addr_spec="evil@attacker.example")
    m["To"] = Address(f'<img src=x onerror="{CANARY_SCRIPT}">', addr_spec=rcpt)
    m["Subject"] = f"Canary {p}"
    m["Date"] = formatdate(localtime=False)
    m.set_content(f"text {p} javascript:{CANARY_SCRIPT}\n")
    m.add_alternative(
        f'<html><body><h1>canary html</h1>{p}<svg onload="{CANARY_SCRIPT}"></svg>'
        f'<iframe srcdoc="<script>{CANARY_SCRIPT}</script>"></iframe>'
        f'<a id="js" href="javascript:{CANARY_SCRIPT}">click</a>'
        f'<form action="/canary-hit"><button id="sub">go</button></form>'
        f'<meta http-equiv="refresh" content="0;url=/canary-hit">'
        f'<object data="/canary-hit"></object></body></html>', subtype="html")
    m.add_attachment(b"x", maintype="application", subtype="octet-stream",
                     filename=f'<img src=x onerror="{CANARY_SCRIPT}">.txt')
    # Attachments a browser would run script in, were they opened without the sandbox.
    m.add_attachment(f"<html><body><h1>evil html</h1><script>{CANARY_SCRIPT};document.title='pwned'</script>"
                     f'<img src=x onerror="{CANARY_SCRIPT}"></body></html>'.encode(),
                     maintype="text", subtype="html", filename="evil.html")
    m.add_attachment(f'<svg xmlns="http://www.w3.org/2000/svg" width="80" height="80" onload="{CANARY_SCRIPT}">'
                     f'<script>{CANARY_SCRIPT}</script><rect width="80" height="80" fill="red"/></svg>'.encode(),
                     maintype="image", subtype="svg+xml", filename="evil.svg")
    return m


def send(port, messages, sender="sender@test.example", rcpt="inbox@test.example", connections=1):
    """Sends each message (an EmailMessage or raw bytes) over `connections` SMTP sessions."""
    messages = list(messages)
    chunks = [messages[k::connections] for k in range(connections)]

    def run(chunk):
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as s:
            for m in chunk:
                data = m if isinstance(m, bytes) else m.as_bytes()
                to = [rcpt]
                s.sendmail(sender, to, data)
    with ThreadPoolExecutor(connections) as ex:
        list(ex.map(run, [c for c in chunks if c]))


def tiny(i, rcpt="inbox@test.example"):
    """A minimal message for bursts: raw bytes, cheap to make."""
    return (f"From: Burst <burst@test.example>\r\nTo: {rcpt}\r\nSubject: burst {i}\r\n\r\nmessage {i}\r\n").encode()
