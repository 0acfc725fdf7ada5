#!/usr/bin/env python3
"""docs/configuration.md's flag tables are inletd's own: each table between
`<!-- flags: GROUP -->` and `<!-- /flags -->` must equal what `inletd --flags-markdown`
makes from the flag table, every group must have its table, and every flag `inletd --help`
prints must be in the document (the package ships it as inletd's manual).

    flags_doc_test.py INLETD docs/configuration.md           # check
    flags_doc_test.py INLETD docs/configuration.md --write   # regenerate the tables
"""
import re
import subprocess
import sys

inletd, doc = sys.argv[1], sys.argv[2]
write = "--write" in sys.argv[3:]

BLOCK = re.compile(r"^<!-- flags: (.+?) -->\n.*?^<!-- /flags -->\n", re.M | re.S)

generated = subprocess.run([inletd, "--flags-markdown"], capture_output=True, text=True,
                           check=True).stdout
want = {m.group(1): m.group(0) for m in BLOCK.finditer(generated)}
text = open(doc, encoding="utf-8").read()
have = {m.group(1): m.group(0) for m in BLOCK.finditer(text)}

failures = []
missing = [g for g in want if g not in have]
unknown = [g for g in have if g not in want]
if missing:
    failures.append("groups without a table in %s: %s" % (doc, ", ".join(missing)))
if unknown:
    failures.append("tables in %s for groups inletd does not have: %s" % (doc, ", ".join(unknown)))

if write:
    text = BLOCK.sub(lambda m: want.get(m.group(1), m.group(0)), text)
    open(doc, "w", encoding="utf-8").write(text)
    print("flags_doc_test: wrote", len(want), "tables into", doc)
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    sys.exit(0)

stale = [g for g in want if g in have and have[g] != want[g]]
if stale:
    failures.append("tables in %s that differ from `inletd --flags-markdown` (run %s %s %s "
                    "--write): %s" % (doc, sys.argv[0], inletd, doc, ", ".join(stale)))

help_text = subprocess.run([inletd, "--help"], capture_output=True, text=True, check=True).stdout
in_help = set(re.findall(r"^\s+(?:-\w,)?(--[a-z0-9][a-z0-9-]*)", help_text, re.M))
in_help -= {"--help", "--version"}
in_doc = set()
for line in text.splitlines():
    if line.startswith("| `--"):
        in_doc.update(re.findall(r"`(--[a-z0-9][a-z0-9-]*)", line.split("|")[1]))
undocumented = sorted(in_help - in_doc)
if undocumented:
    failures.append("flags in inletd --help but not in %s: %s" % (doc, " ".join(undocumented)))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"flags_doc_test: {len(want)} tables and {len(in_help)} flags, help and {doc} agree")
