"""What the study log keeps of the images attached to a live comment (docs/EXTENSION.md, "Comment
media"): one `media` row per distinct image (its SHA-256 always, the path of its bytes only when the
study keeps them), the comment's attachments in order, each media detector's score of the comment
with its images, and the OCR text a detector read on the way (`details["ocr"]`).

Like `recording.py`, each function takes an open `StudyLog`, so the caller picks the transaction."""
from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from modlens.media import MediaBlob
from modlens.media.answers import DEFAULT_OCR_ENGINE
from modlens.studylog import media_rows
from modlens.studylog.store import StudyLog


class MediaResult(Protocol):
    """A detector's answer for a text with media (the engine's `DetectorResult` with `details`)."""
    labels: dict[str, float] | None
    toxicity: float | None
    latency_ms: float
    error: str | None
    details: dict[str, Any] | None


def ocr_entries(details: Mapping[str, Any], blobs: Sequence[MediaBlob]) -> list[tuple[MediaBlob, dict[str, Any]]]:
    """The OCR readings in a detector's details, each with the image it was read from: matched by
    `sha256` when the entry names one, else by its place (`position`, else its index)."""
    raw = details.get("ocr")
    entries: list[Any] = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else []
    by_sha = {b.sha256: b for b in blobs}
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            continue
        blob = by_sha.get(str(entry.get("sha256")))
        if blob is None:
            pos = entry.get("position", i)
            blob = blobs[pos] if isinstance(pos, int) and 0 <= pos < len(blobs) else None
        if blob is not None:
            out.append((blob, entry))
    return out


def record_comment_media(log: StudyLog, comment_id: int, items: Sequence[tuple[int, MediaBlob, str | None]],
                         detector_ids: Mapping[str, int], results: Mapping[str, MediaResult]) -> dict[int, int]:
    """`items`: (position, blob, kept path or None) of one comment; `results`: detector key ->
    its score of the comment's text with these images. Returns position -> media_id. Idempotent:
    the same images again add no rows, a rescore replaces the detector's row."""
    with log.transaction():
        ids: dict[int, int] = {}
        for position, blob, path in items:
            media_id = media_rows.add_media(log, blob, path=path)
            media_rows.add_comment_media(log, comment_id, media_id, position, blob.source_url)
            ids[position] = media_id
        by_sha = {blob.sha256: ids[pos] for pos, blob, _ in items}
        blobs = [blob for _, blob, _ in sorted(items, key=lambda it: it[0])]
        for key, r in results.items():
            details = dict(getattr(r, "details", None) or {})
            media_rows.add_comment_media_score(
                log, comment_id, (detector_ids[key], r.labels, r.toxicity, r.latency_ms, r.error, details))
            for blob, entry in ocr_entries(details, blobs):
                conf = entry.get("confidence")
                media_rows.add_ocr(log, by_sha[blob.sha256], str(entry.get("engine") or DEFAULT_OCR_ENGINE),
                                   str(entry.get("version") or ""), entry["text"],
                                   float(conf) if isinstance(conf, (int, float)) else None)
    return ids
