"""SASS-style categories (seed 004): precision, recall and F1 of each detector at its threshold
against the human labels (human score > 0.5), with 95% bootstrap intervals, and mean detector and
human score per category, split into the filtered and unfiltered halves when the file says which
is which. A SASS file without human scores ("categories only") gets the mean detector score per
category and no P/R/F1."""
from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from modlens.analysis.data import StudyData
from modlens.analysis.metrics import bootstrap_intervals, precision_recall_f1
from modlens.analysis.skip import Skip

PLATFORM = "dataset:sass"
NO_ITEMS = "no SASS texts (labels category + human_score): audit a SASS file with --format sass"


def analyze(data: StudyData) -> dict[str, Any] | Skip:
    items = [(cid, lab) for cid, lab in data.labels.items() if cid in data.comments and "category" in lab
             and ("human_score" in lab or data.comments[cid]["platform"] == PLATFORM)]
    if not items:
        return Skip(NO_ITEMS)
    rated = all("human_score" in lab and "toxic" in lab for _, lab in items)
    human_by_cat: dict[str, list[float]] = defaultdict(list)
    for _, lab in items:
        if "human_score" in lab:
            human_by_cat[lab["category"]].append(float(lab["human_score"]))
    detectors = []
    for det in data.detectors.values():
        rows = [(lab, data.score(data.comments[cid]["text_id"], det.detector_id)) for cid, lab in items]
        scored = [(lab, s) for lab, s in rows if s is not None]
        if not scored:
            continue
        by_cat: dict[str, list[float]] = defaultdict(list)
        for lab, s in scored:
            by_cat[lab["category"]].append(s)
        entry: dict[str, Any] = {"detector": det.name, "version": det.version, "threshold": det.threshold,
                                 "n": len(scored), "mean_by_category": {c: mean(v) for c, v in sorted(by_cat.items())}}
        if rated:
            golds = [lab["toxic"] == "1" for lab, _ in scored]
            entry.update(precision_recall_f1([s >= det.threshold for _, s in scored], golds))
            cis = bootstrap_intervals([s for _, s in scored], [int(g) for g in golds], det.threshold)
            entry["ci"] = {k: cis[k] for k in ("precision", "recall", "f1")}
            by_split: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
            for lab, s in scored:
                if "filtered" in lab:
                    by_split[lab["filtered"]]["pred"].append(s >= det.threshold)
                    by_split[lab["filtered"]]["gold"].append(lab["toxic"] == "1")
            entry["by_split"] = {k: precision_recall_f1(v["pred"], v["gold"]) for k, v in sorted(by_split.items())}
        detectors.append(entry)
    if not detectors:
        return Skip(f"no detector scored the {len(items)} SASS texts: score them with modlens rescore --detectors KEY")
    return {"n": len(items), "categories_only": not rated,
            "share_toxic": mean(lab["toxic"] == "1" for _, lab in items) if rated else None,
            "human_mean_by_category": {c: mean(v) for c, v in sorted(human_by_cat.items())},
            "categories": sorted({lab["category"] for _, lab in items}),
            "detectors": detectors}
