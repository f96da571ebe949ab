"""Majority (mode) rating per comment with the tie rules of the human-centred Perspective study (Tables 13 and 15).

A tie between exactly two levels is resolved by the attribute's rule when the paper gives one;
any other tie (two levels without a rule, three or more levels) has no majority and the comment
is dropped for that attribute ("delete others"). Attributes a study adds beyond the paper's four
have no tie rules: their ties are dropped too.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

TIE_RULES: dict[str, dict[frozenset[str], str]] = {
    "toxicity": {  # Table 13
        frozenset({"hard to say", "toxic"}): "toxic",
        frozenset({"hard to say", "not toxic"}): "not toxic",
        frozenset({"not toxic", "toxic"}): "hard to say",
    },
    "formality": {  # Table 15
        frozenset({"formal", "very formal"}): "formal",
        frozenset({"informal", "very informal"}): "informal",
    },
    "respectfulness": {
        frozenset({"disrespectful", "slightly disrespectful"}): "disrespectful",
        frozenset({"respectful", "partially respectful"}): "respectful",
    },
    "stereotypes": {
        frozenset({"possibly present", "present"}): "possibly present",
        frozenset({"possibly present", "heavily present"}): "present",
        frozenset({"heavily present", "present"}): "heavily present",
    },
}


def majority(attribute: str, values: Sequence[str]) -> tuple[str | None, str]:
    """(majority level or None, how it was decided: 'mode' | 'tie rule' | 'tie dropped' | 'no ratings')."""
    if not values:
        return None, "no ratings"
    counts = Counter(values).most_common()
    top = counts[0][1]
    leaders = frozenset(v for v, c in counts if c == top)
    if len(leaders) == 1:
        return next(iter(leaders)), "mode"
    rule = TIE_RULES.get(attribute, {}).get(leaders)
    return (rule, "tie rule") if rule else (None, "tie dropped")


def agreement(values: Sequence[str]) -> float | None:
    """Share of ratings equal to the most frequent level (Tables 12 and 14)."""
    if not values:
        return None
    return Counter(values).most_common(1)[0][1] / len(values)
