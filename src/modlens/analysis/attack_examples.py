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


def _attack_of(v: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two logged rows the same attack: the seed comment, goal, recipe, target (key
    and exact version), budget and random seed (the audit resumes by it: `--seed 2` is another
    attack, counted beside `--seed 1`'s). Fields an attack's configuration gained later (the similarity
    encoder's version, a lookup table's hash) are not part of it."""
    a, p = v["attack"], v.get("params") or {}
    return (v["comment_id"], str(a.get("goal", "tae")).lower(), recipe_of(v.get("strategy"), p, a),
            v.get("target_detector") or a.get("target"), a.get("target_name"), a.get("target_version"),
            a.get("max_queries", p.get("max_queries")), p.get("max_edit_fraction"), v.get("seed"))


def newest_attacks(data: StudyData) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The logged attacks that count, one per attack (`_attack_of`): the newest row. A rerun on a
    log written before an attack's configuration gained a field does not recognize the earlier
    row and redoes the attack, logging a second row beside it; counting both would count one seed
    twice. Returns the rows (in log order) and, per kept variant_id, how many older rows it set aside."""
    newest: dict[tuple[Any, ...], dict[str, Any]] = {}
    replaced: dict[tuple[Any, ...], int] = {}
    for v in data.variants:  # in variant_id order: a later row replaces an earlier one
        if not isinstance(v.get("attack"), dict):
            continue
        key = _attack_of(v)
        if key in newest:
            replaced[key] = replaced.get(key, 0) + 1
        newest[key] = v
    kept = sorted(newest.values(), key=lambda v: v["variant_id"])
    return kept, {newest[k]["variant_id"]: n for k, n in replaced.items()}


def examples_from_study(data: StudyData, attacks: list[dict[str, Any]] | None = None) -> list[AttackExample]:
    """Every logged attack that counts (`attacks`, by default `newest_attacks`; skipped ones too), with
    the other detectors' logged scores of the adversarial text for the label check (latest version of
    each detector that scored it)."""
    latest: dict[str, Any] = {}
    for d in sorted(data.detectors.values(), key=lambda d: d.detector_id):
        latest.setdefault(d.name, []).append(d)
    out = []
    for v in newest_attacks(data)[0] if attacks is None else attacks:
        a = v["attack"]
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
