"""Rater quality (the human-centred Perspective study): anchor consistency (Table 1) and the accept / don't-use / reject
rubric of Table 11, applied per task of 15 ratings (the paper's task size, 3 of them gold).

Table 11 lists (inconsistent gold, wrong gold, inconsistent responses) combinations. A task
with 4 or more problems in total is rejected in every listed row; a combination the table does
not list (e.g. all three gold comments failed) is treated as rejected — worse than any listed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TASK_SIZE = 15
USE, DONT_USE, REJECT = "approve, use", "approve, don't use (warn)", "reject"
# an item-set study's tasks are reviewed as a whole by `modlens rate` (study/acceptance.py, the same
# Table 11): its decisions, in this rubric's words
REVIEWED = {"accept": USE, "accept_unused": DONT_USE, "reject": REJECT}
# a reviewed task the crowd platform rejected (`modlens rate` read its status: Prolific REJECTED,
# Mechanical Turk Rejected, ...) after its ratings were imported: its review's reason, for people,
# starts so; the flag is `rater_reviews.platform_status` (schema 7 filled it for older logs from
# reasons of this shape, the one place they are read)
PLATFORM_REJECTED = "rejected on the platform ("
PLATFORM_REJECTED_END = "); Table 11 alone: "

# (inconsistent gold, wrong gold) -> [(max inconsistent responses, decision)], first match wins
TABLE_11: dict[tuple[int, int], list[tuple[int, str]]] = {
    (0, 0): [(3, USE)],
    (0, 1): [(2, USE)],
    (0, 2): [(0, USE), (1, DONT_USE), (99, REJECT)],
    (1, 0): [(1, USE), (2, DONT_USE)],
    (1, 1): [(0, USE), (1, DONT_USE)],
    (1, 2): [(0, DONT_USE), (99, REJECT)],
    (2, 0): [(1, DONT_USE), (99, REJECT)],
    (2, 1): [(0, DONT_USE), (99, REJECT)],
}


def rubric(inconsistent_gold: int, wrong_gold: int, inconsistent_responses: int) -> str:
    if inconsistent_gold + wrong_gold + inconsistent_responses >= 4:
        return REJECT
    for limit, decision in TABLE_11.get((inconsistent_gold, wrong_gold), []):
        if inconsistent_responses <= limit:
            return decision
    return REJECT


@dataclass
class RatingRecord:
    rating_id: int
    rater_id: str
    created_at: str
    inconsistent: bool
    gold: bool
    gold_wrong: bool   # a gold comment whose rating differs from the expected one
    review: str | None = None  # the decision `modlens rate` gave the task this rating is in, if any


@dataclass
class RaterSummary:
    rater_id: str
    n_ratings: int
    n_inconsistent: int
    anchor_consistency: float | None  # share of ratings with a consistent anchor pair
    n_gold: int
    n_gold_inconsistent: int
    n_gold_wrong: int
    tasks: list[str]                  # the rubric decision of each task of 15
    excluded_rating_ids: list[int]    # ratings in tasks that are not "use"


def summarize(records: list[RatingRecord], reviewed_tasks: Mapping[str, Sequence[str]] | None = None) -> list[RaterSummary]:
    """Per rater: counts over all their ratings; tasks of TASK_SIZE decided by the rubric, for the
    ratings no reviewed task holds, then the decisions of their reviewed tasks (`reviewed_tasks`:
    rater -> `rater_reviews` decisions)."""
    by_rater: dict[str, list[RatingRecord]] = {}
    for r in sorted(records, key=lambda r: (r.rater_id, r.created_at, r.rating_id)):
        by_rater.setdefault(r.rater_id, []).append(r)
    out = []
    for rater, recs in by_rater.items():
        tasks, excluded = [], []
        own = [r for r in recs if r.review is None]
        for i in range(0, len(own), TASK_SIZE):
            task = own[i:i + TASK_SIZE]
            decision = rubric(sum(r.gold and r.inconsistent for r in task),
                              sum(r.gold and not r.inconsistent and r.gold_wrong for r in task),
                              sum(not r.gold and r.inconsistent for r in task))
            tasks.append(decision)
            if decision != USE:
                excluded += [r.rating_id for r in task]
        tasks += [REVIEWED[d] for d in (reviewed_tasks or {}).get(rater, ())]
        excluded += [r.rating_id for r in recs if r.review is not None and r.review != "accept"]
        n_inc = sum(r.inconsistent for r in recs)
        out.append(RaterSummary(
            rater, len(recs), n_inc, 1 - n_inc / len(recs) if recs else None,
            sum(r.gold for r in recs), sum(r.gold and r.inconsistent for r in recs),
            sum(r.gold and not r.inconsistent and r.gold_wrong for r in recs), tasks, excluded))
    return out
