"""Normalization accuracy per perturbation type (NoisyHate, Table 3), next to the spell checkers
the dataset authors recorded (NoisyHate's `google_correct` / `bing_correct`).

As the paper computes it: split the normalizer's output on whitespace; a pair is restored when
the token at the perturbed position, lowercased, equals the clean word lowercased. Only variants
that record `position` and `clean_word` (NoisyHate's) can be judged this way.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from modlens.analysis.data import StudyData
from modlens.datasets.noisyhate import restored

RECORDED = {"google_correct": "Google (recorded)", "bing_correct": "Bing (recorded)"}


def analyze(data: StudyData) -> dict[str, Any] | None:
    # system -> type -> [hits]
    hits: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for v in data.variants:
        p = v["params"]
        if "position" not in p or "clean_word" not in p:
            continue
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
    return {"types": ["all", *types], "systems": table}
