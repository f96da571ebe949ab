"""Attacks and transfer (seed 002). A variant with an `attack` record is an attempted TAE (toxic
seed made to look benign) or BAE (benign seed made to look toxic) against `target_detector`.

Attack success rate = false-negative rate of the target on TAEs (false-positive rate on BAEs),
over attempts that were not skipped. It is computed twice: as the attack recorded it, and
verified from the target's logged score of the variant. Queries per success use the recorded
query counts. Transfer: of the TAEs/BAEs that succeeded against a target, the share that every
other detector also gets wrong at its own threshold.
"""
from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from modlens.analysis.data import StudyData


def _wrong(score: float | None, threshold: float, goal: str) -> bool | None:
    """Is the detector fooled? TAE: says benign; BAE: says toxic."""
    if score is None:
        return None
    return score < threshold if goal == "TAE" else score >= threshold


def analyze(data: StudyData) -> dict[str, Any] | None:
    by_name: dict[str, list] = defaultdict(list)  # detector key/name -> detector rows (latest version last)
    for d in sorted(data.detectors.values(), key=lambda d: d.detector_id):
        by_name[d.name].append(d)
    attempts: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for v in data.variants:
        a = v.get("attack")
        if not isinstance(a, dict):
            continue
        goal = str(a.get("goal", "TAE")).upper()
        target = v.get("target_detector") or a.get("target")
        if goal not in ("TAE", "BAE") or not target or str(a.get("status", "")).lower() == "skipped":
            continue
        attempts[(str(target), goal)].append(v)
    if not attempts:
        return None
    rows, transfer = [], {}
    all_dets = [ds[-1] for ds in by_name.values()]
    for (target, goal), vs in sorted(attempts.items()):
        target_det = by_name.get(target, [None])[-1]
        recorded = [str(v["attack"].get("status", "")).lower() == "success" for v in vs]
        verified = [] if target_det is None else [
            _wrong(data.score(v["text_id"], target_det.detector_id), target_det.threshold, goal) for v in vs]
        verified = [x for x in verified if x is not None]
        queries = [v["attack"].get("queries") for v, ok in zip(vs, recorded) if ok]
        queries = [q for q in queries if isinstance(q, (int, float))]
        rows.append({"target": target, "goal": goal, "attempts": len(vs),
                     "success_recorded": mean(recorded) if recorded else None,
                     "success_verified": mean(verified) if verified else None, "n_verified": len(verified),
                     "queries_per_success": mean(queries) if queries else None,
                     "strategies": sorted({v["strategy"] for v in vs})})
        successes = [v for v, ok in zip(vs, recorded) if ok]
        row = {}
        for det in all_dets:
            fooled = [_wrong(data.score(v["text_id"], det.detector_id), det.threshold, goal) for v in successes]
            fooled = [x for x in fooled if x is not None]
            row[det.name] = {"rate": mean(fooled) if fooled else None, "n": len(fooled)}
        transfer[f"{target} ({goal})"] = row
    return {"rows": rows, "transfer": transfer, "detectors": [d.name for d in all_dets]}
