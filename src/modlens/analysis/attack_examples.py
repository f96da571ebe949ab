"""Logged attacks as `AttackExample`s for the quality filters: the log's side of
`perturb/quality.py`, which judges examples and knows nothing of the study log."""
from __future__ import annotations

from typing import Any

from modlens.analysis.data import StudyData
from modlens.perturb.attack_record import counting_attack
from modlens.perturb.quality import AttackExample, recipe_of, recorded_judges


def stored_checks(attack: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The model-dependent verdicts `audit --attack` / `modlens rescore` stored with the attack."""
    checks = attack.get("checks")
    return {k: v for k, v in checks.items() if isinstance(v, dict)} if isinstance(checks, dict) else {}


def _attack_of(v: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two logged rows the same attack: the seed comment, goal, recipe, target (key
    and exact version), budget and random seed (the audit resumes by it: `--seed 2` is another
    attack, counted beside `--seed 1`'s). Fields an attack's configuration gained later (the similarity
    encoder's version, a lookup table's hash), and the judges' versions, are not part of it, while the
    audit's `same_attack` checks them: the row counted here may be another judge version's than the
    one the audit reuses (docs/ANALYSIS.md)."""
    a, p = v["attack"], v.get("params") or {}
    return (v["comment_id"], str(a.get("goal", "tae")).lower(), recipe_of(v.get("strategy"), p, a),
            v.get("target_detector") or a.get("target"), a.get("target_name"), a.get("target_version"),
            a.get("max_queries", p.get("max_queries")), p.get("max_edit_fraction"), v.get("seed"))


def newest_attacks(data: StudyData) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The logged attacks that count, one per attack (`_attack_of`): the row the audit reuses too
    (`counting_attack`: the newest whose result is known, else the newest). A rerun on a log written
    before an attack's configuration gained a field does not recognize the earlier row and redoes the
    attack, logging a second row beside it, as does a rerun of an attack whose result was unknown;
    counting both would count one seed twice. Returns the rows (in log order) and, per kept
    variant_id, how many other rows of its attack it set aside."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for v in data.variants:
        if isinstance(v.get("attack"), dict):
            groups.setdefault(_attack_of(v), []).append(v)
    kept, set_aside = [], {}
    for rows in groups.values():
        counted = counting_attack(rows)
        assert counted is not None  # a group holds a row
        kept.append(counted)
        if len(rows) > 1:
            set_aside[counted["variant_id"]] = len(rows) - 1
    return sorted(kept, key=lambda v: v["variant_id"]), set_aside


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
