"""A study's calibration items: its gold (attention-check) comments, anchors and review items.

`gold_problems` is the check `modlens study check` and the daemon's start share: answers the rating
panel could never give (every rater would then "fail" that gold comment) and keys used twice.

At the daemon's start the items are written to the study log as comments of platform `study` on the
page `study/<study_id>`. The extension's calibration round rates them with ordinary `rating`
messages (`comment: {platform: "study", key}`), so a rating on a gold key goes through the same
path, dedupe and outbox as any other; the analysis recognises gold by key (`analysis/human.py`).
Labels (source `study-config`) record each item's role and expected answers, so an exported log is
self-describing. A study without gold comments has no calibration round and nothing is written.
Review items (`review` in calibration.toml, written by `modlens study add-attacks`) are adversarial
texts for the human check: the same round, role `review`, their attack's recipe/target as labels.
Idempotent: a restart re-uses the rows (the first text seen under a key stays).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from modlens.config import StudyConfig, StudyConfigError
from modlens.errors import Problem, problem_lines

if TYPE_CHECKING:
    from modlens.studylog.store import StudyLog

log = logging.getLogger(__name__)

PLATFORM = "study"
SOURCE = "study-config"


def gold_problems(study: StudyConfig, where: str = "") -> list[Problem]:
    """Every problem with its fix; `where` names the file the gold comments came from, if any."""
    at = f" (in {where})" if where else ""
    levels = {a.name: a.levels for a in study.attributes}
    out = []
    for g in study.gold:
        if not g.expected:
            out.append(Problem(f"gold {g.key!r}: expected is empty{at}", "give at least one attribute, e.g. toxicity"))
        for attr, level in g.expected.items():
            if attr not in levels:
                out.append(Problem(f"gold {g.key!r}: expected.{attr}{at}: unknown attribute",
                                   f"use one of {sorted(levels)}"))
            elif level not in levels[attr]:
                out.append(Problem(f"gold {g.key!r}: expected.{attr} = {level!r}{at}", f"use one of {levels[attr]}"))
    keys = [g.key for g in study.gold] + [a.key for a in study.anchors] + [r.key for r in study.review]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        out.append(Problem(f"gold/anchor/review keys used twice: {repeated}",
                           "give every gold comment, anchor and review item its own key"))
    return out


@dataclass(frozen=True)
class CalibrationItem:
    key: str
    text: str
    role: str                                   # "gold" | "anchor" | "review" (an attack text for the human check)
    expected: dict[str, str] = field(default_factory=dict)
    anchor_role: str | None = None              # "hard_to_say" | "extreme" for anchors
    extra: dict[str, str] = field(default_factory=dict)  # review: attack.recipe, attack.target, ...

    def labels(self) -> dict[str, str]:
        out = {"role": self.role, **{f"expected.{a}": v for a, v in self.expected.items()}, **self.extra}
        if self.anchor_role:
            out["anchor_role"] = self.anchor_role
        return out


def calibration_items(study: StudyConfig) -> list[CalibrationItem]:
    """Gold then anchors; empty when the study has no gold. Raises StudyConfigError on keys
    used twice or expected answers the rating panel could never give (every rater would
    then "fail" that gold comment)."""
    if not study.gold and not study.review:
        return []
    problems = gold_problems(study)
    items = [CalibrationItem(g.key, g.text, "gold", dict(g.expected)) for g in study.gold]
    items += [CalibrationItem(a.key, a.text, "anchor", {"toxicity": a.rating}, a.role) for a in study.anchors]
    items += [CalibrationItem(r.key, r.text, "review", extra=dict(r.labels)) for r in study.review]
    if problems:
        raise StudyConfigError("study calibration items are invalid:\n" + problem_lines(problems))
    return items


def record_items(lg: StudyLog, study: StudyConfig, items: list[CalibrationItem]) -> dict[str, int]:
    """Write page, comments and labels in one transaction (the chunk pipeline's registration);
    returns key -> comment_id."""
    # imported here: `modlens study` commands read this module without loading the engine
    from modlens.chunks.register import ItemSource, register_items
    from modlens.datasets.base import DatasetItem

    with lg.transaction():
        page_id = lg.ensure_page(PLATFORM, study.study_id, None, study.title)
        ids = register_items(lg, ItemSource(PLATFORM, page_id, SOURCE),
                             [DatasetItem(i.key, i.text, i.labels()) for i in items])
        for item, cid in zip(items, ids):
            if lg.comment_text(cid) != item.text:
                # ratings already refer to the first text; say so instead of silently mixing
                log.warning("calibration item %r: the study log holds a different text under this key "
                            "(kept the logged one); give the changed item a new key", item.key)
    return {item.key: cid for item, cid in zip(items, ids)}
