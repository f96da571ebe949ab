"""The plain classification metrics, one implementation each, on (scores, labels) in that order:
the report (`analysis/`) and head training (`detectors/head*.py`) both use them, so they sit below
both. Checked against scikit-learn in the tests; the report-specific metrics (curves, bootstrap
intervals) stay in `modlens.analysis.metrics`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence, TypeVar

import numpy as np
from scipy.stats import rankdata

K = TypeVar("K", bound=Hashable)


def roc_auc(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float | None:
    """Probability that a random positive outranks a random negative (ties count half); None
    when the labels hold one class only (the AUC is undefined there)."""
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def accuracy(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray, threshold: float) -> float:
    """Share of items whose prediction (score at or above the threshold counts as positive)
    matches the gold label."""
    return float(np.mean((np.asarray(scores, float) >= threshold) == np.asarray(labels, bool)))


@dataclass(frozen=True)
class GroupScore:
    """One group of cases (a HateCheck functionality, target identity, gold label): how many, how
    many the detector got right (decision `score >= threshold` matches the gold label), the gold
    classes the group holds and, when asked, its AUC (`by_group`)."""
    n: int
    right: int
    classes: frozenset[int]
    auc: float | None = None

    @property
    def accuracy(self) -> float | None:
        return self.right / self.n if self.n else None


def by_group(members: Mapping[K, Sequence[int]], scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray,
             threshold: float, *, auc: bool = True) -> dict[K, GroupScore]:
    """Each group's cases (`members`: group -> indices into `scores` and `labels`) scored the way
    HateCheck reports per functionality (Röttger et al., 2021); the one computation the report and
    head training share. Most functionalities hold one gold class only, so a group's AUC compares
    its cases with *all* cases of the other class: how well these cases are separated from the
    rest, comparable across groups (a group holding both classes: its own AUC)."""
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    right = (s >= threshold) == y.astype(bool)
    out = {}
    for group, indices in members.items():
        idx = np.asarray(indices, dtype=np.intp)
        classes = frozenset(y[idx].tolist())
        area = None
        if auc and len(idx):
            both = idx if len(classes) == 2 else np.concatenate([idx, np.flatnonzero(y != y[idx[0]])])
            area = roc_auc(s[both], y[both])
        out[group] = GroupScore(int(len(idx)), int(right[idx].sum()), classes, area)
    return out
