"""The model-dependent checks of logged attacks, computed once and stored in the log so the
report only reads it: for every successful attack without them, the quality filters that need a
model (`perturb/quality.py`: MiniLM meaning similarity, normalizer-edit fluency) go into its
attack record (`attack_json.checks`), and the adversarial text's normalized form goes into
`normalizations`, where the scoring step (the audit's, or `modlens rescore`'s) gives it the
target's score that normalization recovery reads.

`audit --attack` runs this after each chunk's attacks; `modlens rescore` runs it for older logs."""
from __future__ import annotations

import json
from typing import Any

from modlens.perturb.quality import MODEL_FILTERS, AttackExample, QualityFilters, recipe_of
from modlens.services.recording import record_normalizations_many
from modlens.studylog.store import StudyLog

PENDING_SQL = (
    "SELECT v.variant_id, v.attack_json, v.strategy, v.params_json, v.target_detector, t.text, s.text AS seed "
    "FROM variants v JOIN texts t ON t.text_id = v.text_id JOIN texts s ON s.text_id = v.source_text_id "
    "WHERE v.attack_json ->> '$.status' = 'success' AND v.attack_json ->> '$.checks' IS NULL ORDER BY v.variant_id")

_default: list[QualityFilters] = []


def _example(row: dict[str, Any]) -> AttackExample:
    a, params = json.loads(row["attack_json"]), json.loads(row["params_json"] or "{}")
    target = str(row["target_detector"] or a.get("target") or "")
    return AttackExample(id=row["variant_id"], seed=row["seed"], text=row["text"], goal=str(a.get("goal", "tae")).lower(),
                         target=target, target_name=str(a.get("target_name") or target),
                         recipe=recipe_of(row["strategy"], params, a), status="success")


def check_attacks(log: StudyLog, quality: QualityFilters | None = None) -> list[str]:
    """Store the checks of every successful attack that has none yet; the normalized texts that
    differ from their attack text (the caller scores them with the target). Loads the sentence
    encoder and normalizer only when there is something to check."""
    rows = log.query(PENDING_SQL)
    if not rows:
        return []
    if quality is None:
        if not _default:  # its sentence encoder and normalizer load once per process
            _default.append(QualityFilters(filters=MODEL_FILTERS))
        quality = _default[0]
    examples = [_example(r) for r in rows]
    verdicts = quality.assess(examples).verdicts
    normalizer = quality.normalizer()
    normalized = [] if normalizer is None else [(e.text, normalizer.normalize(e.text)) for e in examples]
    checks = [(e.id, {k: v for k, v in (verdict or {}).items() if k in MODEL_FILTERS})
              for e, verdict in zip(examples, verdicts)]
    with log.transaction():
        record_normalizations_many(log, normalized)
        log.set_attack_checks(checks)
    return list(dict.fromkeys(n.text for text, n in normalized if n.text != text))
