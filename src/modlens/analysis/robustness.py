"""Robustness to perturbation (NoisyHate, Table 4): accuracy against the threshold for clean and
perturbed texts, ΔAUC (area between the two curves, clean minus perturbed) and ΔACC@0.5
(perturbed minus clean accuracy at the detector's threshold), per perturbation type, with and
without normalization of the perturbed text.

A pair is (comment, one of its variants) where the comment carries a gold `toxic` label and the
detector scored both texts; the variant inherits the comment's label (a perturbation keeps the
meaning). Attack variants belong to the attacks section and are left out here. Without gold
labels a pair still counts towards the decision flip rate.

A figure over fewer than `MIN_PAIRS` pairs carries a warning (`warnings`), as the labelled section's
cells of fewer than its minimum of items do.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modlens.analysis.data import StudyData
from modlens.analysis import labelled
from modlens.analysis.metrics import THRESHOLDS, accuracy_curve, area
from modlens.metrics import accuracy, roc_auc


MIN_PAIRS = labelled.MIN_ITEMS  # the labelled section's minimum, for pairs


def few_pairs(n: int) -> list[str]:
    """Why a figure over `n` pairs is shaky (empty when it is not)."""
    return [f"only {n} pair{'s' * (n != 1)} (< {MIN_PAIRS})"] if n < MIN_PAIRS else []


def _types(variant: dict[str, Any]) -> list[str]:
    types = variant["params"].get("types")
    if isinstance(types, str):
        types = types.split("|")
    return [str(t) for t in types] if types else [variant["strategy"]]


def _gold(data: StudyData, comment_id: int) -> int | None:
    """The comment's gold label, read as the labelled section reads it (a blank value is none)."""
    return labelled.gold(data.labels.get(comment_id, {}))


def _normalized_text_id(data: StudyData, text_id: int, normalizer: str) -> int | None:
    for n in data.normalizations.get(text_id, []):
        if f"{n['normalizer']}@{n['version']}" == normalizer:
            return int(n["result_text_id"])
    return None


@dataclass
class _Pairs:
    """One (platform, type) group's pairs, in step: clean and perturbed scores, the gold label, and
    per normalizer the normalized perturbed text's score (None where it was not scored)."""
    clean: list[float] = field(default_factory=list)
    pert: list[float] = field(default_factory=list)
    label: list[int] = field(default_factory=list)
    norm: dict[str, list[float | None]] = field(default_factory=lambda: defaultdict(list))


def _summary(clean: list[float], pert: list[float], labels: list[int], threshold: float) -> dict[str, Any]:
    c_curve, p_curve = accuracy_curve(clean, labels), accuracy_curve(pert, labels)
    c_acc, p_acc = accuracy(clean, labels, threshold), accuracy(pert, labels, threshold)
    return {
        "n_pairs": len(labels), "acc_clean": c_acc, "acc_perturbed": p_acc, "delta_acc": p_acc - c_acc,
        "auc_clean": area(c_curve), "auc_perturbed": area(p_curve), "delta_auc": area(c_curve) - area(p_curve),
        "roc_auc_clean": roc_auc(clean, labels), "roc_auc_perturbed": roc_auc(pert, labels),
        "curve_clean": c_curve.round(4).tolist(), "curve_perturbed": p_curve.round(4).tolist(),
        "warnings": few_pairs(len(labels)),
    }


def analyze(data: StudyData) -> dict[str, Any] | None:
    normalizers = sorted({f"{n['normalizer']}@{n['version']}" for ns in data.normalizations.values() for n in ns})
    results = []
    for det in data.detectors.values():
        # (platform, type) -> lists; "all" collects every type once per pair
        groups: dict[tuple[str, str], _Pairs] = defaultdict(_Pairs)
        flips: dict[str, list[bool]] = defaultdict(list)
        for v in data.variants:
            if v.get("attack"):
                continue
            comment = data.comments.get(v["comment_id"])
            if comment is None:
                continue
            s_clean, s_pert = data.score(v["source_text_id"], det.detector_id), data.score(v["text_id"], det.detector_id)
            if s_clean is None or s_pert is None:
                continue
            platform = comment["platform"]
            flips[platform].append((s_clean >= det.threshold) != (s_pert >= det.threshold))
            gold = _gold(data, v["comment_id"])
            if gold is None:
                continue
            norm_scores: dict[str, float | None] = {}
            for nz in normalizers:
                nid = _normalized_text_id(data, v["text_id"], nz)
                norm_scores[nz] = None if nid is None else data.score(nid, det.detector_id)
            for t in ["all", *_types(v)]:
                g = groups[(platform, t)]
                g.clean.append(s_clean)
                g.pert.append(s_pert)
                g.label.append(gold)
                for nz, s in norm_scores.items():
                    g.norm[nz].append(s)
        if not groups and not flips:
            continue
        rows = []
        for (platform, t), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
            row = {"platform": platform, "type": t, **_summary(g.clean, g.pert, g.label, det.threshold)}
            normalized: dict[str, dict[str, Any]] = {}
            row["normalized"] = normalized
            for nz in normalizers:
                kept = [(i, s) for i, s in enumerate(g.norm[nz]) if s is not None]
                if kept:
                    sub = _summary([g.clean[i] for i, _ in kept], [s for _, s in kept],
                                   [g.label[i] for i, _ in kept], det.threshold)
                    normalized[nz] = {k: sub[k] for k in ("n_pairs", "acc_clean", "acc_perturbed", "delta_acc",
                                                                  "delta_auc", "curve_perturbed", "warnings")}
            rows.append(row)
        results.append({"detector": det.name, "version": det.version, "threshold": det.threshold, "rows": rows,
                        "flip_rate": {p: float(np.mean(f)) for p, f in flips.items()},
                        "n_flip_pairs": {p: len(f) for p, f in flips.items()}})
    if not results:
        return None
    return {"thresholds": THRESHOLDS.round(4).tolist(), "normalizers": normalizers, "detectors": results}
