"""Normalization accuracy (an evaluation tool, not runtime code), shared by the benchmark and the
tests: pytest finds it through `pythonpath = ["bench"]`, the bench scripts as a sibling module.

NoisyHate (the paper's rule, `datasets.noisyhate.restored`): split the normalizer's output on whitespace; a pair counts as
restored when the token at `position`, lowercased, equals `clean_word`. Accuracy is reported
overall and per perturbation type (a pair with several types counts for each of them).
Splitting joined words ("freewill" -> "free will") and merging spaced-out letters change the
token count, which would shift `position` for every later word; `aligned_tokens` follows the
edits' spans back to the input's tokens, so the aligned rule compares what the token at
`position` became (a split target word, "hate full", does not match "hateful"). Without
token-count changes both rules give the same answer.

HateCheck `spell_*`: a case counts as restored when its normalized text, lowercased and with
punctuation and extra spaces removed, equals its `ref_case_id` original treated the same way.
"""
from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from modlens.datasets import noisyhate
from modlens.datasets.noisyhate import NoisyPair
from modlens.normalize.base import Normalized

TYPES = ["RepeatChar", "Abbr", "SpecialChar", "MixedCase", "MixedCase+"]


def restored(output: str, pair: NoisyPair) -> bool:
    """NoisyHate's rule (`datasets.noisyhate.restored`, shared with the report) on a normalizer's output."""
    return noisyhate.restored(output.split(), pair.position, pair.clean_word)


def aligned_tokens(original: str, result: Normalized) -> list[str]:
    """What each whitespace token of `original` became in `result`: its edit's text (with a
    space if the token was split), the merged word at the first token of a spaced-out run
    and "" for the rest of the run, or the token itself."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", original)]
    out = [original[a:b] for a, b in spans]
    for edit in result.edits:
        covered = [i for i, (a, b) in enumerate(spans) if edit.start <= a and b <= edit.end]
        for n, i in enumerate(covered):
            out[i] = edit.normalized if n == 0 else ""
    return out


def restored_aligned(original: str, result: Normalized, pair: NoisyPair) -> bool:
    return noisyhate.restored(aligned_tokens(original, result), pair.position, pair.clean_word)


def accuracy_by_type(hits: list[bool], pairs: list[NoisyPair]) -> dict[str, float]:
    """{"overall": ..., type: ...} from one hit flag per pair."""
    per: dict[str, list[bool]] = defaultdict(list)
    for hit, pair in zip(hits, pairs):
        per["overall"].append(hit)
        for t in pair.types:
            per[t].append(hit)
    return {k: sum(v) / len(v) for k, v in per.items() if v}


def noisyhate_accuracy(normalize_text: Callable[[str], str], pairs: list[NoisyPair]) -> dict[str, float]:
    return accuracy_by_type([restored(normalize_text(p.perturbed), p) for p in pairs], pairs)


def noisyhate_accuracy_aligned(normalize: Callable[[str], Normalized], pairs: list[NoisyPair]) -> dict[str, float]:
    return accuracy_by_type([restored_aligned(p.perturbed, normalize(p.perturbed), p) for p in pairs], pairs)


@dataclass
class SpellCase:
    functionality: str
    perturbed: str
    original: str


def load_hatecheck_spell(path: Path | str) -> list[SpellCase]:
    with Path(path).open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    by_id = {r["case_id"]: r for r in rows}
    cases = []
    for r in rows:
        if r["functionality"].startswith("spell_") and r.get("ref_case_id"):
            ref = by_id.get(str(int(float(r["ref_case_id"]))))
            if ref is not None:
                cases.append(SpellCase(r["functionality"], r["test_case"], ref["test_case"]))
    return cases


def canonical(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s']", " ", text.lower()).split())


def hatecheck_accuracy(normalize_text: Callable[[str], str], cases: list[SpellCase]) -> dict[str, float]:
    per: dict[str, list[bool]] = defaultdict(list)
    for case in cases:
        hit = canonical(normalize_text(case.perturbed)) == canonical(case.original)
        per["overall"].append(hit)
        per[case.functionality].append(hit)
    return {k: sum(v) / len(v) for k, v in per.items()}
