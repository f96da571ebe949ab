"""Checks of a study's gold comments and anchors, shared by `modlens study check` and the daemon's
start (daemon/calibration.py): answers the rating panel could never give (every rater would then
"fail" that gold comment) and keys used twice."""
from __future__ import annotations

from modlens.config import StudyConfig


def gold_problems(study: StudyConfig, where: str = "") -> list[str]:
    """One line per problem; `where` names the file the gold comments came from, if any."""
    at = f" (in {where})" if where else ""
    levels = {a.name: a.levels for a in study.attributes}
    out = []
    for g in study.gold:
        if not g.expected:
            out.append(f"gold {g.key!r}: expected is empty{at} — fix: give at least one attribute, e.g. toxicity")
        for attr, level in g.expected.items():
            if attr not in levels:
                out.append(f"gold {g.key!r}: expected.{attr}{at}: unknown attribute — fix: use one of {sorted(levels)}")
            elif level not in levels[attr]:
                out.append(f"gold {g.key!r}: expected.{attr} = {level!r}{at} — fix: use one of {levels[attr]}")
    keys = [g.key for g in study.gold] + [a.key for a in study.anchors] + [r.key for r in study.review]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        out.append(f"gold/anchor/review keys used twice: {repeated} — fix: give every gold comment, anchor and "
                   "review item its own key")
    return out
