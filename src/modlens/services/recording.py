"""Everything the live service and the audits write about a text, written one way: the
study and its detectors (one serialisation), scores, normalizations (one naming) and variants.
Each function takes an open `StudyLog`, so callers choose the transaction: the daemon submits
them through its `LogWriter`, an audit calls them inside `log.transaction()`.

Corpus-scale callers (an audit driver committing what Ray workers stream back) hand whole
batches to the `*_many` functions: `record_scores_many`, `record_normalizations_many`,
`record_variants_many` store the same rows as one call per row would, with a few `executemany`
statements per batch. Call them inside one `log.transaction()` per large batch (thousands of
rows): a transaction is one fsync, so its size, not the row count, sets the cost."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from modlens.config import StudyConfig
from modlens.detectors.base import Detector
from modlens.normalize.base import edits_json
from modlens.rows import Score, Variant
from modlens.studylog.records.scores import ScoresWritten
from modlens.studylog.store import StudyLog


def register(log: StudyLog, study: StudyConfig, detectors: Mapping[str, Detector]) -> dict[str, int]:
    """Records the study and every detector (name, version, config) once; study key -> detector_id."""
    log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
    return {k: log.ensure_detector(d.name, d.version, d.toxicity_label, d.threshold, d.config())
            for k, d in detectors.items()}


def record_scores(log: StudyLog, detector_ids: Mapping[str, int], scores: Iterable[tuple[str, str, Score]]) -> None:
    """(text, detector key, score) rows; a later good score replaces an earlier error."""
    record_scores_many(log, detector_ids, scores)


def record_scores_many(log: StudyLog, detector_ids: Mapping[str, int],
                       scores: Iterable[tuple[str, str, Score]]) -> ScoresWritten:
    """(text, detector key, score) rows in one batch, as one `log.add_score` per row would store
    them (a later good score replaces an earlier error, never the reverse); what the write did."""
    return log.add_scores_many([(text, detector_ids[key], r.labels, r.toxicity, r.latency_ms, r.error)
                                for text, key, r in scores])


def score_rows(texts: Iterable[str], per_text: Iterable[Mapping[str, Score]]) -> list[tuple[str, str, Score]]:
    """The (text, key, score) rows of the engine's per-text {key: score} dicts."""
    return [(t, k, r) for t, scores in zip(texts, per_text) for k, r in scores.items()]


def record_normalization(log: StudyLog, source_text: str, normalized: Any) -> None:
    """A `Normalized` result, under its normalizer's name and version ("default" / "" when unnamed)."""
    log.add_normalization(source_text, normalized.normalizer or "default", normalized.version or "",
                          normalized.text, [e.to_dict() for e in normalized.edits])


def record_normalizations_many(log: StudyLog, pairs: Iterable[tuple[str, Any]]) -> None:
    """(source text, `Normalized`) pairs in one batch, each as `record_normalization` stores it."""
    log.add_normalizations_many((source, n.normalizer or "default", n.version or "", n.text, edits_json(n.edits))
                                for source, n in pairs)


def record_variants(log: StudyLog, comment_id: int, variants: Sequence[Variant], *, run_id: int | None = None,
                    detector_ids: Mapping[str, int] | None = None,
                    scores: Sequence[Mapping[str, Score]] = ()) -> list[int]:
    """The variants of one comment (and, when given, each variant's scores); their variant_ids."""
    if not variants:
        return []
    with log.transaction():
        ids = log.add_variants_many([(comment_id, v) for v in variants], run_id)
        if scores:
            record_scores_many(log, detector_ids or {}, score_rows((v.text for v in variants), scores))
    return ids


def record_variants_many(log: StudyLog, variants: Iterable[tuple[int, Variant]], *,
                         run_id: int | None = None) -> list[int]:
    """(comment_id, variant) pairs of many comments in one batch; their variant_ids, in order."""
    return log.add_variants_many(variants, run_id)
