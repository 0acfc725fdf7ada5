#!/usr/bin/env python3
"""inlet's web page in a real browser: Debian's chromium driven by Playwright, against a
running inletd filled over SMTP. Every feature of the page, on desktop and phone
viewports, light and dark, by keyboard only; axe-core; a canary proving that script in a
message runs nothing; a 10,000-message burst with the list fetches counted.

    run.py --inletd build/bin/inletd --out build/http/browser-artifacts [-k pattern]

Screenshots of every step, axe reports and the figures go to --out. Features whose API
route the server does not have (probed at the start: tags, parts, thumbnails, headers,
send, release) are skipped with the route they wait for.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mail  # noqa: E402

HERE = Path(__file__).resolve().parent
AXE = HERE.parents[1] / "web" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = os.environ.get("INLET_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 375, "height": 740}
GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")

OUT: Path = Path(".")
INLETD = ""
STATE = {}  # playwright, browser, server, ids, caps


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One inletd on loopback ports of its own, with the memory store."""

    def __init__(self, name, extra=()):
        self.smtp, self.http = free_port(), free_port()
        self.log = open(OUT / f"inletd-{name}.log", "wb")
        self.proc = subprocess.Popen(
            [INLETD, "--smtp", f"127.0.0.1:{self.smtp}", "--listen", f"127.0.0.1:{self.http}",
             "--max-messages", "200000", "--allow-internal-http-requests", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while True:
            try:
                self.get("/api/v1/messages?limit=1")
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("inletd did not start")
                time.sleep(0.1)

    def url(self, path=""):
        return f"http://127.0.0.1:{self.http}/{path.lstrip('/')}"

    def request(self, path, method="GET", body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url(path), data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get(self, path):
        status, body = self.request(path)
        if status != 200:
            raise urllib.error.HTTPError(self.url(path), status, body.decode(errors="replace"), None, None)
        return json.loads(body)

    def search(self, query, limit=1000):
        return self.get(f"/api/v1/search?query={urllib.parse.quote(query)}&limit={limit}")

    def find(self, subject_prefix):
        for m in self.get("/api/v1/messages?limit=1000")["messages"]:
            if m["Subject"].startswith(subject_prefix):
                return m
        raise KeyError(subject_prefix)

    def summary(self, id):
        """A message's summary without opening it (opening marks it read)."""
        for m in self.get("/api/v1/messages?limit=1000")["messages"]:
            if m["ID"] == id:
                return m
        raise KeyError(id)

    def send(self, messages, rcpt="inbox@test.example", connections=1):
        mail.send(self.smtp, messages, rcpt=rcpt, connections=connections)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def probe(srv, rich):
    """Which of the API's later routes this server answers."""
    att = rich_parts(srv, rich)
    part = f"/api/v1/message/{rich['ID']}/part/{att[0]['PartID']}" if att else ""
    webui_status, webui = srv.request("/api/v1/webui")
    caps = {
        "tags": srv.request("/api/v1/tags")[0] == 200,
        "parts": bool(part) and srv.request(part)[0] == 200,
        "thumbs": bool(part) and srv.request(part + "/thumb")[0] == 200,
        "headers": srv.request(f"/api/v1/message/{rich['ID']}/headers")[0] == 200,
        "send": srv.request("/api/v1/send")[0] == 405,
        "release": webui_status == 200 and bool(json.loads(webui).get("MessageRelay", {}).get("Enabled")),
    }
    return caps


def rich_parts(srv, rich):
    st, body = srv.request(f"/api/v1/message/{rich['ID']}?x=1")
    m = json.loads(body)
    return (m.get("Attachments") or []) + (m.get("Inline") or [])


WAITS = {
    "tags": "PUT/GET /api/v1/tags", "parts": "GET /api/v1/message/{ID}/part/{PartID}",
    "thumbs": "GET /api/v1/message/{ID}/part/{PartID}/thumb", "headers": "GET /api/v1/message/{ID}/headers",
    "send": "POST /api/v1/send", "release": "POST /api/v1/message/{ID}/release with a relay configured",
}


def needs(cap):
    if not STATE["caps"][cap]:
        raise unittest.SkipTest(f"waits for {WAITS[cap]}")


def setUpModule():
    pw = sync_playwright().start()
    STATE["pw"] = pw
    STATE["browser"] = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    srv = Server("main")
    STATE["srv"] = srv
    srv.send([mail.plain(i) for i in range(60)])
    srv.send([mail.plain(i) for i in range(3)], rcpt="other@test.example")
    srv.send([mail.rich(), mail.eight_bit(), mail.hostile()])
    STATE["caps"] = probe(srv, srv.find("Rich HTML"))
    (OUT / "capabilities.json").write_text(json.dumps(STATE["caps"], indent=2) + "\n")
    for k, v in STATE["caps"].items():
        if not v:
            print(f"browser: the server lacks {WAITS[k]}: features needing it are skipped", flush=True)


def tearDownModule():
    STATE["srv"].stop()
    STATE["browser"].close()
    STATE["pw"].stop()


_shots = [0]


class PageTest(unittest.TestCase):
    """A fresh browser context per test; every request to another host is answered here
    and recorded, so the tests see what the page (or a message) tried to fetch."""

    viewport = DESKTOP
    scheme = "light"
    bypass_csp = False
    permissions = ()

    def setUp(self):
        self.srv = STATE["srv"]
        self.ctx = STATE["browser"].new_context(viewport=self.viewport, color_scheme=self.scheme,
                                                bypass_csp=self.bypass_csp, permissions=list(self.permissions))
        self.remote = []
        self.canary = []
        self.ctx.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), self._remote)
        self.ctx.route("**/canary-hit*", self._canary)
        self.page = self.ctx.new_page()
        self.errors = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.dialogs = []
        self.page.on("dialog", self._dialog)
        self.list_fetches = []
        self.page.on("request", self._request)

    def tearDown(self):
        self.assertEqual(self.errors, [], "uncaught errors in the page")
        self.ctx.close()

    def _remote(self, route):
        self.remote.append(route.request.url)
        route.fulfill(status=200, body=GIF, content_type="image/gif")

    def _canary(self, route):
        self.canary.append(route.request.url)
        route.fulfill(status=204)

    def _dialog(self, d):
        self.dialogs.append(d.message)
        d.accept()

    def _request(self, r):
        if re.search(r"/api/v1/(messages|search|mailbox/)[^/]*\?", r.url) and r.method == "GET":
            self.list_fetches.append((time.monotonic(), r.url))

    # helpers
    def shot(self, name):
        _shots[0] += 1
        self.page.screenshot(path=str(OUT / f"{_shots[0]:02d}-{name}.png"))

    def until(self, fn, what, timeout=15.0):
        deadline = time.monotonic() + timeout
        while True:
            v = fn()
            if v:
                return v
            if time.monotonic() > deadline:
                self.fail(f"timed out waiting for {what}")
            self.page.wait_for_timeout(50)

    def js(self, expr, arg=None):
        return self.page.evaluate(expr, arg)

    def open_page(self, query=""):
        self.page.goto(self.srv.url(query))
        self.until(lambda: self.js("document.querySelectorAll('.row[data-id]').length > 0 || !!document.querySelector('.empty')"),
                   "the list")

    def rows(self):
        return self.js("[...document.querySelectorAll('.row[data-id]')].map(r => ({id: r.dataset.id, i: +r.dataset.index,"
                       " unread: r.classList.contains('unread'), text: r.textContent, h: r.getBoundingClientRect().height}))"
                       ".sort((a, b) => a.i - b.i)")

    def row_id(self, i):
        return self.js(f"document.querySelector('.row[data-index=\"{i}\"]')?.dataset.id")

    def frame(self):
        self.until(lambda: any(f.url == "about:srcdoc" for f in self.page.frames), "the message frame")
        f = next(f for f in self.page.frames if f.url == "about:srcdoc")
        f.wait_for_load_state()
        return f

    def axe(self, name):
        self.js(AXE.read_text())
        result = self.js("""async () => {
            const r = await axe.run(document, {iframes: false, runOnly: {type: 'tag',
              values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}});
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
              nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + (n.failureSummary || ''))}));
        }""")
        (OUT / f"axe-{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        bad = [v for v in result if v["impact"] in ("serious", "critical")]
        self.assertEqual(bad, [], f"axe-core: serious or critical violations on {name}")


class T01List(PageTest):
    def test_dense_list_one_line_per_message(self):
        self.open_page()
        self.shot("list-desktop")
        rows = self.rows()
        self.assertGreaterEqual(len(rows), 20, "at 1440x900 at least 20 messages are on screen")
        heights = {round(r["h"]) for r in rows}
        self.assertEqual(heights, {34}, "one line per message")
        # Long subjects and names are cut with an ellipsis, never wrapped.
        cut = self.js("[...document.querySelectorAll('.row .s, .row .snip')].filter(e => e.scrollWidth > e.clientWidth"
                      " && getComputedStyle(e).textOverflow === 'ellipsis' && getComputedStyle(e).whiteSpace === 'nowrap').length")
        self.assertGreater(cut, 0)
        total = self.srv.get("/api/v1/messages?limit=1")
        self.assertIn(f"{total['total']:,} messages", self.page.locator(".count").inner_text())
        # The unread count in the title and on the favicon.
        self.until(lambda: self.page.title().startswith(f"({total['unread']}) "), "the unread count in the title")
        icon = self.js("document.querySelector('link[rel=icon]').href")
        self.assertTrue(icon.startswith("data:image/png"), icon)
        # Rows show attachments and the newest first.
        self.assertEqual(rows[0]["id"], total["messages"][0]["ID"])
        self.assertTrue(self.page.locator(".row .att").count() >= 1)

    def test_every_row_reachable_by_scrolling(self):
        self.open_page()
        n = self.srv.get("/api/v1/messages?limit=1")["total"]
        self.js("document.querySelector('.list-scroll').scrollTop = 1e9")
        self.until(lambda: self.row_id(n - 1), "the last row after scrolling to the end")
        oldest = self.srv.get(f"/api/v1/messages?start={n - 1}&limit=1")["messages"][0]["ID"]
        self.assertEqual(self.row_id(n - 1), oldest)
        self.shot("list-scrolled-to-end")


class T02Message(PageTest):
    def test_message_headers_envelope_attachments(self):
        rich = self.srv.find("Rich HTML")
        self.open_page()
        self.page.locator(f".row[data-id='{rich['ID']}'] a.link").click()
        self.page.locator("#msg-subject").wait_for()
        self.assertIn(f"m={rich['ID']}", self.page.url)
        text = self.page.locator(".hdrs").inner_text()
        for s in ["Newsletter Team <news@letters.example>", "inbox@test.example", "Carol Copy <carol@test.example>",
                  "replies@letters.example", "MAIL FROM:<sender@test.example>", "RCPT TO:<inbox@test.example>", "ESMTP"]:
            self.assertIn(s, text)
        links = self.js("[...document.querySelectorAll('.att-dl')].map(a => [a.getAttribute('href'), a.getAttribute('download')])")
        names = [d for _, d in links]
        self.assertIn("report.pdf", names)
        self.assertIn("chart.png", names)
        for href, _ in links:
            self.assertRegex(href, rf"^api/v1/message/{rich['ID']}/part/[0-9.]+$")
        for href in self.js("[...document.querySelectorAll('.att-link')].map(a => a.getAttribute('href'))"):
            self.assertRegex(href, rf"^view/{rich['ID']}/part/[0-9.]+$")
        self.shot("message-rich-desktop")
        # Opening marks the message read, in the list as on the server.
        self.until(lambda: not any(r["unread"] for r in self.rows() if r["id"] == rich["ID"]), "the row marked read")
        self.assertTrue(self.srv.get(f"/api/v1/search?query=subject:%22Rich%20HTML%22")["messages"][0]["Read"])

    def test_cut_address_list_says_how_many_more(self):
        to = ",\r\n ".join(f"reader{i}@list.test.example" for i in range(150))
        self.srv.send([(f"From: Big List <list@test.example>\r\nTo: {to}\r\nSubject: One hundred fifty readers\r\n"
                        "Message-ID: <cut-list@test.example>\r\n\r\nTo everyone.\r\n").encode()])
        big = self.srv.find("One hundred fifty readers")
        self.assertEqual(big["Totals"]["To"], 150)  # the server kept 100 and says so
        self.open_page(f"?m={big['ID']}")
        self.page.locator("#msg-subject").wait_for()
        to = self.js("(() => { const dt = [...document.querySelectorAll('.hdrs dt')].find(d => d.textContent === 'To');"
                     " return dt.nextElementSibling.textContent; })()")
        self.assertEqual(to.count("@list.test.example"), 100)
        self.assertIn("reader99@list.test.example", to)
        self.assertTrue(to.endswith(" and 50 more"), to[-60:])
        # Whole lists say nothing more.
        self.assertNotIn("more", self.js("[...document.querySelectorAll('.hdrs dt')].find(d => d.textContent === 'From')"
                                         ".nextElementSibling.textContent"))
        self.shot("message-cut-address-list")
        self.axe("cut-address-list")

    def test_attachment_download_and_thumbnail(self):
        needs("parts")
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        with self.page.expect_download() as d:
            self.page.get_by_role("link", name="Download report.pdf").click()
        path = d.value.path()
        self.assertTrue(Path(path).read_bytes().startswith(b"%PDF-1.4"))
        self.assertEqual(d.value.suggested_filename, "report.pdf")
        needs("thumbs")
        thumb = self.page.locator(".att-link[title='Open chart.png in a new tab'] img.thumb")
        self.until(lambda: self.js("(e) => e.complete && e.naturalWidth > 0", thumb.element_handle()), "a thumbnail")
        self.shot("attachments-thumbnails")

    def test_html_frame_sandboxed_links_new_tab_remote_blocked(self):
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        f = self.frame()
        sandbox = self.page.locator("iframe").get_attribute("sandbox")
        self.assertNotIn("allow-scripts", sandbox)
        self.assertEqual(f.locator("#out").get_attribute("target"), "_blank")
        self.assertIn("noopener", f.locator("#out").get_attribute("rel"))
        self.page.wait_for_timeout(300)
        self.assertEqual(self.remote, [], "remote content is blocked until allowed")
        self.assertIn("1 remote resource blocked", self.page.locator(".remote").inner_text())
        self.shot("html-remote-blocked")
        # A link opens a new tab; the preview stays.
        with self.ctx.expect_page() as popup:
            f.locator("#out").click()
        self.assertEqual(popup.value.url, "https://example.com/landing")
        popup.value.close()
        self.assertIn(f"m={rich['ID']}", self.page.url)
        self.assertEqual(self.frame().locator("h1").inner_text(), "Hello from HTML")
        # Allowed for this message: the remote image loads.
        self.page.get_by_role("button", name="Show remote content").click()
        self.until(lambda: any("tracker.invalid" in u for u in self.remote), "the remote image once allowed")
        self.shot("html-remote-allowed")

    def test_cid_images_from_parts(self):
        needs("parts")
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        f = self.frame()
        self.until(lambda: f.evaluate("document.getElementById('logo').complete && document.getElementById('logo').naturalWidth === 8"),
                   "the cid: image")
        self.assertIn(f"api/v1/message/{rich['ID']}/part/", f.evaluate("document.getElementById('logo').src"))

    def test_tabs_text_source_headers_raw(self):
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        self.page.get_by_role("tab", name="Text", exact=True).click()
        self.assertIn("view=text", self.page.url)
        self.assertIn("Plain text version.", self.page.locator("pre.text").inner_text())
        self.assertEqual(self.page.locator("pre.text a").get_attribute("href"), "https://example.com/plain")
        self.page.get_by_role("tab", name="HTML source").click()
        self.assertGreater(self.page.locator("pre.source .h-tag").count(), 5)
        self.assertGreater(self.page.locator("pre.source .h-attr").count(), 3)
        self.assertIn('<h1 id="hello">', self.page.locator("pre.source").inner_text())
        self.shot("html-source")
        self.page.get_by_role("tab", name="Headers").click()
        self.until(lambda: self.page.locator("table.headers tbody tr").count() > 5, "the headers")
        heads = self.page.locator("table.headers").inner_text()
        self.assertIn("X-Mailer", heads)
        self.assertIn("inlet browser tests", heads)
        self.shot("headers")
        # The raw source, decoded as UTF-8, with its view in the URL (reload keeps it).
        u8 = self.srv.find("Grüße")
        self.page.goto(self.srv.url(f"?m={u8['ID']}&view=raw"))
        self.until(lambda: self.page.locator("pre.raw").count() == 1, "the raw source")
        raw = self.page.locator("pre.raw").inner_text()
        self.assertIn("Grüße aus Köln — naïve café, 日本語, emoji 🎉.", raw)
        self.assertNotIn("Ã", raw)
        self.assertEqual(self.page.get_by_role("tab", name="Raw").get_attribute("aria-selected"), "true")
        self.shot("raw-utf8")

    def test_preview_widths(self):
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        self.frame()
        width = lambda: self.js("document.querySelector('.frame-box iframe').getBoundingClientRect().width")
        self.page.get_by_role("button", name="Phone").click()
        self.until(lambda: abs(width() - 375) < 1, "phone width")
        self.shot("preview-phone")
        self.page.get_by_role("button", name="Tablet").click()
        self.until(lambda: abs(width() - 768) < 1, "tablet width")
        self.page.get_by_role("button", name="Desktop").click()
        self.until(lambda: width() > 768, "desktop width")

    def test_read_unread_and_delete(self):
        m = self.srv.search('subject:"Reset your password"')["messages"][0]
        self.open_page(f"?m={m['ID']}")
        self.page.get_by_role("button", name="Mark unread").click()
        self.until(lambda: not self.srv.summary(m["ID"])["Read"], "unread on the server")
        self.until(lambda: any(r["unread"] for r in self.rows() if r["id"] == m["ID"]), "the row unread")
        self.page.get_by_role("button", name="Mark read").click()
        self.until(lambda: not any(r["unread"] for r in self.rows() if r["id"] == m["ID"]), "the row read")
        self.page.locator(".msg-tools").get_by_role("button", name="Delete").click()
        self.until(lambda: self.srv.request(f"/api/v1/message/{m['ID']}")[0] == 404, "deleted on the server")
        self.until(lambda: all(r["id"] != m["ID"] for r in self.rows()), "the row gone")

    def test_tags_add_and_remove(self):
        needs("tags")
        m = self.srv.search('subject:"Your build"')["messages"][0]
        self.open_page(f"?m={m['ID']}")
        box = self.page.get_by_label("Add a tag")
        box.fill("urgent")
        box.press("Enter")
        self.until(lambda: "urgent" in (self.srv.search(f"tag:urgent")["messages"] or [{}])[0].get("Tags", []), "the tag on the server")
        self.until(lambda: "urgent" in next(r["text"] for r in self.rows() if r["id"] == m["ID"]), "the tag in the list")
        self.shot("tags")
        self.page.get_by_role("button", name="Remove tag urgent").click()
        self.until(lambda: self.srv.search("tag:urgent")["messages_count"] == 0, "the tag removed")

    def test_release_and_send(self):
        needs("send")
        self.open_page()
        subject = f"Sent from the page {time.time()}"
        self.page.get_by_role("button", name="Compose").click()
        d = self.page.locator("dialog[open]")
        d.get_by_label("From", exact=True).fill("composer@test.example")
        d.get_by_label("To", exact=True).fill("someone@test.example")
        d.get_by_label("Subject", exact=True).fill(subject)
        d.get_by_label("Text", exact=True).fill("Hello via the API")
        self.shot("compose")
        d.get_by_role("button", name="Send").click()
        self.until(lambda: self.srv.search(f'subject:"{subject}"')["messages_count"] == 1, "the sent message")
        sent = self.srv.search(f'subject:"{subject}"')["messages"][0]["ID"]
        self.until(lambda: f"m={sent}" in self.page.url, "the sent message opened")


class T03State(PageTest):
    def test_search_mailbox_url_and_history(self):
        self.open_page()
        home = self.page.url
        self.page.keyboard.press("/")
        self.page.keyboard.type("subject:invoice")
        self.page.keyboard.press("Enter")
        self.until(lambda: "q=subject%3Ainvoice" in self.page.url, "the search in the URL")
        want = self.srv.search("subject:invoice")["messages_count"]
        self.until(lambda: len(self.rows()) == want and all("invoice" in r["text"].lower() for r in self.rows()), "the results")
        self.assertIn(f"{want} results", self.page.locator(".count").inner_text())
        self.shot("search")
        first = self.rows()[0]["id"]
        self.page.locator(f".row[data-id='{first}'] a.link").click()
        self.until(lambda: f"m={first}" in self.page.url, "the message in the URL")
        link = self.page.url
        self.page.go_back()
        self.until(lambda: "m=" not in self.page.url and "q=subject" in self.page.url, "back to the results")
        self.until(lambda: self.page.locator(".msg-empty.none").count() == 1, "the message closed")
        self.page.go_back()
        self.until(lambda: self.page.url == home, "back to all")
        self.until(lambda: len(self.rows()) > want, "every message again")
        self.page.go_forward()
        self.page.go_forward()
        self.until(lambda: self.page.url == link and self.page.locator("#msg-subject").count() == 1, "forward to the message")
        # A link opens the same view in a new page.
        other = self.ctx.new_page()
        other.goto(link)
        other.locator("#msg-subject").wait_for()
        self.assertEqual(other.locator("#q").input_value(), "subject:invoice")
        other.close()
        # The mailbox view: the envelope recipients of one address.
        self.page.goto(self.srv.url("?q=" + urllib.parse.quote("mailbox:other@test.example")))
        box = self.srv.get("/api/v1/mailbox/other@test.example")
        self.until(lambda: len(self.rows()) == box["total"] == 3, "the mailbox")
        self.shot("mailbox")
        # Links of the earlier page (#address) still open the mailbox.
        self.page.goto(self.srv.url("#other@test.example"))
        self.until(lambda: len(self.rows()) == 3, "the mailbox from an old link")

    def test_search_language_matches_the_api(self):
        self.open_page()
        for q in ["is:unread", "from:grace", "-subject:invoice", "has:attachment", 'subject:"Lunch on Thursday"', "larger:2K"]:
            self.page.goto(self.srv.url("?q=" + urllib.parse.quote(q)))
            want = self.srv.search(q)["messages_count"]
            self.until(lambda: self.js("window.inlet.model.loaded") and self.js("window.inlet.model.total") == want,
                       f"{q}: {want} results")
            if want:
                self.until(lambda: len(self.rows()) >= min(want, 20), f"{q}: rows drawn")
            rows = self.rows()
            api_ids = [m["ID"] for m in self.srv.search(q, limit=max(1, len(rows)))["messages"]]
            self.assertEqual([r["id"] for r in rows], api_ids[:len(rows)], q)
            self.assertEqual([r["i"] for r in rows], list(range(len(rows))), q)

    def test_selection_shift_click_and_bulk_actions(self):
        self.open_page()
        self.page.wait_for_timeout(200)
        rows = self.rows()
        self.page.locator(".row[data-index='1'] .check").click()
        self.page.locator(".row[data-index='5'] .check").click(modifiers=["Shift"])
        self.until(lambda: self.page.locator(".bulk .n").count() == 1, "the bulk bar")
        self.assertEqual(self.page.locator(".bulk .n").inner_text(), "5 selected")
        chosen = [r["id"] for r in rows[1:6]]
        self.shot("selection")
        self.page.locator(".bulk").get_by_role("button", name="Mark unread").click()
        self.until(lambda: all(r["unread"] for r in self.rows() if r["id"] in chosen), "marked unread")
        self.page.locator(".bulk").get_by_role("button", name="Mark read").click()
        self.until(lambda: not any(r["unread"] for r in self.rows() if r["id"] in chosen), "marked read")
        status, body = self.srv.request("/api/v1/messages?limit=1000")
        read = {m["ID"]: m["Read"] for m in json.loads(body)["messages"]}
        self.assertTrue(all(read[i] for i in chosen))
        self.page.keyboard.press("Escape")
        self.until(lambda: self.page.locator(".bulk").count() == 0, "the selection cleared")
        # Every result of a search, selected from the header, deleted at once.
        q = 'subject:"Lunch on Thursday"'
        self.page.goto(self.srv.url("?q=" + urllib.parse.quote(q)))
        n = self.srv.search(q)["messages_count"]
        self.assertGreater(n, 1)
        self.until(lambda: len(self.rows()) == n, "the results")
        self.page.get_by_label(f"Select all {n} results").click()
        self.assertEqual(self.page.locator(".bulk .n").inner_text(), f"{n} selected")
        if STATE["caps"]["tags"]:
            self.page.get_by_label("Tag to add or remove").fill("lunch")
            self.page.locator(".bulk").get_by_role("button", name="Add tag").click()
            self.until(lambda: self.srv.search("tag:lunch")["messages_count"] == n, "every result tagged")
        self.page.locator(".bulk").get_by_role("button", name="Delete").click()
        self.until(lambda: self.srv.search(q)["messages_count"] == 0, "every result deleted")
        self.assertEqual(self.dialogs, [f"Delete {n} messages?"])
        self.until(lambda: self.page.locator(".empty").count() == 1, "the empty result")


class T04Live(PageTest):
    def test_new_deleted_changed_without_reload(self):
        self.open_page()
        before = self.srv.get("/api/v1/messages?limit=1")
        self.page.evaluate("window.__marker = 1")  # survives only without a reload
        self.srv.send([live_message("Live arrival")])
        self.until(lambda: "Live arrival" in self.rows()[0]["text"], "the new message at the top")
        new_id = self.rows()[0]["id"]
        self.until(lambda: self.page.title().startswith(f"({before['unread'] + 1}) "), "the title's unread count")
        self.shot("live-new")
        self.srv.request("/api/v1/messages", "PUT", {"IDs": [new_id], "Read": True})
        self.until(lambda: not self.rows()[0]["unread"], "read elsewhere")
        self.srv.request("/api/v1/messages", "DELETE", {"IDs": [new_id]})
        self.until(lambda: all(r["id"] != new_id for r in self.rows()), "deleted elsewhere")
        self.assertEqual(self.js("window.__marker"), 1)

    def test_open_message_deleted_elsewhere(self):
        self.srv.send([live_message("Soon deleted")])
        m = self.srv.find("Soon deleted")
        self.open_page(f"?m={m['ID']}")
        self.page.locator("#msg-subject").wait_for()
        self.srv.request("/api/v1/messages", "DELETE", {"IDs": [m["ID"]]})
        self.until(lambda: self.page.locator(".notice").count() == 1, "the deleted notice")


class T05Notify(PageTest):
    def test_notification_when_hidden(self):
        self.open_page()
        # The page only asks the browser; a stand-in records what it asks for.
        self.js("""() => {
            window.__notes = [];
            class FakeNotification {
              static permission = 'granted';
              static requestPermission() { return Promise.resolve('granted'); }
              constructor(title, opts) { window.__notes.push([title, opts && opts.body]); }
              close() {}
            }
            window.Notification = FakeNotification;
            Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});
        }""")
        self.page.get_by_role("button", name=re.compile("Notifications off")).click()
        self.until(lambda: self.page.get_by_role("button", name=re.compile("Notifications on")).count() == 1, "notifications on")
        self.srv.send([live_message("Ping for the notification")])
        self.until(lambda: self.js("window.__notes.length") == 1, "one notification")
        title, body = self.js("window.__notes[0]")
        self.assertEqual(title, "Live Sender")
        self.assertEqual(body, "Ping for the notification")


def live_message(subject):
    return (f"From: Live Sender <live@test.example>\r\nTo: inbox@test.example\r\nSubject: {subject}\r\n\r\nhello\r\n").encode()


class T06Keyboard(PageTest):
    def test_keyboard_only(self):
        # Three messages of its own on top: the keys below delete one of them.
        self.srv.send([live_message(f"Keyboard {k}") for k in range(3)])
        self.open_page()
        kb = self.page.keyboard
        kb.press("j")  # the first key focuses the list where its cursor is
        self.assertEqual(self.js("document.activeElement.closest('.row')?.dataset.index"), "0")
        kb.press("j")
        kb.press("ArrowDown")
        self.assertEqual(self.js("document.activeElement.closest('.row')?.dataset.index"), "2")
        kb.press("k")
        self.assertEqual(self.js("document.activeElement.closest('.row')?.dataset.index"), "1")
        focused = self.js("document.activeElement.closest('.row').dataset.id")
        self.shot("keyboard-cursor")
        kb.press("Enter")
        self.until(lambda: f"m={focused}" in self.page.url, "Enter opens")
        self.page.locator("#msg-subject").wait_for()
        kb.press("j")  # with a message open, j opens the next one
        nxt = self.row_id(2)
        self.until(lambda: f"m={nxt}" in self.page.url, "j opens the next message")
        kb.press("Escape")
        self.until(lambda: "m=" not in self.page.url, "Esc closes")
        self.until(lambda: self.js("document.activeElement.closest('.row')?.dataset.index") == "2", "focus back on the row")
        # Delete removes the row under the cursor.
        doomed = self.row_id(2)
        self.assertIn("Keyboard", next(r["text"] for r in self.rows() if r["id"] == doomed))
        kb.press("Delete")
        self.until(lambda: self.srv.request(f"/api/v1/message/{doomed}")[0] == 404, "Delete deletes")
        # x selects, Esc clears; / focuses the search, Esc leaves it.
        kb.press("x")
        self.until(lambda: self.page.locator(".bulk .n").count() == 1, "x selects")
        kb.press("Escape")
        kb.press("/")
        self.assertEqual(self.js("document.activeElement.id"), "q")
        kb.press("Escape")
        self.assertNotEqual(self.js("document.activeElement.id"), "q")
        kb.press("?")
        self.until(lambda: self.page.locator("dialog[open]").count() == 1, "the help")
        self.shot("keyboard-help")
        kb.press("Escape")
        self.until(lambda: self.page.locator("dialog[open]").count() == 0, "the help closed")

    def test_every_control_reachable_by_tab_with_visible_focus(self):
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        self.page.locator("#msg-subject").wait_for()
        self.frame()
        seen = {}
        self.js("document.activeElement.blur()")
        for _ in range(60):
            self.page.keyboard.press("Tab")
            info = self.js("""() => {
                const e = document.activeElement;
                if (!e || e === document.body) return null;
                const s = getComputedStyle(e);
                const name = (e.getAttribute('aria-label') || e.textContent || e.id || e.tagName).trim().slice(0, 40);
                return {name, outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2, tag: e.tagName};
            }""")
            if info:
                seen.setdefault(info["name"], info)
        names = set(seen)
        for want in ["Skip to messages", "q", "Search", "Keyboard shortcuts", "Mark unread", "Delete", "Download",
                     "Previous message", "Next message", "Hide list", "Download report.pdf",
                     "HTML", "Phone", "Tablet", "Desktop", "Show remote content", "report.pdf"]:
            self.assertTrue(any(n == want or n.startswith(want) or want in n for n in names), f"{want} not reachable by Tab: {sorted(names)}")
        self.assertTrue(any(n.startswith("Select “") for n in names), "a row's checkbox")
        self.assertTrue(any(seen[n]["tag"] == "A" and "ago" not in n for n in names))
        invisible = [n for n, i in seen.items() if not i["outline"] and i["tag"] != "IFRAME"]
        self.assertEqual(invisible, [], "focus must be visible")
        self.shot("tab-focus")


class T07Phone(PageTest):
    viewport = PHONE

    def test_phone_stacks_list_and_message(self):
        self.open_page()
        rows = self.rows()
        self.assertTrue(all(round(r["h"]) == 56 for r in rows))  # two lines a message
        self.assertEqual(self.js("Math.round(document.querySelector('.list-pane').getBoundingClientRect().width)"), 375)
        self.shot("phone-list")
        rich = self.srv.find("Rich HTML")
        self.page.locator(f".row[data-id='{rich['ID']}'] a.link").click()
        self.page.locator("#msg-subject").wait_for()
        self.assertFalse(self.page.locator(".list-pane").is_visible())
        self.assertEqual(self.js("Math.round(document.querySelector('.msg-pane').getBoundingClientRect().width)"), 375)
        self.shot("phone-message")
        self.page.get_by_role("button", name="Back").click()
        self.until(lambda: self.page.locator(".list-pane").is_visible(), "the list after Back")
        self.assertNotIn("m=", self.page.url)
        self.shot("phone-back")
        self.axe("phone-list")


class T08Dark(PageTest):
    scheme = "dark"

    def bg(self):
        return self.js("getComputedStyle(document.body).backgroundColor")

    def test_dark_follows_system_and_toggle(self):
        self.open_page()
        self.assertEqual(self.bg(), "rgb(17, 20, 24)")
        self.shot("dark-list")
        self.axe("dark-list")
        rich = self.srv.find("Rich HTML")
        self.page.locator(f".row[data-id='{rich['ID']}'] a.link").click()
        self.frame()
        self.shot("dark-message")
        self.axe("dark-message")
        theme = self.page.get_by_role("button", name=re.compile("Theme"))
        theme.click()  # system -> light
        self.assertEqual(self.js("document.documentElement.dataset.theme"), "light")
        self.assertEqual(self.bg(), "rgb(255, 255, 255)")
        theme.click()  # light -> dark
        self.assertEqual(self.bg(), "rgb(17, 20, 24)")
        self.page.reload()
        self.until(lambda: self.js("document.documentElement.dataset.theme") == "dark", "the choice kept")
        theme = self.page.get_by_role("button", name=re.compile("Theme"))
        theme.click()  # dark -> system
        self.assertIsNone(self.js("document.documentElement.dataset.theme ?? null"))


class T09Axe(PageTest):
    def test_axe_light(self):
        self.open_page()
        self.axe("light-list")
        rich = self.srv.find("Rich HTML")
        self.page.locator(f".row[data-id='{rich['ID']}'] a.link").click()
        self.frame()
        self.axe("light-message")
        self.page.locator(".row[data-index='2'] .check").click()
        self.axe("light-selection")
        self.page.keyboard.press("?")
        self.axe("light-help")


class T10Canary(PageTest):
    """Script in a message's subject, names, filename, text and HTML: nothing runs."""

    def check_canary(self, label):
        m = self.srv.find("Canary")
        self.open_page()
        row = self.page.locator(f".row[data-id='{m['ID']}']")
        self.assertIn("<script>", row.inner_text())  # shown as text
        row.locator("a.link").click()
        self.page.locator("#msg-subject").wait_for()
        self.assertIn("<img src=x onerror=", self.page.locator("#msg-subject").inner_text())
        self.frame()
        for tab in ["Text", "HTML source", "Headers", "Raw", "HTML"]:
            self.page.get_by_role("tab", name=tab, exact=True).click()
            self.page.wait_for_timeout(150)
        f = self.frame()
        for sel in ["#js", "#sub"]:
            try:
                f.locator(sel).click(timeout=1000)
            except Exception:
                pass
        self.page.get_by_role("button", name=re.compile("Show remote")).click() if self.page.get_by_role(
            "button", name=re.compile("Show remote")).count() else None
        self.page.wait_for_timeout(700)
        self.shot(f"canary-{label}")
        self.assertIsNone(self.js("window.__pwned ?? null"))
        self.assertIsNone(f.evaluate("window.__pwned ?? null"))
        self.assertEqual(self.canary, [], "a payload fetched the canary")
        self.assertEqual(self.dialogs, [])
        self.assertEqual(self.js("document.querySelectorAll('body script, .msg img[onerror], .msg [onload]').length"), 0)
        return m

    def open_attachments(self, m):
        """Opens the HTML and SVG attachments as the page does (a new tab each); returns
        whether script ran in each."""
        ran = {}
        for name in ["evil.html", "evil.svg"]:
            link = self.page.locator(f".att-link[title='Open {name} in a new tab']")
            self.assertRegex(link.get_attribute("href"), rf"^view/{m['ID']}/part/[0-9.]+$")
            with self.ctx.expect_page() as popup:
                link.click()
            tab = popup.value
            tab.wait_for_load_state()
            tab.wait_for_timeout(500)
            _shots[0] += 1
            tab.screenshot(path=str(OUT / f"{_shots[0]:02d}-canary-attachment-{name}.png"))
            ran[name] = tab.evaluate("window.__pwned ?? null") is not None or tab.title() == "pwned"
            tab.close()
        return ran

    def test_canary_with_csp(self):
        m = self.check_canary("csp")
        ran = self.open_attachments(m)
        self.assertEqual(ran, {"evil.html": False, "evil.svg": False}, "script ran in an opened attachment")
        self.assertEqual(self.canary, [])
        self.assertEqual(self.dialogs, [])


class T11CanaryNoCsp(T10Canary):
    """The same with the page's CSP switched off: the DOM discipline alone holds."""
    bypass_csp = True

    def test_canary_with_csp(self):
        m = self.check_canary("no-csp")
        # The opened attachments are held by the server's sandbox policy alone: with it
        # switched off their script runs, which shows the check above can see it run.
        ran = self.open_attachments(m)
        self.assertEqual(ran, {"evil.html": True, "evil.svg": True})


class T12Burst(PageTest):
    """10,000 messages arrive while the page is open: a few list fetches a second."""

    def setUp(self):
        self.burst_srv = Server("burst")
        super().setUp()
        self.srv = self.burst_srv

    def tearDown(self):
        super().tearDown()
        self.burst_srv.stop()

    def test_burst_of_10000(self):
        n = int(os.environ.get("INLET_BURST", "10000"))
        self.open_page()
        cdp = self.ctx.new_cdp_session(self.page)
        cdp.send("Performance.enable")
        busy0 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        self.list_fetches.clear()
        f0 = self.js("window.inlet.model.fetches")
        p0 = self.js("performance.now()")
        t0 = time.monotonic()
        self.srv.send([mail.tiny(i) for i in range(n)], connections=4)
        sent = time.monotonic() - t0
        self.until(lambda: self.js("window.inlet.model.total") == n and f"{n:,} messages" in self.page.locator(".count").inner_text(),
                   "every message counted", timeout=60)
        self.page.wait_for_timeout(1500)  # the trailing refresh lands
        settled = time.monotonic() - t0
        busy1 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        # Times as the page saw them (Playwright reports events only between its calls).
        times = [t - p0 for t in self.js("window.inlet.model.fetchTimes") if t >= p0]
        count = self.js("window.inlet.model.fetches") - f0
        per_sec = max((sum(1 for u in times if s <= u < s + 1000) for s in times), default=0)
        top = self.srv.get("/api/v1/messages?limit=1")["messages"][0]["ID"]
        self.until(lambda: self.row_id(0) == top, "the newest message on top")
        figures = {"messages": n, "smtp_seconds": round(sent, 2), "settled_seconds": round(settled, 2),
                   "list_fetches": count, "max_fetches_in_one_second": per_sec,
                   "main_thread_busy_seconds": round(busy1["TaskDuration"] - busy0["TaskDuration"], 3),
                   "script_seconds": round(busy1["ScriptDuration"] - busy0["ScriptDuration"], 3),
                   "layout_seconds": round(busy1["LayoutDuration"] - busy0["LayoutDuration"], 3),
                   "js_heap_mb": round(busy1["JSHeapUsedSize"] / 1e6, 1),
                   "fetch_ms": [round(t) for t in times]}
        (OUT / "burst.json").write_text(json.dumps(figures, indent=2) + "\n")
        print("browser: burst", json.dumps(figures), flush=True)
        self.shot("burst-done")
        self.assertEqual(count, len(self.list_fetches), "every list request counted")
        self.assertLessEqual(per_sec, 3, "at most a few list fetches a second")
        self.assertLessEqual(count, settled * 1.5 + 5)
        # One drag to the end shows the oldest message, with one fetch.
        self.list_fetches.clear()
        self.js("document.querySelector('.list-scroll').scrollTop = 1e9")
        self.until(lambda: self.row_id(n - 1), "the oldest after one drag")
        oldest = self.srv.get(f"/api/v1/messages?start={n - 1}&limit=1")["messages"][0]["ID"]
        self.assertEqual(self.row_id(n - 1), oldest)
        self.assertLessEqual(len(self.list_fetches), 2)
        self.shot("burst-oldest")


class T13Release(PageTest):
    """Release through a relay: a second inletd is the relay the first one releases to."""

    def setUp(self):
        self.target = Server("relay-target")
        try:
            self.relaying = Server("relaying", extra=("--relay", f"127.0.0.1:{self.target.smtp}"))
        except RuntimeError:
            self.target.stop()
            raise unittest.SkipTest("waits for inletd --relay and POST /api/v1/message/{ID}/release")
        super().setUp()
        self.srv = self.relaying

    def tearDown(self):
        super().tearDown()
        self.relaying.stop()
        self.target.stop()

    def test_release_to_relay(self):
        self.srv.send([live_message("Release me")])
        m = self.srv.find("Release me")
        self.open_page(f"?m={m['ID']}")
        self.page.get_by_role("button", name="Release…").click()
        d = self.page.locator("dialog[open]")
        self.assertEqual(d.get_by_label("To", exact=True).input_value(), "inbox@test.example")
        d.get_by_label("To", exact=True).fill("released@test.example")
        self.shot("release")
        d.get_by_role("button", name="Release").click()
        self.until(lambda: self.target.get("/api/v1/mailbox/released@test.example")["total"] == 1, "the released copy")
        self.until(lambda: "Released to 1 recipient" in self.page.locator(".toast").inner_text(), "the confirmation")
        self.page.keyboard.press("Escape")
        # The relay's settings are shown; "delete after release" deletes the message here.
        self.srv.send([live_message("Release and delete me")])
        m = self.srv.find("Release and delete me")
        self.open_page(f"?m={m['ID']}")
        self.page.get_by_role("button", name="Release…").click()
        d = self.page.locator("dialog[open]")
        self.assertIn(f"127.0.0.1:{self.target.smtp}", d.locator("dl.relay").inner_text())
        d.get_by_label("Delete the message after releasing it").check()
        self.shot("release-delete")
        self.axe("release-dialog")
        d.get_by_role("button", name="Release").click()
        self.until(lambda: self.target.get("/api/v1/mailbox/inbox@test.example")["total"] == 1, "the released copy")
        self.until(lambda: self.srv.request(f"/api/v1/message/{m['ID']}")[0] == 404, "deleted after release")
        self.until(lambda: "m=" not in self.page.url, "the message closed")
        self.assertIn("and deleted", self.page.locator(".toast").inner_text())


SIXTY = "Your order #48213 has shipped: tracking number and ETA (Mon)"


def sixty_message():
    """An unread (bold) message whose subject is exactly 60 characters, with a PDF."""
    assert len(SIXTY) == 60
    m = mail.plain(0)
    del m["Subject"]
    m["Subject"] = SIXTY
    m.add_attachment(mail.pdf(), maintype="application", subtype="pdf", filename="w.pdf")
    return m


# Every date's text ends at the same x, close to the row's end, whatever else the row has.
DATE_EDGES = """() => [...document.querySelectorAll('.row[data-id]')].map(row => {
  const d = row.querySelector('.date'), rg = document.createRange();
  rg.selectNodeContents(d);
  return {id: row.dataset.id, right: rg.getBoundingClientRect().right, row: row.getBoundingClientRect().right,
          tags: row.querySelectorAll('.tag').length, att: !!row.querySelector('.att svg'),
          to: row.querySelector('.to').textContent, size: row.querySelector('.size').textContent,
          subject: row.querySelector('.s').textContent,
          fits: row.querySelector('.s').scrollWidth <= row.querySelector('.s').clientWidth
                && row.querySelector('.s').getBoundingClientRect().right <= row.querySelector('.subj').getBoundingClientRect().right + 0.5,
          shown: row.getBoundingClientRect().bottom <= innerHeight};
})"""


class T14Widths(PageTest):
    """The list at common window widths: it takes the width, subjects fit, dates line up."""

    def setUp(self):
        super().setUp()
        if not self.srv.search(f'subject:"{SIXTY}"')["messages_count"]:
            self.srv.send([sixty_message()])
            m = self.srv.search(f'subject:"{SIXTY}"')["messages"][0]
            if STATE["caps"]["tags"]:
                self.srv.request("/api/v1/tags", "PUT", {"IDs": [m["ID"]], "Tags": ["widths", "release-notes"]})

    def check_list(self, w, h):
        self.page.set_viewport_size({"width": w, "height": h})
        self.open_page()
        self.until(lambda: any(r["subject"] == SIXTY for r in self.js(DATE_EDGES)), "the 60-character subject")
        self.shot(f"list-{w}x{h}")
        self.assertFalse(self.page.locator(".msg-pane").is_visible(), "no empty message pane")
        self.assertEqual(self.js("Math.round(document.querySelector('.list-pane').getBoundingClientRect().width)"), w)
        rows = [r for r in self.js(DATE_EDGES) if r["shown"]]
        self.assertGreater(len(rows), 10)
        for r in rows:
            if len(r["subject"]) <= 60:
                self.assertTrue(r["fits"], f"{w}px: subject cut: {r['subject']}")
            self.assertRegex(r["size"], r"^\d+(\.\d)? (B|kB|MB)$")
            self.assertRegex(r["to"], r"@|\w")
        self.assertTrue(any("inbox@test.example" in r["to"] for r in rows), "the first recipient")
        rights = [r["right"] for r in rows]
        self.assertLessEqual(max(rights) - min(rights), 1.0, f"{w}px: dates do not line up: {sorted(set(rights))}")
        self.assertTrue(all(r["row"] - r["right"] < 8 for r in rows), f"{w}px: dates far from the row's end")
        kinds = {(r["tags"] > 0, r["att"]) for r in rows}
        if STATE["caps"]["tags"]:
            self.assertIn((True, True), kinds)
        self.assertIn((False, True), kinds)
        self.assertIn((False, False), kinds)
        self.axe(f"list-{w}")

    def test_1024x768(self):
        self.check_list(1024, 768)
        self.assertEqual(self.rows()[0]["h"], 34, "one line a message")

    def test_820x1180(self):
        self.check_list(820, 1180)

    def test_message_open_split_resize_hide(self):
        self.page.set_viewport_size({"width": 1440, "height": 900})
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        self.frame()
        width = lambda sel: self.js(f"Math.round(document.querySelector('{sel}').getBoundingClientRect().width)")
        lw, mw = width(".list-pane"), width(".msg-pane")
        self.assertTrue(320 <= lw <= 600 and mw >= 800, (lw, mw))
        rows = [r for r in self.js(DATE_EDGES) if r["shown"]]
        rights = [r["right"] for r in rows]
        self.assertLessEqual(max(rights) - min(rights), 1.0)
        self.shot("split-default")
        # Drag the handle 200 px to the right: the list widens, and keeps its width on reload.
        box = self.page.locator(".splitter").bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + 200
        self.page.mouse.move(x, y)
        self.page.mouse.down()
        self.page.mouse.move(x + 100, y, steps=4)
        self.page.mouse.move(x + 200, y, steps=4)
        self.page.mouse.up()
        self.until(lambda: abs(width(".list-pane") - (lw + 200)) <= 2, "the list 200 px wider")
        self.shot("split-widened")
        self.page.reload()
        self.frame()
        self.assertLessEqual(abs(width(".list-pane") - (lw + 200)), 2)
        # By keyboard: the handle is a separator the arrow keys move.
        self.page.locator(".splitter").focus()
        self.page.keyboard.press("ArrowLeft")
        self.until(lambda: abs(width(".list-pane") - (lw + 176)) <= 2, "24 px narrower")
        self.assertEqual(int(self.page.locator(".splitter").get_attribute("aria-valuenow")), width(".list-pane"))
        # Hidden: the message takes the width; shown again.
        self.page.get_by_role("button", name="Hide list").click()
        self.until(lambda: not self.page.locator(".list-pane").is_visible(), "the list hidden")
        self.assertEqual(width(".msg-pane"), 1440)
        self.shot("split-list-hidden")
        self.axe("split-list-hidden")
        self.page.get_by_role("button", name="Show list").click()
        self.until(lambda: self.page.locator(".list-pane").is_visible(), "the list shown")
        self.axe("split")
        self.js("localStorage.clear()")


class T15TagsSearch(PageTest):
    """The tag list with counts, tags that filter, the search language shown on focus."""

    def tag(self, ids, tags):
        self.srv.request("/api/v1/tags", "PUT", {"IDs": ids, "Tags": tags})

    def test_tag_list_counts_and_filter(self):
        needs("tags")
        ms = self.srv.search('subject:"Quarterly invoice"')["messages"]
        self.assertGreaterEqual(len(ms), 3)
        self.tag([m["ID"] for m in ms[:3]], ["invoices"])
        self.tag([ms[0]["ID"]], ["invoices", "to pay"])
        self.open_page()
        self.page.get_by_role("button", name=re.compile(r"^Tags")).click()
        panel = self.page.get_by_role("navigation", name="Tags")
        want = {t: self.srv.search(f'tag:"{t}"')["messages_count"] for t in self.srv.get("/api/v1/tags")}
        self.assertEqual(want["invoices"], 3)
        self.assertEqual(want["to pay"], 1)

        def shown():
            return {a.split("\n")[0]: a.split("\n")[1] for a in panel.locator(".tag-item").all_inner_texts()}
        self.until(lambda: all(shown().get(t) == f"{n:,}" for t, n in want.items()), f"the counts {want}")
        self.shot("tag-list")
        self.axe("tag-list")
        # A tag in the list shows exactly its messages.
        panel.get_by_role("link", name=re.compile("^to pay")).click()
        self.until(lambda: "q=tag%3A%22to+pay%22" in self.page.url or "q=tag%3A%22to%20pay%22" in self.page.url, "the tag's search")
        self.until(lambda: [r["id"] for r in self.rows()] == [ms[0]["ID"]], "the one message tagged 'to pay'")
        # A tag on a row does the same.
        self.page.goto(self.srv.url())
        self.until(lambda: self.page.locator(f".row[data-id='{ms[1]['ID']}'] .tag").count() == 1, "the row's tag")
        self.page.locator(f".row[data-id='{ms[1]['ID']}']").get_by_role("button", name="Messages tagged invoices").click()
        self.until(lambda: "q=tag%3Ainvoices" in self.page.url, "the tag's search from a row")
        api_ids = [m["ID"] for m in self.srv.search("tag:invoices")["messages"]]
        self.until(lambda: [r["id"] for r in self.rows()] == api_ids, "exactly the tagged messages")
        self.assertIn("3 results", self.page.locator(".count").inner_text())
        self.shot("tag-filtered")

    def test_search_operators_and_recent(self):
        self.open_page()
        box = self.page.locator("#q")
        box.focus()
        help = self.page.locator("#search-help")
        help.wait_for()
        ops = help.locator(".ops th").all_inner_texts()
        for op in ["from:", "to:", "subject:", "tag:", "is:", "has:", "after: before:", "larger: smaller:", "mailbox:", "-"]:
            self.assertIn(op, ops)
        self.shot("search-operators")
        self.axe("search-operators")
        help.get_by_role("button", name="Add is:unread to the search").click()
        self.assertEqual(box.input_value(), "is:unread")
        self.assertEqual(self.js("document.activeElement.id"), "q")
        box.press("End")
        self.page.keyboard.type(" from:grace")
        box.press("Enter")
        self.until(lambda: "q=is%3Aunread+from%3Agrace" in self.page.url, "the search")
        self.assertEqual(help.count(), 0, "the list closes on search")
        # The search is offered again next time, also after a reload.
        self.page.goto(self.srv.url())
        self.page.locator("#q").focus()
        recent = self.page.locator("#search-help .recent button")
        self.until(lambda: recent.count() >= 1, "recent searches")
        self.assertEqual(recent.first.inner_text(), "is:unread from:grace")
        self.shot("search-recent")
        recent.first.click()
        self.until(lambda: "q=is%3Aunread+from%3Agrace" in self.page.url, "the recent search run again")
        want = self.srv.search("is:unread from:grace")["messages_count"]
        self.until(lambda: self.js("window.inlet.model.total") == want, "its results")
        # Esc closes the list and leaves the box.
        self.page.locator("#q").focus()
        self.page.keyboard.press("Escape")
        self.assertEqual(self.page.locator("#search-help").count(), 0)
        self.assertNotEqual(self.js("document.activeElement.id"), "q")


class T16TagsSearchDark(T15TagsSearch):
    scheme = "dark"


PHONE_TALL = {"width": 390, "height": 844}


class T17Phone390(PageTest):
    viewport = PHONE_TALL

    def test_body_high_on_a_phone(self):
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        self.frame()
        self.page.wait_for_timeout(300)
        top = self.js("document.querySelector('.frame-box iframe').getBoundingClientRect().top")
        self.shot("phone-390-message")
        self.assertLessEqual(top, 450, "the message frame starts high on a phone")
        # Tabs on one line; the envelope and attachments one tap away.
        tabs = self.js("[...document.querySelectorAll('[role=tab]')].map(t => Math.round(t.getBoundingClientRect().top))")
        self.assertEqual(len(set(tabs)), 1, tabs)
        self.assertEqual(len(tabs), 7)
        self.assertFalse(self.page.locator(".env").is_visible())
        self.assertFalse(self.page.locator(".att-link").first.is_visible())
        self.page.locator(".more-hdrs > summary").click()
        self.assertTrue(self.page.locator(".env").is_visible())
        self.assertTrue(self.page.locator(".att-link").first.is_visible())
        self.assertIn("MAIL FROM:<sender@test.example>", self.page.locator(".env").inner_text())
        self.shot("phone-390-details")
        self.axe("phone-390-message")


class T18PrevNext(PageTest):
    """Previous and next message from the open one, by button and by key, at every width."""

    def walk(self, label):
        self.open_page()
        ids = [r["id"] for r in self.rows()]
        self.page.locator(f".row[data-id='{ids[3]}'] a.link").click() if self.page.locator(".row a.link").first.is_visible() \
            else self.page.goto(self.srv.url(f"?m={ids[3]}"))
        self.until(lambda: f"m={ids[3]}" in self.page.url, "the fourth message open")
        self.page.locator("#msg-subject").wait_for()
        nxt = self.page.get_by_role("button", name="Next message")
        prev = self.page.get_by_role("button", name="Previous message")
        self.assertTrue(nxt.is_visible() and prev.is_visible())
        nxt.click()
        self.until(lambda: f"m={ids[4]}" in self.page.url, "Next opens the fifth")
        self.page.locator("#msg-subject").wait_for()
        self.shot(f"prev-next-{label}")
        prev.click()
        prev.click()
        self.until(lambda: f"m={ids[2]}" in self.page.url, "Previous twice opens the third")
        # The keys: j next, k previous (the focus away from any text box).
        self.page.locator("#msg-subject").focus()
        self.page.keyboard.press("j")
        self.until(lambda: f"m={ids[3]}" in self.page.url, "j opens the next")
        self.page.keyboard.press("k")
        self.page.keyboard.press("k")
        self.until(lambda: f"m={ids[1]}" in self.page.url, "k twice opens the one before")
        # At the top, no previous.
        prev.click()
        self.until(lambda: f"m={ids[0]}" in self.page.url, "the first")
        self.until(lambda: prev.is_disabled(), "no previous for the first message")
        self.axe(f"prev-next-{label}")

    def test_desktop(self):
        self.walk("desktop")

    def test_tablet(self):
        self.page.set_viewport_size({"width": 820, "height": 1180})
        self.walk("tablet")

    def test_phone(self):
        self.page.set_viewport_size(PHONE_TALL)
        self.walk("phone")


def link_message(http_port):
    """HTML with links to the test's own inletd: one that answers, one 404, one refused."""
    m = mail.EmailMessage()
    m["From"] = "Links <links@test.example>"
    m["To"] = "inbox@test.example"
    m["Subject"] = "Links to check"
    m.set_content("Links inside.\n")
    base = f"http://127.0.0.1:{http_port}"
    m.add_alternative(f'<html><body><p style="display:flex"><a href="{base}/livez">live</a> '
                      f'<a href="{base}/no/such/page">missing</a> <a href="http://127.0.0.1:1/">refused</a>'
                      '</p></body></html>', subtype="html")
    return m


class T19Checks(PageTest):
    def test_html_check(self):
        rich = self.srv.find("Rich HTML")
        st, body = self.srv.request(f"/api/v1/message/{rich['ID']}/html-check")
        if st != 200:
            raise unittest.SkipTest(f"the HTML check answers {st}: {body[:80]!r}")
        want = json.loads(body)
        self.open_page(f"?m={rich['ID']}")
        tab = self.page.get_by_role("tab", name=re.compile(r"^HTML Check"))
        pct = f"{round(want['Total']['Supported'])}%"
        self.until(lambda: pct in tab.inner_text(), "the score on the tab")
        tab.click()
        self.assertIn("view=check", self.page.url)
        self.until(lambda: self.page.locator(".html-check .big").count() == 1, "the score")
        self.assertEqual(self.page.locator(".html-check .big").inner_text(), pct)
        warnings = want["Warnings"] or []
        self.assertEqual(self.page.locator(".warnings > li").count(), len(warnings))
        self.assertGreater(len(warnings), 0)
        first = self.page.locator(".warnings > li").first
        first.locator("summary").click()
        title = first.locator(".w-title").inner_text()
        w = next(x for x in warnings if x["Title"] == title)
        self.assertEqual(first.locator("table.clients tbody tr").count(), len(w["Results"]))
        self.shot("html-check")
        self.axe("html-check")

    def test_link_check(self):
        self.srv.send([link_message(self.srv.http)])
        m = self.srv.find("Links to check")
        self.open_page(f"?m={m['ID']}&view=links")
        self.assertEqual(self.page.get_by_role("tab", name="Link Check").get_attribute("aria-selected"), "true")
        self.assertEqual(self.page.locator("table.links").count(), 0, "nothing is checked until asked")
        self.page.get_by_role("button", name="Check links").click()
        self.until(lambda: self.page.locator("table.links tbody tr").count() == 3, "three links checked")
        rows = {r.split("\t")[1].strip(): r.split("\t")[0].strip()
                for r in self.page.locator("table.links tbody tr").all_inner_texts()}
        base = f"http://127.0.0.1:{self.srv.http}"
        self.assertTrue(rows[f"{base}/livez"].startswith("200"), rows)
        self.assertTrue(rows[f"{base}/no/such/page"].startswith("404"), rows)
        self.assertTrue(rows["http://127.0.0.1:1/"].startswith("—"), rows)
        self.assertIn("3 links, 2 errors", self.page.locator(".linkcheck [role=status]").inner_text())
        self.shot("link-check")
        self.axe("link-check")


class T19ChecksDark(T19Checks):
    scheme = "dark"


class T20Attachments(PageTest):
    def test_open_in_new_tab_and_download(self):
        needs("parts")
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        self.frame()
        for name, ctype in [("report.pdf", "application/pdf"), ("chart.png", "image/png")]:
            link = self.page.locator(f".att-link[title='Open {name} in a new tab']")
            href = link.get_attribute("href")
            self.assertIsNone(link.get_attribute("download"))
            self.assertEqual(link.get_attribute("target"), "_blank")
            st, _ = self.srv.request(href)
            self.assertEqual(st, 200)
            with urllib.request.urlopen(self.srv.url(href)) as r:
                self.assertEqual(r.headers["Content-Type"], ctype)
                self.assertEqual(r.headers["Content-Disposition"], f'inline; filename="{name}"')
                self.assertTrue(r.headers["Content-Security-Policy"].startswith("sandbox;"))
                self.assertEqual(r.headers["X-Content-Type-Options"], "nosniff")
            with self.ctx.expect_page() as popup:
                link.click()
            tab = popup.value
            tab.wait_for_load_state()
            self.assertTrue(tab.url.endswith(href), tab.url)
            if ctype == "image/png":
                self.until(lambda: tab.evaluate("document.images[0]?.naturalWidth") == 32, "the image shown")
            tab.wait_for_timeout(800)
            tab.screenshot(path=str(OUT / f"attachment-open-{name}.png"))
            tab.close()
        # Downloads: the attachment, and the message raw, its HTML body, its text body.
        with self.page.expect_download() as d:
            self.page.get_by_role("link", name="Download chart.png").click()
        self.assertEqual(d.value.suggested_filename, "chart.png")
        self.assertTrue(Path(d.value.path()).read_bytes().startswith(b"\x89PNG"))
        raw = self.srv.request(f"/api/v1/message/{rich['ID']}/raw")[1]
        for item, fname, check in [("Raw message (.eml)", f"{rich['ID']}.eml", lambda b: b == raw),
                                   ("HTML body (.html)", f"{rich['ID']}.html", lambda b: b"Hello from HTML" in b),
                                   ("Text body (.txt)", f"{rich['ID']}.txt", lambda b: b.startswith(b"Plain text version."))]:
            self.page.locator(".menu > summary").click()
            self.shot("downloads-menu")
            with self.page.expect_download() as d:
                self.page.get_by_role("link", name=item).click()
            self.assertEqual(d.value.suggested_filename, fname)
            self.assertTrue(check(Path(d.value.path()).read_bytes()), item)
        self.axe("attachments")


def png_pixels(data):
    """Decodes an 8-bit RGB or RGBA PNG (what a canvas writes): width, height, rows of pixels."""
    import struct
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, w, h, bpp = 8, b"", 0, 0, 3
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    stride = w * bpp
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows


class T22Screenshot(PageTest):
    def test_png_of_the_html(self):
        needs("parts")
        rich = self.srv.find("Rich HTML")
        self.open_page(f"?m={rich['ID']}")
        f = self.frame()
        self.until(lambda: f.evaluate("document.getElementById('logo').naturalWidth === 8"), "the cid: image")
        width = self.js("Math.ceil(document.querySelector('.frame-box iframe').getBoundingClientRect().width)")
        with self.page.expect_download() as d:
            self.page.get_by_role("button", name="Screenshot (PNG)").click()
        self.assertEqual(d.value.suggested_filename, f"{rich['ID']}.png")
        data = Path(d.value.path()).read_bytes()
        (OUT / "screenshot-of-html.png").write_bytes(data)
        w, h, rows = png_pixels(data)
        self.assertEqual(w, width)
        self.assertGreater(h, 300)
        colours = {px for row in rows for px in row}
        self.assertIn((220, 40, 40), colours, "the message's own image (a part) is in the PNG")
        self.assertTrue(any(abs(r - 10) < 40 and abs(g - 88) < 40 and b > 160 for r, g, b in colours), "the blue heading")
        self.assertEqual(self.remote, [], "nothing fetched from elsewhere")


class T23Options(PageTest):
    """Mailpit's options that change the page: --label, --hide-delete-all-button."""

    def setUp(self):
        self.opt_srv = Server("options", extra=("--label", "Staging box", "--hide-delete-all-button"))
        super().setUp()
        self.srv = self.opt_srv
        self.srv.send([mail.plain(i) for i in range(5)])

    def tearDown(self):
        super().tearDown()
        self.opt_srv.stop()

    def test_label_and_no_delete_all(self):
        self.open_page()
        self.until(lambda: self.page.locator(".brand .label").count() == 1, "the label")
        self.assertEqual(self.page.locator(".brand .label").inner_text(), "Staging box")
        self.until(lambda: "Staging box" in self.page.title(), "the label in the title")
        self.page.get_by_label("Select all 5 messages").click()
        self.assertEqual(self.page.locator(".bulk .n").inner_text(), "5 selected")
        self.assertEqual(self.page.locator(".bulk").get_by_role("button", name="Delete").count(), 0)
        self.shot("hide-delete-all")
        self.page.locator(".bulk").get_by_role("button", name="Clear").click()
        self.page.locator(".row[data-index='1'] .check").click()
        self.assertEqual(self.page.locator(".bulk").get_by_role("button", name="Delete").count(), 1)
        # A search's results may still all be deleted.
        self.page.goto(self.srv.url("?q=" + urllib.parse.quote("from:ada")))
        n = self.srv.search("from:ada")["messages_count"]
        self.until(lambda: len(self.rows()) == n, "the results")
        self.page.get_by_label(f"Select all {n} results").click()
        self.assertEqual(self.page.locator(".bulk").get_by_role("button", name="Delete").count(), 1)


RTL = "مرحبا بالعالم: تقرير الربع الأول جاهز للمراجعة"


class T21Details(PageTest):
    def test_rtl_subject_headers_filter_source_wraps(self):
        m = mail.plain(1)
        del m["Subject"]
        m["Subject"] = RTL
        self.srv.send([m])
        msg = self.srv.find(RTL[:10])
        self.open_page()
        row = self.page.locator(f".row[data-id='{msg['ID']}']")
        self.assertEqual(row.locator("bdi.s").get_attribute("dir"), "auto")
        self.assertEqual(row.locator(".s").inner_text(), RTL)
        # The subject starts at its right end: its first word is on screen.
        self.assertEqual(self.js("getComputedStyle(document.querySelector(\"[data-id='%s'] .s\")).direction" % msg["ID"]), "rtl")
        self.shot("rtl-row")
        row.locator("a.link").click()
        self.page.locator("#msg-subject").wait_for()
        self.assertEqual(self.page.locator("#msg-subject").get_attribute("dir"), "auto")
        # The headers filter.
        self.page.get_by_role("tab", name="Headers").click()
        box = self.page.get_by_label("Filter headers")
        box.fill("message-id")
        self.until(lambda: self.page.locator("table.headers tbody tr").count() == 1, "one header left")
        self.assertEqual(self.page.locator("table.headers tbody th").inner_text().lower(), "message-id")
        box.fill("test.example")
        self.until(lambda: self.page.locator("table.headers tbody tr").count() >= 2, "headers whose value matches")
        self.shot("headers-filter")
        self.axe("headers-filter")
        # The HTML source wraps: no line is wider than its box.
        rich = self.srv.find("Rich HTML")
        self.page.goto(self.srv.url(f"?m={rich['ID']}&view=source"))
        self.until(lambda: self.page.locator("pre.source").count() == 1, "the source")
        self.assertLessEqual(self.js("(() => { const p = document.querySelector('pre.source'); return p.scrollWidth - p.clientWidth; })()"), 0)
        self.shot("source-wraps")


def main():
    global OUT, INLETD
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("-k", action="append", default=[], help="only tests matching")
    a = ap.parse_args()
    INLETD = a.inletd
    OUT = Path(a.out)
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    argv = [sys.argv[0], "-v"] + [x for k in a.k for x in ("-k", k)]
    prog = unittest.main(module=__name__, argv=argv, exit=False)
    r = prog.result
    print(f"{r.testsRun - len(r.failures) - len(r.errors) - len(r.skipped)} passed, "
          f"{len(r.failures) + len(r.errors)} failed, {len(r.skipped)} skipped")
    sys.exit(0 if r.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
