"""A rating from the item-set page names its assignment in its id (`<assignment>:r-<uuid>`), and the
review (study/acceptance.py) judges the rater on that assignment's task. The real daemon, serving a
study folder's item set, takes such a rating only under the assignment hello_ok gave that rater, or
that assignment's task: one naming another rater's slot (or another task) is refused with `other_assignment`, nothing of it is stored, and
the rater's own ratings, before and after, are kept and reviewed on their own task alone."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from modlens.study import assignment, itemset
from modlens.study.acceptance import review_log

from daemon_helpers import Client, connect, rating_msg, running_daemon, study

GOLD = [{"key": "gold-kind", "text": "Thank you, this explanation really helped me.", "expected": {"toxicity": "not toxic"}},
        {"key": "gold-insult", "text": "You are a stupid worthless idiot.", "expected": {"toxicity": "toxic"}}]
ITEMS = [("youtube", "yt-1", "This video explains the tax rules better than my accountant."),
         ("youtube", "yt-2", "Nobody asked for your opinion, go away and stop posting."),
         ("x", "x-1", "What a clown, everything he says is a lie."),
         ("x", "x-2", "The train was late again this morning, third time this week.")]


def study_folder(root: Path):
    """Two tasks of 2 items and 1 gold, one rater each: the first two raters of a log get one task each."""
    cfg = study(gold=GOLD)
    items = [{"id": f"i{n:03d}", "platform": p, "comment_key": k, "text": t, "stratum": "all", "score": None}
             for n, (p, k, t) in enumerate(ITEMS, 1)]
    params = {"by": "label:test", "seed": 0}
    data = {"format": itemset.FORMAT, "format_version": itemset.FORMAT_VERSION,
            "sha256": itemset.checksum(params, items), "params": params, "items": items}
    root.mkdir()
    itemset.write(data, root)
    assignment.write(assignment.make(data, cfg, raters=1, items_per_task=2, gold_per_task=1), root)
    return cfg, assignment.Plan.load(root, cfg)


def rate(c: Client, rid: str, plan: assignment.Plan, ref: str) -> dict:
    """A right answer (Table 1's anchors for it): the gold insult is toxic, everything else not."""
    platform, key = plan.comment(ref)
    if ref == "gold:gold-insult":
        return rating_msg(rid, key, platform=platform, anchors=("more", "same"), toxicity="toxic")
    return rating_msg(rid, key, platform=platform, anchors=("less", "less"), toxicity="not toxic")


async def test_a_rating_into_another_raters_slot_is_refused_and_nothing_of_the_raters_own_is_lost(tmp_path):
    cfg, plan = study_folder(tmp_path / "study")
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, cfg, study_dir=tmp_path / "study") as (url, _app):
        async with connect(url) as ws_a, connect(url) as ws_b:
            a, b = Client(ws_a), Client(ws_b)
            mine = (await a.hello("rater-a"))["study"]["itemset"]
            theirs = (await b.hello("rater-b"))["study"]["itemset"]
            assert mine["task"] != theirs["task"]    # one slot per task: the two raters hold different tasks
            own, other = [i["ref"] for i in mine["items"]], [i["ref"] for i in theirs["items"]]

            first = await a.request(rate(a, f"{mine['assignment']}:r-1", plan, own[0]), "rating_ok")
            assert first["type"] == "rating_ok"
            # rater A sends ratings under B's assignment, and under B's task: both refused, nothing stored
            for n, unit in enumerate((theirs["assignment"], theirs["task"])):
                err = await a.request(rate(a, f"{unit}:r-x{n}", plan, other[0]), "rating_ok")
                assert err["type"] == "error" and err["code"] == "other_assignment", err
                assert repr(unit) in err["message"] and repr(mine["assignment"]) in err["message"]
            # the connection goes on: A's other own ratings are taken, and B's own in B's slot
            for n, ref in enumerate(own[1:], 2):
                ok = await a.request(rate(a, f"{mine['assignment']}:r-{n}", plan, ref), "rating_ok")
                assert ok["type"] == "rating_ok", ok
            assert (await b.request(rate(b, f"{theirs['assignment']}:r-1", plan, other[0]), "rating_ok"))["type"] == "rating_ok"

    con = sqlite3.connect(db)
    try:
        stored = con.execute("SELECT rater_id, client_rating_id FROM ratings ORDER BY rating_id").fetchall()
    finally:
        con.close()
    assert stored == [("rater-a", f"{mine['assignment']}:r-{n}") for n in range(1, len(own) + 1)] + [
        ("rater-b", f"{theirs['assignment']}:r-1")]
    # the review judges A on A's task alone (complete: accepted), never on B's
    reviews = {(r.rater_id, r.task): r for r in review_log(db, plan)}
    assert {t for r, t in reviews if r == "rater-a"} == {mine["task"]}
    assert reviews[("rater-a", mine["task"])].decision == "accept"


async def test_a_rating_naming_the_raters_own_task_is_taken_and_reviewed_on_it(tmp_path):
    """`<task>:<...>` (the form `modlens rate` writes) of the rater's own task ties the rating to the task
    the review judges them on anyway: it counts toward no one else's, so it is taken like the slot's form."""
    cfg, plan = study_folder(tmp_path / "study")
    db = tmp_path / "study.sqlite"
    async with running_daemon(tmp_path, cfg, study_dir=tmp_path / "study") as (url, _app):
        async with connect(url) as ws:
            a = Client(ws)
            mine = (await a.hello("rater-a"))["study"]["itemset"]
            own = [i["ref"] for i in mine["items"]]
            for n, ref in enumerate(own):
                ok = await a.request(rate(a, f"{mine['task']}:r-{n}", plan, ref), "rating_ok")
                assert ok["type"] == "rating_ok", ok
    con = sqlite3.connect(db)
    try:
        stored = con.execute("SELECT client_rating_id FROM ratings WHERE rater_id = 'rater-a'").fetchall()
    finally:
        con.close()
    assert sorted(stored) == sorted((f"{mine['task']}:r-{n}",) for n in range(len(own)))
    reviews = {(r.rater_id, r.task): r for r in review_log(db, plan)}
    assert set(reviews) == {("rater-a", mine["task"])}
    assert reviews[("rater-a", mine["task"])].decision == "accept"


def test_a_review_after_agreeing_again_judges_only_what_the_rater_recorded_since(tmp_path):
    """A withdrawal covers what the rater recorded before a consent given again (`sessions.withdrawn_row`):
    a review written after the new consent judges them on what they rated since, not on the ratings the
    withdrawal took (the report counts that review: its reviewed_at is after the new consent)."""
    from modlens.studylog.store import StudyLog

    cfg, plan = study_folder(tmp_path / "study")
    db = tmp_path / "study.sqlite"
    task = sorted(plan.tasks)[0]
    refs = plan.tasks[task]["items"] + ["gold:" + g for g in plan.tasks[task]["gold"]]
    unit = plan.tasks[task]
    with StudyLog(db) as log:
        log.ensure_study(cfg.study_id, cfg.title, cfg.model_dump(mode="json"))
        page = log.ensure_page("youtube", "v1", None, None)
        text = {**{f"{p}/{k}": t for p, k, t in ITEMS}, **{f"youtube/{g['key']}": g["text"] for g in GOLD}}
        ids = {}
        with log.transaction():
            for ref in refs:
                platform, key = plan.comment(ref)
                ids[ref] = log.add_comment(platform, key, page, text.get(f"{platform}/{key}", key))
        log.ensure_rater(cfg.study_id, "rater-a", "2026-03-01T09:00:00Z", "You may withdraw at any time.")
        with log.transaction():  # every comment of the task rated, before the withdrawal
            for n, ref in enumerate(refs):
                rid, _ = log.add_rating(cfg.study_id, "rater-a", f"{task}:r-{n}", None, ids[ref], {"toxicity": "toxic"},
                                        None, "toxic", False, 1)
                log.write("UPDATE ratings SET created_at = ? WHERE rating_id = ?", ("2026-03-01T09:30:00.000+00:00", rid))
        assert log.withdraw_consent(cfg.study_id, "rater-a", "2026-03-01T10:00:00Z") == 1
        log.ensure_rater(cfg.study_id, "rater-a", "2026-03-01T11:00:00Z", "You may withdraw at any time.")
        with log.transaction():  # one comment rated since agreeing again
            log.add_rating(cfg.study_id, "rater-a", f"{task}:r-again", None, ids[unit["items"][0]],
                           {"toxicity": "not toxic"}, None, "not toxic", False, 1)
    [review] = review_log(db, plan)
    assert (review.rater_id, review.task) == ("rater-a", task)
    assert review.missed == len(refs) - 1, review.reason  # what they rated before agreeing again is not theirs to judge
