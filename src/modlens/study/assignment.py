"""Assignment of an item set to raters (the Perspective study: tasks of 15 comments, 12 of the set and 3 gold,
each comment rated by 5 workers). The set's items are shuffled (seeded) and cut into tasks of
`items_per_task`; each task gets `gold_per_task` of the study's gold comments; each task is
done by `raters` raters, and each of those assignments shows the task's 15 comments in its own
seeded order. The same item set, study and parameters always give the same file.

`assignment.json` in the study folder:

    {"format": "modlens-assignment", "format_version": 1, "itemset_sha256": "...",
     "params": {"raters": 5, "items_per_task": 12, "gold_per_task": 3, "seed": 0},
     "tasks": [{"task": "t01", "items": ["i007", ...], "gold": ["gold-insult", ...]}, ...],
     "assignments": [{"id": "t01-r1", "task": "t01", "order": ["i007", "gold:gold-insult", ...]}, ...]}

An order entry is an item id of the set, or `gold:` + a gold key of calibration.toml. Every
item is in exactly one task, so a rater's ratings tell which task they belong to.

In the daemon the extension's item-set page (itemset.html) shows each participant one
assignment and rates it with ordinary `rating` messages, so the set's comments are written to the
log at start (`record_items`). The files sit beside the study file (`modlens serve --config
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
import json
import logging
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modlens.config import StudyConfig, StudyConfigError
from modlens.errors import ModlensError, Problem, format_problem
from modlens.study.itemset import FILE as ITEMSET_FILE
from modlens.study.itemset import ItemSetError
from modlens.study.itemset import read as read_itemset

if TYPE_CHECKING:
    from modlens.studylog.store import StudyLog

log = logging.getLogger(__name__)

FORMAT = "modlens-assignment"
FORMAT_VERSION = 1
READS = range(1, FORMAT_VERSION + 1)  # every version a modlens ever wrote
FILE = "assignment.json"
GOLD = "gold:"
SOURCE = "study-itemset"  # the label source of the set's comments in the log
ASSIGN_AGAIN = "`modlens study assign` again"


class AssignmentError(ModlensError, ValueError):
    """An assignment that cannot be made, or a file that does not fit its study."""


def make(itemset: dict[str, Any], study: StudyConfig, *, raters: int = 5, items_per_task: int = 12,
         gold_per_task: int = 3, seed: int = 0) -> dict[str, Any]:
    if raters < 1 or items_per_task < 1 or gold_per_task < 0:
        raise AssignmentError("--raters and --items-per-task must be 1 or more, --gold-per-task 0 or more")
    gold = [g.key for g in study.gold]
    if gold_per_task > len(gold):
        raise AssignmentError(f"--gold-per-task {gold_per_task}: the study has {len(gold)} gold comments",
                              fix="add [[gold]] items to calibration.toml, or ask for fewer")
    ids = [i["id"] for i in itemset["items"]]
    rng = random.Random(f"modlens-assignment\0{seed}")
    rng.shuffle(ids)
    tasks, assignments = [], []
    width = len(str((len(ids) + items_per_task - 1) // items_per_task))
    for n, start in enumerate(range(0, len(ids), items_per_task), 1):
        task = f"t{n:0{max(2, width)}d}"
        chosen = rng.sample(gold, gold_per_task)
        tasks.append({"task": task, "items": ids[start:start + items_per_task], "gold": chosen})
        for r in range(1, raters + 1):
            order = ids[start:start + items_per_task] + [GOLD + g for g in chosen]
            random.Random(f"modlens-assignment\0{seed}\0{task}\0{r}").shuffle(order)
            assignments.append({"id": f"{task}-r{r}", "task": task, "order": order})
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "itemset_sha256": itemset["sha256"],
            "params": {"raters": raters, "items_per_task": items_per_task, "gold_per_task": gold_per_task,
                       "seed": seed},
            "tasks": tasks, "assignments": assignments}


def write(data: dict[str, Any], folder: str | Path) -> Path:
    path = Path(folder) / FILE
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def problems(assignment: dict[str, Any], itemset: dict[str, Any], study: StudyConfig, *,
             fix: str = ASSIGN_AGAIN) -> list[Problem]:
    """What does not fit: another item set, unknown items or gold keys, items not rated `raters` times.
    `fix`: the caller's fix for a file that is not an assignment this modlens reads or was made for
    another item set (a pack's reader: ask the researcher); a newer format_version's is always to
    upgrade modlens, and a format problem comes alone."""
    out = []
    wrong = format_problem(assignment, name=FILE, what="modlens assignment", fmt=FORMAT, reads=READS, fix=fix)
    if wrong:
        return [wrong]
    if assignment.get("itemset_sha256") != itemset["sha256"]:
        out.append(Problem(f"{FILE}: made for another item set than {ITEMSET_FILE}", fix))
    ids = {i["id"] for i in itemset["items"]}
    gold = {g.key for g in study.gold}
    tasks = {t["task"]: t for t in assignment.get("tasks", [])}
    seen: dict[str, int] = {}
    for t in tasks.values():
        for i in t["items"]:
            seen[i] = seen.get(i, 0) + 1
        for g in t["gold"]:
            if g not in gold:
                out.append(Problem(f"{FILE}: task {t['task']}: gold {g!r} is not a gold key of calibration.toml"))
    twice = sorted(i for i, n in seen.items() if n > 1)
    if twice:
        out.append(Problem(f"{FILE}: items in more than one task: {twice[:5]}"))
    unknown = sorted(set(seen) - ids)
    if unknown:
        out.append(Problem(f"{FILE}: items not in {ITEMSET_FILE}: {unknown[:5]}"))
    left = sorted(ids - set(seen))
    if left:
        out.append(Problem(f"{FILE}: items of {ITEMSET_FILE} in no task: {left[:5]}"))
    k = assignment.get("params", {}).get("raters")
    per_task: dict[str, int] = {}
    for a in assignment.get("assignments", []):
        t = tasks.get(a.get("task"))
        if t is None:
            out.append(Problem(f"{FILE}: assignment {a.get('id')!r}: unknown task {a.get('task')!r}"))
            continue
        per_task[t["task"]] = per_task.get(t["task"], 0) + 1
        if sorted(a["order"]) != sorted(t["items"] + [GOLD + g for g in t["gold"]]):
            out.append(Problem(f"{FILE}: assignment {a['id']!r}: its order is not its task's items and gold"))
    short = sorted(t for t in tasks if per_task.get(t, 0) != k)
    if short:
        out.append(Problem(f"{FILE}: tasks not given to {k} raters: {short[:5]}"))
    return out


def read(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AssignmentError(f"{path}: no assignment", fix=f"`modlens study assign {folder}`") from None
    except ValueError as err:
        raise AssignmentError(f"{path}: not JSON ({err})") from None
    return data


def check_folder(folder: str | Path, study: StudyConfig) -> list[Problem]:
    """`study check`'s problems with the item set and assignment of a folder (none when it has neither)."""
    folder = Path(folder)
    if not (folder / ITEMSET_FILE).exists():
        return [Problem(f"{FILE}: present without {ITEMSET_FILE}")] if (folder / FILE).exists() else []
    try:
        itemset = read_itemset(folder / ITEMSET_FILE)
    except ItemSetError as err:
        return [Problem(err.message, err.fix)]
    if not (folder / FILE).exists():
        return []
    try:
        return problems(read(folder), itemset, study)
    except AssignmentError as err:
        return [Problem(err.message, err.fix)]


class Plan:
    """An item set and its assignment, looked up by item reference (what exports and imports use)."""

    def __init__(self, itemset: dict[str, Any], assignment: dict[str, Any], study: StudyConfig) -> None:
        self.itemset, self.assignment, self.study = itemset, assignment, study
        self.items = {i["id"]: i for i in itemset["items"]}
        self.gold = {g.key: g for g in study.gold}
        self.tasks = {t["task"]: t for t in assignment["tasks"]}
        self.assignments = {a["id"]: a for a in assignment["assignments"]}
        self.task_of = {i: t["task"] for t in assignment["tasks"] for i in t["items"]}

    @classmethod
    def load(cls, folder: str | Path, study: StudyConfig) -> Plan:
        folder = Path(folder)
        itemset = read_itemset(folder / ITEMSET_FILE)
        assignment = read(folder)
        bad = problems(assignment, itemset, study)
        if bad:
            raise AssignmentError(f"{folder}: " + "; ".join(p.message for p in bad),
                                  fix=next((p.fix for p in bad if p.fix), None))
        return cls(itemset, assignment, study)

    def unit_named(self, client_id: str | None) -> str | None:
        """The task or assignment (slot) a rating's client id names: `<unit>:<ref>` (`modlens rate`)
        or `<slot>:r-<uuid>` (the extension's item-set page); None when it names neither."""
        unit = (client_id or "").partition(":")[0]
        return unit if unit in self.tasks or unit in self.assignments else None

    def task_named(self, client_id: str | None) -> str | None:
        """The task of the unit `unit_named` reads from a rating's client id."""
        unit = self.unit_named(client_id)
        return None if unit is None else unit if unit in self.tasks else str(self.assignments[unit]["task"])

    def text(self, ref: str) -> str:
        return self.gold[ref[len(GOLD):]].text if ref.startswith(GOLD) else self.items[ref]["text"]

    def comment(self, ref: str) -> tuple[str, str]:
        """(platform, comment key) of an order entry in the study log (gold: platform `study`)."""
        if ref.startswith(GOLD):
            return "study", ref[len(GOLD):]
        item = self.items[ref]
        return item["platform"], item["comment_key"]


def load_plan(folder: Path, study: StudyConfig) -> Plan | None:
    """The item set and assignment in `folder`, checked against the study; None when it has no
    item set. A set without an assignment, or one that does not fit, refuses the start."""
    if not (folder / ITEMSET_FILE).exists():
        return None
    if not (folder / FILE).exists():
        raise StudyConfigError(f"{folder / ITEMSET_FILE}: an item set without {FILE}; the extension "
                               "could show no tasks", fix=f"`modlens study assign {folder}`")
    try:
        return Plan.load(folder, study)
    except (AssignmentError, ItemSetError) as err:
        raise StudyConfigError(err.message, fix=err.fix) from None


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
    # imported here: `modlens study` commands read this module without loading the engine
    from modlens.chunks.register import ItemSource, register_items
    from modlens.datasets.base import DatasetItem

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
