"""What an attack aims for, defined once for the attack, transfer, audits and reports.

A detector calls a text toxic when its score is at or above its threshold. A TAE (toxic
adversarial example) fools it when it calls the text benign; a BAE (benign adversarial
example) when it calls it toxic."""
from __future__ import annotations

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
