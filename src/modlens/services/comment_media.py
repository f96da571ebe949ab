"""Images attached to live comments (`comment_media`, docs/EXTENSION.md "Comment media"): the checks
made before anything is written, the choice of detectors that score them, and what the study log
keeps of them.

The extension fetched the images itself; the daemon never fetches from the web, and trusts nothing
it is told about the bytes: the type comes from their magic numbers, the hash is redone.

The log keeps one `media` row per distinct image (its SHA-256 always, the path of its bytes only
when the study keeps them), the comment's attachments in order, each media detector's score of the
comment with its images, and the OCR text a detector read on the way (`details["ocr"]`). Like
`recording.py`, `record_comment_media` takes an open `StudyLog`, so the caller picks the transaction."""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Mapping, Protocol, Sequence

from modlens import protocol as p
from modlens.config import MediaConfig, StudyConfig
from modlens.detectors.base import Detector
from modlens.media import MediaBlob, MediaError
from modlens.media.answers import DEFAULT_OCR_ENGINE
from modlens.protocol import ErrorCode, ProtocolError
from modlens.rows import Score
from modlens.studylog.records import media as media_records
from modlens.studylog.store import StudyLog

# room for the JSON around one image's base64 (ids, key, url, hash)
FRAME_OVERHEAD_BYTES = 64 * 1024
_MEDIA_TYPE = re.compile(r'"type"\s*:\s*"comment_media"')


def b64_len(n_bytes: int) -> int:
    return 4 * ((n_bytes + 2) // 3)


def media_frame_bytes(study: StudyConfig) -> int:
    """The largest frame accepted: a `comment_media` frame of a study that collects media may
    carry one image of `media.max_bytes` (base64); every other frame keeps `max_message_bytes`."""
    limit = study.limits.max_message_bytes
    if not study.media.collect:
        return limit
    return max(limit, b64_len(study.media.max_bytes) + FRAME_OVERHEAD_BYTES)


def is_media_frame(raw: str | bytes) -> bool:
    """Whether a frame says it is a `comment_media` message (looks at its first 4 KiB only)."""
    head = raw[:4096]
    if isinstance(head, bytes):
        head = head.decode("utf-8", "replace")
    return bool(_MEDIA_TYPE.search(head))


def decode_items(msg: p.CommentMedia, media: MediaConfig) -> list[tuple[int, MediaBlob]]:
    """(position, blob) of each item, or the ProtocolError that says what is wrong with which."""
    if not media.collect:
        raise ProtocolError(ErrorCode.media_not_collected,
                            "this study does not collect images attached to comments (media.collect is off); "
                            "nothing was logged", msg.id)
    if len(msg.items) > media.max_per_comment:
        raise ProtocolError(ErrorCode.invalid_fields, f"items: {len(msg.items)} images, the study takes at most "
                            f"{media.max_per_comment} per comment (media.max_per_comment)", msg.id)
    positions = [it.position for it in msg.items]
    if len(set(positions)) != len(positions):
        raise ProtocolError(ErrorCode.invalid_fields, f"items: positions {positions} repeat", msg.id)
    out = []
    for i, item in enumerate(msg.items):
        if len(item.data_b64) > b64_len(media.max_bytes) + 4:
            raise ProtocolError(ErrorCode.too_large, f"items.{i}.data_b64: the image is over the study's "
                                f"{media.max_bytes} bytes (media.max_bytes)", msg.id)
        try:
            data = base64.b64decode(item.data_b64, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError(ErrorCode.invalid_fields, f"items.{i}.data_b64: not valid base64", msg.id) from None
        if len(data) > media.max_bytes:
            raise ProtocolError(ErrorCode.too_large, f"items.{i}.data_b64: {len(data)} bytes, the study takes at "
                                f"most {media.max_bytes} (media.max_bytes)", msg.id)
        url = None if item.url is None or item.url.startswith("data:") else item.url
        try:
            blob = MediaBlob(data, item.mime, url)
        except MediaError as err:
            raise ProtocolError(ErrorCode.invalid_fields, f"items.{i}.mime: {err}", msg.id) from None
        if blob.sha256 != item.sha256:
            raise ProtocolError(ErrorCode.invalid_fields, f"items.{i}.sha256: the bytes hash to {blob.sha256}, "
                                f"not {item.sha256} (damaged in transit?)", msg.id)
        out.append((item.position, blob))
    return out


def media_detector_keys(media: MediaConfig, detectors: dict[str, Detector]) -> list[str]:
    """`media.detectors` (those loaded), else every loaded detector that reads images."""
    if media.detectors is not None:
        return [k for k in media.detectors if k in detectors]
    return [k for k, d in detectors.items() if "image" in getattr(d, "modalities", ("text",))]


class MediaResult(Score, Protocol):
    """A detector's answer for a text with media (the engine's `DetectorResult` with `details`)."""
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
            media_id = media_records.add_media(log, blob, path=path)
            media_records.add_comment_media(log, comment_id, media_id, position, blob.source_url)
            ids[position] = media_id
        by_sha = {blob.sha256: ids[pos] for pos, blob, _ in items}
        blobs = [blob for _, blob, _ in sorted(items, key=lambda it: it[0])]
        for key, r in results.items():
            details = dict(getattr(r, "details", None) or {})
            media_records.add_comment_media_score(
                log, comment_id, (detector_ids[key], r.labels, r.toxicity, r.latency_ms, r.error, details))
            for blob, entry in ocr_entries(details, blobs):
                conf = entry.get("confidence")
                media_records.add_ocr(log, by_sha[blob.sha256], str(entry.get("engine") or DEFAULT_OCR_ENGINE),
                                   str(entry.get("version") or ""), entry["text"],
                                   float(conf) if isinstance(conf, (int, float)) else None)
    return ids
