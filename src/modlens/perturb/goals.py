"""What an attack aims for, defined once for the attack, transfer, audits and reports.

A detector calls a text toxic when its score is at or above its threshold. A TAE (toxic
adversarial example) fools it when it calls the text benign; a BAE (benign adversarial
example) when it calls it toxic."""
from __future__ import annotations

from typing import Any, Sequence

GOALS = ("tae", "bae")


def is_toxic(score: float, threshold: float) -> bool:
    return score >= threshold


def fooled(goal: str, score: float | None, threshold: float) -> bool | None:
    """Is a detector that gave `score` fooled by an example of this goal ("tae"/"bae", any
    case)? None when it gave no score."""
    if score is None:
        return None
    toxic = is_toxic(score, threshold)
    return not toxic if goal.lower() == "tae" else toxic


def label_margin(result: dict[str, float], thresholds: dict[str, float]) -> float | None:
    """max over a multi-label goal's labels of (probability - threshold); >= 0 means some label
    is toxic. None when the result lacks one of them."""
    if any(lb not in result for lb in thresholds):
        return None
    return max(float(result[lb]) - thr for lb, thr in thresholds.items())


def fooled_on_labels(goal: str, result: dict[str, float] | None, thresholds: dict[str, float]) -> bool | None:
    """Is a detector fooled by an example of a multi-label goal, judged from its `{label: probability}`
    result: a TAE when every label is below its threshold, a BAE when any is at or above it.
    None when it gave no result or lacks a label."""
    m = None if result is None or not thresholds else label_margin(result, thresholds)
    if m is None:
        return None
    return m < 0 if goal.lower() == "tae" else m >= 0


# Labels that name who a comment mentions or that it is harmless, never a kind of harm: a
# multi-label goal leaves them out unless asked (Detoxify "unbiased" scores identity mentions).
NOT_HARM_LABELS = frozenset("""
male female homosexual_gay_or_lesbian christian jewish muslim black white psychiatric_or_mental_illness
neutral benign not_hate not_offensive non_toxic non-toxic nothate clean ok
""".split())


class Goal:
    """The goal of an attack on one detector, over its `{label: probability}` results.

    Single-label (default): the detector's toxicity label against its threshold, as `fooled`.
    Multi-label (`labels` given, or `labels="all"`: every label of the detector that names a
    harm): a TAE must bring EVERY toxic label below its threshold; a BAE must lift any one to
    or above it. `score` is what the attack reports (the toxicity, or the highest toxic label)
    and `progress` orders candidates: larger is closer to the goal (multi-label TAE: minus the
    total excess of the toxic labels over their thresholds; BAE: the best label's margin)."""

    def __init__(self, goal: str, detector: Any, labels: Sequence[str] | str | None = None,
                 thresholds: dict[str, float] | None = None):
        goal = goal.lower()
        if goal not in GOALS:
            raise ValueError(f"goal must be one of {GOALS}, not {goal!r}")
        self.name, self.detector = goal, detector
        if labels == "all":
            labels = [lb for lb in detector.labels if lb.lower() not in NOT_HARM_LABELS]
        elif isinstance(labels, str):
            labels = [labels]
        if labels is not None:
            unknown = [lb for lb in labels if lb not in detector.labels]
            if unknown or not labels:
                raise ValueError(f"{detector.name} has no label(s) {unknown or '[]'}; its labels: {', '.join(detector.labels)}")
        self.labels: list[str] | None = list(labels) if labels is not None else None
        self.thresholds = {lb: float((thresholds or {}).get(lb, detector.threshold)) for lb in self.labels or ()}

    @property
    def multi_label(self) -> bool:
        return self.labels is not None

    def _margin(self, result: dict[str, float]) -> float | None:
        """max over toxic labels of (probability - threshold); >= 0 means some label is toxic."""
        if self.labels is None:
            tox = self.detector.toxicity(result)
            return None if tox is None else tox - self.detector.threshold
        return label_margin(result, self.thresholds)

    def score(self, result: dict[str, float] | None) -> float | None:
        if result is None:
            return None
        if self.labels is None:
            tox = self.detector.toxicity(result)
            return None if tox is None else float(tox)
        if any(lb not in result for lb in self.labels):
            return None
        return max(float(result[lb]) for lb in self.labels)

    def progress(self, result: dict[str, float] | None) -> float | None:
        m = None if result is None else self._margin(result)
        if m is None or result is None:
            return None
        if self.labels is not None and self.name == "tae":
            # every label must drop: the total excess over the thresholds, so lowering one of
            # two toxic labels is progress (the worst margin alone would not move); once all are
            # below, the worst margin breaks ties
            excess = sum(max(0.0, float(result[lb]) - self.thresholds[lb]) for lb in self.labels)
            return -excess - 1e-3 * m
        return -m if self.name == "tae" else m

    def reached(self, result: dict[str, float] | None) -> bool | None:
        m = None if result is None else self._margin(result)
        if m is None:
            return None
        return m < 0 if self.name == "tae" else m >= 0

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"goal": self.name}
        if self.labels is not None:
            d["labels"] = list(self.labels)
            d["thresholds"] = dict(self.thresholds)
        return d
