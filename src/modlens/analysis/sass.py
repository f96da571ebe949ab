"""SASS-style categories (seed 004): precision, recall and F1 of each detector at its threshold
against the human labels (human score > 0.5), and mean detector and human score per category,
split into the filtered and unfiltered halves when the file says which is which."""
from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from modlens.analysis.data import StudyData
from modlens.analysis.metrics import precision_recall_f1


def analyze(data: StudyData) -> dict[str, Any] | None:
    items = [(cid, lab) for cid, lab in data.labels.items()
             if "category" in lab and "human_score" in lab and cid in data.comments]
    if not items:
        return None
    human_by_cat: dict[str, list[float]] = defaultdict(list)
    for _, lab in items:
        human_by_cat[lab["category"]].append(float(lab["human_score"]))
    detectors = []
    for det in data.detectors.values():
        rows = [(lab, data.score(data.comments[cid]["text_id"], det.detector_id)) for cid, lab in items]
        rows = [(lab, s) for lab, s in rows if s is not None]
        if not rows:
            continue
        prf = precision_recall_f1([s >= det.threshold for _, s in rows], [lab["toxic"] == "1" for lab, _ in rows])
        by_cat: dict[str, list[float]] = defaultdict(list)
        by_split: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        for lab, s in rows:
            by_cat[lab["category"]].append(s)
            if "filtered" in lab:
                by_split[lab["filtered"]]["pred"].append(s >= det.threshold)
                by_split[lab["filtered"]]["gold"].append(lab["toxic"] == "1")
        detectors.append({
            "detector": det.name, "version": det.version, "threshold": det.threshold, **prf,
            "mean_by_category": {c: mean(v) for c, v in sorted(by_cat.items())},
            "by_split": {k: precision_recall_f1(v["pred"], v["gold"]) for k, v in sorted(by_split.items())},
        })
    if not detectors:
        return None
    return {"n": len(items), "share_toxic": mean(lab["toxic"] == "1" for _, lab in items),
            "human_mean_by_category": {c: mean(v) for c, v in sorted(human_by_cat.items())},
            "detectors": detectors}
