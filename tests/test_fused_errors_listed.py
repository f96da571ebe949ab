"""The fused-scoring summary (`score_cases`) counts in `n_errors` every error row it wrote, and its
`errors` list named only two kinds of them: calls that raised and missing media files. An OCR read
that failed (Tesseract on a broken image) and an input the detector had no answer for counted in
`n_errors` while the list said nothing of them: a list that says less than its count. Every error
row written is now in the list (one line per distinct error, with how many inputs it hit)."""
from __future__ import annotations

import re

from fused_helpers import record, text_image
from realtools import requires

from modlens.audit.fused import score_cases
from modlens.detectors import registry
from modlens.fusion.case import FusedCase
from modlens.media import MediaBlob, MediaInput
from modlens.media.store import MediaStore
from modlens.studylog.store import StudyLog


def _count(message: str) -> int:
    """How many error rows one listed line stands for: 'detector on N inputs: ...', else one."""
    m = re.match(r"\S+ on (\d+) inputs?: ", message)
    return int(m.group(1)) if m else 1


@requires("tesseract")
def test_every_error_row_counted_is_listed(tmp_path):
    log, store = StudyLog(tmp_path / "fuse.sqlite"), MediaStore(tmp_path / "media")
    try:
        record(log, store, text_image("abuse_hate", "women", "are", "bitches"))
        # a PNG whose header is right but whose pixels are not: Tesseract fails on it
        broken = MediaBlob(b"\x89PNG\r\n\x1a\n" + b"not pixels" * 8, "image/png")
        record(log, store, FusedCase("abuse_hate", "A is/are B", "women", "are", "bitches", "women are bitches",
                                     "T+I", "women are", (broken,), MediaInput("women"), MediaInput("", (broken,)),
                                     {"broken": True}))
        table = tmp_path / "scores.csv"  # a cached table with no row for any of the cases' texts
        table.write_text("text,score\nsomething else,0.5\n", encoding="utf-8")
        detectors = {"ocr": registry.create("ocr", text_detector="profanity-check"),
                     "table": registry.create("cached", path=str(table), mappings=[["text", "score"]], name="table")}
        summary = score_cases(log, detectors, store)
    finally:
        for det in detectors.values():
            det.close()
    errors = [r["error"] for r in log.query("SELECT error FROM case_scores WHERE error IS NOT NULL")]
    log.close()
    assert any(e.startswith("OCR failed") for e in errors) and any(e.startswith("missing:") for e in errors)
    assert summary["n_errors"] == len(errors) == sum(t["errors"] for t in summary["detectors"].values())
    listed = summary["errors"]
    assert all(any(e in line for line in listed) for e in set(errors)), listed  # each error said
    assert sum(_count(line) for line in listed) == summary["n_errors"], listed  # and as often as counted
