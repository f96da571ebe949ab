"""Detectors vs people, per platform (the human-centred Perspective study, Figures 7-12): ordered logistic regression of
each attribute's majority rating on a detector's score and the platform (treatment-coded, the
most frequent platform as reference), probability curves per platform, and the score at which
the top level ("toxic") becomes more likely than not, with a delta-method standard error.

For four-level attributes the score where the upper half (e.g. informal or very informal)
becomes more likely than not is reported too (the paper's collapsed curves). Levels never
chosen as a majority are left out of that attribute's model (their cut point is not identified).

Safeguards, per fit: (1) separation (`separation.py`, an exact LP test): when a threshold of the
score, or a platform, splits the levels with no overlap ("complete") or overlap only at ties
("quasi"), the maximum-likelihood estimate does not exist, so the Firth-type penalized fit
(Jeffreys prior, `ordlogit.py`) is reported instead and labelled as such; when even that fails the
fit is marked unreliable. (2) Every crossing has a 95% delta-method interval, with a note when it
cannot be trusted (penalized fit, score coefficient not distinguishable from 0 so Fieller's exact
interval is unbounded, crossing outside the observed scores, few comments; a crossing with no standard
error is shown as such, never "± 0"). (3) Identification: scores that are all alike, or fixed by the
platform, leave the score's coefficient undetermined, so no model is fitted (`error` says why). (4) Minimum counts:
a platform with fewer than MIN_PER_PLATFORM comments, or a level chosen by fewer than
MIN_PER_LEVEL majorities, is warned about (about 10 outcomes per parameter is the usual floor
for logistic models, Peduzzi et al. 1996; 30 per platform keeps the platform shift estimable).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from scipy.stats import norm

from modlens.analysis import ordlogit, separation
from modlens.analysis.data import StudyData

GRID = np.linspace(0.0, 1.0, 51)
MIN_COMMENTS = 12       # below this no model is fitted (the fit says so)
MIN_PER_PLATFORM = 30   # warn below this many comments on a platform
MIN_PER_LEVEL = 10      # warn below this many majorities at a level
PENALIZED = "Firth-type penalized likelihood (Jeffreys prior)"


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
    if not rows:
        return None
    if len(rows) < MIN_COMMENTS:
        return {"error": f"only {len(rows)} comments have a majority and a score (a fit needs {MIN_COMMENTS})",
                "n": len(rows)}
    used = [lv for lv in levels if any(r[2] == lv for r in rows)]
    if len(used) < 2:
        return {"error": f"every majority is {used[0]!r}: nothing to fit", "n": len(rows)}
    counts = Counter(r[1] for r in rows)
    order = sorted(counts, key=lambda p: (-counts[p], p))
    scores = np.array([r[0] for r in rows])
    X = _design(scores, [r[1] for r in rows], order)
    unidentified = _unidentified(X, scores)
    if unidentified:
        return {"error": unidentified, "n": len(rows)}
    y = np.array([used.index(r[2]) for r in rows])
    names = ["score"] + [f"platform[{p}]" for p in order[1:]]
    sep = separation.check(X, y, len(used))
    try:
        model = ordlogit.fit(X, y, len(used), names, penalty=None if sep.kind is None else "jeffreys", sep=sep)
    except ordlogit.FitError as err:
        return {"error": str(err), "n": len(rows)}
    warnings = _warnings(sep, names, counts, {lv: int((y == k).sum()) for k, lv in enumerate(used)})
    reliable = model.converged and model.cov is not None and bool(np.all(np.abs(model.beta) < 1e4))
    if not model.converged:
        warnings.append(f"the fit did not converge ({model.convergence_note}): do not use its numbers")
    elif not reliable:
        warnings.append("the fit has no finite estimate with standard errors (a coefficient of 1e4 or more, or a "
                        "singular information matrix): do not use its numbers")
    se = model.se()
    coef = []
    for i, name in enumerate(names):
        b = float(model.beta[i])
        s = None if se is None else float(se[i])
        coef.append({"name": name, "coef": b, "se": s, "p": None if not s else float(2 * norm.sf(abs(b / s)))})
    observed = (float(scores.min()), float(scores.max()))
    per_platform = {}
    for j, p in enumerate(order):
        x = np.zeros(len(names))
        if j > 0:
            x[j] = 1.0
        grid_X = np.tile(x, (len(GRID), 1))
        grid_X[:, 0] = GRID
        probs = model.probabilities(grid_X)
        entry: dict[str, Any] = {"n": counts[p], "curves": {lv: probs[:, k].round(4).tolist() for k, lv in enumerate(used)}}
        _put_crossing(entry, "crossing_top", ordlogit.crossing_interval(model, x), model, observed, counts[p])
        if len(used) == 4:
            _put_crossing(entry, "crossing_upper_half", ordlogit.crossing_interval(model, x, level=2), model, observed,
                          counts[p])
        per_platform[p] = entry
    return {"n": len(rows), "levels": used, "reference_platform": order[0], "coefficients": coef,
            "cutpoints": model.cutpoints.tolist(), "loglik": model.loglik, "converged": model.converged,
            "convergence_note": model.convergence_note,  # which convergence check failed (None: converged)
            "separation": sep.kind, "separated_by": [names[i] for i in sep.involved],
            "estimator": "maximum likelihood" if model.penalty is None else PENALIZED,
            "reliable": reliable, "warnings": warnings, "platforms": per_platform}


def _unidentified(X: np.ndarray, scores: np.ndarray) -> str | None:
    """Why the score's effect cannot be estimated from these rows (None: it can). Scores all alike
    (a detector that answers one value whatever the text) make the score column a multiple of the
    cut points' intercept, and scores fixed by the platform make it a sum of the platform columns:
    any score coefficient then fits as well as any other, so the optimizer's stopping point, its
    standard errors and its crossings say nothing about the detector."""
    if np.ptp(scores) == 0:
        return (f"every comment's score is {scores[0]:.6g}: how ratings change with the score cannot be "
                "estimated (the detector gives every text one value)")
    design = np.column_stack([np.ones(len(X)), X])
    if np.linalg.matrix_rank(design) < design.shape[1]:
        return ("the score is fixed by the platform (one value per platform): its effect cannot be told "
                "apart from the platforms'")
    return None


def _warnings(sep: separation.Separation, names: list[str], per_platform: Counter[str],
              per_level: dict[str, int]) -> list[str]:
    out = []
    if sep.kind is not None:
        how = ("a threshold splits the levels with no overlap" if sep.kind == "complete"
               else "the levels overlap only at ties")
        out.append(f"{sep.kind} separation by {', '.join(names[i] for i in sep.involved) or 'the cut points'} ({how}): "
                   "the maximum-likelihood coefficient is infinite; the estimates shown are penalized "
                   "(Firth / Jeffreys prior) and their intervals approximate")
    for p, n in sorted(per_platform.items()):
        if n < MIN_PER_PLATFORM:
            out.append(f"platform {p}: {n} comments (fewer than {MIN_PER_PLATFORM}): its shift and crossing rest on few data")
    for lv, n in per_level.items():
        if n < MIN_PER_LEVEL:
            out.append(f"level {lv!r}: {n} majorities (fewer than {MIN_PER_LEVEL}): its cut point is poorly determined")
    return out


def _put_crossing(entry: dict[str, Any], key: str, c: ordlogit.CrossingInterval, model: ordlogit.OrderedLogit,
                  observed: tuple[float, float], n: int) -> None:
    """The crossing, its SE and 95% CI, and why the interval cannot be trusted (None: no reason known)."""
    entry[key], entry[f"{key}_se"] = c.estimate, c.se
    entry[f"{key}_ci"] = None if c.ci is None else [c.ci[0], c.ci[1]]
    notes = []
    if c.estimate is None:
        notes.append("the score coefficient is 0: no crossing")
    elif c.ci is None:
        notes.append("no standard error (singular information matrix)")
    else:
        if not c.bounded:
            notes.append("score coefficient not distinguishable from 0: the exact (Fieller) interval is unbounded")
        if model.penalty is not None:
            notes.append("penalized fit under separation: Wald interval, approximate")
        if not observed[0] <= c.estimate <= observed[1]:
            notes.append(f"outside the observed scores {observed[0]:.2f}–{observed[1]:.2f} (extrapolated)")
        if n < MIN_PER_PLATFORM:
            notes.append(f"only {n} comments on this platform")
    entry[f"{key}_ci_note"] = "; ".join(notes) or None


def analyze(data: StudyData, human: dict[str, Any] | None) -> dict[str, Any] | None:
    if not human or not human.get("majority"):
        return None
    majority = human["majority"]
    out: list[dict[str, Any]] = []
    for det in data.detectors.values():
        fits: dict[str, dict[str, Any]] = {}
        for a in human["attributes"]:
            res = fit_attribute(data, majority, a["name"], a["levels"], det.detector_id)
            if res is not None:
                fits[a["name"]] = res
        if fits:
            out.append({"detector": det.name, "version": det.version, "attributes": fits})
    if not out:
        return None  # no attribute has a comment with a majority and a score: the section says so
    minimums = {"comments_per_fit": MIN_COMMENTS, "comments_per_platform": MIN_PER_PLATFORM,
                "majorities_per_level": MIN_PER_LEVEL}
    n_warned = sum(bool(f.get("warnings")) or "error" in f for d in out for f in d["attributes"].values())
    return {"grid": GRID.round(4).tolist(), "detectors": out, "confidence": 0.95, "minimums": minimums,
            "fits_with_warnings": n_warned}
