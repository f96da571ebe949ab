"""Detectors vs people, per platform (seed 003, Figures 7-12): ordered logistic regression of
each attribute's majority rating on a detector's score and the platform (treatment-coded, the
most frequent platform as reference), probability curves per platform, and the score at which
the top level ("toxic") becomes more likely than not, with a delta-method standard error.

For four-level attributes the score where the upper half (e.g. informal or very informal)
becomes more likely than not is reported too (the paper's collapsed curves). Levels never
chosen as a majority are left out of that attribute's model (their cut point is not identified).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from scipy.stats import norm

from modlens.analysis import ordlogit
from modlens.analysis.data import StudyData

GRID = np.linspace(0.0, 1.0, 51)
MIN_COMMENTS = 12


def _design(scores: np.ndarray, platforms: list[str], order: list[str]) -> np.ndarray:
    cols = [scores] + [np.array([p == q for p in platforms], float) for q in order[1:]]
    return np.column_stack(cols)


def fit_attribute(data: StudyData, majority: dict[int, dict[str, str]], attr: str, levels: list[str],
                  detector_id: int) -> dict[str, Any] | None:
    rows = []
    for cid, m in majority.items():
        if attr not in m or cid not in data.comments:
            continue
        s = data.score(data.comments[cid]["text_id"], detector_id)
        if s is not None:
            rows.append((s, data.comments[cid]["platform"], m[attr]))
    if len(rows) < MIN_COMMENTS:
        return None
    used = [lv for lv in levels if any(r[2] == lv for r in rows)]
    if len(used) < 2:
        return None
    counts = Counter(r[1] for r in rows)
    order = sorted(counts, key=lambda p: (-counts[p], p))
    scores = np.array([r[0] for r in rows])
    X = _design(scores, [r[1] for r in rows], order)
    y = np.array([used.index(r[2]) for r in rows])
    names = ["score"] + [f"platform[{p}]" for p in order[1:]]
    try:
        model = ordlogit.fit(X, y, len(used), names)
    except ordlogit.FitError as err:
        return {"error": str(err), "n": len(rows)}
    se = model.se()
    coef = []
    for i, name in enumerate(names):
        b = float(model.beta[i])
        s = None if se is None else float(se[i])
        coef.append({"name": name, "coef": b, "se": s, "p": None if not s else float(2 * norm.sf(abs(b / s)))})
    per_platform = {}
    for j, p in enumerate(order):
        x = np.zeros(len(names))
        if j > 0:
            x[j] = 1.0
        grid_X = np.tile(x, (len(GRID), 1))
        grid_X[:, 0] = GRID
        probs = model.probabilities(grid_X)
        cross, cross_se = ordlogit.crossing(model, x)
        entry = {"n": counts[p], "curves": {lv: probs[:, k].round(4).tolist() for k, lv in enumerate(used)},
                 "crossing_top": cross, "crossing_top_se": cross_se}
        if len(used) == 4:
            c2, c2_se = ordlogit.crossing(model, x, level=2)
            entry["crossing_upper_half"], entry["crossing_upper_half_se"] = c2, c2_se
        per_platform[p] = entry
    return {"n": len(rows), "levels": used, "reference_platform": order[0], "coefficients": coef,
            "cutpoints": model.cutpoints.tolist(), "loglik": model.loglik, "converged": model.converged,
            "platforms": per_platform}


def analyze(data: StudyData, human: dict[str, Any] | None) -> dict[str, Any] | None:
    if not human or not human.get("majority"):
        return None
    majority = human["majority"]
    out = []
    for det in data.detectors.values():
        fits = {}
        for a in human["attributes"]:
            res = fit_attribute(data, majority, a["name"], a["levels"], det.detector_id)
            if res is not None:
                fits[a["name"]] = res
        if fits:
            out.append({"detector": det.name, "version": det.version, "attributes": fits})
    return {"grid": GRID.round(4).tolist(), "detectors": out} if out else None
