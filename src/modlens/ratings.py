"""Toxicity from two anchor comparisons (the human-centred Perspective study, Table 1).

A rater compares a comment with anchor A1 (known "hard to say") and anchor A2 (known extreme,
"toxic" or "not toxic"), answering more / less / same toxic. Each consistent pair maps to a
rating; every other pair is inconsistent (a lapse of attention) and is excluded from analysis.
Two cells of the table admit two ratings ("hard to say / not toxic", "hard to say / toxic");
we record both candidates and use "hard to say", the level both candidates border.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Comparison = Literal["more", "less", "same"]
NOT_TOXIC, HARD, TOXIC = "not toxic", "hard to say", "toxic"

# (A2's known rating) -> {(answer vs A1, answer vs A2): candidate ratings}
TABLE_1: dict[str, dict[tuple[str, str], tuple[str, ...]]] = {
    NOT_TOXIC: {
        ("more", "more"): (TOXIC,),
        ("less", "more"): (HARD, NOT_TOXIC),
        ("less", "less"): (NOT_TOXIC,),
        ("less", "same"): (NOT_TOXIC,),
        ("same", "more"): (HARD,),
    },
    TOXIC: {
        ("more", "more"): (TOXIC,),
        ("more", "less"): (HARD, TOXIC),
        ("more", "same"): (TOXIC,),
        ("less", "less"): (NOT_TOXIC,),
        ("same", "less"): (HARD,),
    },
}


@dataclass(frozen=True)
class DerivedToxicity:
    rating: str | None              # None when inconsistent
    candidates: tuple[str, ...]
    inconsistent: bool

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


def derive_toxicity(vs_hard: str, vs_extreme: str, extreme_rating: str) -> DerivedToxicity:
    """Map the two anchor answers to a toxicity rating by Table 1."""
    if extreme_rating not in TABLE_1:
        raise ValueError(f"extreme anchor rating must be {NOT_TOXIC!r} or {TOXIC!r}, not {extreme_rating!r}")
    for answer in (vs_hard, vs_extreme):
        if answer not in ("more", "less", "same"):
            raise ValueError(f"anchor answer must be 'more', 'less' or 'same', not {answer!r}")
    candidates = TABLE_1[extreme_rating].get((vs_hard, vs_extreme))
    if candidates is None:
        return DerivedToxicity(None, (), True)
    return DerivedToxicity(HARD if len(candidates) > 1 else candidates[0], candidates, False)


def gold_answer_wrong(values: Mapping[str, str], anchors: Mapping[str, str] | None, expected: Mapping[str, str],
                      extreme_rating: str | None) -> bool:
    """Whether a rating of a gold comment misses its expected answers: toxicity given by anchor
    answers is right when the expected level is one of its Table 1 candidates (a two-candidate cell
    stores "hard to say" but is right on gold expected "toxic" too), every other attribute by its
    value. The one rule of `modlens rate`'s review and the report's rubric."""
    for attr, level in expected.items():
        if attr == "toxicity" and anchors and extreme_rating:
            try:
                candidates = derive_toxicity(str(anchors.get("vs_hard")), str(anchors.get("vs_extreme")),
                                             extreme_rating).candidates
            except ValueError:   # answers outside Table 1 (a log that skipped the protocol's check)
                return True
            if level not in candidates:
                return True
        elif values.get(attr) != level:
            return True
    return False


def rating_problems(values: dict[str, str], anchors: dict[str, str] | None, attributes: dict[str, list[str]],
                    has_extreme_anchor: bool) -> list[str]:
    """What the protocol refuses in a rating (the daemon's check, shared by `modlens rate`'s
    imports): no answer at all, an attribute the study does not have, a level outside its
    levels, anchor answers other than more/less/same or without an extreme anchor."""
    if not values and anchors is None:
        return ["values: give at least one attribute (or anchors)"]
    out = []
    for name, level in values.items():
        levels = attributes.get(name)
        if levels is None:
            out.append(f"values.{name}: unknown attribute; the study has {', '.join(attributes)}")
        elif level not in levels:
            out.append(f"values.{name}: {level!r} is not one of {levels}")
    if anchors is not None:
        if not has_extreme_anchor:
            out.append("anchors: this study has no extreme anchor")
        for side in ("vs_hard", "vs_extreme"):
            if anchors.get(side) not in ("more", "less", "same"):
                out.append(f"anchors.{side}: {anchors.get(side)!r} is not one of ['more', 'less', 'same']")
    return out
