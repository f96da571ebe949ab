"""What a rater sees of a crowd tool's units, and the coordinator's key to them.

Label Studio and Potato show each unit (one task's comment) with an id in their data views, and a
survey's task table carries one per comment: an id that named the order entry (`gold:gold-insult`)
would tell a rater which comments check them. So every unit a rater can see is named by an opaque
id, `c` + 12 hex of an HMAC-SHA256 of the task and the order entry under the study's `author_salt`
(the item set's checksum where a study has no salt): the same study gives the same ids at every
export, a gold comment shared by two tasks gets a different id in each, and no id can be turned
back without the study folder. `modlens rate` recomputes them from the folder; `crowd-key.json`
(written into the study folder, never into an export) lists them for the coordinator.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Protocol, Sequence

from modlens.study.assignment import GOLD, Plan


class NamesAUnit(Protocol):
    """What `resolve` needs of an answer (crowd.Answer): the unit it names, rewritable."""
    assignment: str
    ref: str

KEY_FILE = "crowd-key.json"


def _secret(plan: Plan) -> bytes:
    return str(plan.study.author_salt or plan.assignment["itemset_sha256"]).encode()


def unit_id(plan: Plan, task: str, ref: str) -> str:
    return "c" + hmac.new(_secret(plan), f"{task}\0{ref}".encode(), hashlib.sha256).hexdigest()[:12]


def unit_map(plan: Plan) -> dict[str, tuple[str, str]]:
    """unit id -> (task, order entry), for every comment of every task."""
    return {unit_id(plan, task, ref): (task, ref)
            for task, t in plan.tasks.items() for ref in [*t["items"], *(GOLD + g for g in t["gold"])]}


def write_key(plan: Plan, folder: Path) -> Path:
    """The coordinator's key (in the study folder, which raters never get): each unit id's task,
    order entry and whether it is a gold comment."""
    units = [{"unit": u, "task": task, "ref": ref, "gold": ref.startswith(GOLD)}
             for u, (task, ref) in sorted(unit_map(plan).items(), key=lambda kv: kv[1])]
    path = folder / KEY_FILE
    path.write_text(json.dumps({"format": "modlens-crowd-key", "study_id": plan.study.study_id, "units": units},
                               indent=1) + "\n", encoding="utf-8")
    return path


def resolve(answers: Sequence[NamesAUnit], plan: Plan) -> None:
    """Answers naming a unit id get its task and order entry (in place); those of exports made
    before unit ids (`ref` an order entry) stay as they are."""
    units = unit_map(plan)
    for ans in answers:
        if ans.ref in units:
            task, ref = units[ans.ref]
            ans.assignment, ans.ref = task, ref
