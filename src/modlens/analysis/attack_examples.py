"""Logged attacks as `AttackExample`s for the quality filters: the log's side of
`perturb/quality.py`, which judges examples and knows nothing of the study log."""
from __future__ import annotations

from typing import Any

from modlens.analysis.data import StudyData
from modlens.perturb.quality import AttackExample, recipe_of, recorded_judges


def stored_checks(attack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The model-dependent verdicts `audit --attack` / `modlens rescore` stored with the attack."""
    checks = attack.get("checks")
    return {k: v for k, v in checks.items() if isinstance(v, dict)} if isinstance(checks, dict) else {}


def examples_from_study(data: StudyData) -> list[AttackExample]:
    """Every logged attack (skipped ones too), with the other detectors' logged scores of the
    adversarial text for the label check (latest version of each detector that scored it)."""
    latest: dict[str, Any] = {}
    for d in sorted(data.detectors.values(), key=lambda d: d.detector_id):
        latest.setdefault(d.name, []).append(d)
    out = []
    for v in data.variants:
        a = v.get("attack")
        if not isinstance(a, dict):
            continue
        target_name = str(a.get("target_name") or v.get("target_detector") or a.get("target") or "")
        others: dict[str, tuple[float, float]] = {}
        for name, rows in latest.items():
            if name == target_name:
                continue
            for d in reversed(rows):
                s = data.score(v["text_id"], d.detector_id)
                if s is not None:
                    others[name] = (s, d.threshold)
                    break
        out.append(AttackExample(
            id=v["variant_id"], seed=data.texts.get(v["source_text_id"], ""), text=data.texts.get(v["text_id"], ""),
            goal=str(a.get("goal", "tae")).lower(), target=str(v.get("target_detector") or a.get("target") or ""),
            target_name=target_name, recipe=recipe_of(v.get("strategy"), v.get("params"), a),
            status=str(a.get("status", "")).lower(), judges=recorded_judges(a), other_scores=others,
            checks=stored_checks(a)))
    return out
