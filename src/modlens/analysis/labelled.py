"""Labelled data (issue 14): how each detector does on the comments that carry a gold `toxic`
label, the table a researcher cites (HELM / Detoxify style).

Per source (the comment's platform: `dataset:NAME` for an audit, the site for live comments;
sources are never pooled, since datasets define "toxic" differently) and per detector version:
n, positives, precision, recall, F1 and accuracy at the detector's threshold, ROC-AUC, PR-AUC
(average precision) and the Brier score, each with a 95% stratified percentile bootstrap interval
(`metrics.bootstrap_intervals`, seeded); the best-F1 threshold (chosen in-sample, so optimistic);
a reliability curve (10 equal-width bins). The same metrics per value of each group label
(`GROUP_LABELS`). Cells with fewer than `MIN_ITEMS` items or `MIN_CLASS` positives or negatives
carry a warning. Comments only: clean/perturbed pairs are the robustness section's. Each source
names the gold label set (id, definition) its labels come from (`StudyData.label_sets`).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from modlens.analysis import metrics
from modlens.analysis.data import DetectorRow, StudyData
from modlens.analysis.skip import Skip

GROUP_LABELS = ("platform", "target_ident", "target", "group")  # labels whose values split the results
MIN_ITEMS = 30
MIN_CLASS = 5
RELIABILITY_BINS = 10
POSITIVE_VALUES = ("1", "true", "yes", "toxic")

NO_LABELS = ("no gold labels: pass --label COLUMN[=POSITIVE_VALUES] to modlens audit, or audit a dataset "
             "that has them (hatecheck, davidson, noisyhate)")


def gold(labels: dict[str, str]) -> int | None:
    """The comment's gold label (1 toxic, 0 not) from its `toxic` label; None without one."""
    value = labels.get("toxic")
    if value is None or str(value).strip() == "":
        return None
    return 1 if str(value).strip().lower() in POSITIVE_VALUES else 0


def count_warnings(n: int, positives: int) -> list[str]:
    """Why a cell's numbers are shaky: too few items, positives or negatives."""
    out = []
    if n < MIN_ITEMS:
        out.append(f"only {n} items (< {MIN_ITEMS})")
    if positives < MIN_CLASS:
        out.append(f"only {positives} positives (< {MIN_CLASS})")
    if n - positives < MIN_CLASS:
        out.append(f"only {n - positives} negatives (< {MIN_CLASS})")
    return out


def with_intervals(scores: list[float], golds: list[int], threshold: float) -> dict[str, Any]:
    """n, positives, the headline metrics each as {value, ci}, and count warnings."""
    point = metrics.classification_metrics(scores, golds, threshold)
    cis = metrics.bootstrap_intervals(scores, golds, threshold)
    positives = sum(golds)
    return {"n": len(golds), "positives": positives,
            "metrics": {k: {"value": point[k], "ci": cis[k]} for k in metrics.HEADLINE},
            "warnings": count_warnings(len(golds), positives)}


def _detector(data: StudyData, det: DetectorRow, items: list[tuple[int, int]]) -> dict[str, Any] | None:
    rows = []
    for cid, g in items:
        s = data.score(data.comments[cid]["text_id"], det.detector_id)
        if s is not None:
            rows.append((cid, s, g))
    if not rows:
        return None
    scores, golds = [s for _, s, _ in rows], [g for _, _, g in rows]
    out = {"detector": det.name, "version": det.version, "threshold": det.threshold,
           **with_intervals(scores, golds, det.threshold),
           "best_f1": metrics.best_f1_threshold(scores, golds),
           "reliability": metrics.reliability_curve(scores, golds, RELIABILITY_BINS), "groups": {}}
    for name in GROUP_LABELS:
        by_value: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for cid, s, g in rows:
            value = data.labels.get(cid, {}).get(name)
            if value not in (None, ""):
                by_value[str(value)].append((s, g))
        if by_value:
            out["groups"][name] = [
                {"value": value, **with_intervals([s for s, _ in vals], [g for _, g in vals], det.threshold)}
                for value, vals in sorted(by_value.items())]
    return out


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    by_source: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for cid, labels in data.labels.items():
        g = gold(labels)
        if g is not None and cid in data.comments:
            by_source[data.comments[cid]["platform"]].append((cid, g))
    if not by_source:
        return Skip(NO_LABELS)
    sources = []
    for source, items in sorted(by_source.items()):
        dets = [d for d in (_detector(data, det, items) for det in data.detectors.values()) if d is not None]
        if dets:
            used = data.label_sets.get(source)  # the gold label set these labels come from
            sources.append({"source": source, "n": len(items), "positives": sum(g for _, g in items),
                            "label_set": None if used is None else {k: used[k] for k in ("label_set_id", "definition")},
                            "detectors": dets})
    if not sources:
        n = sum(len(v) for v in by_source.values())
        return Skip(f"no detector scored the {n} labelled comments: score them with modlens rescore --detectors KEY")
    return {"group_labels": list(GROUP_LABELS), "min_items": MIN_ITEMS, "min_class": MIN_CLASS,
            "bootstrap": {"resamples": metrics.BOOTSTRAP_RESAMPLES, "fewer_above_items": metrics.resamples_cap_items(),
                          "seed": metrics.BOOTSTRAP_SEED,
                          "level": metrics.CI_LEVEL, "kind": "percentile, stratified by gold label"},
            "sources": sources}
