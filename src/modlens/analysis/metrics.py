"""The report's classification metrics: threshold curves, the headline metrics with bootstrap
intervals, calibration (implemented here, checked against scikit-learn in the tests). The plain
ones head training also needs (ROC-AUC, accuracy) are in `modlens.metrics`."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy.stats import norm

THRESHOLDS = np.linspace(0.0, 1.0, 101)


def predict(scores: Sequence[float], threshold: float) -> np.ndarray:
    """A score at or above the threshold counts as toxic."""
    return np.asarray(scores, float) >= threshold


def accuracy_curve(scores: Sequence[float], labels: Sequence[int], thresholds: np.ndarray = THRESHOLDS) -> np.ndarray:
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    return np.array([np.mean((s >= t) == y) for t in thresholds])


def area(curve: np.ndarray, thresholds: np.ndarray = THRESHOLDS) -> float:
    """Area under a curve over the thresholds (trapezoids)."""
    return float(np.sum((curve[1:] + curve[:-1]) / 2 * np.diff(thresholds)))


def precision_recall_f1(predicted: Sequence[bool], labels: Sequence[int]) -> dict[str, float | None]:
    p, y = np.asarray(predicted, bool), np.asarray(labels, bool)
    tp, fp, fn = int((p & y).sum()), int((p & ~y).sum()), int((~p & y).sum())
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (2 * precision * recall / (precision + recall)) if precision and recall else (0.0 if tp + fp and tp + fn else None)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn, "n": len(y)}


# --- Labelled-data metrics with bootstrap confidence intervals ------------------------------------
#
# Every metric below is computed from per-item weights: all ones for the point estimate, and one row
# of bootstrap multiplicities (how often each item was drawn) per resample. One implementation thus
# serves both, and the tests check the point estimates against scikit-learn.

HEADLINE = ("precision", "recall", "f1", "accuracy", "roc_auc", "pr_auc", "brier")
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0         # fixed: the same log gives the same intervals on every run
CI_LEVEL = 0.95
_CHUNK_CELLS = 2_000_000   # resamples are evaluated in chunks of about this many (resample, item) cells
_MAX_BOOTSTRAP_CELLS = 200_000_000


def _arrays(scores: Sequence[float], labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be two sequences of one length (got {s.shape} and {y.shape})")
    return s, y


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 (an undefined metric, e.g. precision with no predicted positive)."""
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def weighted_metrics(scores: np.ndarray, labels: np.ndarray, threshold: float,
                     weights: np.ndarray) -> dict[str, np.ndarray]:
    """The headline metrics for each row of `weights` (resamples × items); NaN where undefined.

    Threshold metrics count a score ≥ threshold as positive. ROC-AUC is the Mann-Whitney statistic
    (ties count half); PR-AUC is average precision as scikit-learn defines it: Σ (Rₖ − Rₖ₋₁) Pₖ over
    the distinct scores from the highest down, tied scores entering together."""
    W = np.asarray(weights, float)
    pred = scores >= threshold
    tp, fp = W[:, pred & labels].sum(1), W[:, pred & ~labels].sum(1)
    fn, tn = W[:, ~pred & labels].sum(1), W[:, ~pred & ~labels].sum(1)
    n = W.sum(1)
    # weighted counts of positives and negatives at each distinct score (ascending)
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    pos_w, neg_w = W * labels, W * ~labels
    pos_u = np.add.reduceat(pos_w[:, order], starts, axis=1)
    neg_u = np.add.reduceat(neg_w[:, order], starts, axis=1)
    n_pos, n_neg = pos_u.sum(1), neg_u.sum(1)
    neg_below = np.cumsum(neg_u, 1) - neg_u
    auc = _ratio((pos_u * (neg_below + 0.5 * neg_u)).sum(1), n_pos * n_neg)
    tp_down, fp_down = np.cumsum(pos_u[:, ::-1], 1), np.cumsum(neg_u[:, ::-1], 1)
    prec_down = np.nan_to_num(_ratio(tp_down, tp_down + fp_down))
    ap = _ratio((pos_u[:, ::-1] * prec_down).sum(1), n_pos)
    return {
        "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn), "accuracy": _ratio(tp + tn, n),
        "roc_auc": auc, "pr_auc": ap, "brier": _ratio((W * (scores - labels) ** 2).sum(1), n),
    }


def _value(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def classification_metrics(scores: Sequence[float], labels: Sequence[int], threshold: float) -> dict[str, float | None]:
    """Point estimates of the headline metrics (None where undefined)."""
    s, y = _arrays(scores, labels)
    if not len(s):
        return dict.fromkeys(HEADLINE)
    point = weighted_metrics(s, y, threshold, np.ones((1, len(s))))
    return {k: _value(v[0]) for k, v in point.items()}


def average_precision(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """PR-AUC as scikit-learn's `average_precision_score`; None without positives."""
    return classification_metrics(scores, labels, 0.5)["pr_auc"]


def brier_score(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Mean squared difference between score and gold label (0/1)."""
    return classification_metrics(scores, labels, 0.5)["brier"]


def best_f1_threshold(scores: Sequence[float], labels: Sequence[int]) -> dict[str, float] | None:
    """The threshold (one of the scores; positive means ≥ it) with the highest F1, the highest such
    threshold on ties. Chosen on the same data it is scored on, so its F1 is optimistic."""
    s, y = _arrays(scores, labels)
    n_pos = int(y.sum())
    if n_pos == 0:
        return None
    values, inverse = np.unique(s, return_inverse=True)
    pos_u = np.bincount(inverse, weights=y, minlength=len(values))[::-1]
    neg_u = np.bincount(inverse, weights=~y, minlength=len(values))[::-1]
    tp, fp = np.cumsum(pos_u), np.cumsum(neg_u)
    f1 = 2 * tp / (tp + fp + n_pos)
    k = int(np.argmax(f1))
    return {"threshold": float(values[::-1][k]), "f1": float(f1[k]), "precision": float(tp[k] / (tp[k] + fp[k])),
            "recall": float(tp[k] / n_pos)}


def reliability_curve(scores: Sequence[float], labels: Sequence[int], n_bins: int = 10) -> list[dict[str, Any]]:
    """Equal-width bins over [0, 1], as scikit-learn's `calibration_curve(strategy="uniform")` bins
    them (a score on an inner edge falls in the lower bin): per bin its edges, the number of items,
    the mean score and the share of gold positives (None for an empty bin)."""
    s, y = _arrays(scores, labels)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ids = np.searchsorted(edges[1:-1], np.clip(s, 0.0, 1.0))
    out = []
    for b in range(n_bins):
        inside = ids == b
        n = int(inside.sum())
        out.append({"lo": float(edges[b]), "hi": float(edges[b + 1]), "n": n,
                    "mean_score": float(s[inside].mean()) if n else None,
                    "share_positive": float(y[inside].mean()) if n else None})
    return out


def _resample_weights(labels: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicities of a stratified bootstrap: positives and negatives are each drawn with
    replacement from their own class, so every resample keeps the data's class counts (and
    ROC-AUC stays defined)."""
    W = np.zeros((n_resamples, len(labels)))
    for cls in (True, False):
        idx = np.flatnonzero(labels == cls)
        if len(idx):
            W[:, idx] = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)), size=n_resamples)
    return W


def percentile_interval(values: np.ndarray, level: float = CI_LEVEL) -> list[float] | None:
    """The percentile interval of bootstrap values; None when most resamples left it undefined."""
    ok = values[~np.isnan(values)]
    if len(ok) < max(2, len(values) // 2):
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(ok, [tail, 100 - tail])
    return [float(lo), float(hi)]


def resamples_for(n_items: int) -> int:
    """1000 resamples, fewer (down to 200) for very large data, where intervals are narrow anyway
    and the cost grows with items × resamples."""
    return max(200, min(BOOTSTRAP_RESAMPLES, _MAX_BOOTSTRAP_CELLS // max(1, n_items)))


def resamples_cap_items() -> int:
    """The number of items above which `resamples_for` uses fewer than the full resamples."""
    return _MAX_BOOTSTRAP_CELLS // BOOTSTRAP_RESAMPLES


def bootstrap(scores: Sequence[float], labels: Sequence[int], threshold: float,
              n_resamples: int | None = None, seed: int = BOOTSTRAP_SEED,
              level: float = CI_LEVEL) -> dict[str, dict[str, Any]]:
    """Per headline metric: its percentile bootstrap interval (`ci`; stratified by gold label, seeded;
    `n_resamples` defaults to `resamples_for(len(scores))`), `resamples` (drawn) and
    `ci_resamples` (those that define the metric, over which the interval is taken: a resample
    with no item called toxic has no precision), so a report can say when it rests on fewer."""
    s, y = _arrays(scores, labels)
    if len(s) < 2:
        return {k: {"ci": None, "resamples": 0, "ci_resamples": 0} for k in HEADLINE}
    order = np.argsort(s, kind="stable")  # sorted once: the per-chunk sort then has nothing to do
    s, y = s[order], y[order]
    n_resamples = n_resamples or resamples_for(len(s))
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // len(s)))
    parts: dict[str, list[np.ndarray]] = {k: [] for k in HEADLINE}
    for start in range(0, n_resamples, chunk):
        got = weighted_metrics(s, y, threshold, _resample_weights(y, min(chunk, n_resamples - start), rng))
        for k in HEADLINE:
            parts[k].append(got[k])
    out = {}
    for k, v in parts.items():
        values = np.concatenate(v)
        out[k] = {"ci": percentile_interval(values, level), "resamples": len(values),
                  "ci_resamples": int(np.count_nonzero(~np.isnan(values)))}
    return out


def wilson_interval(successes: int, n: int, level: float = CI_LEVEL) -> list[float] | None:
    """Wilson score interval of a proportion (closed form; sound near 0 and 1 and for small n)."""
    if n == 0:
        return None
    z = float(norm.ppf(0.5 + level / 2))
    p = successes / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, center - half), min(1.0, center + half)]
