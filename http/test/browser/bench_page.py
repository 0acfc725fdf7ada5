#!/usr/bin/env python3
"""The page's figures with 100,000 stored messages: time to the first list, to open a
message, and to reach the oldest message; and, with --burst N, the list fetches and the
main thread's busy time while N messages arrive with the page open. Optionally side by
side (alternating rounds) with another inletd's page as the reference (the page before
the rebuild, say).

    http/web/.venv/bin/python http/test/browser/bench_page.py --inletd build/bin/inletd \\
        [--reference-inletd OLD/inletd [--reference-page old|new]] [--messages 100000] [--rounds 5]
        [--burst 10000]
        [--out FILE.json]

Times are read inside the page (performance.now(), from navigation start or from the
click), polled every animation frame, so Playwright's own latency is not counted.
"""
import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mail  # noqa: E402
import run  # noqa: E402

# The two pages' markup: the rebuilt page, and the page it replaced.
NEW = {"row": ".row[data-id]", "link": ".row[data-index='3'] a.link", "subject": "#msg-subject"}
OLD = {"row": "tr.msg", "link": "tr.msg:nth-child(4)", "subject": "#detail h2"}

POLL = """async ([sel, limit]) => {
  const t0 = performance.now();
  while (!document.querySelector(sel)) {
    if (performance.now() - t0 > limit) return -1;
    await new Promise(r => requestAnimationFrame(r));
  }
  return performance.now();
}"""

CLICK_THEN_POLL = """async ([link, sel, limit]) => {
  const before = document.querySelector(sel)?.textContent;
  const t0 = performance.now();
  document.querySelector(link).click();
  while (!document.querySelector(sel) || document.querySelector(sel).textContent === before) {
    if (performance.now() - t0 > limit) return -1;
    await new Promise(r => requestAnimationFrame(r));
  }
  return performance.now() - t0;
}"""

SCROLL_END = """async ([n, limit]) => {
  const t0 = performance.now();
  document.querySelector('.list-scroll').scrollTop = 1e9;
  while (!document.querySelector(`.row[data-index="${n - 1}"][data-id]`)) {
    if (performance.now() - t0 > limit) return -1;
    await new Promise(r => requestAnimationFrame(r));
  }
  return performance.now() - t0;
}"""


def fill(srv, n):
    t0 = time.time()
    batch = 5000
    for s in range(0, n, batch):
        srv.send([mail.tiny(i) for i in range(s, min(n, s + batch))], connections=8)
    print(f"bench: {n} messages stored in {time.time() - t0:.1f} s", flush=True)


def measure(browser, srv, sel, n):
    ctx = browser.new_context(viewport=run.DESKTOP)
    page = ctx.new_page()
    page.goto(srv.url(), wait_until="commit")
    first = page.evaluate(POLL, [sel["row"], 20000])
    page.wait_for_timeout(300)
    opened = page.evaluate(CLICK_THEN_POLL, [sel["link"], sel["subject"], 20000])
    oldest = page.evaluate(SCROLL_END, [n, 20000]) if sel is NEW else None
    nodes = page.evaluate("document.getElementsByTagName('*').length")
    ctx.close()
    return {"first_list_ms": first, "open_ms": opened, "oldest_ms": oldest, "dom_nodes": nodes}


LIST_REQUEST = re.compile(r"/api/v1/(messages|search|mailbox/[^/?]+)\?")


def burst(browser, inletd, name, n):
    """A fresh inletd, the page open on it, n messages over 4 SMTP connections."""
    run.INLETD = inletd
    srv = run.Server(f"burst-{name}")
    try:
        ctx = browser.new_context(viewport=run.DESKTOP)
        page = ctx.new_page()
        lists = []
        page.on("request", lambda r: lists.append(r.url) if LIST_REQUEST.search(r.url) else None)
        page.goto(srv.url())
        page.wait_for_timeout(1000)
        cdp = ctx.new_cdp_session(page)
        cdp.send("Performance.enable")
        m0 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        lists.clear()
        t0 = time.time()
        srv.send([mail.tiny(i) for i in range(n)], connections=4)
        while srv.get("/api/v1/messages?limit=1")["total"] < n and time.time() - t0 < 120:
            page.wait_for_timeout(100)
        page.wait_for_timeout(3000)  # what the page still does once the burst is over
        m1 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        ctx.close()
        return {"list_fetches": len(lists), "seconds": round(time.time() - t0, 2),
                "main_thread_busy_s": round(m1["TaskDuration"] - m0["TaskDuration"], 3),
                "script_s": round(m1["ScriptDuration"] - m0["ScriptDuration"], 3)}
    finally:
        srv.stop()


def markup(a, kind):
    return NEW if kind == "new" or a.reference_page == "new" else OLD


def first_list_and_open(a):
    servers = {}
    run.INLETD = a.inletd
    servers["new"] = run.Server("bench-new")
    if a.reference_inletd:
        run.INLETD = a.reference_inletd
        servers["old"] = run.Server("bench-old")
    try:
        for s in servers.values():
            fill(s, a.messages)
        results = {k: [] for k in servers}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=run.CHROMIUM, args=run.CHROMIUM_ARGS)
            for k, s in servers.items():  # warm both once
                measure(browser, s, markup(a, k), a.messages)
            for r in range(a.rounds):
                for k, s in servers.items():
                    results[k].append(measure(browser, s, markup(a, k), a.messages))
            browser.close()
    finally:
        for s in servers.values():
            s.stop()
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--reference-inletd")
    ap.add_argument("--messages", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--burst", type=int, default=0, help="also a burst of this many messages")
    ap.add_argument("--reference-page", choices=["old", "new"], default="old",
                    help="the reference's markup: the page before the rebuild (old) or this page's (new)")
    ap.add_argument("--out")
    a = ap.parse_args()
    run.OUT = Path(a.out).parent if a.out else Path(".")
    results = {}
    if a.messages:
        results = first_list_and_open(a)
    if a.burst:
        kinds = {"new": a.inletd, **({"old": a.reference_inletd} if a.reference_inletd else {})}
        bursts = {k: [] for k in kinds}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=run.CHROMIUM, args=run.CHROMIUM_ARGS)
            for r in range(max(1, a.rounds // 2)):
                for k, exe in kinds.items():
                    bursts[k].append(burst(browser, exe, k, a.burst))
                    print(f"bench: burst {k}: {bursts[k][-1]}", flush=True)
            browser.close()
    summary = {"messages": a.messages, "rounds": a.rounds}
    if a.burst:
        summary["burst"] = {"messages": a.burst, **bursts}
    for k, rs in results.items():
        summary[k] = {m: statistics.median([x[m] for x in rs]) for m in rs[0] if rs[0][m] is not None}
        summary[k]["raw"] = rs
    if "old" in results and "new" in results:
        summary["ratio_new_over_old"] = {
            m: statistics.median([n[m] / o[m] for n, o in zip(results["new"], results["old"]) if o[m] > 0])
            for m in ("first_list_ms", "open_ms")}
    text = json.dumps(summary, indent=2)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
