"""Rating overlap: how many distinct raters each comment has, per platform; how many rater pairs
share comments; and which rated comments have fewer raters than the statistics need.

Alpha needs two raters on a comment (one rating has no pairable value); a majority needs three
to be more than one person's answer or a two-way tie settled by a rule (the human-centred Perspective study had five).
Counts use the ratings the human-ratings section uses (its exclusions, one per rater and
comment); `all` counts every rating of a non-gold comment, to show what exclusions cost.
Gold comments are attention checks that every rater answers: they are left out.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations
from typing import Any

from modlens.analysis.data import StudyData
from modlens.analysis.human import usable_ratings

MIN_RATERS = {"alpha": 2, "majority": 3}
BUCKETS = ("1", "2", "3", "4", "5+")
SHARED_AT_LEAST = (1, 3, 5, 15)  # 15: one task of the paper
MAX_LISTED = 50
ALL_PLATFORMS = "all platforms"


def bucket(n_raters: int) -> str:
    return "5+" if n_raters >= 5 else str(n_raters)


def raters_per_comment(ratings: list[dict[str, Any]], skip: set[int]) -> dict[int, set[str]]:
    out: dict[int, set[str]] = defaultdict(set)
    for r in ratings:
        if r["comment_id"] not in skip:
            out[r["comment_id"]].add(r["rater_id"])
    return out


def by_platform(data: StudyData, raters: dict[int, set[str]]) -> dict[str, dict[str, int]]:
    """platform -> {bucket: comments}, with an `all platforms` row first."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for cid, who in raters.items():
        if who:
            platform = data.comments[cid]["platform"] if cid in data.comments else "?"
            counts[platform][bucket(len(who))] += 1
            counts[ALL_PLATFORMS][bucket(len(who))] += 1
    order = [ALL_PLATFORMS, *sorted(p for p in counts if p != ALL_PLATFORMS)]
    return {p: {b: counts[p][b] for b in BUCKETS} for p in order if p in counts}


def rater_pairs(raters: dict[int, set[str]]) -> dict[str, Any]:
    shared: Counter[tuple[str, str]] = Counter()
    for who in raters.values():
        shared.update(combinations(sorted(who), 2))
    everyone = sorted({r for who in raters.values() for r in who})
    paired = {r for pair in shared for r in pair}
    return {"n_pairs": len(everyone) * (len(everyone) - 1) // 2,
            "sharing_at_least": {str(k): sum(n >= k for n in shared.values()) for k in SHARED_AT_LEAST},
            "raters_sharing_nothing": [r for r in everyone if r not in paired]}


def analyze(data: StudyData) -> dict[str, Any] | None:
    if not data.ratings:
        return None
    usable = usable_ratings(data)
    used = raters_per_comment(usable.valid, usable.left_out)
    every = raters_per_comment(data.ratings, usable.left_out)
    if not every:
        return None
    short: list[dict[str, Any]] = []
    for cid in every:
        n = len(used.get(cid, ()))
        lacks = [stat for stat, minimum in MIN_RATERS.items() if n < minimum]
        if lacks:
            c = data.comments.get(cid, {})
            short.append({"comment_id": cid, "platform": c.get("platform"), "key": c.get("key"), "n_raters": n,
                          "n_raters_all_ratings": len(every[cid]), "lacks": lacks})
    short.sort(key=lambda e: (e["n_raters"], str(e["platform"]), str(e["key"])))
    return {
        "min_raters": dict(MIN_RATERS),
        "n_raters": len({r for who in used.values() for r in who}),
        "n_raters_all_ratings": len({r for who in every.values() for r in who}),
        "n_comments": len(every),
        "n_comments_every_rating_excluded": sum(1 for cid in every if not used.get(cid)),
        "comments_by_raters": by_platform(data, used),
        "comments_by_raters_all_ratings": by_platform(data, every),
        "rater_pairs": rater_pairs(used),
        "below_minimum": {stat: sum(stat in e["lacks"] for e in short) for stat in MIN_RATERS},
        "comments_below_minimum": short[:MAX_LISTED],
        "comments_below_minimum_total": len(short),
    }
