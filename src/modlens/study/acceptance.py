"""Acceptance of raters' work on an item-set study (the Perspective study, Appendix A.2, Table 11), decided
per rater and task from the ratings in the study log, whatever brought them there (the protocol,
or `modlens rate FILE` from Label Studio, Potato or a survey CSV).

Per task (its items and its gold comments), counting each rater's latest rating of a comment:
inconsistent gold (a gold comment whose two anchor answers contradict each other, Table 1),
wrong gold (a consistent gold answer other than the expected one; an ambiguous Table 1 cell
counts as right when the expected level is one of its two candidates), inconsistent responses
(an item of the set with contradicting anchor answers). An item left unrated is a miss and
counts as a wrong gold answer or an inconsistent response (the paper's first column is the total
of invalid responses) — for raters given a whole task (the protocol, a survey row). Label Studio's
and Potato's queues hand each annotator whichever units are left, so their annotators are judged
per task on the comments they rated in that task's units (a rating's client id names its unit;
a gold comment shared by two tasks counts in the task where it was rated, and a task of which the
queue gave them only gold is reviewed too): what they did not rate is nobody's miss. A survey row
names its slot (the rating's client id), as does a rating made on the extension's item-set page
(`<slot>:r-<uuid>`), so one that answered only gold is judged on that task, its items missed. The
decision is `analysis.raters.rubric` (Table 11): accept (approve, use), accept_unused (approve,
don't use, warn) or reject.

Table 11 was written for tasks of 3 gold comments and 12 others. A task of another size is judged
by the same table on its counts scaled to that design (`scaled`): each gold count times 3 / the
task's gold comments, the inconsistent responses times 12 / its other comments, rounded up, so a
scaled task is never judged more leniently than the table judges the same shares (with 2 gold, one
failed gold counts as 2 of 3 and both failed as 3 of 3, which the table rejects). A task without
gold cannot be judged (`study assign` refuses `--gold-per-task 0`; a task of such an assignment is
rejected, saying why). Decisions are written to the log's
`rater_reviews`, replacing earlier ones, so reviewing again is idempotent.

A submission the crowd platform rejected after `modlens rate` had imported it (a Prolific REJECTED, a
Mechanical Turk Rejected read on a later import of the export) is not data whatever Table 11 says:
its task is rejected, its `platform_status` the platform's word (the flag later reviews and the report
read), the reason naming it and what Table 11 alone gives. The
decision stays through later reviews (the review without a file, other exports) until an export
shows that submission as valid work again.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from modlens.analysis import raters as rubric_mod
from modlens.ratings import gold_answer_wrong
from modlens.study.assignment import GOLD, Plan
from modlens.studylog.records.sessions import withdrawn_row

DECISION = {rubric_mod.USE: "accept", rubric_mod.DONT_USE: "accept_unused", rubric_mod.REJECT: "reject"}
TABLE_GOLD, TABLE_ITEMS = 3, 12   # the design Table 11 was printed for: 3 gold in tasks of 15
SOURCES = ("labelstudio", "potato", "survey")
QUEUED = ("labelstudio", "potato")   # the tool's queue, not our assignment, decides who rates what


def source_of(rater_id: str) -> str:
    head, sep, _ = rater_id.partition(":")
    return head if sep and head in SOURCES else "protocol"


@dataclass
class Review:
    rater_id: str
    task: str
    source: str
    decision: str
    reason: str
    n_items: int
    missed: int
    inconsistent_gold: int
    wrong_gold: int
    inconsistent: int
    comment_ids: list[int]
    platform_status: str | None = None  # the platform's word for a submission it rejected after import

    def row(self, study_id: str) -> dict[str, Any]:
        return {"study_id": study_id, **self.__dict__}


def scaled(inc_gold: int, wrong_gold: int, inc: int, gold: int, items: int) -> tuple[int, int, int]:
    """A task's counts on Table 11's design (3 gold, 12 items), rounded up: unchanged for that design."""
    def up(count: int, of: int, to: int) -> int:
        return count if of == to else -(-count * to // max(of, 1))

    return up(inc_gold, gold, TABLE_GOLD), up(wrong_gold, gold, TABLE_GOLD), up(inc, items, TABLE_ITEMS)


def rule(gold: int, items: int) -> str:
    """Which form of Table 11 judges a task of `gold` gold and `items` other comments."""
    if gold == 0:
        return "no gold comments: Table 11 cannot judge the task"
    if (gold, items) == (TABLE_GOLD, TABLE_ITEMS):
        return "Table 11 as printed (3 gold in 15)"
    return f"Table 11 scaled from 3 gold and 12 items to {gold} gold and {items} items (docs/MULTI.md#acceptance)"


def review_task(plan: Plan, task: str, rater_id: str, latest: dict[int, dict[str, Any]],
                comment_ids: dict[str, int]) -> Review:
    """`latest`: the rater's latest rating per comment id; `comment_ids`: order entry -> comment id."""
    t = plan.tasks[task]
    extreme = next((a.rating for a in plan.study.anchors if a.role == "extreme"), None)
    refs = t["items"] + [GOLD + g for g in t["gold"]]
    task_size = len(refs)
    if source_of(rater_id) in QUEUED:
        refs = [r for r in refs if comment_ids.get(r, -1) in latest]
    missed = inc_gold = wrong_gold = inc = 0
    for ref in refs:
        rating = latest.get(comment_ids.get(ref, -1))
        gold = ref.startswith(GOLD)
        if rating is None:
            missed += 1
            wrong_gold += gold
            inc += not gold
        elif gold and rating["inconsistent"]:
            inc_gold += 1
        elif gold:
            wrong_gold += gold_answer_wrong(rating["values"], rating.get("anchors"), plan.gold[ref[len(GOLD):]].expected,
                                            extreme)
        else:
            inc += bool(rating["inconsistent"])
    n_gold, n_items = len(t["gold"]), len(t["items"])
    on_table = scaled(inc_gold, wrong_gold, inc, n_gold, n_items)
    decision = DECISION[rubric_mod.rubric(*on_table)] if n_gold else "reject"
    total = sum(on_table)
    coverage = (f"{missed} of {len(refs)} unrated" if len(refs) == task_size
                else f"rated {len(refs)} of the task's {task_size}")
    table = "Table 11"
    if n_gold and (n_gold, n_items) != (TABLE_GOLD, TABLE_ITEMS):
        table = (f"scaled to Table 11's 3 gold and 12 items ({on_table[0]}, {on_table[1]}, {on_table[2]}), "
                 "Table 11")
    verdict = ("no gold comments in the task, nothing to judge the rater by: rejected" if not n_gold
               else f"4 or more problems, {table} rejects" if total >= 4 else f"{table} row gives {decision}")
    reason = (f"{inc_gold} inconsistent gold, {wrong_gold} wrong gold, {inc} inconsistent responses "
              f"({coverage}): " + verdict)
    return Review(rater_id, task, source_of(rater_id), decision, reason, len(refs), missed, inc_gold, wrong_gold,
                  inc, sorted(comment_ids[r] for r in refs if r in comment_ids))


def _platform_rejected(review: Review, why: str) -> Review:
    table = f"{review.decision}: {review.reason}"
    return replace(review, decision="reject", platform_status=why,
                   reason=f"{rubric_mod.PLATFORM_REJECTED}{why}{rubric_mod.PLATFORM_REJECTED_END}{table}")


def review_log(db: str | Path, plan: Plan,
               on_platform: Mapping[tuple[str, str], str | None] | None = None) -> list[Review]:
    """Review every rater of the study who rated an item of the set, per task they worked on (an
    imported rater: every task whose unit they rated a comment of, a survey row that answered only
    its gold comments too: its items are misses), and write the decisions to the log. Returns them, ordered by rater and task. `on_platform`: (rater,
    task) -> the platform's word for a submission it marks as no valid work, or None for one it
    marks valid (lifting an earlier platform rejection); the log's earlier ones stand otherwise."""
    from modlens.studylog.store import StudyLog

    study_id = plan.study.study_id
    with StudyLog(db) as log:
        comment_ids: dict[str, int] = {}
        for ref in list(plan.items) + [GOLD + g for g in plan.gold]:
            platform, key = plan.comment(ref)
            cid = log.comment_id(platform, key)
            if cid is not None:
                comment_ids[ref] = cid
        ref_of = {cid: ref for ref, cid in comment_ids.items()}
        # what a withdrawal covers (before a consent given again; all of it while withdrawn) judges no one:
        # a review is of what the rater's consent that holds lets the study use, as the report reads ratings
        ratings = log.query("SELECT rating_id, rater_id, comment_id, client_rating_id, values_json, anchors_json, "
                            "inconsistent, created_at FROM ratings WHERE study_id = ? AND NOT "
                            f"{withdrawn_row('ratings', 'created_at')} ORDER BY created_at, rating_id", (study_id,))
        latest: dict[str, dict[int, dict[str, Any]]] = {}
        queued: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
        rows_of: dict[str, set[str]] = {}   # a survey rater -> the tasks of the slots their rows name
        for r in ratings:
            if r["comment_id"] in ref_of:
                r["values"] = json.loads(r["values_json"])
                r["anchors"] = json.loads(r["anchors_json"]) if r["anchors_json"] else None
                latest.setdefault(r["rater_id"], {})[r["comment_id"]] = r
                task = plan.task_named(r["client_rating_id"])
                if task is not None and source_of(r["rater_id"]) in QUEUED:
                    queued.setdefault((r["rater_id"], task), {})[r["comment_id"]] = r
                elif task is not None:
                    rows_of.setdefault(r["rater_id"], set()).add(task)
        verdicts: dict[tuple[str, str], str | None] = {
            (r["rater_id"], r["task"]): r["platform_status"] for r in log.query(
                "SELECT rater_id, task, platform_status FROM rater_reviews WHERE study_id = ? "
                "AND platform_status IS NOT NULL", (study_id,))}
        verdicts.update(on_platform or {})
        reviews = []
        for rater, mine in sorted(latest.items()):
            if source_of(rater) in QUEUED:
                # judged per task on the comments the queue gave them in that task's units, gold
                # included: a gold comment shared by two tasks counts where it was rated
                reviews += [review_task(plan, t, rater, queued[(r, t)], comment_ids)
                            for r, t in sorted(queued) if r == rater]
                continue
            tasks = sorted({plan.task_of[ref_of[c]] for c in mine if ref_of[c] in plan.task_of} | rows_of.get(rater, set()))
            reviews += [review_task(plan, t, rater, mine, comment_ids) for t in tasks]
        reviews = [_platform_rejected(r, why) if (why := verdicts.get((r.rater_id, r.task))) else r for r in reviews]
        if reviews:
            log.put_rater_reviews([r.row(study_id) for r in reviews])
    return reviews
