"""`media`, `comment_media`, `ocr_results`, `asr_results` (migration 4), `fused_cases` (with `case_parts`, `case_media`),
`case_scores` and `comment_media_scores` (schema migration 3, docs/DATA.md): media by content
hash, comment attachments, OCR results, fused test cases and the scores of inputs with media.

The media and fused-case types are described by what is stored of them (Protocols), so the
record layer does not import the media or fusion packages."""
from __future__ import annotations

import json
from typing import Any, Iterable, Protocol

from modlens.rows import MediaScoreRow
from modlens.studylog.codec import canonical_json, now_iso
from modlens.studylog.connection import LogConnection
from modlens.studylog.records.texts import text_ids

ScoreRow = MediaScoreRow
"""(detector_id, labels, toxicity, latency_ms, error, details)"""


class Blob(Protocol):
    """What the log keeps of a media file (modlens.media.MediaBlob is one)."""
    @property
    def sha256(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def mime(self) -> str: ...
    @property
    def data(self) -> bytes: ...


class CasePart(Protocol):
    @property
    def text(self) -> str: ...


class Case(Protocol):
    """What the log keeps of a fused test case (modlens.fusion.case.FusedCase is one)."""
    @property
    def key(self) -> str: ...
    @property
    def content_type(self) -> str: ...
    @property
    def template(self) -> str: ...
    @property
    def keyword_a(self) -> str: ...
    @property
    def middle(self) -> str: ...
    @property
    def keyword_b(self) -> str: ...
    @property
    def seed_text(self) -> str: ...
    @property
    def caption(self) -> str: ...
    @property
    def fusion(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def seed(self) -> int: ...
    @property
    def part_a(self) -> CasePart: ...
    @property
    def part_b(self) -> CasePart: ...


def add_media(db: LogConnection, blob: Blob, *, path: str | None, meta: dict[str, Any] | None = None) -> int:
    """The media row for these bytes (inserted once). `path` is where the bytes were kept (relative
    to the media folder), None when only the hash is logged; a later call with a path fills it in."""
    with db.transaction():
        db.write("INSERT OR IGNORE INTO media (sha256, kind, mime, n_bytes, path, meta_json, first_seen) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?)",
                 (blob.sha256, blob.kind, blob.mime, len(blob.data), path, canonical_json(meta or {}), now_iso()))
        if path is not None:
            db.write("UPDATE media SET path = ? WHERE sha256 = ? AND path IS NULL", (path, blob.sha256))
        media_id: int = db.scalar("SELECT media_id FROM media WHERE sha256 = ?", (blob.sha256,))
    return media_id


def add_comment_media_many(db: LogConnection, rows: Iterable[tuple[int, int, int, str | None]]) -> None:
    """(comment_id, media_id, position, source_url) rows: the media attached to a comment."""
    db.write_many("INSERT OR IGNORE INTO comment_media (comment_id, media_id, position, source_url) "
                  "VALUES (?, ?, ?, ?)", list(rows))


def add_comment_media(db: LogConnection, comment_id: int, media_id: int, position: int, source_url: str | None) -> None:
    add_comment_media_many(db, [(comment_id, media_id, position, source_url)])


def add_ocr(db: LogConnection, media_id: int, engine: str, version: str, text: str, confidence: float | None) -> None:
    """The text an OCR engine version read in a media file (a rerun replaces it)."""
    with db.transaction():
        tid = text_ids(db, [text])[text]
        db.write("INSERT OR REPLACE INTO ocr_results (media_id, engine, version, text_id, confidence, created_at) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (media_id, engine, version, tid, confidence, now_iso()))


def add_asr(db: LogConnection, media_id: int, engine: str, version: str, text: str, confidence: float | None) -> None:
    """The transcript a speech recogniser version heard in an audio clip or video (a rerun replaces it)."""
    with db.transaction():
        tid = text_ids(db, [text])[text]
        db.write("INSERT OR REPLACE INTO asr_results (media_id, engine, version, text_id, confidence, created_at) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (media_id, engine, version, tid, confidence, now_iso()))


def add_fused_case(db: LogConnection, case: Case, media_ids: dict[str, list[int]], run_id: int | None) -> int:
    """The case row (once per `case.key`), its parts' texts and media. `media_ids`: part name
    ("case", "part_a", "part_b") -> media ids in order, as returned by `add_media`."""
    with db.transaction():
        tids = text_ids(db, [case.seed_text, case.caption, case.part_a.text, case.part_b.text])
        db.write(
            "INSERT OR IGNORE INTO fused_cases (case_key, content_type, template, keyword_a, middle, keyword_b, "
            "seed_text_id, caption_text_id, fusion, params_json, seed, run_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (case.key, case.content_type, case.template, case.keyword_a, case.middle, case.keyword_b,
             tids[case.seed_text], tids[case.caption], case.fusion, canonical_json(case.params),
             case.seed, run_id, now_iso()))
        case_id: int = db.scalar("SELECT case_id FROM fused_cases WHERE case_key = ?", (case.key,))
        db.write_many("INSERT OR IGNORE INTO case_parts (case_id, part, text_id) VALUES (?, ?, ?)",
                      [(case_id, part, tids[inp.text]) for part, inp in (("part_a", case.part_a),
                                                                          ("part_b", case.part_b))])
        db.write_many("INSERT OR IGNORE INTO case_media (case_id, part, position, media_id) VALUES (?, ?, ?, ?)",
                      [(case_id, part, position, media_id) for part, ids in media_ids.items()
                       for position, media_id in enumerate(ids)])
    return case_id


def _score_values(row: ScoreRow, now: str) -> tuple[Any, ...]:
    detector_id, labels, toxicity, latency_ms, error, details = row
    return (detector_id, None if labels is None else canonical_json(labels),
            None if toxicity is None else float(toxicity), latency_ms, error, canonical_json(details), now)


def add_case_scores_many(db: LogConnection, rows: Iterable[tuple[int, str, ScoreRow]]) -> None:
    """(case_id, part, score row) each; a rescore replaces the earlier row."""
    now = now_iso()
    db.write_many(
        "INSERT OR REPLACE INTO case_scores (case_id, part, detector_id, labels_json, toxicity, latency_ms, "
        "error, details_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(case_id, part, *_score_values(score, now)) for case_id, part, score in rows])


def add_comment_media_scores(db: LogConnection, rows: Iterable[tuple[int, ScoreRow]]) -> None:
    """(comment_id, score row) each: a detector's score of a comment with its media (a rescore
    replaces the earlier row)."""
    now = now_iso()
    db.write_many("INSERT OR REPLACE INTO comment_media_scores (comment_id, detector_id, labels_json, toxicity, "
                  "latency_ms, error, details_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                  [(comment_id, *_score_values(score, now)) for comment_id, score in rows])


def add_comment_media_score(db: LogConnection, comment_id: int, score: ScoreRow) -> None:
    add_comment_media_scores(db, [(comment_id, score)])


def scored_case_parts(db: LogConnection, detector_id: int) -> set[tuple[int, str]]:
    """(case_id, part) pairs this detector version has a score for (a rerun skips them)."""
    return {(case_id, part) for case_id, part in db.conn.execute(
        "SELECT case_id, part FROM case_scores WHERE detector_id = ? AND error IS NULL", (detector_id,))}


def case_details(row: dict[str, Any]) -> dict[str, Any]:
    """details_json of a case_scores / comment_media_scores row as a dict."""
    return dict(json.loads(row.get("details_json") or "{}"))
