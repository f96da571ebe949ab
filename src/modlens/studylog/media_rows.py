"""Writes and reads of the media tables (schema migration 3, docs/DATA.md): media by content
hash, comment attachments, OCR results, fused test cases and the scores of inputs with media."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from modlens.media import MediaBlob
from modlens.studylog.store import StudyLog, canonical_json, now_iso

if TYPE_CHECKING:
    from modlens.fusion.case import FusedCase

ScoreRow = tuple[int, dict[str, float] | None, float | None, float | None, str | None, dict[str, Any]]
"""(detector_id, labels, toxicity, latency_ms, error, details)"""


def add_media(log: StudyLog, blob: MediaBlob, *, path: str | None, meta: dict[str, Any] | None = None) -> int:
    """The media row for these bytes (inserted once). `path` is where the bytes were kept (relative
    to the media folder), None when only the hash is logged; a later call with a path fills it in."""
    with log.transaction():
        log._write("INSERT OR IGNORE INTO media (sha256, kind, mime, n_bytes, path, meta_json, first_seen) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (blob.sha256, blob.kind, blob.mime, len(blob.data), path, canonical_json(meta or {}), now_iso()))
        if path is not None:
            log._write("UPDATE media SET path = ? WHERE sha256 = ? AND path IS NULL", (path, blob.sha256))
        media_id: int = log._one("SELECT media_id FROM media WHERE sha256 = ?", (blob.sha256,))
    return media_id


def add_comment_media(log: StudyLog, comment_id: int, media_id: int, position: int, source_url: str | None) -> None:
    log._write("INSERT OR IGNORE INTO comment_media (comment_id, media_id, position, source_url) VALUES (?, ?, ?, ?)",
               (comment_id, media_id, position, source_url))


def add_ocr(log: StudyLog, media_id: int, engine: str, version: str, text: str, confidence: float | None) -> None:
    with log.transaction():
        tid = log.text_id(text)
        log._write("INSERT OR REPLACE INTO ocr_results (media_id, engine, version, text_id, confidence, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (media_id, engine, version, tid, confidence, now_iso()))


def add_fused_case(log: StudyLog, case: "FusedCase", media_ids: dict[str, list[int]], run_id: int | None) -> int:
    """The case row (once per `case.key`), its parts' texts and media. `media_ids`: part name
    ("case", "part_a", "part_b") -> media ids in order, as returned by `add_media`."""
    with log.transaction():
        log._write(
            "INSERT OR IGNORE INTO fused_cases (case_key, content_type, template, keyword_a, middle, keyword_b, "
            "seed_text_id, caption_text_id, fusion, params_json, seed, run_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (case.key, case.content_type, case.template, case.keyword_a, case.middle, case.keyword_b,
             log.text_id(case.seed_text), log.text_id(case.caption), case.fusion, canonical_json(case.params),
             case.seed, run_id, now_iso()))
        case_id: int = log._one("SELECT case_id FROM fused_cases WHERE case_key = ?", (case.key,))
        for part, inp in (("part_a", case.part_a), ("part_b", case.part_b)):
            log._write("INSERT OR IGNORE INTO case_parts (case_id, part, text_id) VALUES (?, ?, ?)",
                       (case_id, part, log.text_id(inp.text)))
        for part, ids in media_ids.items():
            for position, media_id in enumerate(ids):
                log._write("INSERT OR IGNORE INTO case_media (case_id, part, position, media_id) VALUES (?, ?, ?, ?)",
                           (case_id, part, position, media_id))
    return case_id


def _score_values(row: ScoreRow) -> tuple[Any, ...]:
    detector_id, labels, toxicity, latency_ms, error, details = row
    return (detector_id, None if labels is None else canonical_json(labels),
            None if toxicity is None else float(toxicity), latency_ms, error, canonical_json(details), now_iso())


def add_case_scores_many(log: StudyLog, rows: Iterable[tuple[int, str, ScoreRow]]) -> None:
    """(case_id, part, score row) each; a rescore replaces the earlier row."""
    with log.transaction():
        log._executemany(
            "INSERT OR REPLACE INTO case_scores (case_id, part, detector_id, labels_json, toxicity, latency_ms, "
            "error, details_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(case_id, part, *_score_values(score)) for case_id, part, score in rows])


def add_comment_media_score(log: StudyLog, comment_id: int, score: ScoreRow) -> None:
    log._write("INSERT OR REPLACE INTO comment_media_scores (comment_id, detector_id, labels_json, toxicity, "
               "latency_ms, error, details_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (comment_id, *_score_values(score)))


def scored_case_parts(log: StudyLog, detector_id: int) -> set[tuple[int, str]]:
    """(case_id, part) pairs this detector version has a score for (a rerun skips them)."""
    return {(r["case_id"], r["part"]) for r in log.query(
        "SELECT case_id, part FROM case_scores WHERE detector_id = ? AND error IS NULL", (detector_id,))}


def case_details(row: dict[str, Any]) -> dict[str, Any]:
    """details_json of a case_scores / comment_media_scores row as a dict."""
    return dict(json.loads(row.get("details_json") or "{}"))
