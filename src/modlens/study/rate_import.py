"""`modlens rate FILE`: ratings from a crowd platform's export into the study log, validated as the
protocol validates a `rating` message (`ratings.rating_problems`: attributes, levels, anchor
answers), then every rater of the item set reviewed by the acceptance rules (`acceptance.py`).

A file with any refused answer writes nothing: the message lists the problems. Records the
platform marks as carrying no valid work (a returned submission, a preview, a cancelled
annotation) are skipped and counted by kind; a comment answered in part is a miss, counted. Each worker is
rater `<format>:<worker id>`; each rating's client id is `<unit>:<order entry>` (the unit the
file names: a task or a slot), so importing the same file again adds nothing; a worker's second
answer to one unit's comment in the same file is counted as a repeat and the first kept. An annotation
edited in the tool since the last import is reported: kept as stored (`on_change="keep"`) or
stored as a newer rating of the same comment (`"replace"`; the review and the report read each
rater's latest rating), never silently.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from modlens.errors import ModlensError
from modlens.paths import hash_file
from modlens.ratings import derive_toxicity, rating_problems
from modlens.study import crowd
from modlens.study.acceptance import Review, review_log
from modlens.study.assignment import GOLD, Plan
from modlens.study.survey import read_survey
from modlens.studylog.connection import LogUnwritable, unwritable

MAX_LISTED = 10


class RateImportError(ModlensError, ValueError):
    """Refused answers or comments the log lacks; nothing was written."""


@dataclass
class ImportResult:
    format: str
    workers: int             # whose answers were read (blank ones included; no-valid-work records aside)
    ratings_new: int
    ratings_known: int       # already in the log as they are (a re-import); a changed one is in `changed`
    empty: int               # answers with no question answered (a survey row's blank item)
    reviews: list[Review]
    changed: list[str]       # annotations that differ from the stored ones ("where (worker): ref")
    on_change: str           # what was done with them: keep or replace
    raters: int              # the assignment's raters per item
    covered: int             # items with exactly that many accepted raters
    items: int
    # a worker who filled several slots of one task ("worker W: t01-r1, t01-r2"): reviewed and counted
    # once for that task, so it has a rater fewer than planned (platforms that list one HIT or link
    # per slot let one worker take two)
    repeat_slots: list[str] = field(default_factory=list)
    incomplete: int = 0      # comments answered in part (some questions blank): not imported, a miss
    # answers that repeat a worker's answer to the same unit and comment earlier in the file (a survey
    # taken twice, a row pasted twice): the first is kept, these are not imported ("where (worker)")
    repeated: list[str] = field(default_factory=list)
    repeated_differ: int = 0  # of them, those whose answers differ from the first
    # rater tasks the file marks as no valid work (a submission rejected on the platform) whose ratings
    # an earlier import stored: rejected by the review ("rater task T (why)")
    withdrawn: list[str] = field(default_factory=list)
    tally: crowd.Tally = field(default_factory=crowd.Tally)   # records with no valid work, by kind; notes
    per_item: dict[str, int] = field(default_factory=dict)    # item id -> raters in accepted tasks, as collected


def _versions(log: object, study_id: str, rater: str, client_id: str) -> list[dict[str, object]]:
    """The rater's stored ratings of one unit and comment, oldest first: the first import's, then
    each replacement (`<client id>~2`, `~3`, …)."""
    rows: list[dict[str, object]] = log.query(  # type: ignore[attr-defined]
        "SELECT values_json, anchors_json FROM ratings WHERE study_id = ? AND rater_id = ? "
        "AND (client_rating_id = ? OR substr(client_rating_id, 1, ?) = ?) ORDER BY rating_id",
        (study_id, rater, client_id, len(client_id) + 1, client_id + "~"))
    return rows


def raters_per_item(db: str | Path, plan: Plan, reviews: list[Review]) -> dict[str, int]:
    """Each item of the set: how many raters rated it in accepted tasks, as collected (a tool that
    gave a unit more annotations than asked shows more; a worker in two slots of a task counts once).
    A review's comments are its whole task for a rater given one (a survey row, the protocol), the
    comments they left blank included: only those the log holds a rating of count."""
    from collections import Counter

    from modlens.studylog.store import StudyLog

    with StudyLog(db, readonly=True) as log:
        ids = {ref: log.comment_id(*plan.comment(ref)) for ref in plan.items}
        rated = {(r["rater_id"], r["comment_id"]) for r in log.query(
            "SELECT DISTINCT rater_id, comment_id FROM ratings WHERE study_id = ?", (plan.study.study_id,))}
    accepted = Counter(c for r in reviews if r.decision == "accept" for c in set(r.comment_ids)
                       if (r.rater_id, c) in rated)
    return {ref: accepted[cid] if cid is not None else 0 for ref, cid in ids.items()}


def _ensure_gold(log: object, plan: Plan) -> None:
    """Gold comments are logged by `modlens serve` at start; a crowd-only study may never have run
    one, so they are registered here the same way (platform `study`, label role = gold)."""
    from modlens.chunks import ItemSource, register_items
    from modlens.datasets.base import DatasetItem

    missing = [g for g in plan.gold.values() if log.comment_id("study", g.key) is None]  # type: ignore[attr-defined]
    if missing:
        page_id = log.ensure_page("study", plan.study.study_id, None, plan.study.title)  # type: ignore[attr-defined]
        register_items(log, ItemSource("study", page_id, "study-config"),  # type: ignore[arg-type]
                       [DatasetItem(g.key, g.text, {"role": "gold", **{f"expected.{a}": v for a, v in g.expected.items()}})
                        for g in missing])


ON_CHANGE = ("keep", "replace")


def import_ratings(path: str | Path, folder: str | Path, db: str | Path, fmt: str | None = None,
                   encoding: str | None = None, on_change: str = "keep",
                   on_imported: Callable[[ImportResult], None] | None = None) -> ImportResult:
    """The export's ratings into the log at `db` in one transaction, then every rater of the item set
    reviewed in a second one. `on_imported` gets the result once the import committed, before the
    review (its review fields still empty: `reviews`, `withdrawn`, `covered`, `per_item`), so what was
    imported can be said even when the review then fails. A log that stops taking writes during the
    review raises LogUnwritable saying the ratings are stored and the review is not: the same import
    again adds no rating twice and reviews them."""
    from modlens.study.folder import load
    from modlens.studylog.store import StudyLog

    study = load(folder)
    plan = Plan.load(folder, study)
    fmt = fmt or crowd.detect(Path(path))
    tally = crowd.Tally()
    # the export's digest before reading it: nothing is read while the log is locked for writing
    source_sha256 = export_sha256(Path(path))
    answers = read_answers(path, fmt, plan, encoding, tally)
    workers = len({a.worker for a in answers})
    names = {q.name for q in crowd.questions(study)}
    attributes = {a.name: list(a.levels) for a in study.attributes}
    extreme = next((a.rating for a in study.anchors if a.role == "extreme"), None)
    if on_change not in ON_CHANGE:
        raise RateImportError(f"on_change {on_change!r}: one of {', '.join(ON_CHANGE)}")
    problems, rows, empty, incomplete = [], [], 0, 0
    for ans in answers:
        bad = crowd.unknown_ref(ans, plan)
        if bad:
            problems.append(bad)
            continue
        rating = crowd.as_rating(ans, study)
        if rating is None:
            empty += 1
            continue
        if not names <= set(ans.answers):  # a comment left half answered: a miss, as an unanswered one
            incomplete += 1
            continue
        values, anchors = rating
        problems += [f"{ans.where} (worker {ans.worker}): {p}"
                     for p in rating_problems(values, anchors, attributes, extreme is not None)]
        rows.append((ans, values, anchors))
    if problems:
        more = f"\n  … and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise RateImportError(f"{path}: {len(problems)} answer(s) refused, nothing imported:\n  "
                              + "\n  ".join(problems[:MAX_LISTED]) + more)
    if not Path(db).is_file():
        raise RateImportError(f"{db}: no study log there", fix="the log the item set was sampled from")
    new = known = differ = 0
    changed: list[str] = []
    repeated: list[str] = []
    first: dict[tuple[str, str], tuple[dict[str, str], dict[str, str] | None]] = {}
    # one transaction from the study's row to the import's: a refusal or a failure anywhere in it (a
    # comment the log lacks, a full disk) leaves the log as it was, the study and its gold included
    try:
        with StudyLog(db) as log, log.transaction():
            log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
            _ensure_gold(log, plan)
            ids: dict[str, int] = {}
            for ref in {ans.ref for ans, _, _ in rows}:
                platform, key = plan.comment(ref)
                cid = log.comment_id(platform, key)
                if cid is None:
                    raise RateImportError(f"{db}: comment {platform}/{key} (item {ref}) is not in this log, "
                                          "nothing imported", fix="import into the log the item set was sampled from")
                ids[ref] = cid
            for ans, values, anchors in rows:
                rater = f"{fmt}:{ans.worker}"
                log.ensure_rater(study.study_id, rater, None)
                derived, inconsistent = None, False
                if anchors is not None:
                    assert extreme is not None  # rating_problems refused anchors without one
                    d = derive_toxicity(anchors["vs_hard"], anchors["vs_extreme"], extreme)
                    derived, inconsistent = d.rating, d.inconsistent
                client_id = f"{ans.assignment}:{ans.ref}"
                # a second answer in this file is neither in the log already nor a change since the
                # last import: it is counted as what it is, and the first one stands
                if (rater, client_id) in first:
                    repeated.append(f"{ans.where} ({ans.worker})")
                    differ += first[rater, client_id] != (values, anchors)
                    continue
                first[rater, client_id] = (values, anchors)
                versions = _versions(log, study.study_id, rater, client_id)
                if versions and (json.loads(str(versions[-1]["values_json"])) != values
                                 or _anchors(versions[-1]) != anchors):
                    changed.append(f"{ans.where} ({ans.worker}): {ans.ref}")
                    if on_change == "keep":  # the new answer is not stored: not "already in the log" either
                        continue
                    client_id = f"{client_id}~{len(versions) + 1}"
                _, created = log.add_rating(study.study_id, rater, client_id, None, ids[ans.ref],
                                            values, anchors, derived, inconsistent, None)
                new += created
                known += not created
            # what this import did and left out, with its ratings (the report says it: `crowd_imports`)
            log.add_crowd_import(study.study_id, fmt, Path(path).name, source_sha256, tally.records,
                                 dict(tally.skipped), {"workers": workers, "ratings_new": new, "ratings_known": known,
                                                       "changed": len(changed), "empty": empty,
                                                       "incomplete": incomplete, "repeated": len(repeated)}, on_change)
    except (sqlite3.Error, LogUnwritable) as err:  # a full disk, a log made read-only, an I/O error, a lock
        if (failed := unwritable(err, db)) is None:
            raise
        # not "the log is as it was": opening it may have created its tables or migrated it (committed apart)
        raise failed.stopped("nothing of this import is stored", ": it imports the file") from None
    k = int(plan.assignment["params"]["raters"])
    result = ImportResult(fmt, workers, new, known, empty, [], changed, on_change, k, 0, len(plan.items),
                          repeat_slots(answers, plan), incomplete, repeated, differ, [], tally, {})
    if on_imported is not None:
        on_imported(result)
    verdicts = platform_verdicts(fmt, answers, tally, plan)
    try:  # the import is committed: a failure from here on leaves its ratings stored
        result.reviews = review_log(db, plan, verdicts)
    except (sqlite3.Error, LogUnwritable) as err:
        if (failed := unwritable(err, db)) is None:
            raise
        raise failed.stopped(f"this import's ratings are in the log ({new} imported, {known} already there), the "
                             "review of its raters is not stored", ": it adds no rating twice and reviews them (the log keeps "
                             "that run as another import of the file, with no rating imported)") from None
    result.withdrawn = [f"{r.rater_id} task {r.task} ({why})" for r in result.reviews
                        if (why := verdicts.get((r.rater_id, r.task)))]
    result.per_item = raters_per_item(db, plan, result.reviews)
    result.covered = sum(n == k for n in result.per_item.values())
    return result


def export_sha256(path: Path) -> str:
    """The export's bytes: a file's, or a folder's files (Potato's annotation_output/), each path in
    it and its bytes, in path order."""
    import hashlib

    digest = hashlib.sha256()
    if path.is_file():
        return hash_file(digest, path).hexdigest()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(f.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hash_file(hashlib.sha256(), f).digest())
    return digest.hexdigest()


def platform_verdicts(fmt: str, answers: list[crowd.Answer], tally: crowd.Tally,
                      plan: Plan) -> dict[tuple[str, str], str | None]:
    """(rater, task) -> the platform's word for a submission of the file that carries no valid work
    (its status: the ratings an earlier import stored of it are not data), or None for a task the
    file holds valid work of (a valid submission wins over another of the same worker and task)."""
    out: dict[tuple[str, str], str | None] = {}
    for ans in answers:
        found = crowd.task_and_order(plan, ans.assignment)
        if found is not None:
            out[f"{fmt}:{ans.worker}", found[0]] = None
    for worker, unit, why in tally.no_work:
        found = crowd.task_and_order(plan, unit)
        if found is not None:
            out.setdefault((f"{fmt}:{worker}", found[0]), why)
    return out


def repeat_slots(answers: list[crowd.Answer], plan: Plan) -> list[str]:
    """Workers whose answers name two or more slots of the same task, one line each."""
    slots: dict[tuple[str, str], set[str]] = {}
    for ans in answers:
        if ans.assignment in plan.assignments:  # a slot; a task id (the queue-driven tools) is one unit
            slots.setdefault((ans.worker, plan.assignments[ans.assignment]["task"]), set()).add(ans.assignment)
    return [f"worker {worker}: {', '.join(sorted(units))} (task {task})"
            for (worker, task), units in sorted(slots.items()) if len(units) > 1]


def _anchors(stored: dict[str, object]) -> object:
    return json.loads(str(stored["anchors_json"])) if stored["anchors_json"] else None


__all__ = ["GOLD", "ImportResult", "RateImportError", "import_ratings"]


def read_answers(path: str | Path, fmt: str, plan: Plan, encoding: str | None = None,
                 tally: crowd.Tally | None = None) -> list[crowd.Answer]:
    """The answers of a tool's export (`fmt`: one of `crowd.FORMATS`), units named by their opaque
    ids resolved (units.py); what carried no valid work is counted in `tally`. `encoding`: the survey
    CSV's, when it has no byte-order mark and is not UTF-8 (`--encoding`). Here, not in `crowd`,
    because the survey reader builds on `crowd` (one direction, no cycle)."""
    from modlens.study.units import resolve

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")  # `modlens rate`: exit 3, not found
    if fmt == "labelstudio":
        answers = crowd.read_labelstudio(path, tally)
    elif fmt == "potato":
        answers = crowd.read_potato(path, tally)
    elif fmt == "survey":
        answers = read_survey(path, plan, encoding, tally)
    else:
        raise crowd.CrowdError(f"format {fmt!r}: one of {', '.join(crowd.FORMATS)}")
    resolve(answers, plan)
    return answers
