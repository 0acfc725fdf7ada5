#!/usr/bin/python3
"""Differential test: inlet-parse --json against Python's email package (policy=default).

Usage: /usr/bin/python3 mime/test/corpus/differential.py --inlet-parse build/bin/inlet-parse \
           [--show N] [--json-out FILE] DIR_OR_FILE...

Compares, per message: subject, from/to/cc/bcc/reply_to (name, address), date (UTC),
message_id, the part tree's content types (depth first), filenames, and the decoded text
of text/plain parts (whitespace-normalised). Prints a summary table and up to N examples
per field. Exit status 0 (differences are data for docs/mime-differences.md, not failures).
"""
import argparse
import collections
import datetime
import email
import email.policy
import json
import os
import re
import subprocess
import sys

FIELDS = ["subject", "from", "to", "cc", "bcc", "reply_to", "date", "message_id",
          "content_types", "filenames", "text"]


def files_of(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                out.extend(os.path.join(root, n) for n in sorted(names))
        else:
            out.append(p)
    return sorted(out)


def clean(s):
    """Lone surrogates (Python's surrogateescape of raw 8-bit bytes) become U+FFFD."""
    if s is None:
        return None
    return re.sub("[\udc80-\udcff]", "\ufffd", s)


def norm_ws(s):
    return " ".join(s.split()) if s is not None else None


def py_side(path):
    with open(path, "rb") as f:
        msg = email.message_from_bytes(f.read(), policy=email.policy.default)
    r = {}

    def hdr(name):
        try:
            v = msg[name]
        except Exception as e:  # noqa: BLE001 - any parse failure is recorded
            return ("error", type(e).__name__)
        return v

    s = hdr("subject")
    r["subject"] = None if s is None else norm_ws(clean(str(s)))
    for field, name in [("from", "from"), ("to", "to"), ("cc", "cc"), ("bcc", "bcc"),
                        ("reply_to", "reply-to")]:
        v = hdr(name)
        if v is None:
            r[field] = []
        else:
            try:
                r[field] = [[norm_ws(clean(a.display_name)), clean(a.addr_spec)] for a in v.addresses]
            except Exception as e:  # noqa: BLE001
                r[field] = "error: " + type(e).__name__
    d = hdr("date")
    try:
        dt = d.datetime if d is not None else None
    except Exception:  # noqa: BLE001
        dt = None
    if dt is not None:
        if dt.tzinfo is not None:
            dt = dt.astimezone(datetime.timezone.utc)
        r["date"] = "%04d-%02d-%02dT%02d:%02d:%02dZ" % (dt.year, dt.month, dt.day, dt.hour,
                                                       dt.minute, dt.second)
    else:
        r["date"] = None
    mid = hdr("message-id")
    if mid is None:
        r["message_id"] = None
    else:
        m = re.search(r"<([^>]*)>", str(mid))
        r["message_id"] = clean(re.sub(r"\s", "", m.group(1) if m else str(mid).strip())) or None
    types, names, texts = [], [], []
    for part in msg.walk():
        types.append(part.get_content_type())
        try:
            fn = part.get_filename()
        except Exception:  # noqa: BLE001
            fn = None
        names.append(clean(fn))
        if part.get_content_type() == "text/plain" and not part.is_multipart() \
                and part.get_content_disposition() != "attachment" and fn is None:
            try:
                t = part.get_content()
            except Exception:  # noqa: BLE001 - unknown charset: decode as UTF-8
                t = (part.get_payload(decode=True) or b"").decode("utf-8", "replace")
            texts.append(norm_ws(clean(t)))
    r["content_types"], r["filenames"], r["text"] = types, names, texts
    return r


def inlet_side(obj):
    r = {"subject": norm_ws(obj["subject"]) if obj["subject"] is not None else None}
    for f in ["from", "to", "cc", "bcc", "reply_to"]:
        r[f] = [[norm_ws(a["name"]), a["address"]] for a in obj[f]]
    r["date"] = obj["date"]
    r["message_id"] = obj["message_id"]
    types, names, texts = [], [], []

    def walk(p):
        types.append(p["content_type"])
        names.append(p["filename"])
        if p["content_type"] == "text/plain" and "text" in p and p["disposition"] != "attachment" \
                and p["filename"] is None:
            texts.append(norm_ws(p["text"]))
        for c in p["children"]:
            walk(c)
    walk(obj["body"])
    r["content_types"], r["filenames"], r["text"] = types, names, texts
    return r


def run_inlet(binary, batch):
    out = subprocess.run([binary, "--json", "--with-text"] + batch + ["/dev/null"],
                         stdout=subprocess.PIPE, check=False, timeout=600).stdout
    res = {}
    for line in out.decode("utf-8", "replace").split("\n"):
        if not line:
            continue
        o = json.loads(line)
        res[o["file"]] = o
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inlet-parse", required=True)
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--json-out")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    files = files_of(a.paths)
    same = collections.Counter()
    diffs = collections.defaultdict(list)
    crashed = []
    for i in range(0, len(files), 200):
        batch = files[i:i + 200]
        ours = run_inlet(a.inlet_parse, batch)
        for f in batch:
            if f not in ours:
                crashed.append(f)
                continue
            o, p = inlet_side(ours[f]), py_side(f)
            for k in FIELDS:
                if o[k] == p[k]:
                    same[k] += 1
                else:
                    diffs[k].append({"file": f, "inlet": o[k], "python": p[k]})
    n = len(files) - len(crashed)
    print(f"messages: {len(files)}  (inlet-parse produced no output for {len(crashed)})")
    print(f"{'field':<14}{'same':>8}{'differ':>8}{'agree %':>9}")
    for k in FIELDS:
        d = len(diffs[k])
        print(f"{k:<14}{same[k]:>8}{d:>8}{100.0 * same[k] / max(n, 1):>9.2f}")
    for k in FIELDS:
        for ex in diffs[k][:a.show]:
            print(f"\n[{k}] {ex['file']}\n  inlet : {json.dumps(ex['inlet'], ensure_ascii=False)[:300]}"
                  f"\n  python: {json.dumps(ex['python'], ensure_ascii=False)[:300]}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"files": len(files), "no_output": crashed, "same": same, "diffs": diffs}, f,
                      ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
