"""The model-dependent checks of logged attacks, computed once and stored in the log so the
report only reads it: for every successful attack without them, the quality filters that need a
model (`perturb/quality.py`: MiniLM meaning similarity, normalizer-edit fluency) go into its
attack record (`attack_json.checks`), and the adversarial text's normalized form goes into
`normalizations`, where the scoring step (the audit's, or `modlens rescore`'s) gives it the
target's score that normalization recovery reads.

`audit --attack` runs this after each chunk's attacks and once after its last chunk (a resumed run
with no chunk left to process makes them too); `modlens rescore` runs it for older logs. Both
then say, from the log, how many successes are still without a check and why (`unmade`)."""
from __future__ import annotations

import json
from typing import Any

from modlens.perturb.quality import MODEL_FILTERS, AttackExample, QualityFilters, recipe_of
from modlens.services.recording import record_normalizations_many
from modlens.studylog.store import StudyLog

# the successes some of whose checks among `?` (a JSON array of filter names: those this process can
# make) have no verdict stored: none at all, or one an older modlens stored as not made (`ok` null,
# its model missing then), which the check made now replaces
PENDING_SQL = (
    "SELECT v.variant_id, v.attack_json, v.strategy, v.params_json, v.target_detector, t.text, s.text AS seed "
    "FROM variants v JOIN texts t ON t.text_id = v.text_id JOIN texts s ON s.text_id = v.source_text_id "
    "WHERE v.attack_json ->> '$.status' = 'success' AND EXISTS (SELECT 1 FROM json_each(?) k "
    "WHERE v.attack_json -> '$.checks' -> k.value ->> '$.ok' IS NULL) ORDER BY v.variant_id")

_default: list[QualityFilters] = []


def _example(row: dict[str, Any], checks: dict[str, dict[str, Any]]) -> AttackExample:
    """The attack as the quality filters judge it; `checks`, its stored verdicts, are read, not made again."""
    a, params = json.loads(row["attack_json"]), json.loads(row["params_json"] or "{}")
    target = str(row["target_detector"] or a.get("target") or "")
    return AttackExample(id=row["variant_id"], seed=row["seed"], text=row["text"], goal=str(a.get("goal", "tae")).lower(),
                         target=target, target_name=str(a.get("target_name") or target),
                         recipe=recipe_of(row["strategy"], params, a), status="success", checks=checks)


def made(verdict: Any) -> bool:
    """A stored verdict that was measured (its model was there): passed or failed, not `ok` null."""
    return isinstance(verdict, dict) and verdict.get("ok") is not None


def check_attacks(log: StudyLog, quality: QualityFilters | None = None) -> list[str]:
    """Store the checks of every successful attack that lacks some of them; the normalized texts that
    differ from their attack text (the caller scores them with the target). Loads the sentence
    encoder and normalizer only when there is something to check. A check whose model is missing here
    (MiniLM, the normalizer's lexicon) is not stored: the attack stays pending for it, and the report
    counts it as not checked, saying what computes it, until a process that has the model (`modlens
    rescore`, a later `audit --attack`) makes it. Only the checks this process can make select an
    attack, so one still missing its model is not checked again at every call (every chunk of
    `audit --attack`)."""
    if not log.query(PENDING_SQL + " LIMIT 1", (json.dumps(MODEL_FILTERS),)):
        return []
    if quality is None:
        if not _default:  # its sentence encoder and normalizer load once per process
            _default.append(QualityFilters(filters=MODEL_FILTERS))
        quality = _default[0]
    models = {"meaning": quality.similarity, "fluency": quality.normalizer}
    makeable = [f for f in MODEL_FILTERS if f in quality.filters and models[f]() is not None]
    rows = log.query(PENDING_SQL, (json.dumps(makeable),)) if makeable else []
    if not rows:
        return []
    stored = [(json.loads(r["attack_json"]).get("checks") or {}) for r in rows]
    examples = [_example(r, {k: v for k, v in old.items() if made(v)}) for r, old in zip(rows, stored)]
    verdicts = quality.assess(examples).verdicts
    normalizer = quality.normalizer()
    # its normalized form was stored with its fluency, by the same normalizer
    normalized = [] if normalizer is None else [(e.text, normalizer.normalize(e.text))
                                                for e, old in zip(examples, stored) if not made(old.get("fluency"))]
    checks = [(e.id, {**old, **{k: v for k, v in (verdict or {}).items()
                                if k in makeable and made(v) and not made(old.get(k))}})
              for e, old, verdict in zip(examples, stored, verdicts)]
    with log.transaction():
        record_normalizations_many(log, normalized)
        log.set_attack_checks(checks)
    return list(dict.fromkeys(n.text for text, n in normalized if n.text != text))


def unmade(log: StudyLog) -> dict[str, dict[str, Any]]:
    """Per model-dependent check, the successful attacks of the log still without it once `check_attacks`
    has run: {"attacks": how many, "why": the model this process lacks}. Counted from the log, so a
    command that finished says what it left, not what it meant to make."""
    out: dict[str, dict[str, Any]] = {}
    for name in MODEL_FILTERS:
        (row,) = log.query(f"SELECT count(*) AS n FROM ({PENDING_SQL})", (json.dumps([name]),))
        if row["n"]:
            why = _default[0].unavailable.get(name) if _default else None
            out[name] = {"attacks": row["n"], "why": why or f"the model of the {name} check was not loaded"}
    return out


def unmade_warnings(left: dict[str, dict[str, Any]]) -> list[str]:
    """The line per check of `unmade` that `modlens rescore` and `audit --attack` print on stderr."""
    return [f"{n} successful attack{'s' * (n != 1)} in the log {'have' if n != 1 else 'has'} no {name} check: it could not be "
            f"made here ({c['why']}); once its model loads, `modlens rescore` makes it (until then the report counts "
            f"{'them' if n != 1 else 'it'} as not checked)"
            for name, c in left.items() for n in [c["attacks"]]]
