"""Small classification metrics shared by the sections (implemented here, checked against
scikit-learn in the tests)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.stats import rankdata

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


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Probability that a random positive outranks a random negative (ties count half)."""
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def precision_recall_f1(predicted: Sequence[bool], labels: Sequence[int]) -> dict[str, float | None]:
    p, y = np.asarray(predicted, bool), np.asarray(labels, bool)
    tp, fp, fn = int((p & y).sum()), int((p & ~y).sum()), int((~p & y).sum())
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (2 * precision * recall / (precision + recall)) if precision and recall else (0.0 if tp + fp and tp + fn else None)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn, "n": len(y)}
