"""The plain classification metrics, one implementation each, on (scores, labels) in that order:
the report (`analysis/`) and head training (`detectors/head*.py`) both use them, so they sit below
both. Checked against scikit-learn in the tests; the report-specific metrics (curves, bootstrap
intervals) stay in `modlens.analysis.metrics`."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.stats import rankdata


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Probability that a random positive outranks a random negative (ties count half); None
    when the labels hold one class only (the AUC is undefined there)."""
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def accuracy(scores: Sequence[float], labels: Sequence[int], threshold: float) -> float:
    """Share of items whose prediction (score at or above the threshold counts as positive)
    matches the gold label."""
    return float(np.mean((np.asarray(scores, float) >= threshold) == np.asarray(labels, bool)))
