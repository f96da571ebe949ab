"""The human check of TaeBench's quality pipeline: successful attacks that passed the automatic
filters are queued to raters as ordinary rating items, so a study measures how many
"successful" attacks people still judge toxic (a TAE that people call benign was not an attack
on the detector but a change of meaning).

`add_attacks` appends them to the study folder's calibration.toml as `[[review]]` items; the
daemon logs them like gold comments (platform `study`, label role = review plus the attack's
recipe, target and goal) and the extension's calibration page serves them with the gold ones.
The report's attacks section groups their ratings by recipe and target.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modlens.study.folder import CALIBRATION_FILE, load_folder
from modlens.study.toml_write import dumps

HEADER = ("Attack texts for the human check (modlens study add-attacks): rated like any comment in the\n"
          "calibration round; the labels say which attack made each one.")


def review_key(target: str, recipe: str, text: str) -> str:
    """Stable per (target, recipe, text): adding the same attack twice adds it once."""
    return "review-" + hashlib.sha256(f"{target}\n{recipe}\n{text}".encode()).hexdigest()[:12]


@dataclass
class AddResult:
    added: list[dict[str, Any]]
    already: int            # selected attacks the folder already had
    candidates: int         # successes matching the selection
    filtered_out: int       # of them, removed by a quality filter that failed (unless --unfiltered)
    not_checked: int        # of them, left out because a filter could not be checked (unless --unfiltered)
    repeats: int = 0        # selected attacks whose text (target, recipe) another selected one has: one item
    over_limit: int = 0     # new items --limit left for a later run


def select_attacks(db: str | Path, *, goal: str = "tae", recipe: str | None = None, target: str | None = None,
                   filtered: bool = True, quality: Any = None) -> tuple[list[dict[str, Any]], int, int, int]:
    """Successful attacks of the log, in log order, that every quality filter checked and passed
    (a filter that could not run is not a pass; all successes with `filtered=False`):
    ([{key, text, labels}], candidates, failed a filter, not checked by one)."""
    from modlens.analysis.data import load
    from modlens.analysis.attack_examples import examples_from_study
    from modlens.perturb.quality import QualityFilters, every_filter_passed

    data = load(db)
    examples = [e for e in examples_from_study(data) if e.success and e.goal == goal
                and (recipe is None or e.recipe == recipe) and (target is None or target in (e.target, e.target_name))]
    verdicts = (quality or QualityFilters()).assess(examples).verdicts if filtered else []
    status: list[bool | None] = [every_filter_passed(v) for v in verdicts] if filtered else [True] * len(examples)
    versions = {v["variant_id"]: (v.get("attack") or {}).get("target_version") for v in data.variants}
    out = []
    for e, ok in zip(examples, status):
        if ok is not True:
            continue
        labels = {"attack.recipe": e.recipe, "attack.target": e.target, "attack.goal": e.goal,
                  "attack.example_id": str(e.id), "attack.seed_sha": hashlib.sha256(e.seed.encode()).hexdigest()[:16]}
        if versions.get(e.id):
            labels["attack.target_version"] = str(versions[e.id])
        out.append({"key": review_key(e.target, e.recipe, e.text), "text": e.text, "labels": labels})
    return out, len(examples), status.count(False), status.count(None)


def add_attacks(study_dir: str | Path, db: str | Path, *, limit: int | None = None, **selection: Any) -> AddResult:
    """Append up to `limit` new review items to the folder's calibration.toml; the folder is
    re-validated and the file restored if it would no longer load."""
    folder = load_folder(study_dir)  # a broken folder is reported before anything is written
    items, candidates, filtered_out, not_checked = select_attacks(db, **selection)
    have = {r.key for r in folder.study.review} | {g.key for g in folder.study.gold}
    unique = list({i["key"]: i for i in items}.values())  # the same text twice in one log: one item
    new = [i for i in unique if i["key"] not in have]
    already = len(unique) - len(new)
    over_limit = max(0, len(new) - limit) if limit is not None else 0
    new = new[:len(new) - over_limit]
    if new:
        path = folder.path / CALIBRATION_FILE
        before = path.read_text(encoding="utf-8") if path.exists() else None
        block = dumps({"review": new}, header="" if folder.study.review else HEADER)
        path.write_text((before.rstrip("\n") + "\n\n" if before else "") + block, encoding="utf-8")
        try:
            load_folder(folder.path)
        except Exception:
            if before is None:
                path.unlink()
            else:
                path.write_text(before, encoding="utf-8")
            raise
    return AddResult(new, already, candidates, filtered_out, not_checked, len(items) - len(unique), over_limit)
