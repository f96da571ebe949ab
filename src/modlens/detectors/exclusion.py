"""Keep benchmark texts out of a training pool: exact and cheap near-duplicate matching.

Every text of a benchmark (Davidson, HateCheck cases and templates, NoisyHate clean and perturbed,
SASS when its files are here) gives three keys; a pool row is excluded when any of its keys is
among them:
- `exact`: `trainingdata.text_key` (words only, lower case, no URLs, mentions or retweet marks);
- `loose`: that key without digits, runs of a repeated character squeezed to one and without spaces
  ("soooo" = "so", "h8 u" = "hu"): spelling variants and re-spacings;
- `cut`: the exact key without its last word, when 4 or more words remain: tweets truncated with an
  ellipsis (Davidson's retweets end in a cut word such as `o&#8230;`, which the pool dropped).
  Conservative: a text that differs from a benchmark text in its last word only is left out too;
- `cleaned`: the other keys the report looks a text up by (`trainingdata.lookup_keys`): the text as
  the known pool cleaned it (`#` deleted, cut from "www" on: Davidson's "Wowwww this bitch ..." is
  held as "Wow bitch ...") and a tweet cut with "…" without its cut word. Without it, 11 Davidson
  tweets held so were left in the pool the shipped six-label head was fit on.
The counts of rows removed per benchmark and per rule are recorded in the head's training record.
"""
from __future__ import annotations

import csv
import os
import re
import sys
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from modlens import paths
from modlens.trainingdata import lookup_keys, text_key

DATA = Path(__file__).resolve().parents[1] / "datasets" / "data"
# SASS has no licence: its files are read where they lie (never copied into modlens) to exclude its texts.
# The shipped head was built with them present: without them the pool, and so the seeded sample, differs.
# Where: $MODLENS_SASS, else where `modlens data fetch sass` puts them.
SASS_DIR = Path(os.environ.get("MODLENS_SASS") or paths.fetched_data() / "sass")
RULES = ("exact", "loose", "cut", "cleaned")


def keys(text: str) -> dict[str, tuple[str, ...]]:
    """Per rule, the text's keys under it (a rule that gives none is left out)."""
    k = text_key(text)
    out: dict[str, tuple[str, ...]] = {"exact": (k,), "loose": (re.sub(r"(.)\1+", r"\1", re.sub(r"\d", "", k)).replace(" ", ""),)}
    words = k.split()
    if len(words) >= 5:
        out["cut"] = (" ".join(words[:-1]),)
    out["cleaned"] = tuple(c for c in lookup_keys(text)[1:] if all(c not in v for v in out.values()))
    return {rule: tuple(v for v in vs if v) for rule, vs in out.items() if any(vs)}


def _column(path: Path, names: Sequence[str]) -> list[str]:
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t" if path.suffix == ".tsv" else ",")
        cols = [c for c in names if c in (reader.fieldnames or [])]
        return [row[c] for row in reader for c in cols if row.get(c)]


def benchmark_texts(sass_dir: str | Path | None = SASS_DIR) -> dict[str, list[str]]:
    """The texts of the benchmarks modlens ships (and SASS's when its folder exists)."""
    out = {
        "davidson": _column(DATA / "davidson" / "labeled_data.csv", ["tweet"]),
        "hatecheck": _column(DATA / "hatecheck" / "test_suite_cases.csv", ["test_case", "case_templ"]),
        "noisyhate": _column(DATA / "noisyhate" / "dev.csv", ["clean", "perturbed"]),
    }
    if sass_dir is not None and Path(sass_dir).is_dir():
        files = sorted(p for p in Path(sass_dir).iterdir() if p.suffix in (".csv", ".tsv"))
        texts = [t for p in files for t in _column(p, ["text"])]
        if texts:
            out["sass"] = texts
    return out


def exclusion_mask(pool: Sequence[str], benchmarks: Mapping[str, Iterable[str]]) -> tuple[list[bool], dict[str, dict[str, int]]]:
    """(per pool row: excluded?, per benchmark: its distinct texts and the pool rows it removed, per rule)."""
    index: dict[str, dict[str, str]] = {}  # key -> {benchmark: the rule that gave it the key}
    counts: dict[str, dict[str, int]] = {}
    for name, texts in benchmarks.items():
        distinct = set(texts)
        counts[name] = {"texts": len(distinct), "removed": 0, **{rule: 0 for rule in RULES}}
        for t in distinct:
            for rule, vs in keys(t).items():
                for v in vs:  # a key two texts give under two rules: the first rule's (an order set iteration cannot change)
                    given = index.setdefault(v, {})
                    if name not in given or RULES.index(rule) < RULES.index(given[name]):
                        given[name] = rule
    mask = []
    for text in pool:
        hit: dict[str, str] = {}
        for rule, vs in keys(text).items():
            for v in vs:
                for name, its_rule in index.get(v, {}).items():
                    # counted under the rule that made the match: the row's own, else the benchmark text's
                    hit.setdefault(name, rule if rule != "exact" else its_rule)
        for name, rule in hit.items():
            counts[name]["removed"] += 1
            counts[name][rule] += 1
        mask.append(bool(hit))
    return mask, counts
