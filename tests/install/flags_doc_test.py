#!/usr/bin/env python3
"""Every flag `inletd --help` prints is documented in docs/configuration.md, and every
flag the document's tables name exists: the help text and the document cannot drift
apart (the package ships the document as inletd's manual).

    flags_doc_test.py INLETD docs/configuration.md
"""
import re
import subprocess
import sys

inletd, doc = sys.argv[1], sys.argv[2]
help_text = subprocess.run([inletd, "--help"], capture_output=True, text=True, check=True).stdout
in_help = set(re.findall(r"^\s+(?:-\w,)?(--[a-z0-9][a-z0-9-]*)", help_text, re.M))
in_help -= {"--help", "--version"}

in_doc = set()
for line in open(doc, encoding="utf-8"):
    if line.startswith("| `--"):
        first_cell = line.split("|")[1]
        in_doc.update(re.findall(r"`(--[a-z0-9][a-z0-9-]*)", first_cell))

undocumented = sorted(in_help - in_doc)
unknown = sorted(in_doc - in_help)
if undocumented:
    print("flags in inletd --help but not in", doc, ":", " ".join(undocumented))
if unknown:
    print("flags in", doc, "that inletd does not have:", " ".join(unknown))
if undocumented or unknown:
    sys.exit(1)
print(f"flags_doc_test: {len(in_help)} flags, help and {doc} agree")
