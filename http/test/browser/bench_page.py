#!/usr/bin/env python3
"""The page's figures with 100,000 stored messages: time to the first list, to open a
message, and to reach the oldest message; optionally side by side (alternating rounds)
with another inletd's page as the reference (the page before the rebuild, say).

    http/web/.venv/bin/python http/test/browser/bench_page.py --inletd build/bin/inletd \\
        [--reference-inletd OLD/inletd] [--messages 100000] [--rounds 5] [--out FILE.json]

Times are read inside the page (performance.now(), from navigation start or from the
click), polled every animation frame, so Playwright's own latency is not counted.
"""
import argparse
import json
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
    ctx.close()
    return {"first_list_ms": first, "open_ms": opened, "oldest_ms": oldest}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inletd", required=True)
    ap.add_argument("--reference-inletd")
    ap.add_argument("--messages", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    run.OUT = Path(a.out).parent if a.out else Path(".")
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
                measure(browser, s, NEW if k == "new" else OLD, a.messages)
            for r in range(a.rounds):
                for k, s in servers.items():
                    results[k].append(measure(browser, s, NEW if k == "new" else OLD, a.messages))
            browser.close()
    finally:
        for s in servers.values():
            s.stop()
    summary = {"messages": a.messages, "rounds": a.rounds}
    for k, rs in results.items():
        summary[k] = {m: statistics.median([x[m] for x in rs]) for m in rs[0] if rs[0][m] is not None}
        summary[k]["raw"] = rs
    if "old" in results:
        summary["ratio_new_over_old"] = {
            m: statistics.median([n[m] / o[m] for n, o in zip(results["new"], results["old"]) if o[m] > 0])
            for m in ("first_list_ms", "open_ms")}
    text = json.dumps(summary, indent=2)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
