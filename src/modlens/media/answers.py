"""What a detector's answer for a text with media says about the media it was shown: media it could
not read here, OCR reads that failed, and the OCR engine a reading names by default. Read by the
scorers that record answers (`services/comment_media.py`, `audit/fused.py`) and by the report
(`analysis/fusion.py`), so all of them count an unread image the same way."""
from __future__ import annotations

from typing import Any, Mapping

DEFAULT_OCR_ENGINE = "tesseract"  # the engine an OCR reading that names none came from (`detectors/ocr.py`)


def unscored_reason(labels: Any, details: Mapping[str, Any]) -> str | None:
    """Why a detector's answer leaves part of the input unread without failing: media it cannot
    read here (`unscored_media`: audio, video without a reader), or no answer with a `reason`.
    None when it read everything (or, with no answer and no reason, when that is an error)."""
    unread = details.get("unscored_media")
    if unread:
        if isinstance(unread, str):
            return unread
        kinds = sorted({str(m.get("kind", "media")) if isinstance(m, dict) else str(m)
                        for m in (unread if isinstance(unread, list) else [unread])})
        return f"no local reader for {', '.join(kinds)}"
    why = details.get("reason")
    return str(why) if labels is None and why else None


def ocr_failures(details: Mapping[str, Any]) -> list[str]:
    """The errors of OCR reads and speech recognition that failed (a failure, retried by the next
    run; not unread media)."""
    return [str(e["error"]) for key in ("ocr", "asr") for e in details.get(key) or []
            if isinstance(e, dict) and e.get("error")]
