"""The study's item set in the daemon (issue 27): the extension's item-set page (itemset.html)
shows each participant one assignment of `assignment.json` and rates it with ordinary `rating`
messages, so the set's comments must be in the log before the first rating.

Files: `itemset.json` and `assignment.json` beside the study file (`modlens serve --config
STUDY/study.toml`), or beside the joined study (`modlens join` writes them from the pack).

Which assignment a rater gets (the "slot"): slots are the assignment's entries in file order
(t01-r1 … t01-rk, t02-r1 …). A rater's preferred slot is sha256("modlens-slot", item set sha256,
rater id) mod the number of slots; on one daemon the raters are taken in the order of their first
session in this log, and each takes its preferred slot or, when an earlier rater holds it, the
next free one (wrapping; once every slot is held, slots are shared again from the preferred one).
So the same log and rater always give the same slot; browsers sharing one daemon get distinct
slots while there are free ones; on per-participant daemons (a joined pack) slots follow the
hash alone and two participants can draw the same one.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Awaitable, Callable

from modlens.chunks import ItemSource, register_items
from modlens.config import StudyConfig, StudyConfigError
from modlens.datasets.base import DatasetItem
from modlens.study.assignment import FILE as ASSIGNMENT_FILE
from modlens.study.assignment import GOLD, AssignmentError, Plan
from modlens.study.itemset import FILE as ITEMSET_FILE
from modlens.study.itemset import ItemSetError
from modlens.studylog.store import StudyLog

log = logging.getLogger("modlens.daemon")

SOURCE = "study-itemset"


def load_plan(folder: Path, study: StudyConfig) -> Plan | None:
    """The item set and assignment in `folder`, checked against the study; None when it has no
    item set. A set without an assignment, or one that does not fit, refuses the start."""
    if not (folder / ITEMSET_FILE).exists():
        return None
    if not (folder / ASSIGNMENT_FILE).exists():
        raise StudyConfigError(f"{folder / ITEMSET_FILE}: an item set without {ASSIGNMENT_FILE}; the extension "
                               f"could show no tasks — fix: `modlens study assign {folder}`")
    try:
        return Plan.load(folder, study)
    except (AssignmentError, ItemSetError) as err:
        raise StudyConfigError(str(err)) from None


def preferred_slot(plan: Plan, rater_id: str) -> int:
    basis = f"modlens-slot\0{plan.itemset['sha256']}\0{rater_id}".encode()
    return int.from_bytes(hashlib.sha256(basis).digest()[:8], "big") % len(plan.assignment["assignments"])


def slot_of(raters: list[str], rater_id: str, plan: Plan) -> int:
    """The slot of `rater_id` (0-based), given this log's raters in order of their first session
    (the rule in this module's docstring); a rater not in `raters` comes after them."""
    n = len(plan.assignment["assignments"])

    def take(rater: str, held: set[int]) -> int:
        start = preferred_slot(plan, rater)
        return next((s for k in range(n) if (s := (start + k) % n) not in held), start)

    held: set[int] = set()
    for r in raters[: raters.index(rater_id)] if rater_id in raters else raters:
        held.add(take(r, held))
        if len(held) == n:
            held.clear()  # every slot taken: the next raters share them again
    return take(rater_id, held)


def session_raters(lg: StudyLog, study_id: str) -> list[str]:
    rows = lg.query("SELECT rater_id FROM sessions WHERE study_id = ? AND rater_id IS NOT NULL "
                    "GROUP BY rater_id ORDER BY MIN(rowid)", (study_id,))
    return [r["rater_id"] for r in rows]


def client_assignment(plan: Plan, slot: int) -> dict[str, Any]:
    """What hello_ok's `study.itemset` carries: the rater's assignment with each comment's text."""
    entry = plan.assignment["assignments"][slot]
    items = []
    for ref in entry["order"]:
        platform, key = plan.comment(ref)
        items.append({"ref": ref, "platform": platform, "key": key, "text": plan.text(ref),
                      "gold": ref.startswith(GOLD)})
    return {"itemset_sha256": plan.itemset["sha256"], "assignment": entry["id"], "task": entry["task"],
            "slot": slot + 1, "slots": len(plan.assignment["assignments"]), "items": items}


def record_items(lg: StudyLog, study: StudyConfig, plan: Plan) -> int:
    """Each item of the set as a comment of its platform and key (page `itemset/<study_id>` of that
    platform), labelled with its item id and stratum; a comment already logged (the researcher's own
    log, where the set was drawn) keeps its row and text."""
    by_platform: dict[str, list[dict[str, Any]]] = {}
    for item in plan.itemset["items"]:
        by_platform.setdefault(item["platform"], []).append(item)
    n = 0
    with lg.transaction():
        for platform, items in by_platform.items():
            page_id = lg.ensure_page(platform, f"itemset/{study.study_id}", None, f"{study.title} (item set)")
            ids = register_items(lg, ItemSource(platform, page_id, SOURCE),
                                 [DatasetItem(i["comment_key"], i["text"], {"itemset.id": i["id"],
                                                                            "itemset.stratum": str(i.get("stratum"))})
                                  for i in items])
            for item, cid in zip(items, ids):
                if lg.comment_text(cid) != item["text"]:
                    log.warning("item %s (%s/%s): the study log holds another text under this key; ratings go to "
                                "the logged comment", item["id"], platform, item["comment_key"])
            n += len(ids)
    return n


async def log_itemset_items(study: StudyConfig, plan: Plan | None,
                            write: Callable[[Callable[[StudyLog], Any]], Awaitable[Any]]) -> None:
    if plan is None:
        return
    n = await write(lambda lg: record_items(lg, study, plan))
    log.info("item set: %d comments in the study log, %d assignments", n, len(plan.assignment["assignments"]))
