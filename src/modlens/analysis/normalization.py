"""Normalization accuracy per perturbation type (NoisyHate, Table 3), next to the spell checkers
the dataset authors recorded (NoisyHate's `google_correct` / `bing_correct`).

As the paper computes it: split the normalizer's output on whitespace; a pair is restored when
the token at the perturbed position, lowercased, equals the clean word lowercased. Only variants
that record `position` and `clean_word` (NoisyHate's) can be judged this way.

Per source, never pooled (a source is the variant's comment's platform, its data set): only
`dataset:noisyhate` (the catalog names files `noisyhate` only with the shipped bytes) is NoisyHate,
its `google_correct` / `bing_correct` the dataset authors' results. A file in NoisyHate's layout with
other bytes (an edited copy: `dataset:file-DIGEST`) gets a table of its own (`release` false, with a
`note`), its recorded columns being whatever that file records: its pairs are still judged by the
paper's rule, never counted in NoisyHate's table.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from modlens.analysis import per_source
from modlens.analysis.data import StudyData
from modlens.datasets.noisyhate import restored

RECORDED = {"google_correct": "Google (recorded)", "bing_correct": "Bing (recorded)"}
PLATFORM = "dataset:noisyhate"
NOT_RELEASE = ("{source} records perturbed words in NoisyHate's layout but is not NoisyHate (the catalog's bytes): "
               "its own table, its recorded results its file's, not the dataset authors'")


def analyze(data: StudyData) -> dict[str, Any] | None:
    """{"sources": [a table per source, NoisyHate first]}, or None when no modlens normalizer was judged."""
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in data.variants:
        p = v["params"]
        if "position" in p and "clean_word" in p:
            comment = data.comments.get(v["comment_id"])
            by_source[comment["platform"] if comment else ""].append(v)  # the variant's data set
    blocks, _ = per_source.blocks(by_source, PLATFORM, lambda source, rows: _block(data, source, rows))
    return {"sources": blocks} if blocks else None


def _block(data: StudyData, source: str, variants: list[dict[str, Any]]) -> dict[str, Any] | None:
    # system -> type -> [hits]
    hits: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for v in variants:
        p = v["params"]
        types = p.get("types") or [v["strategy"]]
        types = types.split("|") if isinstance(types, str) else types
        for n in data.normalizations.get(v["text_id"], []):
            ok = restored(data.texts.get(n["result_text_id"], "").split(), int(p["position"]), str(p["clean_word"]))
            for t in ["all", *types]:
                hits[f"{n['normalizer']}@{n['version']}"][t].append(ok)
        labels = data.labels.get(v["comment_id"], {})
        for col, system in RECORDED.items():
            if labels.get(col) in ("0", "1"):
                for t in ["all", *types]:
                    hits[system][t].append(labels[col] == "1")
    if not any(not s.endswith("(recorded)") for s in hits):
        return None  # recorded results alone say nothing about modlens' normalizers
    types = sorted({t for per in hits.values() for t in per} - {"all"})
    table = {system: {t: {"accuracy": sum(h) / len(h), "n": len(h)} for t, h in per.items()}
             for system, per in hits.items()}
    out: dict[str, Any] = {"source": source, "release": source == PLATFORM, "types": ["all", *types], "systems": table}
    if not out["release"]:
        out["note"] = NOT_RELEASE.format(source=source)
    return out
